//! One node (leaf or branch) in a page: header parsing, reads, in-place inserts and removes,
//! moving the KeyList/RecordList boundary, and rebuilding a node from a list of entries (splits
//! and merges). See the module docs of `btree` for the byte layout.

use super::packed::{Ins, Packed};
use super::slots::{le_u16, le_u32, le_u64, Fault};
use super::strkeys::KeyShare;
use super::{Key, KeyList, RecordList, Spec, BRANCH_HEADER, LEAF_HEADER};
use crate::error::{Error, PageId, Result};
use crate::storage::{PageKind, PAGE_KIND_OFFSET};

const OFF_KLIST: usize = 9;
const OFF_RRANGE: usize = 10;
const OFF_COUNT: usize = 12;
const OFF_CHILD0: usize = 16;

pub(crate) fn corrupt(page: PageId, what: impl Into<String>) -> Error {
    Error::Corrupted {
        page,
        what: what.into(),
    }
}

/// The parsed header of a node, with its lists. Valid for the page bytes it was read from.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub id: PageId,
    pub leaf: bool,
    pub count: usize,
    pub hdr: usize,
    pub rstart: usize,
    pub psize: usize,
    pub keys: KeyList,
    pub recs: RecordList,
}

impl Layout {
    /// Parses and checks a node header: kind, KeyList id, region bounds, list lengths.
    pub fn read(page: &[u8], id: PageId, spec: &Spec) -> Result<Layout> {
        let psize = spec.page_size;
        if page.len() != psize {
            return Err(corrupt(id, "page has the wrong size"));
        }
        let leaf = match PageKind::from_u8(page[PAGE_KIND_OFFSET]) {
            Some(PageKind::Leaf) => true,
            Some(PageKind::Branch) => false,
            other => {
                return Err(corrupt(
                    id,
                    format!("expected a B+-tree node, found page kind {other:?}"),
                ))
            }
        };
        let keys = spec.keys(leaf);
        if page[OFF_KLIST] != keys.id() {
            return Err(corrupt(
                id,
                format!(
                    "key list id {} does not match the database's ({})",
                    page[OFF_KLIST],
                    keys.id()
                ),
            ));
        }
        let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
        let rrange = le_u16(&page[OFF_RRANGE..]) as usize;
        if hdr + rrange > psize {
            return Err(corrupt(id, "record region larger than the page"));
        }
        let l = Layout {
            id,
            leaf,
            count: le_u32(&page[OFF_COUNT..]) as usize,
            hdr,
            rstart: psize - rrange,
            psize,
            keys,
            recs: spec.records(leaf),
        };
        l.keys
            .used(l.kregion(page), l.count)
            .map_err(|f| l.err(f))?;
        l.recs
            .used(l.rregion(page), l.count)
            .map_err(|f| l.err(f))?;
        Ok(l)
    }

    pub fn err(&self, f: Fault) -> Error {
        corrupt(self.id, f.0)
    }

