//! Overflow chains: large variable-size records live in a chain of pages, referenced from the
//! leaf by `[tag 1][first page u64][length u64]`.
//!
//! ```text
//! overflow page: [0..8 checksum][8 kind=5][9..12 zero][12..16 bytes in this page u32]
//!                [16..24 next page u64, 0 = last][24 .. P: value bytes]
//! ```
//!
//! A chain for a value of `len` bytes has exactly `ceil(len / (P - 24))` pages, every page but the
//! last full. Reads check each page's kind, length and link against that, so a corrupt or cyclic
//! chain is an error after at most that many pages.

use super::node::corrupt;
use super::records::Rec;
use super::slots::{le_u32_at, le_u64_at};
use super::Spec;
use crate::error::{PageId, Result};
use crate::storage::{PageKind, PageSink, PageSource, PAGE_KIND_OFFSET};

use super::records::REF_LEN;
/// Header bytes of an overflow page.
pub const HEADER: usize = 24;

/// A stored variable-size record, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    Inline(Rec<'a>),
    Overflow { first: PageId, len: u64 },
}

/// Decodes a stored record of a leaf (`leaf` names the page for errors).
pub fn decode<'a>(spec: &Spec, rec: Rec<'a>, leaf: PageId) -> Result<Stored<'a>> {
    let raw = match rec {
        Rec::Page(raw) if spec.recs.may_overflow() => raw,
        _ => return Ok(Stored::Inline(rec)),
    };
    match raw.split_first() {
        Some((0, rest)) => Ok(Stored::Inline(Rec::Page(rest))),
        Some((1, rest)) if raw.len() == REF_LEN => {
            let (first, len) = (le_u64_at(rest, 0), le_u64_at(rest, 8));
            if first < 2
                || len as usize <= spec.limits.max_inline_record
                || len > super::MAX_RECORD_LEN as u64
            {
                return Err(corrupt(leaf, "bad overflow record reference"));
            }
            Ok(Stored::Overflow { first, len })
        }
        _ => Err(corrupt(leaf, "bad record tag")),
    }
}

/// Encodes a value as a stored record, writing an overflow chain when it is large.
pub fn store<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    value: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    if spec.recs.may_overflow() && value.len() > spec.limits.max_inline_record {
        let first = write(sink, value)?;
        out.clear();
        out.push(1);
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    } else {
        spec.recs.inline_form(value, out);
    }
    Ok(())
}

fn per_page(page_size: usize) -> usize {
    page_size - HEADER
}

fn chain_len(page_size: usize, len: u64) -> u64 {
    len.div_ceil(per_page(page_size) as u64)
}

/// Writes `value` into a new chain; returns its first page.
pub fn write<S: PageSink + ?Sized>(sink: &mut S, value: &[u8]) -> Result<PageId> {
    let per = per_page(sink.page_size());
    let chunks: Vec<&[u8]> = value.chunks(per).collect();
    let mut ids = Vec::with_capacity(chunks.len());
    for _ in 0..chunks.len() {
        ids.push(sink.alloc()?);
    }
    for (i, (chunk, &id)) in chunks.iter().zip(&ids).enumerate() {
        let next = ids.get(i + 1).copied().unwrap_or(0);
        let p = sink.page_mut(id)?;
        // [kind u8][3 zero][len u32 at 12][next u64 at 16][chunk at HEADER]
        let mut head = [0u8; HEADER - PAGE_KIND_OFFSET];
        let [kind, _, _, _, l0, l1, l2, l3, n @ ..] = &mut head;
        *kind = PageKind::Overflow as u8;
        [*l0, *l1, *l2, *l3] = (chunk.len() as u32).to_le_bytes();
        n.copy_from_slice(&next.to_le_bytes());
        let body = p
            .get_mut(PAGE_KIND_OFFSET..HEADER + chunk.len())
            .ok_or_else(|| corrupt(id, "overflow chunk larger than its page"))?;
        let (h, b) = body.split_at_mut(HEADER - PAGE_KIND_OFFSET);
        h.copy_from_slice(&head);
        b.copy_from_slice(chunk);
    }
    ids.first()
        .copied()
        .ok_or_else(|| corrupt(0, "overflow chain of no pages"))
}

/// Walks a chain, checking every page, and calls `f(page id, bytes)` for each.
pub fn walk<S: PageSource + ?Sized>(
    src: &S,
    first: PageId,
    len: u64,
    mut f: impl FnMut(PageId, &[u8]) -> Result<()>,
) -> Result<()> {
    let ps = src.page_size();
    let pages = chain_len(ps, len);
    let mut id = first;
    let mut left = len;
    for n in 0..pages {
        let p = src.page(id)?;
        let kind = p.get(PAGE_KIND_OFFSET).copied().and_then(PageKind::from_u8);
        if kind != Some(PageKind::Overflow) {
            return Err(corrupt(id, "expected an overflow page"));
        }
        let here = le_u32_at(&p, 12) as u64;
        let want = left.min(per_page(ps) as u64);
        if here != want {
            return Err(corrupt(
                id,
                format!("overflow page holds {here} bytes, expected {want}"),
            ));
        }
        let next = le_u64_at(&p, 16);
        let last = n + 1 == pages;
        if last != (next == 0) || (!last && next < 2) {
            return Err(corrupt(
                id,
                "overflow chain link does not match the record length",
            ));
        }
        let bytes = p
            .get(HEADER..HEADER + here as usize)
            .ok_or_else(|| corrupt(id, "overflow page holds more than its page"))?;
        f(id, bytes)?;
        left -= here;
        id = next;
    }
    Ok(())
}

/// Reads a whole value.
pub fn read<S: PageSource + ?Sized>(src: &S, first: PageId, len: u64) -> Result<Vec<u8>> {
    // `len` is read from a page: reserve at most 16 MiB up front, grow with the pages read.
    let mut out = Vec::with_capacity(len.min(16 << 20) as usize);
    walk(src, first, len, |_, b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

/// Frees a chain.
pub fn free<S: PageSink + ?Sized>(sink: &mut S, first: PageId, len: u64) -> Result<()> {
    let mut ids = Vec::new();
    walk(&*sink, first, len, |id, _| {
        ids.push(id);
        Ok(())
    })?;
    for id in ids {
        sink.free(id)?;
    }
    Ok(())
}
