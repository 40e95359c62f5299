//! One node (leaf or branch) in a page: header parsing, reads, in-place inserts and removes,
//! moving the KeyList/RecordList boundary, and rebuilding a node from a list of entries (splits
//! and merges). See the module docs of `btree` for the byte layout.

use super::keys::Fit;
use super::records::{Rec, RecChange};
use super::slots::{le_u64_at, put, Fault, Repack};
use super::strkeys::KeyShare;
use super::{Key, KeyList, RecordList, Spec, BRANCH_HEADER, LEAF_HEADER};
use crate::error::{Error, PageId, Result};
use crate::storage::{PageBuf, PageKind, PAGE_KIND_OFFSET};

const OFF_KLIST: usize = 9;
const OFF_RRANGE: usize = 10;
const OFF_COUNT: usize = 12;
const OFF_CHILD0: usize = 16;

#[cold]
fn bad_child(page: PageId, i: usize, id: PageId) -> Error {
    corrupt(page, format!("child pointer {i} is {id}"))
}

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

/// The fields of the header every node starts with, `[8 kind][9 keylist id][10..12 rrange]
/// [12..16 count]`, read as one array (`Layout::read` and the append lane's lean read).
struct NodeHeader {
    kind: u8,
    klist: u8,
    rrange: usize,
    count: usize,
}

impl NodeHeader {
    /// The header of `page`, `None` unless the page is `psize` bytes long.
    #[inline(always)]
    fn of(page: &[u8], psize: usize) -> Option<NodeHeader> {
        match (page.first_chunk::<16>(), page.len() == psize) {
            (Some(&[_, _, _, _, _, _, _, _, kind, klist, r0, r1, c0, c1, c2, c3]), true) => {
                Some(NodeHeader {
                    kind,
                    klist,
                    rrange: u16::from_le_bytes([r0, r1]) as usize,
                    count: u32::from_le_bytes([c0, c1, c2, c3]) as usize,
                })
            }
            _ => None,
        }
    }
}

impl Layout {
    /// Parses and checks a node header: kind, KeyList id, region bounds, list lengths.
    pub fn read(page: &[u8], id: PageId, spec: &Spec) -> Result<Layout> {
        Layout::read_in(page, id, spec)
    }

