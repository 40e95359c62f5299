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
use super::slots::{le_u32, le_u64};
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
    match raw.first() {
        Some(0) => Ok(Stored::Inline(Rec::Page(&raw[1..]))),
        Some(1) if raw.len() == REF_LEN => {
            let first = le_u64(&raw[1..]);
            let len = le_u64(&raw[9..]);
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
    for (i, chunk) in chunks.iter().enumerate() {
        let next = ids.get(i + 1).copied().unwrap_or(0);
        let p = sink.page_mut(ids[i])?;
        p[PAGE_KIND_OFFSET..HEADER].fill(0);
        p[PAGE_KIND_OFFSET] = PageKind::Overflow as u8;
        p[12..16].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
        p[16..24].copy_from_slice(&next.to_le_bytes());
        p[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
    }
    Ok(ids[0])
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
        if PageKind::from_u8(p[PAGE_KIND_OFFSET]) != Some(PageKind::Overflow) {
            return Err(corrupt(id, "expected an overflow page"));
        }
        let here = le_u32(&p[12..]) as u64;
        let want = left.min(per_page(ps) as u64);
        if here != want {
            return Err(corrupt(
                id,
                format!("overflow page holds {here} bytes, expected {want}"),
            ));
        }
        let next = le_u64(&p[16..]);
        let last = n + 1 == pages;
        if last != (next == 0) || (!last && next < 2) {
            return Err(corrupt(
                id,
                "overflow chain link does not match the record length",
            ));
        }
        f(id, &p[HEADER..HEADER + here as usize])?;
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