    #[inline]
    pub fn kregion<'p>(&self, page: &'p [u8]) -> &'p [u8] {
        &page[self.hdr..self.rstart]
    }
    #[inline]
    pub fn rregion<'p>(&self, page: &'p [u8]) -> &'p [u8] {
        &page[self.rstart..]
    }

    #[inline]
    pub fn key<'p>(&self, page: &'p [u8], i: usize) -> Result<Key<'p>> {
        self.keys
            .key(self.kregion(page), self.count, i)
            .map_err(|f| self.err(f))
    }
    /// Key `i` of a byte-string node into `buf` (any layout, compressed or not).
    pub fn key_into(&self, page: &[u8], i: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.keys
            .key_into(self.kregion(page), self.count, i, buf)
            .map_err(|f| self.err(f))
    }

    /// Key `i`, owned (works for every layout).
    pub fn key_owned(&self, page: &[u8], i: usize) -> Result<super::KeyBuf> {
        if self.keys.contiguous() {
            return Ok(self.key(page, i)?.to_owned());
        }
        let mut b = Vec::new();
        self.key_into(page, i, &mut b)?;
        Ok(super::KeyBuf::Bytes(b))
    }

    /// Whether `probe` is above every key of the node (false for an empty node).
    pub fn above_last(&self, page: &[u8], probe: &Key<'_>) -> Result<bool> {
        if !self.keys.contiguous() {
            if self.count == 0 {
                return Ok(false);
            }
            let mut b = Vec::new();
            self.key_into(page, self.count - 1, &mut b)?;
            return Ok(*probe > Key::Bytes(&b));
        }
        Ok(self.last_key(page)?.is_some_and(|last| *probe > last))
    }

    #[inline]
    pub fn key_raw<'p>(&self, page: &'p [u8], i: usize) -> Result<&'p [u8]> {
        self.keys
            .raw(self.kregion(page), self.count, i)
            .map_err(|f| self.err(f))
    }
    #[inline]
    pub fn record_raw<'p>(&self, page: &'p [u8], i: usize) -> Result<&'p [u8]> {
        self.recs
            .raw(self.rregion(page), self.count, i)
            .map_err(|f| self.err(f))
    }
    #[inline]
    pub fn search(&self, page: &[u8], probe: &Key<'_>) -> Result<Result<usize, usize>> {
        self.keys
            .search(self.kregion(page), self.count, probe)
            .map_err(|f| self.err(f))
    }

    /// `search` with an estimate of an integer key range (the parent's separators).
    #[inline]
    pub fn search_est(
        &self,
        page: &[u8],
        probe: &Key<'_>,
        est: Option<(u64, u64)>,
    ) -> Result<Result<usize, usize>> {
        self.keys
            .search_est(self.kregion(page), self.count, probe, est)
            .map_err(|f| self.err(f))
    }

    /// The largest key of a node, `None` when it is empty (O(1) for compressed leaves too).
    pub fn last_key<'p>(&self, page: &'p [u8]) -> Result<Option<Key<'p>>> {
        if self.keys.packed().is_some() {
            return Ok(Packed::last_key(self.kregion(page))
                .map_err(|f| self.err(f))?
                .map(Key::U32));
        }
        if self.count == 0 {
            return Ok(None);
        }
        self.key(page, self.count - 1).map(Some)
    }

    /// The child to descend into for `probe` (branches only).
    #[inline]
    pub fn child_index(&self, page: &[u8], probe: &Key<'_>) -> Result<usize> {
        Ok(match self.search(page, probe)? {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    }

    /// Child `i` of a branch (`0..=count`).
    pub fn child(&self, page: &[u8], i: usize) -> Result<PageId> {
        let id = if i == 0 {
            le_u64(&page[OFF_CHILD0..])
        } else {
            le_u64(self.record_raw(page, i - 1)?)
        };
        if id < 2 {
            return Err(corrupt(self.id, format!("child pointer {i} is {id}")));
        }
        Ok(id)
    }

    /// Bytes used by both lists.
    pub fn used(&self, page: &[u8]) -> Result<usize> {
        let k = self
            .keys
            .used(self.kregion(page), self.count)
            .map_err(|f| self.err(f))?;
        let r = self
            .recs
            .used(self.rregion(page), self.count)
            .map_err(|f| self.err(f))?;
        Ok(k + r)
    }

    /// Bytes available to both lists together.
    pub fn capacity(&self) -> usize {
        self.psize - self.hdr
    }

    pub fn free(&self, page: &[u8]) -> Result<usize> {
        Ok(self.capacity() - self.used(page)?)
    }
}

fn key_weight(keys: KeyList) -> usize {
    match keys {
        KeyList::U32 => 4,
        KeyList::U64 => 8,
        KeyList::Fixed(w) => w,
        KeyList::Var | KeyList::Str(_) => 18,
        KeyList::Packed(_) => 1,
    }
}

/// Record region size for a node whose lists use `ku` and `ru` bytes: the records get their
/// bytes plus a share of the free space proportional to a nominal entry.
fn rrange_for(keys: KeyList, recs: RecordList, capacity: usize, ku: usize, ru: usize) -> usize {
    let rw = recs.weight();
    if rw == 0 {
        return 0;
    }
    let free = capacity - ku - ru;
    ru + free * rw / (rw + key_weight(keys))
}

fn write_rrange(page: &mut [u8], rrange: usize) {
    page[OFF_RRANGE..OFF_RRANGE + 2].copy_from_slice(&(rrange as u16).to_le_bytes());
}

fn write_count(page: &mut [u8], count: usize) {
    page[OFF_COUNT..OFF_COUNT + 4].copy_from_slice(&(count as u32).to_le_bytes());
}

/// Makes `page` an empty node.
pub fn init(page: &mut [u8], spec: &Spec, leaf: bool, child0: PageId) {
    let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
    page[PAGE_KIND_OFFSET..hdr].fill(0);
    page[PAGE_KIND_OFFSET] = if leaf {
        PageKind::Leaf as u8
    } else {
        PageKind::Branch as u8
    };
    page[OFF_KLIST] = spec.keys(leaf).id();
    if spec.keys(leaf).packed().is_some() {
        Packed::init(&mut page[hdr..]);
    }
    if let Some(s) = spec.keys(leaf).str_list() {
        s.init(&mut page[hdr..]);
    }
    let cap = spec.page_size - hdr;
    write_rrange(
        page,
        rrange_for(spec.keys(leaf), spec.records(leaf), cap, 0, 0),
    );
    write_count(page, 0);
    if !leaf {
        set_child0(page, child0);
    }
}

fn set_child0(page: &mut [u8], id: PageId) {
    page[OFF_CHILD0..OFF_CHILD0 + 8].copy_from_slice(&id.to_le_bytes());
}

/// Sets child `i` of the branch in `page`.
pub fn set_child(page: &mut [u8], l: &Layout, i: usize, id: PageId) -> Result<()> {
    if i == 0 {
        set_child0(page, id);
        Ok(())
    } else {
        let rs = l.rstart;
        l.recs
            .set_fixed(&mut page[rs..], i - 1, &id.to_le_bytes())
            .map_err(|f| l.err(f))
    }
}

/// Inserts an entry at `i` (for branches: separator `i` with right child `rec`). Returns false,
/// changing nothing, when the node has no room even after moving the region boundary.
pub fn insert(page: &mut [u8], l: &mut Layout, i: usize, key: &[u8], rec: &[u8]) -> Result<bool> {
    if let Some(p) = l.keys.packed() {
        return insert_packed(page, l, p, i, key, rec);
    }
    let n = l.count;
    if i > n {
        return Err(corrupt(l.id, "insert position out of range"));
    }
    let ku = l.keys.used(l.kregion(page), n).map_err(|f| l.err(f))?;
    let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
    let kc = l.keys.cost(key.len());
    let rc = l.recs.cost(rec.len());
    if ku + kc > l.rstart - l.hdr || ru + rc > l.psize - l.rstart {
        if ku + kc + ru + rc > l.capacity() {
            return Ok(false);
        }
        let rrange = rrange_for(l.keys, l.recs, l.capacity(), ku + kc, ru + rc);
        let new_rstart = l.psize - rrange;
        page.copy_within(l.rstart..l.rstart + ru, new_rstart);
        write_rrange(page, rrange);
        l.rstart = new_rstart;
    }
    let (hdr, rs) = (l.hdr, l.rstart);
    l.keys
        .insert(&mut page[hdr..rs], n, i, key)
        .map_err(|f| l.err(f))?;
    l.recs
        .insert(&mut page[rs..], n, i, rec)
        .map_err(|f| l.err(f))?;
    l.count = n + 1;
    write_count(page, l.count);
    Ok(true)
}

/// Moves the KeyList/RecordList boundary so the record region has `rrange` bytes; the caller
/// made sure both lists fit (`ku <= P - hdr - rrange`, `ru <= rrange`).
fn move_boundary(page: &mut [u8], l: &mut Layout, ru: usize, rrange: usize) {
    let new_rstart = l.psize - rrange;
    page.copy_within(l.rstart..l.rstart + ru, new_rstart);
    write_rrange(page, rrange);
    l.rstart = new_rstart;
}

/// Insert into a leaf with a compressed KeyList: try; when the KeyList has no room, vacuumize
/// it and retry, then move the boundary to the RecordList and retry; false (nothing changed but
/// a repack) when the node is full.
fn insert_packed(
    page: &mut [u8],
    l: &mut Layout,
    p: Packed,
    i: usize,
    key: &[u8],
    rec: &[u8],
) -> Result<bool> {
    if key.len() != 4 {
        return Err(corrupt(
            l.id,
            "compressed key list given a key that is not a u32",
        ));
    }
    let k = le_u32(key);
    let n = l.count;
    let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
    let rc = l.recs.cost(rec.len());
    let cap = l.capacity();
    let mut vacuumized = false;
    for _ in 0..4 {
        let ku = Packed::used(l.kregion(page)).map_err(|f| l.err(f))?;
        if ru + rc > l.psize - l.rstart {
            // The records need room first.
            if ku + ru + rc > cap {
                if !vacuumized && vacuum(page, l, p)? {
                    vacuumized = true;
                    continue;
                }
                return Ok(false);
            }
            let rrange = rrange_for(l.keys, l.recs, cap, ku, ru + rc);
            move_boundary(page, l, ru, rrange);
        }
        let (hdr, rs) = (l.hdr, l.rstart);
        match p.insert(&mut page[hdr..rs], n, k).map_err(|f| l.err(f))? {
            Ins::Inserted(slot) => {
                if slot != i {
                    return Err(corrupt(l.id, "compressed key list disagrees on a slot"));
                }
                l.recs
                    .insert(&mut page[rs..], n, i, rec)
                    .map_err(|f| l.err(f))?;
                l.count = n + 1;
                write_count(page, l.count);
                return Ok(true);
            }
            Ins::Exists(_) => return Err(corrupt(l.id, "inserting a key that is present")),
            Ins::NoRoom(need) => {
                if !vacuumized {
                    vacuumized = true;
                    if vacuum(page, l, p)? {
                        continue;
                    }
                }
                if need + ru + rc <= cap && l.psize - l.rstart > ru + rc {
                    // Give the KeyList what it needs, the records their bytes plus a share.
                    let rrange = rrange_for(l.keys, l.recs, cap, need, ru + rc);
                    move_boundary(page, l, ru, rrange);
                    continue;
                }
                return Ok(false);
            }
        }
    }
    Ok(false)
}

/// Vacuumizes a compressed KeyList; true when bytes were freed.
fn vacuum(page: &mut [u8], l: &Layout, p: Packed) -> Result<bool> {
    let (hdr, rs) = (l.hdr, l.rstart);
    Ok(p.vacuumize(&mut page[hdr..rs]).map_err(|f| l.err(f))? > 0)
}

/// Removes entry `i` of a leaf with a compressed KeyList. False (nothing changed but a repack)
/// when the block would grow (BP128 and the other packed codecs) and the node has no room.
fn remove_packed(page: &mut [u8], l: &mut Layout, p: Packed, i: usize) -> Result<bool> {
    let n = l.count;
    if i >= n {
        return Err(corrupt(l.id, "remove position out of range"));
    }
    let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
    let mut vacuumized = false;
    for _ in 0..3 {
        let (hdr, rs) = (l.hdr, l.rstart);
        match p.remove(&mut page[hdr..rs], i).map_err(|f| l.err(f))? {
            None => {
                l.recs.remove(&mut page[rs..], n, i).map_err(|f| l.err(f))?;
                l.count = n - 1;
                write_count(page, l.count);
                return Ok(true);
            }
            Some(need) => {
                if !vacuumized {
                    vacuumized = true;
                    if vacuum(page, l, p)? {
                        continue;
                    }
                }
                if need + ru <= l.capacity() {
                    let rrange = rrange_for(l.keys, l.recs, l.capacity(), need, ru);
                    move_boundary(page, l, ru, rrange);
                    continue;
                }
                return Ok(false);
            }
        }
    }
    Ok(false)
}

/// Replaces the stored record of entry `i` (a leaf), moving the region boundary when needed.
/// False, changing nothing, when the node has no room.
pub fn set_record(page: &mut [u8], l: &mut Layout, i: usize, rec: &[u8]) -> Result<bool> {
    let n = l.count;
    let ku = l.keys.used(l.kregion(page), n).map_err(|f| l.err(f))?;
    let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
    let old = l.record_raw(page, i)?.len();
    let ru2 = ru - l.recs.cost(old) + l.recs.cost(rec.len());
    if ru2 > l.psize - l.rstart {
        if ku + ru2 > l.capacity() {
            return Ok(false);
        }
        let rrange = rrange_for(l.keys, l.recs, l.capacity(), ku, ru2);
        move_boundary(page, l, ru, rrange);
    }
    let rs = l.rstart;
    l.recs.remove(&mut page[rs..], n, i).map_err(|f| l.err(f))?;
    l.recs
        .insert(&mut page[rs..], n - 1, i, rec)
        .map_err(|f| l.err(f))?;
    Ok(true)
}

/// Regroups a DB2 prefix-group KeyList when that makes it smaller (DB2 optimizes a page's
/// prefixes when it is nearly full). True when bytes were freed.
pub fn reorganize(page: &mut [u8], l: &Layout, spec: &Spec) -> Result<bool> {
    let Some(super::strkeys::StrList::Db2(cap)) = l.keys.str_list() else {
        return Ok(false);
    };
    let img = super::db2::optimize(l.kregion(page), l.count, cap as usize).map_err(|f| l.err(f))?;
    match img {
        Some(img) => {
            page[l.hdr..l.hdr + img.len()].copy_from_slice(&img);
            // The image must describe the same keys.
            Layout::read(page, l.id, spec)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Removes entry `i` (for branches: separator `i` and child `i + 1`). False, changing nothing
/// (but a repack), only for a compressed leaf without room for a block that grows.
pub fn remove(page: &mut [u8], l: &mut Layout, i: usize) -> Result<bool> {
    if let Some(p) = l.keys.packed() {
        return remove_packed(page, l, p, i);
    }
    let n = l.count;
    let (hdr, rs) = (l.hdr, l.rstart);
    l.keys
        .remove(&mut page[hdr..rs], n, i)
        .map_err(|f| l.err(f))?;
    l.recs.remove(&mut page[rs..], n, i).map_err(|f| l.err(f))?;
    l.count = n - 1;
    write_count(page, l.count);
    Ok(true)
}

/// Entries copied out of nodes, for rebuilding (splits, merges).
#[derive(Default, Debug)]
pub struct Entries {
    buf: Vec<u8>,
    /// (key start, record start = key end, record end) in `buf`.
    items: Vec<(usize, usize, usize)>,
    /// What each key took in its string-key list (one per item; bytes 0 when not known).
    shares: Vec<KeyShare>,
    /// The next unused DB2 group number.
    groups: u32,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn push(&mut self, key: &[u8], rec: &[u8]) {
        let a = self.buf.len();
        self.buf.extend_from_slice(key);
        let b = self.buf.len();
        self.buf.extend_from_slice(rec);
        self.items.push((a, b, self.buf.len()));
        self.shares.push(KeyShare {
            group: self.groups,
            ..KeyShare::default()
        });
        self.groups = self.groups.wrapping_add(1);
    }
    /// The [`KeyShare`]s of entries `range`.
    pub fn shares(&self, range: std::ops::Range<usize>) -> &[KeyShare] {
        &self.shares[range]
    }
    pub fn key(&self, i: usize) -> &[u8] {
        let (a, b, _) = self.items[i];
        &self.buf[a..b]
    }
    pub fn rec(&self, i: usize) -> &[u8] {
        let (_, b, c) = self.items[i];
        &self.buf[b..c]
    }
    /// Appends every entry of the node.
    pub fn extend_from(&mut self, page: &[u8], l: &Layout) -> Result<()> {
        self.items.reserve(l.count);
        if let Some(p) = l.keys.packed() {
            let mut keys = Vec::with_capacity(l.count);
            p.decode_all(l.kregion(page), &mut keys)
                .map_err(|f| l.err(f))?;
            if keys.len() != l.count {
                return Err(corrupt(l.id, "block key counts disagree with the node's"));
            }
            for (i, k) in keys.iter().enumerate() {
                let r = l.record_raw(page, i)?;
                self.push(&k.to_le_bytes(), r);
            }
            return Ok(());
        }
        if let (Some(s), false) = (l.keys.str_list(), l.keys.contiguous()) {
            let mut keys = Vec::with_capacity(l.count);
            s.for_each(l.kregion(page), l.count, |k| {
                keys.push(k.to_vec());
                Ok(())
            })
            .map_err(|f| l.err(f))?;
            for (i, k) in keys.iter().enumerate() {
                let r = l.record_raw(page, i)?;
                self.push(k, r);
            }
        } else {
            for i in 0..l.count {
                let k = l.key_raw(page, i)?;
                let r = l.record_raw(page, i)?;
                self.push(k, r);
            }
        }
        if let Some(s) = l.keys.str_list() {
            // Splits measure what the keys really take; DB2 rebuilds may keep their groups.
            let at = self.shares.len() - l.count;
            self.shares.truncate(at);
            s.shares(l.kregion(page), l.count, self.groups, &mut self.shares)
                .map_err(|f| l.err(f))?;
            self.groups = self.groups.wrapping_add(l.count as u32);
        }
        Ok(())
    }
    /// Bytes entries `range` take in a node of this kind: what string keys took in the node
    /// they come from, else the key list's cost.
    pub fn cost(&self, keys: KeyList, recs: RecordList, range: std::ops::Range<usize>) -> usize {
        range
            .map(|i| {
                let (a, b, c) = self.items[i];
                let k = match self.shares[i].bytes {
                    0 => keys.cost(b - a),
                    s => s as usize,
                };
                k + recs.cost(c - b)
            })
            .sum()
    }
}

/// Rewrites `page` as a node holding entries `range` of `e` (and `child0` for branches).
pub fn build(
    page: &mut [u8],
    id: PageId,
    spec: &Spec,
    leaf: bool,
    child0: PageId,
    e: &Entries,
    range: std::ops::Range<usize>,
) -> Result<()> {
    build_with(page, id, spec, leaf, child0, e, range, &[])
}

/// `build` for a node whose fence keys share `prefix` (the head prefix of head compression).
#[allow(clippy::too_many_arguments)]
pub fn build_with(
    page: &mut [u8],
    id: PageId,
    spec: &Spec,
    leaf: bool,
    child0: PageId,
    e: &Entries,
    range: std::ops::Range<usize>,
    prefix: &[u8],
) -> Result<()> {
    let keys = spec.keys(leaf);
    if let Some(s) = keys.str_list() {
        let ks: Vec<&[u8]> = range.clone().map(|i| e.key(i)).collect();
        let mut img = Vec::new();
        s.build_keeping(&ks, e.shares(range.clone()), prefix, &mut img)
            .map_err(|f| corrupt(id, f.0))?;
        return build_image(page, id, spec, leaf, child0, &img, range.map(|i| e.rec(i)));
    }
    let recs = spec.records(leaf);
    let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
    let cap = spec.page_size - hdr;
    if let Some(p) = keys.packed() {
        let ks: Vec<u32> = range.clone().map(|i| le_u32(e.key(i))).collect();
        let mut img = vec![0u8; cap];
        if !p.build(&mut img, &ks).map_err(|f| corrupt(id, f.0))? {
            return Err(corrupt(id, "rebuilt node does not fit its page"));
        }
        let ku = Packed::used(&img).map_err(|f| corrupt(id, f.0))?;
        img.truncate(ku);
        let recs_iter = range.map(|i| e.rec(i));
        return build_packed(page, id, spec, &img, recs_iter);
    }
    let mut ku = 0;
    let mut ru = 0;
    for i in range.clone() {
        let (a, b, c) = e.items[i];
        ku += keys.cost(b - a);
        ru += recs.cost(c - b);
    }
    if ku + ru > cap {
        return Err(corrupt(id, "rebuilt node does not fit its page"));
    }
    init(page, spec, leaf, child0);
    write_rrange(page, rrange_for(keys, recs, cap, ku, ru));
    let mut l = Layout::read(page, id, spec)?;
    for i in range {
        let n = l.count;
        if !insert(page, &mut l, n, e.key(i), e.rec(i))? {
            return Err(corrupt(id, "rebuilt node does not fit its page"));
        }
    }
    Ok(())
}

/// Rewrites `page` as a compressed leaf whose KeyList is the list image `img` and whose records
/// are `recs` (one per key, in order).
pub fn build_packed<'r>(
    page: &mut [u8],
    id: PageId,
    spec: &Spec,
    img: &[u8],
    recs: impl Iterator<Item = &'r [u8]> + Clone,
) -> Result<()> {
    build_image(page, id, spec, true, 0, img, recs)?;
    let l = Layout::read(page, id, spec)?;
    let region = l.kregion(page);
    let nb = Packed::blocks(region).map_err(|f| l.err(f))?;
    // The slot base past the last block is the number of keys in the blocks.
    let total = Packed::block_slots(region, nb).map_err(|f| l.err(f))?.0;
    if total != l.count {
        return Err(corrupt(id, "rebuilt node has keys without records"));
    }
    Ok(())
}

/// Rewrites `page` as a node whose KeyList is the image `img` and whose records are `recs`
/// (one per key, in order; child ids for branches, with `child0`).
pub fn build_image<'r>(
    page: &mut [u8],
    id: PageId,
    spec: &Spec,
    leaf: bool,
    child0: PageId,
    img: &[u8],
    recs: impl Iterator<Item = &'r [u8]> + Clone,
) -> Result<()> {
    let rl = spec.records(leaf);
    let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
    let cap = spec.page_size - hdr;
    let ru: usize = recs.clone().map(|r| rl.cost(r.len())).sum();
    if img.len() + ru > cap {
        return Err(corrupt(id, "rebuilt node does not fit its page"));
    }
    init(page, spec, leaf, child0);
    page[hdr..hdr + img.len()].copy_from_slice(img);
    let rrange = rrange_for(spec.keys(leaf), rl, cap, img.len(), ru);
    write_rrange(page, rrange);
    let rs = spec.page_size - rrange;
    let mut n = 0;
    for r in recs {
        rl.insert(&mut page[rs..], n, n, r)
            .map_err(|f| corrupt(id, f.0))?;
        n += 1;
    }
    write_count(page, n);
    // The image must hold exactly `n` keys.
    Layout::read(page, id, spec)?;
    Ok(())
}

/// A description of one node for debugging (`tersedb dump`).
pub fn describe(page: &[u8], id: PageId, spec: &Spec, max_entries: usize) -> Result<String> {
    use std::fmt::Write;
    let l = Layout::read(page, id, spec)?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "page {id}: {} with {} keys, {} of {} bytes used, record region at {}",
        if l.leaf { "leaf" } else { "branch" },
        l.count,
        l.used(page)?,
        l.capacity(),
        l.rstart
    );
    if !l.leaf {
        let _ = writeln!(s, "  child {}", l.child(page, 0)?);
    }
    if let Some(p) = l.keys.packed() {
        let kr = l.kregion(page);
        let nb = Packed::blocks(kr).map_err(|f| l.err(f))?;
        let _ = writeln!(
            s,
            "  {} key list: {nb} blocks of up to {} keys, {} bytes",
            p.codec.name(),
            p.block_keys,
            Packed::used(kr).map_err(|f| l.err(f))?
        );
        for b in 0..nb.min(max_entries) {
            let blk = Packed::block(kr, b).map_err(|f| l.err(f))?;
            let _ = writeln!(
                s,
                "  block {b}: {} keys {}..={} in {} bytes, b = {}",
                blk.desc.count,
                blk.first,
                blk.last,
                blk.at.len(),
                blk.desc.bits
            );
        }
        if nb > max_entries {
            let _ = writeln!(s, "  ... {} more blocks", nb - max_entries);
        }
    }
    if let Some(sl) = l.keys.str_list() {
        let p = sl.prefix(l.kregion(page)).map_err(|f| l.err(f))?;
        let _ = writeln!(
            s,
            "  {:?} key list, {} bytes, head prefix {}",
            sl,
            l.keys
                .used(l.kregion(page), l.count)
                .map_err(|f| l.err(f))?,
            super::KeyBuf::Bytes(p.to_vec())
        );
        if let super::strkeys::StrList::Db2(_) = sl {
            let g = super::db2::groups(l.kregion(page), l.count).map_err(|f| l.err(f))?;
            let _ = writeln!(s, "  {g} prefix groups");
        }
    }
    for i in 0..l.count.min(max_entries) {
        let k = l.key_owned(page, i)?;
        if l.leaf {
            let r = l.record_raw(page, i)?;
            let _ = writeln!(s, "  [{i}] {k} -> {} stored record bytes", r.len());
        } else {
            let _ = writeln!(s, "  [{i}] {k} | child {}", l.child(page, i + 1)?);
        }
    }
    if l.count > max_entries {
        let _ = writeln!(s, "  ... {} more", l.count - max_entries);
    }
    Ok(s)
}