    /// [`Layout::read`]'s body, inlined into the lookups' descent ([`Layout::open_inline`]).
    #[inline(always)]
    fn read_in(page: &[u8], id: PageId, spec: &Spec) -> Result<Layout> {
        let psize = spec.page_size;
        let Some(NodeHeader {
            kind,
            klist,
            rrange,
            count,
        }) = NodeHeader::of(page, psize)
        else {
            return Err(corrupt(id, "page has the wrong size"));
        };
        let leaf = match PageKind::from_u8(kind) {
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
        if klist != keys.id() {
            return Err(corrupt(
                id,
                format!(
                    "key list id {} does not match the database's ({})",
                    klist,
                    keys.id()
                ),
            ));
        }
        let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
        if hdr + rrange > psize {
            return Err(corrupt(id, "record region larger than the page"));
        }
        // Checked before the layout is built, so that it is built once, in the caller's slot.
        let rstart = psize - rrange;
        let recs = spec.records(leaf);
        let fault = |f: Fault| corrupt(id, f.0);
        keys.used(page.get(hdr..rstart).unwrap_or_default(), count)
            .map_err(fault)?;
        if recs.holds_values() {
            recs.used(page.get(rstart..).unwrap_or_default(), count)
                .map_err(fault)?;
        }
        Ok(Layout {
            id,
            leaf,
            count,
            hdr,
            rstart,
            psize,
            keys,
            recs,
        })
    }

    /// [`Layout::read`] for the read paths: the first read of a page buffer also proves what
    /// reads trust in its lists ([`KeyList::prove`]) and marks the buffer (the bytes of a
    /// shared page never change: `crate::storage::PageBuf`), so each page is proven once
    /// while it stays cached, not at every read.
    ///
    /// Always inlined, the proof first and out of line, the layout returned straight from
    /// [`Layout::read`]: a layout moved through one more frame cost 45-69 instructions per
    /// node read of a lookup (callgrind).
    #[inline(always)]
    pub fn open(page: &PageBuf, id: PageId, spec: &Spec) -> Result<Layout> {
        if !page.proven() {
            Layout::prove(page, id, spec)?;
        }
        Layout::read(page, id, spec)
    }

    /// [`Layout::open`] with the header read inlined: for the point lookups' descent
    /// (`tree::find`), where the layout returned through `read`'s frame cost ~35 instructions
    /// per node (callgrind).
    #[inline(always)]
    pub fn open_inline(page: &PageBuf, id: PageId, spec: &Spec) -> Result<Layout> {
        if !page.proven() {
            Layout::prove(page, id, spec)?;
        }
        Layout::read_in(page, id, spec)
    }

    /// The proof of [`Layout::open`], marking the buffer once it holds.
    #[cold]
    #[inline(never)]
    fn prove(page: &PageBuf, id: PageId, spec: &Spec) -> Result<()> {
        let l = Layout::read(page, id, spec)?;
        l.keys
            .prove(l.kregion(page), l.count)
            .map_err(|f| l.err(f))?;
        page.set_proven();
        Ok(())
    }

    pub fn err(&self, f: Fault) -> Error {
        corrupt(self.id, f.0)
    }

    // The two hottest accessors of the tree (every search and read): `read` checked
    // hdr <= rstart <= the page's length. Indexing here took 0.7% fewer lookup instructions
    // than `get(..).unwrap_or_default()` (callgrind, `tersedb bench --keys 200000`).
    #[inline]
    #[allow(clippy::indexing_slicing)]
    pub fn kregion<'p>(&self, page: &'p [u8]) -> &'p [u8] {
        &page[self.hdr..self.rstart]
    }
    #[inline]
    #[allow(clippy::indexing_slicing)]
    pub fn rregion<'p>(&self, page: &'p [u8]) -> &'p [u8] {
        &page[self.rstart..]
    }

    #[inline]
    pub fn key<'p>(&self, page: &'p [u8], i: usize) -> Result<Key<'p>> {
        self.keys
            .key(self.kregion(page), self.count, i)
            .map_err(|f| self.err(f))
    }
    /// Integer key `i` ([`KeyList::int_key`]).
    #[inline]
    pub fn int_key(&self, page: &[u8], i: usize) -> Result<u64> {
        self.keys
            .int_key(self.kregion(page), self.count, i)
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
    pub fn record_raw<'p>(&self, page: &'p [u8], i: usize) -> Result<Rec<'p>> {
        self.recs
            .get(self.rregion(page), self.count, i)
            .map_err(|f| self.err(f))
    }
    /// `record_raw` for reads in order (see [`RecordList::get_hinted`]).
    #[inline]
    pub fn record_hinted<'p>(
        &self,
        page: &'p [u8],
        i: usize,
        hint: &super::records::RecHint,
    ) -> Result<Rec<'p>> {
        self.recs
            .get_hinted(self.rregion(page), self.count, i, hint)
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
        self.keys
            .last_key(self.kregion(page), self.count)
            .map_err(|f| self.err(f))
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
    #[inline]
    pub fn child(&self, page: &[u8], i: usize) -> Result<PageId> {
        // A branch's records are its child ids (`Spec::records(false)`), read in place by the
        // record list (-17 instructions per level of a lookup against a `Rec`, callgrind).
        let id = match i.checked_sub(1) {
            None => le_u64_at(page, OFF_CHILD0),
            Some(j) => self
                .recs
                .u64_at(self.rregion(page), self.count, j)
                .map_err(|f| self.err(f))?,
        };
        if id < 2 {
            return Err(bad_child(self.id, i, id));
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

/// Record region size for a node whose lists use `ku` and `ru` bytes: the records get their
/// bytes plus a share of the free space proportional to a nominal entry.
fn rrange_for(keys: KeyList, recs: RecordList, capacity: usize, ku: usize, ru: usize) -> usize {
    let rw = recs.weight();
    if rw == 0 {
        return 0;
    }
    let free = capacity - ku - ru;
    ru + free * rw / (rw + keys.weight())
}

// Header writes: every page is longer than a node header, so these always land.
fn write_rrange(page: &mut [u8], rrange: usize) {
    put(page, OFF_RRANGE, &(rrange as u16).to_le_bytes());
}

fn write_count(page: &mut [u8], count: usize) {
    put(page, OFF_COUNT, &(count as u32).to_le_bytes());
}

/// The bytes `range` of a node's page, for a list to change (its layout was checked by
/// [`Layout::read`], so they are always there).
fn region_mut<'p>(
    page: &'p mut [u8],
    l: &Layout,
    range: std::ops::Range<usize>,
) -> Result<&'p mut [u8]> {
    page.get_mut(range)
        .ok_or_else(|| l.err(Fault("node region outside its page")))
}

/// Whether `page` says it is a leaf (its kind byte only: [`Layout::read`] checks the rest).
#[inline]
pub fn is_leaf(page: &[u8]) -> bool {
    page.get(PAGE_KIND_OFFSET) == Some(&(PageKind::Leaf as u8))
}

/// Makes `page` an empty node.
pub fn init(page: &mut [u8], spec: &Spec, leaf: bool, child0: PageId) {
    let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
    if let Some(h) = page.get_mut(PAGE_KIND_OFFSET..hdr) {
        h.fill(0);
    }
    let kind = if leaf {
        PageKind::Leaf as u8
    } else {
        PageKind::Branch as u8
    };
    put(page, PAGE_KIND_OFFSET, &[kind, spec.keys(leaf).id()]);
    if let Some(region) = page.get_mut(hdr..) {
        spec.keys(leaf).init(region);
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
    put(page, OFF_CHILD0, &id.to_le_bytes());
}

/// Sets child `i` of the branch in `page`.
pub fn set_child(page: &mut [u8], l: &Layout, i: usize, id: PageId) -> Result<()> {
    if i == 0 {
        set_child0(page, id);
        Ok(())
    } else {
        let rs = l.rstart;
        l.recs
            .set_fixed(region_mut(page, l, rs..l.psize)?, i - 1, &id.to_le_bytes())
            .map_err(|f| l.err(f))
    }
}

/// Inserts an entry at `i` (for branches: separator `i` with right child `rec`). When the
/// KeyList has no room it is vacuumized and retried, then the KeyList/RecordList boundary moves;
/// returns false, changing nothing but a repack, when the node is full.
pub fn insert(page: &mut [u8], l: &mut Layout, i: usize, key: &[u8], rec: &[u8]) -> Result<bool> {
    let n = l.count;
    if i > n {
        return Err(corrupt(l.id, "insert position out of range"));
    }
    if !l.recs.holds_values() {
        return insert_key(page, l, i, key);
    }
    let cap = l.capacity();
    let how = repack_for(n, i);
    let mut vacuumized = false;
    for _ in 0..4 {
        // Measured each round: a vacuum may have repacked the records.
        let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
        let (after, plan) = l
            .recs
            .plan(l.rregion(page), n, i, rec, RecChange::Insert)
            .map_err(|f| l.err(f))?;
        let rc = after.saturating_sub(ru);
        if ru + rc > l.psize - l.rstart {
            // The records need room first.
            let ku = l.keys.used(l.kregion(page), n).map_err(|f| l.err(f))?;
            let kc = l.keys.cost(key.len());
            if ku + ru + rc > cap {
                if !vacuumized {
                    vacuumized = true;
                    if vacuum(page, l, how)? >= min_gain(l) {
                        continue;
                    }
                }
                return Ok(false);
            }
            // Give both lists room when the keys' share allows (plain lists: this insert).
            let ku = if ku + kc + ru + rc <= cap {
                ku + kc
            } else {
                ku
            };
            let rrange = rrange_for(l.keys, l.recs, cap, ku, ru + rc);
            move_boundary(page, l, ru, rrange);
        }
        let (hdr, rs) = (l.hdr, l.rstart);
        match l
            .keys
            .insert_at(region_mut(page, l, hdr..rs)?, n, i, key)
            .map_err(|f| l.err(f))?
        {
            Fit::Done => {
                l.recs
                    .apply(region_mut(page, l, rs..l.psize)?, n, i, rec, &plan)
                    .map_err(|f| l.err(f))?;
                l.count = n + 1;
                write_count(page, l.count);
                return Ok(true);
            }
            Fit::NoRoom(need) => {
                let gain = min_gain(l);
                if make_room(page, l, need, ru, ru + rc, &mut vacuumized, gain, how)? {
                    continue;
                }
                return Ok(false);
            }
        }
    }
    Ok(false)
}

/// Appends `key` (stored bytes) past the last key of a key-only node when its key list does so
/// in place (see [`KeyList::append_in_place`]): `Some(true)` done, `Some(false)` the key is not
/// above the node's last key, `None` (nothing changed) when [`Layout::above_last`] and
/// [`insert`] must decide.
pub fn append_key(page: &mut [u8], l: &mut Layout, key: &[u8]) -> Result<Option<bool>> {
    if l.recs.holds_values() {
        return Ok(None);
    }
    let (hdr, rs) = (l.hdr, l.rstart);
    let r = l
        .keys
        .append_in_place(region_mut(page, l, hdr..rs)?, l.count, key)
        .map_err(|f| l.err(f))?;
    if r == Some(true) {
        l.count += 1;
        write_count(page, l.count);
    }
    Ok(r)
}

/// [`append_key`] for the bulk-load lane (`tree::append_hinted`), on a page whose [`Layout`]
/// is not built: it reads only the header fields an append needs (kind, key list id, record
/// region, count), where building the whole layout was a tenth of an appended key's
/// instructions (issue 21). True when `key` was appended; false, nothing changed, when the
/// general put must decide (not a key-only leaf of `spec`, a header it would refuse, or the
/// list's own `None`/`Some(false)`), so the general put's full checks still see every page.
pub fn append_key_lean(page: &mut [u8], id: PageId, spec: &Spec, key: &[u8]) -> Result<bool> {
    let psize = spec.page_size;
    let Some(NodeHeader {
        kind,
        klist,
        rrange,
        count,
    }) = NodeHeader::of(page, psize)
    else {
        return Ok(false);
    };
    let keys = spec.keys(true);
    if kind != PageKind::Leaf as u8 || klist != keys.id() || spec.recs.holds_values() {
        return Ok(false);
    }
    let Some(region) = psize
        .checked_sub(rrange)
        .and_then(|rstart| page.get_mut(LEAF_HEADER..rstart))
    else {
        return Ok(false);
    };
    let done = keys
        .append_in_place(region, count, key)
        .map_err(|f| corrupt(id, f.0))?
        == Some(true);
    if done {
        write_count(page, count + 1);
    }
    Ok(done)
}

/// [`insert`] into a key-only node: its record region is empty, so there is nothing to plan,
/// move or write on that side. A loop of its own: folding it into `insert` with the record
/// steps made optional cost inserts 4.8% more instructions (callgrind, `tersedb bench --codecs
/// none,bp128 --keys 200000`: 586.4M -> 614.6M).
fn insert_key(page: &mut [u8], l: &mut Layout, i: usize, key: &[u8]) -> Result<bool> {
    let n = l.count;
    let how = repack_for(n, i);
    let mut vacuumized = false;
    for _ in 0..4 {
        let (hdr, rs) = (l.hdr, l.rstart);
        match l
            .keys
            .insert_at(region_mut(page, l, hdr..rs)?, n, i, key)
            .map_err(|f| l.err(f))?
        {
            Fit::Done => {
                l.count = n + 1;
                write_count(page, l.count);
                return Ok(true);
            }
            Fit::NoRoom(need) => {
                let gain = min_gain(l);
                if make_room(page, l, need, 0, 0, &mut vacuumized, gain, how)? {
                    continue;
                }
                return Ok(false);
            }
        }
    }
    Ok(false)
}

/// The vacuum an insert at `i` of `n` entries asks for when the node has no room: past the last
/// key, [`Repack::Append`].
fn repack_for(n: usize, i: usize) -> Repack {
    if i == n {
        Repack::Append
    } else {
        Repack::Spare
    }
}

/// Moves the KeyList/RecordList boundary so the record region has `rrange` bytes; the caller
/// made sure both lists fit (`ku <= P - hdr - rrange`, `ru <= rrange`).
fn move_boundary(page: &mut [u8], l: &mut Layout, ru: usize, rrange: usize) {
    let new_rstart = l.psize - rrange;
    page.copy_within(l.rstart..l.rstart + ru, new_rstart);
    write_rrange(page, rrange);
    l.rstart = new_rstart;
}

/// After the KeyList said it needs `need` bytes in all: moves the boundary so the KeyList gets
/// `need` and the records (`ru` used, `rneed` wanted) their bytes plus a share when the node has
/// that room, or else vacuumizes both lists (once per operation; a success when it freed at
/// least `gain` bytes). True when something changed and the operation may retry.
///
/// The boundary comes first: it moves the record bytes (a copy), where a vacuum re-encodes every
/// block and chunk of the node. Vacuum first cost a repack each time a compressed KeyList grew
/// past the boundary, long before the node was full: 47% of the instructions of a load of
/// compressed keys with compressed records (docs/BENCHMARKS.md, session 11).
// The node, what the lists need, and the vacuum's state, threshold and kind.
#[allow(clippy::too_many_arguments)]
fn make_room(
    page: &mut [u8],
    l: &mut Layout,
    need: usize,
    ru: usize,
    rneed: usize,
    vacuumized: &mut bool,
    gain: usize,
    how: Repack,
) -> Result<bool> {
    if need + rneed <= l.capacity() && need > l.rstart - l.hdr {
        let rrange = rrange_for(l.keys, l.recs, l.capacity(), need, rneed);
        move_boundary(page, l, ru, rrange);
        return Ok(true);
    }
    if !*vacuumized {
        *vacuumized = true;
        if vacuum(page, l, how)? >= gain.max(1) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The least a vacuum must free for an insert to go on in a full node rather than split it:
/// 1/256 of its capacity when a list's cost is not exact. A full compressed leaf repacked on
/// every insert that finds no room would re-encode all its keys every few inserts (each repack
/// frees only what the last few block splits left); a leaf whose repack frees less is split (or
/// shared) instead, its lists just repacked. A floor of 1/64 saved more time but left 4% more
/// BP128 leaves after a random load of 2M keys; 1/256 leaves as many as no floor.
fn min_gain(l: &Layout) -> usize {
    if l.keys.cost_is_exact() && l.recs.cost_is_exact() {
        // Plain lists were measured before the insert (split on the way down): any gain counts.
        1
    } else {
        l.capacity() / 256
    }
}

/// Vacuumizes both lists; returns the bytes freed.
fn vacuum(page: &mut [u8], l: &Layout, how: Repack) -> Result<usize> {
    let (hdr, rs) = (l.hdr, l.rstart);
    let k = l
        .keys
        .vacuumize(region_mut(page, l, hdr..rs)?, l.count, how)
        .map_err(|f| l.err(f))?;
    let r = l
        .recs
        .vacuumize(region_mut(page, l, rs..l.psize)?, l.count)
        .map_err(|f| l.err(f))?;
    Ok(k + r)
}

/// Replaces the stored record of entry `i` (a leaf), moving the region boundary when needed.
/// False, changing nothing, when the node has no room.
pub fn set_record(page: &mut [u8], l: &mut Layout, i: usize, rec: &[u8]) -> Result<bool> {
    let n = l.count;
    if i >= n {
        return Err(corrupt(l.id, "record index out of range"));
    }
    for round in 0..2 {
        let ku = l.keys.used(l.kregion(page), n).map_err(|f| l.err(f))?;
        let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
        let (ru2, plan) = l
            .recs
            .plan(l.rregion(page), n, i, rec, RecChange::Replace)
            .map_err(|f| l.err(f))?;
        if ru2 > l.psize - l.rstart {
            if ku + ru2 > l.capacity() {
                if round == 0 && vacuum(page, l, Repack::Tight)? >= min_gain(l) {
                    continue;
                }
                return Ok(false);
            }
            let rrange = rrange_for(l.keys, l.recs, l.capacity(), ku, ru2);
            move_boundary(page, l, ru, rrange);
        }
        let rs = l.rstart;
        l.recs
            .apply(region_mut(page, l, rs..l.psize)?, n, i, rec, &plan)
            .map_err(|f| l.err(f))?;
        return Ok(true);
    }
    Ok(false)
}

/// Makes the KeyList smaller when its kind can (compressed blocks repacked, DB2 prefix groups
/// regrouped, as DB2 does when a page is nearly full). True when bytes were freed.
pub fn reorganize(page: &mut [u8], l: &Layout, spec: &Spec) -> Result<bool> {
    if vacuum(page, l, Repack::Tight)? == 0 {
        return Ok(false);
    }
    // The rewritten list must describe the same keys.
    Layout::read(page, l.id, spec)?;
    Ok(true)
}

/// Removes entry `i` (for branches: separator `i` and child `i + 1`). False, changing nothing
/// but a repack, only for a compressed leaf without room for a block that grows.
pub fn remove(page: &mut [u8], l: &mut Layout, i: usize) -> Result<bool> {
    let n = l.count;
    let mut vacuumized = false;
    for _ in 0..3 {
        let ru = l.recs.used(l.rregion(page), n).map_err(|f| l.err(f))?;
        let (hdr, rs) = (l.hdr, l.rstart);
        match l
            .keys
            .remove_at(region_mut(page, l, hdr..rs)?, n, i)
            .map_err(|f| l.err(f))?
        {
            Fit::Done => {
                l.recs
                    .remove(region_mut(page, l, rs..l.psize)?, n, i)
                    .map_err(|f| l.err(f))?;
                l.count = n - 1;
                write_count(page, l.count);
                return Ok(true);
            }
            Fit::NoRoom(need) => {
                if make_room(page, l, need, ru, ru, &mut vacuumized, 1, Repack::Tight)? {
                    continue;
                }
                return Ok(false);
            }
        }
    }
    Ok(false)
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
    // Entries are the builder's own (pushed by it), not page bytes: an index past them is a
    // caller's bug and reads as nothing.
    pub fn shares(&self, range: std::ops::Range<usize>) -> &[KeyShare] {
        self.shares.get(range).unwrap_or_default()
    }
    pub fn key(&self, i: usize) -> &[u8] {
        self.items
            .get(i)
            .and_then(|&(a, b, _)| self.buf.get(a..b))
            .unwrap_or_default()
    }
    pub fn rec(&self, i: usize) -> &[u8] {
        self.items
            .get(i)
            .and_then(|&(_, b, c)| self.buf.get(b..c))
            .unwrap_or_default()
    }
    /// Appends every entry of the node.
    pub fn extend_from(&mut self, page: &[u8], l: &Layout) -> Result<()> {
        // Bounded by the page: `count` is read from it.
        self.items.reserve(l.count.min(page.len()));
        // One pass: each key with its record, no intermediate copy of the keys.
        let (rregion, n) = (l.rregion(page), l.count);
        let mut i = 0;
        // Records in order: a compressed list walks (and proves) its chunks once, not per record.
        let hint = super::records::RecHint::default();
        l.keys
            .for_each_key(l.kregion(page), n, |k| {
                let r = l.recs.get_hinted(rregion, n, i, &hint)?;
                self.push(k, &r);
                i += 1;
                Ok(())
            })
            .map_err(|f| l.err(f))?;
        if i != n {
            return Err(corrupt(
                l.id,
                "key list disagrees with the node's key count",
            ));
        }
        // Splits measure what the keys really take (string lists); DB2 rebuilds may keep
        // their groups.
        let mut shares = Vec::new();
        if l.keys
            .shares(l.kregion(page), l.count, self.groups, &mut shares)
            .map_err(|f| l.err(f))?
        {
            let at = self.shares.len() - l.count;
            self.shares.truncate(at);
            self.shares.extend(shares);
            self.groups = self.groups.wrapping_add(l.count as u32);
        }
        Ok(())
    }
    /// Bytes entries `range` take in a node of this kind: what string keys took in the node
    /// they come from, else the key list's cost.
    pub fn cost(&self, keys: KeyList, recs: RecordList, range: std::ops::Range<usize>) -> usize {
        range
            .map(|i| {
                let (a, b, c) = self.items.get(i).copied().unwrap_or_default();
                let k = match self.shares.get(i).map_or(0, |s| s.bytes) {
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
    let hdr = if leaf { LEAF_HEADER } else { BRANCH_HEADER };
    let cap = spec.page_size - hdr;
    let ks: Vec<&[u8]> = range.clone().map(|i| e.key(i)).collect();
    let mut img = Vec::new();
    if !spec
        .keys(leaf)
        .build(&ks, e.shares(range.clone()), prefix, cap, &mut img)
        .map_err(|f| corrupt(id, f.0))?
    {
        return Err(corrupt(id, "rebuilt node does not fit its page"));
    }
    build_image(page, id, spec, leaf, child0, &img, range.map(|i| e.rec(i)))
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
    let rimg = rl.image(recs.clone()).map_err(|f| corrupt(id, f.0))?;
    let ru = rimg.bytes;
    if img.len() + ru > cap {
        return Err(corrupt(id, "rebuilt node does not fit its page"));
    }
    init(page, spec, leaf, child0);
    page.get_mut(hdr..hdr + img.len())
        .ok_or_else(|| corrupt(id, "rebuilt node does not fit its page"))?
        .copy_from_slice(img);
    let rrange = rrange_for(spec.keys(leaf), rl, cap, img.len(), ru);
    write_rrange(page, rrange);
    let rs = spec.page_size - rrange;
    let n = rl
        .fill_image(page.get_mut(rs..).unwrap_or_default(), recs, &rimg)
        .map_err(|f| corrupt(id, f.0))?;
    write_count(page, n);
    // The image must hold exactly `n` keys.
    let l = Layout::read(page, id, spec)?;
    if let Some(k) = l.keys.own_count(l.kregion(page)).map_err(|f| l.err(f))? {
        if k != n {
            return Err(corrupt(id, "rebuilt node has keys without records"));
        }
    }
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
    for line in l
        .keys
        .describe(l.kregion(page), l.count, max_entries)
        .map_err(|f| l.err(f))?
    {
        let _ = writeln!(s, "  {line}");
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
