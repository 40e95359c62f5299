//! Tree operations: lookup, insert/upsert/append, erase, drop — one descent each, with top-down
//! local balancing.
//!
//! Insert: on the way down, every child that could not take one more entry (a leaf: this entry; a
//! branch: the longest separator) is split before we enter it. The parent always has room for the
//! separator, because it was itself checked on the step before, so a split never propagates up.
//! Erase: on the way down, a leaf less than half full is merged with a neighbour when both fit
//! in 7/8 of a page (a branch: less than a quarter full, into 3/4); the parent loses one
//! separator and may itself become sparse, which the next descent through it repairs. A root branch left with a single child is replaced
//! by that child; an empty root leaf is freed (the tree becomes empty, root 0).
//!
//! Every page on the path is copied on write (`PageSink::cow`) and the parent's child pointer is
//! updated to the copy. Splits of a leaf at its right (left) end move nothing: the new entry gets
//! a node of its own, so ascending (descending) loads fill leaves completely.
//!
//! The append fast path: a write remembers the rightmost leaf it reached (an [`AppendHint`]); a
//! following insert of a key above that leaf's last key goes straight to it, with no descent.

use super::node::{self, corrupt, Entries, Layout};
use super::overflow::{self, Stored};
use super::packed::Lookup;
use super::strkeys::lcp;
use super::{Key, KeyType, RecordList, Spec, MAX_DEPTH};
use crate::error::{Error, PageId, Result};
use crate::storage::{PageSink, PageSource};

/// What `put` does with a key that is already present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutMode {
    /// Error::KeyExists.
    Insert,
    /// Overwrite the record.
    Upsert,
    /// The key must be greater than every key in the tree (else Error::InvalidKey).
    Append,
}

/// The rightmost leaf of a tree as of its last write, for the append fast path. Only valid while
/// the tree's root is `root` and the leaf is dirty; any write that is not an append resets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendHint {
    root: PageId,
    leaf: PageId,
}

/// The fence keys of a node (the separators around it in its ancestors; `None` at the tree's
/// left or right edge). Tracked on descents only for head compression, whose per-node prefix is
/// the fences' common prefix.
#[derive(Clone, Debug, Default)]
struct Fences {
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
}

impl Fences {
    /// The common prefix of both fences (empty at an edge of the tree).
    fn prefix(lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<u8> {
        match (lo, hi) {
            (Some(a), Some(b)) => a.get(..lcp(a, b)).unwrap_or_default().to_vec(),
            _ => Vec::new(),
        }
    }
}

/// Where a node's fence keys are: (branch page, key index) on the descent path, `None` at an
/// edge of the tree. Resolved to bytes only when a node is split or merged. Valid during one
/// descent: a split or merge changes only the node being entered and its parent, never the
/// ancestors the references point into.
#[derive(Clone, Copy, Debug, Default)]
struct FenceRef {
    lo: Option<(PageId, usize)>,
    hi: Option<(PageId, usize)>,
}

impl FenceRef {
    /// The fences of child `ci` of the branch `cur` (with `count` keys) whose fences are `self`.
    fn child(self, cur: PageId, count: usize, ci: usize) -> FenceRef {
        FenceRef {
            lo: if ci > 0 { Some((cur, ci - 1)) } else { self.lo },
            hi: if ci < count { Some((cur, ci)) } else { self.hi },
        }
    }

    fn key<S: PageSource + ?Sized>(
        src: &S,
        spec: &Spec,
        r: Option<(PageId, usize)>,
    ) -> Result<Option<Vec<u8>>> {
        let Some((id, i)) = r else { return Ok(None) };
        let page = src.page(id)?;
        let l = Layout::open(&page, id, spec)?;
        Ok(Some(key_bytes(&page, &l, i)?))
    }

    fn resolve<S: PageSource + ?Sized>(&self, src: &S, spec: &Spec) -> Result<Fences> {
        Ok(Fences {
            lo: Self::key(src, spec, self.lo)?,
            hi: Self::key(src, spec, self.hi)?,
        })
    }
}

/// The stored bytes of key `i` of any node (integers little-endian, strings decompressed).
fn key_bytes(page: &[u8], l: &Layout, i: usize) -> Result<Vec<u8>> {
    if l.keys.contiguous() {
        return Ok(l.key_raw(page, i)?.to_vec());
    }
    let mut b = Vec::new();
    l.key_into(page, i, &mut b)?;
    Ok(b)
}

/// The shortest separator `s` with `a < s <= b` (tail compression): the common prefix of the
/// two keys plus the first byte of `b` that differs.
fn shortest_sep(a: &[u8], b: &[u8]) -> Vec<u8> {
    let k = lcp(a, b);
    b.get(..(k + 1).min(b.len())).unwrap_or_default().to_vec()
}

fn too_deep(id: PageId) -> Error {
    corrupt(
        id,
        format!("tree deeper than {MAX_DEPTH} levels (a cycle?)"),
    )
}

/// The value of entry `i` of a leaf (reading its overflow chain when needed).
pub fn value_of<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    l: &Layout,
    page: &[u8],
    i: usize,
) -> Result<Vec<u8>> {
    match overflow::decode(spec, l.record_raw(page, i)?, l.id)? {
        Stored::Inline(b) => Ok(b.to_vec()),
        Stored::Overflow { first, len } => overflow::read(src, first, len),
    }
}

/// Looks `key` up; `Some(value)` when present (empty for key-only databases).
pub fn get<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    key: &Key<'_>,
) -> Result<Option<Vec<u8>>> {
    let probe = spec.probe(key)?;
    find(src, spec, root, &probe, |page, l, i| {
        value_of(src, spec, l, page, i)
    })
}

/// Whether `key` is present.
pub fn contains<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    key: &Key<'_>,
) -> Result<bool> {
    let probe = spec.probe(key)?;
    Ok(find(src, spec, root, &probe, |_, _, _| Ok(()))?.is_some())
}

/// The descent of a lookup. In integer trees it also checks what it relies on (issue 18): the
/// separators around each child it takes hold the probe (two comparisons per level), and on a
/// miss the leaf's first and last keys lie inside the fence those separators give (the
/// intersection on the path), else `Corrupted`. So a lookup refuses forged separators on its
/// path and a leaf out of place, as a cursor does; a key a forged leaf hides inside its own
/// range is still missed (proving absence would mean checking the whole leaf's order).
fn find<S: PageSource + ?Sized, T>(
    src: &S,
    spec: &Spec,
    root: PageId,
    probe: &Key<'_>,
    f: impl FnOnce(&[u8], &Layout, usize) -> Result<T>,
) -> Result<Option<T>> {
    if root == 0 {
        return Ok(None);
    }
    let mut id = root;
    // Integer keys: the fence of the node read, keys `lo..hi` (`None`: unbounded), which also
    // steers its search's first guess.
    let int = probe.as_u64();
    let (mut lo, mut hi) = (None::<u64>, None::<u64>);
    for _ in 0..MAX_DEPTH {
        let page = src.page_ref(id)?;
        let l = Layout::open_inline(&page, id, spec)?;
        let est = match (lo, hi) {
            (Some(a), Some(b)) if b > a => Some((a, b - 1)),
            _ => None,
        };
        if l.leaf && !spec.recs.holds_values() {
            // Key-only leaf: a hit needs no slot (the record is empty).
            return match l
                .keys
                .lookup(l.kregion(&page), l.count, probe, est)
                .map_err(|f| l.err(f))?
            {
                Lookup::Hit => Ok(Some(f(&page, &l, 0)?)),
                Lookup::Miss(edges) => in_fence(&l, edges, lo, hi),
            };
        }
        let found = l.search_est(&page, probe, est)?;
        if l.leaf {
            return match found {
                Ok(i) => Ok(Some(f(&page, &l, i)?)),
                Err(_) => missed(&l, &page, int, lo, hi),
            };
        }
        let ci = match found {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        if let Some(p) = int {
            // The branches of integer trees hold plain u32/u64 keys: read in place.
            let sep = |i| {
                l.keys
                    .int_at(l.kregion(&page), l.count, i)
                    .ok_or_else(|| separators_fault(id))
            };
            if ci > 0 {
                let s = sep(ci - 1)?;
                lo = Some(lo.map_or(s, |a| a.max(s)));
                if s > p {
                    return Err(separators_fault(id));
                }
            }
            if ci < l.count {
                let s = sep(ci)?;
                hi = Some(hi.map_or(s, |b| b.min(s)));
                if s <= p {
                    return Err(separators_fault(id));
                }
            }
        }
        id = l.child(&page, ci)?;
    }
    Err(too_deep(id))
}

#[cold]
fn separators_fault(id: PageId) -> crate::Error {
    super::node::corrupt(id, "separators out of order on a lookup's path")
}

/// A miss in an integer leaf: `None` when the leaf's first and last keys lie in the fence
/// `lo..hi` of its path, else `Corrupted` (the leaf is out of place). Reading the edges of a
/// compressed leaf proves what the miss relied on (its block index in order, the block looked
/// in as its descriptor says), so also a root leaf's miss is checked. A hit needs no such
/// check: the key found is the probe, which the path's separators hold.
#[inline(never)]
fn missed<T>(
    l: &Layout,
    page: &[u8],
    int: Option<u64>,
    lo: Option<u64>,
    hi: Option<u64>,
) -> Result<Option<T>> {
    let Some(p) = int else {
        return Ok(None);
    };
    let edges = l
        .keys
        .int_edges(l.kregion(page), l.count, p)
        .map_err(|f| l.err(f))?;
    in_fence(l, edges, lo, hi)
}

/// [`missed`] once the leaf's first and last keys are known (`None`: empty, or not integers).
#[inline]
fn in_fence<T>(
    l: &Layout,
    edges: Option<(u64, u64)>,
    lo: Option<u64>,
    hi: Option<u64>,
) -> Result<Option<T>> {
    let Some((a, z)) = edges else {
        return Ok(None);
    };
    if lo.is_some_and(|lo| a < lo) || hi.is_some_and(|hi| z >= hi) {
        return Err(out_of_place(l.id, a, z));
    }
    Ok(None)
}

#[cold]
fn out_of_place(id: PageId, a: u64, z: u64) -> Error {
    super::node::corrupt(
        id,
        format!("leaf keys {a}..={z} outside the separators that lead to it"),
    )
}

/// Inserts or overwrites `key`. Returns true when the key is new.
pub fn put<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
    key: &Key<'_>,
    value: &[u8],
    mode: PutMode,
    hint: &mut Option<AppendHint>,
) -> Result<bool> {
    put_keeping(sink, spec, root, key, value, mode, hint, None)
}

/// `put` that also hands back, in `old`, the value an overwrite replaced (read in the leaf
/// before it changes, an overflow value before its chain is freed): `put` and "get the old
/// value" in one descent. `old` stays `None` for a new key.
// The arguments of `put` plus where an overwritten value goes.
#[allow(clippy::too_many_arguments)]
pub fn put_keeping<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
    key: &Key<'_>,
    value: &[u8],
    mode: PutMode,
    hint: &mut Option<AppendHint>,
    old: Option<&mut Option<Vec<u8>>>,
) -> Result<bool> {
    if let Some(h) = (*hint).filter(|h| h.root == *root) {
        if value.is_empty() && append_hinted(sink, spec, h, key)? {
            return Ok(true);
        }
    }
    let probe = spec.probe(key)?;
    let enc = spec.encode_key(&probe)?;
    let kb = enc.bytes();
    spec.check_record(value)?;
    let cost = spec.leaf_entry_cost(kb.len(), value.len());
    let big = spec.recs.may_overflow() && value.len() > spec.limits.max_inline_record;
    let mut rec = Vec::new();

    if let Some(h) = *hint {
        // A leaf that is no longer dirty (committed since) refuses `page_mut`: take the slow path.
        if let (true, Ok(page)) = (h.root == *root && !big, sink.page_mut(h.leaf)) {
            let mut l = Layout::read(page, h.leaf, spec)?;
            // Compressed key-only leaves check and append in one step.
            let fast = if l.leaf {
                node::append_key(page, &mut l, kb)?
            } else {
                None
            };
            if fast == Some(true) {
                return Ok(true);
            }
            if l.leaf && fast.is_none() && l.above_last(page, &probe)? {
                spec.recs.inline_form(value, &mut rec);
                let n = l.count;
                if node::insert(page, &mut l, n, kb, &rec)? {
                    return Ok(true);
                }
            }
        }
    }
    *hint = None;
    if mode == PutMode::Append {
        let mut c = super::cursor::RawCursor::new();
        if c.last(&*sink, spec, *root)? && probe <= c.key()?.unwrap_or(probe) {
            return Err(not_ascending());
        }
    }

    if *root == 0 {
        let id = sink.alloc()?;
        node::init(sink.page_mut(id)?, spec, true, 0);
        *root = id;
    }
    let mut op = Put {
        spec,
        probe,
        kb,
        value,
        mode,
        cost,
        rec,
        stored: false,
        hint,
        old,
    };
    // A compressed leaf that still has no room after one split asks for a fresh descent (which
    // makes room in the branches again); each round halves the leaf, so few rounds suffice.
    for round in 0..MAX_DEPTH {
        // Only the first descent shares a full leaf with a neighbour: a later one follows a
        // split or share after which the entry still did not fit.
        if let Some(new) = descend_put(sink, &mut op, root, round == 0)? {
            return Ok(new);
        }
    }
    Err(corrupt(*root, "no leaf found room for an entry"))
}

/// The bulk-load lane of `put` (issue 21): an integer key without a value, appended in place
/// past the last key of the hinted leaf of a key-only database when its key list can
/// (compressed lists: the last block's codec appends it, [`node::append_key`]). True when
/// done; false, nothing changed, when the general `put` must run (records, another key type,
/// a key not above the leaf's last, a full block, a leaf that is not dirty). It skips what
/// that path does for any key (key and record checks and encodings, the entry's cost), which
/// was a sixth of a compressed ascending load's instructions.
fn append_hinted<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    h: AppendHint,
    key: &Key<'_>,
) -> Result<bool> {
    if spec.recs.holds_values() {
        return Ok(false);
    }
    let (raw, len) = match (spec.key_type, *key) {
        (KeyType::U32, Key::U32(v)) => ((v as u64).to_le_bytes(), 4),
        (KeyType::U64, Key::U64(v)) => (v.to_le_bytes(), 8),
        (KeyType::U64, Key::U32(v)) => ((v as u64).to_le_bytes(), 8),
        _ => return Ok(false),
    };
    let Ok(page) = sink.page_mut(h.leaf) else {
        return Ok(false);
    };
    node::append_key_lean(page, h.leaf, spec, raw.get(..len).unwrap_or_default())
}

/// One `put` on its way down: the entry, how it is written, and what its descents share.
struct Put<'p> {
    spec: &'p Spec,
    probe: Key<'p>,
    /// The key as a leaf stores it.
    kb: &'p [u8],
    value: &'p [u8],
    mode: PutMode,
    /// Bytes the entry takes in a leaf (exact for plain lists, a nominal share for compressed).
    cost: usize,
    /// The value as stored: inline bytes, or the reference to its overflow chain.
    rec: Vec<u8>,
    /// `rec` is written (an overflow chain is written once, whatever the descents).
    stored: bool,
    hint: &'p mut Option<AppendHint>,
    /// Where an overwritten value goes (`put_keeping`); `None`: not wanted.
    old: Option<&'p mut Option<Vec<u8>>>,
}

impl Put<'_> {
    /// Keeps the value of entry `i` of leaf `id` that this put overwrites, when asked to: inline
    /// bytes now; an overflow chain's `(first, len)` for [`Put::keep_chain`].
    fn keep_old(&mut self, l: &Layout, page: &[u8], i: usize, id: PageId) -> Result<()> {
        if let Some(slot) = self.old.as_deref_mut() {
            if let Stored::Inline(b) = overflow::decode(self.spec, l.record_raw(page, i)?, id)? {
                *slot = Some(b.to_vec());
            }
        }
        Ok(())
    }

    /// Reads an overwritten overflow value (before its chain is freed), when asked to.
    fn keep_chain<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        first: PageId,
        len: u64,
    ) -> Result<()> {
        if let Some(slot) = self.old.as_deref_mut() {
            *slot = Some(overflow::read(src, first, len)?);
        }
        Ok(())
    }
}

/// One descent of `put` (`first`: the first one, which may share a full leaf with a
/// neighbour): `None` when a compressed leaf asks to start over.
fn descend_put<S: PageSink + ?Sized>(
    sink: &mut S,
    op: &mut Put<'_>,
    root: &mut PageId,
    first: bool,
) -> Result<Option<bool>> {
    let (spec, probe, kb, cost) = (op.spec, op.probe, op.kb, op.cost);
    let r = sink.cow(*root)?;
    *root = r;
    if needs_split(sink, spec, r, cost)? {
        let nr = sink.alloc()?;
        node::init(sink.page_mut(nr)?, spec, false, r);
        *root = nr;
    }
    let mut cur = *root;
    let mut rightmost = true;
    let mut parent = None;
    let head = spec.head();
    let mut fences = FenceRef::default();
    // Leaves split when an insert finds no room, not on the way down (compressed lists).
    let packed_leaves = spec.leaves_split_on_insert();
    for _ in 0..MAX_DEPTH {
        let page = sink.page_mut(cur)?;
        let l = Layout::read(page, cur, spec)?;
        if l.leaf {
            if packed_leaves {
                let at = LeafAt {
                    id: cur,
                    parent,
                    rightmost,
                };
                let share = first.then_some(cost);
                return leaf_put_packed(sink, op, at, root, share);
            }
            return leaf_put(sink, op, cur, rightmost, *root).map(Some);
        }
        let ci = l.child_index(page, &probe)?;
        let child = l.child(page, ci)?;
        rightmost &= ci == l.count;
        let c2 = sink.cow(child)?;
        if c2 != child {
            let page = sink.page_mut(cur)?;
            node::set_child(page, &l, ci, c2)?;
        }
        let (next, ni, count) = if needs_split(sink, spec, c2, cost)? {
            let cf = if head {
                fences.child(cur, l.count, ci).resolve(&*sink, spec)?
            } else {
                Fences::default()
            };
            let (right, go_right) = split_child(sink, spec, cur, ci, c2, &probe, kb, &cf)?;
            if go_right {
                (right, ci + 1, l.count + 1)
            } else {
                rightmost = false;
                (c2, ci, l.count + 1)
            }
        } else {
            (c2, ci, l.count)
        };
        fences = fences.child(cur, count, ni);
        parent = Some((cur, ni));
        cur = next;
    }
    Err(too_deep(cur))
}

/// `put` into a plain leaf `id` (made room for on the way down).
fn leaf_put<S: PageSink + ?Sized>(
    sink: &mut S,
    op: &mut Put<'_>,
    id: PageId,
    rightmost: bool,
    root: PageId,
) -> Result<bool> {
    let (spec, probe, kb, value, mode) = (op.spec, op.probe, op.kb, op.value, op.mode);
    let page = sink.page_mut(id)?;
    let mut l = Layout::read(page, id, spec)?;
    let found = l.search(page, &probe)?;
    let (i, new) = match found {
        Ok(i) => match mode {
            PutMode::Insert => return Err(Error::KeyExists),
            PutMode::Append => return Err(not_ascending()),
            PutMode::Upsert => {
                op.keep_old(&l, page, i, id)?;
                // Fixed-size records are overwritten in place (compressed records take
                // `leaf_put_packed`).
                let rs = l.rstart;
                if l.recs
                    .overwrite_in_place(page.get_mut(rs..).unwrap_or_default(), i, value)
                    .map_err(|f| l.err(f))?
                {
                    if rightmost {
                        *op.hint = Some(AppendHint { root, leaf: id });
                    }
                    return Ok(false);
                }
                let old = match overflow::decode(spec, l.record_raw(page, i)?, id)? {
                    Stored::Overflow { first, len } => Some((first, len)),
                    Stored::Inline(_) => None,
                };
                node::remove(page, &mut l, i)?;
                if let Some((first, len)) = old {
                    op.keep_chain(&*sink, first, len)?;
                    overflow::free(sink, first, len)?;
                }
                (i, false)
            }
        },
        Err(i) => (i, true),
    };
    let (hint, rec) = (&mut *op.hint, &mut op.rec);
    overflow::store(sink, spec, value, rec)?;
    let page = sink.page_mut(id)?;
    let mut l = Layout::read(page, id, spec)?;
    if !node::insert(page, &mut l, i, kb, rec)? {
        return Err(corrupt(id, "leaf has no room after the split check"));
    }
    if rightmost {
        *hint = Some(AppendHint { root, leaf: id });
    }
    Ok(new)
}

/// Where a leaf sits: its parent and index there (`None` for a root leaf), and whether it is the
/// rightmost leaf.
#[derive(Clone, Copy, Debug)]
struct LeafAt {
    id: PageId,
    parent: Option<(PageId, usize)>,
    rightmost: bool,
}

/// Splits the leaf `at` (making a new root first when it is the root) and returns where `probe`
/// now belongs. The parent has room for the separator: leaves with compressed keys are not split
/// on the way down, so their parent's reserved room is still free.
fn split_leaf_at<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    at: LeafAt,
    root: &mut PageId,
    probe: &Key<'_>,
    kb: &[u8],
) -> Result<LeafAt> {
    let (pid, ci) = match at.parent {
        Some(p) => p,
        None => {
            let nr = sink.alloc()?;
            node::init(sink.page_mut(nr)?, spec, false, at.id);
            *root = nr;
            (nr, 0)
        }
    };
    let (right, go_right) = split_child(sink, spec, pid, ci, at.id, probe, kb, &Fences::default())?;
    Ok(if go_right {
        LeafAt {
            id: right,
            parent: Some((pid, ci + 1)),
            rightmost: at.rightmost,
        }
    } else {
        LeafAt {
            id: at.id,
            parent: Some((pid, ci)),
            rightmost: false,
        }
    })
}

/// `leaf_put` for a leaf with compressed keys: the leaf is not split on the way down (the cost
/// of one insert depends on its block); the insert is tried, and only when the leaf has no room
/// (after vacuumizing and moving the boundary) is it split here and the insert retried.
fn leaf_put_packed<S: PageSink + ?Sized>(
    sink: &mut S,
    op: &mut Put<'_>,
    mut at: LeafAt,
    root: &mut PageId,
    share: Option<usize>,
) -> Result<Option<bool>> {
    let (spec, probe, kb, value, mode) = (op.spec, op.probe, op.kb, op.value, op.mode);
    let probe = &probe;
    let page = sink.page_mut(at.id)?;
    let l = Layout::read(page, at.id, spec)?;
    let mut old = None;
    let found = l.search(page, probe)?;
    let replace = match found {
        Ok(i) => match mode {
            PutMode::Insert => return Err(Error::KeyExists),
            PutMode::Append => return Err(not_ascending()),
            PutMode::Upsert => {
                op.keep_old(&l, page, i, at.id)?;
                let rs = l.rstart;
                if l.recs
                    .overwrite_in_place(page.get_mut(rs..).unwrap_or_default(), i, value)
                    .map_err(|f| l.err(f))?
                {
                    if at.rightmost {
                        *op.hint = Some(AppendHint {
                            root: *root,
                            leaf: at.id,
                        });
                    }
                    return Ok(Some(false));
                }
                if let Stored::Overflow { first, len } =
                    overflow::decode(spec, l.record_raw(page, i)?, at.id)?
                {
                    old = Some((first, len));
                }
                true
            }
        },
        Err(_) => false,
    };
    if !op.stored {
        overflow::store(sink, spec, value, &mut op.rec)?;
        op.stored = true;
    }
    for attempt in 0..2 {
        let page = sink.page_mut(at.id)?;
        let mut l = Layout::read(page, at.id, spec)?;
        // The first attempt uses the search above (storing an overflow value writes other
        // pages, not this leaf); after a split or share the entry's leaf is searched again.
        let i = match if attempt == 0 {
            found
        } else {
            l.search(page, probe)?
        } {
            Ok(i) | Err(i) => i,
        };
        let done = if replace {
            node::set_record(page, &mut l, i, &op.rec)?
        } else {
            node::insert(page, &mut l, i, kb, &op.rec)?
        };
        if done {
            if let Some((first, len)) = old {
                op.keep_chain(&*sink, first, len)?;
                overflow::free(sink, first, len)?;
            }
            if at.rightmost {
                *op.hint = Some(AppendHint {
                    root: *root,
                    leaf: at.id,
                });
            }
            return Ok(Some(!replace));
        }
        if attempt == 0 {
            // Sharing with a neighbour only on the first descent: a later one follows a
            // split or share after which the entry still did not fit.
            let shared = match share {
                Some(cost) => share_leaf(sink, spec, at, probe, cost)?,
                None => None,
            };
            at = match shared {
                Some(at) => at,
                None => split_leaf_at(sink, spec, at, root, probe, kb)?,
            };
        }
    }
    Ok(None)
}

/// A full compressed leaf shares its entries with a neighbour (same parent) instead of
/// splitting alone: the two are rebuilt as two leaves around the middle of their bytes when the
/// neighbour is less than half full, else as three leaves of a third each (the B*-tree's rule:
/// leaves stay at least two-thirds full). Random-order loads otherwise leave leaves about half
/// full, as all leaves fill up and split at about the same time. The parent has room for the
/// one new separator, as for a split (compressed leaves are not split on the way down).
/// Returns where `probe` now belongs; `None` when the leaf has no neighbour or a part would not
/// fit in 7/8 of a page less the entry's `cost`.
fn share_leaf<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    at: LeafAt,
    probe: &Key<'_>,
    cost: usize,
) -> Result<Option<LeafAt>> {
    let Some((pid, ci)) = at.parent else {
        return Ok(None);
    };
    if at.rightmost {
        // Appends past the last key get a leaf of their own (ascending loads fill leaves).
        let page = sink.page(at.id)?;
        let l = Layout::read(&page, at.id, spec)?;
        if l.count == 0 || l.above_last(&page, probe)? {
            return Ok(None);
        }
    }
    let ppage = sink.page_mut(pid)?;
    let pl = Layout::read(ppage, pid, spec)?;
    let sib_i = if ci < pl.count {
        ci + 1
    } else if ci > 0 {
        ci - 1
    } else {
        return Ok(None);
    };
    let sib = pl.child(ppage, sib_i)?;
    let sp = sink.page(sib)?;
    let sl = Layout::read(&sp, sib, spec)?;
    if !sl.leaf {
        return Err(corrupt(pid, "children at different levels"));
    }
    let parts = if sl.used(&sp)? * 2 < sl.capacity() {
        2
    } else {
        3
    };
    let li = ci.min(sib_i);
    let (left, right) = if sib_i > ci {
        (at.id, sib)
    } else {
        (sib, at.id)
    };
    let mut e = Entries::default();
    for id in [left, right] {
        let page = sink.page(id)?;
        e.extend_from(&page, &Layout::read(&page, id, spec)?)?;
    }
    let n = e.len();
    let (keys, recs) = (spec.keys(true), spec.records(true));
    let total = e.cost(keys, recs, 0..n);
    // Cut points at 1/parts, 2/parts of the bytes, each part keeping at least one entry.
    let mut cuts = Vec::with_capacity(parts + 1);
    cuts.push(0);
    let mut acc = 0;
    for i in 0..n {
        if cuts.len() < parts
            && acc * parts >= total * cuts.len()
            && cuts.last().is_some_and(|&c| i > c)
        {
            cuts.push(i);
        }
        acc += e.cost(keys, recs, i..i + 1);
    }
    cuts.push(n);
    if cuts.len() != parts + 1 {
        return Ok(None);
    }
    let budget = (sl.capacity() * 7 / 8).saturating_sub(cost);
    // The parts: entries cuts[k]..cuts[k + 1].
    let part = |k: usize| -> std::ops::Range<usize> {
        match (cuts.get(k), cuts.get(k + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    };
    for k in 0..parts {
        if node_image(spec, true, &e, part(k), budget, pid, &[])?.is_none() {
            return Ok(None);
        }
    }
    let (sib2, _) = cow_child(sink, spec, pid, sib_i, sib)?;
    let mut ids = if sib_i > ci {
        vec![at.id, sib2]
    } else {
        vec![sib2, at.id]
    };
    if parts == 3 {
        ids.push(sink.alloc()?);
    }
    for (k, &id) in ids.iter().enumerate() {
        node::build(sink.page_mut(id)?, id, spec, true, 0, &e, part(k))?;
    }
    // Separator li now leads to ids[1]; with three parts, a new one at li + 1 to ids[2].
    let ppage = sink.page_mut(pid)?;
    let mut pl = Layout::read(ppage, pid, spec)?;
    node::remove(ppage, &mut pl, li)?;
    for (k, &id) in ids.iter().enumerate().skip(1) {
        let sep = e.key(part(k).start);
        if !node::insert(ppage, &mut pl, li + k - 1, sep, &id.to_le_bytes())? {
            return Err(corrupt(pid, "branch has no room for a separator"));
        }
    }
    // The part the probe belongs to: the last whose first key is at or below it.
    let k = (1..parts)
        .rev()
        .find(|&k| *probe >= spec.decode_key(e.key(part(k).start)))
        .unwrap_or(0);
    // The probe's leaf is the rightmost one only if the leaf that was full was, and it is the
    // last part (a neighbour on the left was shared with).
    let rightmost = at.rightmost && sib_i < ci && k == parts - 1;
    let id = ids
        .get(k)
        .copied()
        .ok_or_else(|| corrupt(pid, "leaf part out of range"))?;
    Ok(Some(LeafAt {
        id,
        parent: Some((pid, li + k)),
        rightmost,
    }))
}

/// Leaves packed together at most this many at a time (bounds the entries held in memory).
const PACK_WINDOW: usize = 16;

/// Leaves are packed when they use less than this share of their pages on average...
const PACK_BELOW: (usize, usize) = (3, 4);
/// ... into leaves filled to at most this share (the room left takes later inserts without
/// splitting the leaf again at once, as the merges of erase leave it).
const PACK_FILL: (usize, usize) = (7, 8);

/// Packs sparse leaves this transaction wrote into fewer pages, before a commit.
///
/// Leaves the write path leaves sparse stay so: compressed leaves split in halves and keep
/// spare room in their blocks (PFOR-DELTA leaves were 65% used after a random-order load, 1.6x
/// the pages of an ascending one), and erases re-encode blocks loosely (SIMD FOR's key bytes
/// after erasing 90% were 1.3x a fresh load's). The leaves a transaction wrote are written out
/// anyway, so rebuilding neighbours among them costs CPU only: runs of adjacent dirty leaves
/// under a dirty branch, up to [`PACK_WINDOW`] at a time, that use less than [`PACK_BELOW`] of
/// their pages on average are rebuilt into the fewest leaves that hold their entries within
/// [`PACK_FILL`] (cut evenly, every block encoded tight), when that saves at least one. Fuller
/// leaves are left alone: packed to the brim, the next batch of random inserts splits nearly
/// every one of them again (measured: more time, and a larger file, as the splits' pages add
/// to the previous commit's tree that copy-on-write keeps). Leaves this transaction did not
/// write are never touched, and a commit of a few keys packs nothing. Skipped for
/// head-compressed keys, whose leaves depend on their fences. `root` may change (a root branch
/// left with one child is replaced by it).
pub fn pack_dirty<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
) -> Result<()> {
    if *root == 0 || !sink.is_dirty(*root) || spec.head() {
        return Ok(());
    }
    pack_under(sink, spec, *root, 0)?;
    collapse_root(sink, spec, root)
}

/// [`pack_dirty`] below the dirty branch `id` at `depth`.
fn pack_under<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    id: PageId,
    depth: usize,
) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(id));
    }
    let page = sink.page(id)?;
    let l = Layout::read(&page, id, spec)?;
    if l.leaf {
        return Ok(());
    }
    let kids = (0..=l.count)
        .map(|i| l.child(&page, i))
        .collect::<Result<Vec<_>>>()?;
    drop(page);
    let Some(&first) = kids.iter().find(|&&c| sink.is_dirty(c)) else {
        return Ok(());
    };
    if !node::is_leaf(&sink.page(first)?) {
        for &c in &kids {
            if sink.is_dirty(c) {
                pack_under(sink, spec, c, depth + 1)?;
            }
        }
        return Ok(());
    }
    // Runs of dirty leaves, right to left: packing a run changes no index left of it.
    let mut end = kids.len();
    while end > 0 {
        if !kids.get(end - 1).is_some_and(|&c| sink.is_dirty(c)) {
            end -= 1;
            continue;
        }
        let mut start = end - 1;
        while start > 0 && kids.get(start - 1).is_some_and(|&c| sink.is_dirty(c)) {
            start -= 1;
        }
        // Windows from the right end of the run.
        let mut hi = end;
        while hi > start + 1 {
            let lo = hi.saturating_sub(PACK_WINDOW).max(start);
            pack_window(sink, spec, id, lo, kids.get(lo..hi).unwrap_or_default())?;
            hi = lo;
        }
        end = start;
    }
    Ok(())
}

/// Rebuilds the dirty leaves `ids` (children `first..` of the dirty branch `parent`) into
/// fewer leaves when their entries fit.
fn pack_window<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    parent: PageId,
    first: usize,
    ids: &[PageId],
) -> Result<()> {
    let m = ids.len();
    if m < 2 {
        return Ok(());
    }
    // What the leaves use now (compressed blocks carry some spare room, so this errs high).
    let (mut used, mut room) = (Vec::with_capacity(m), 0);
    for &c in ids {
        let page = sink.page(c)?;
        let l = Layout::read(&page, c, spec)?;
        if !l.leaf {
            return Err(corrupt(parent, "children at different levels"));
        }
        used.push((l.used(&page)?, l.count));
        room = l.capacity();
    }
    let budget = room * PACK_FILL.0 / PACK_FILL.1;
    let total: usize = used.iter().map(|&(u, _)| u).sum();
    if total * PACK_BELOW.1 >= room * m * PACK_BELOW.0 {
        return Ok(());
    }
    // From the estimate, but at least one leaf fewer: blocks that erases left loose re-encode
    // smaller than they use now.
    let mut parts = total.div_ceil(budget.max(1)).clamp(1, m - 1);
    let mut e = Entries::default();
    for &c in ids {
        let page = sink.page(c)?;
        e.extend_from(&page, &Layout::read(&page, c, spec)?)?;
    }
    let n = e.len();
    // Each entry's estimated bytes: its leaf's use spread over its entries.
    let mut acc = Vec::with_capacity(n + 1);
    acc.push(0usize);
    for &(u, count) in &used {
        for k in 0..count {
            let before = u * k / count;
            let after = u * (k + 1) / count;
            let last = acc.last().copied().unwrap_or(0);
            acc.push(last + (after - before));
        }
    }
    if acc.len() != n + 1 {
        return Err(corrupt(parent, "leaf counts disagree with their keys"));
    }
    let (cuts, imgs) = loop {
        // Cut k at the first entry whose estimated start reaches k/parts of the bytes.
        let mut cuts = Vec::with_capacity(parts + 1);
        cuts.push(0);
        for k in 1..parts {
            let target = total * k / parts;
            let at = acc.partition_point(|&a| a < target).min(n);
            let prev = cuts.last().copied().unwrap_or(0);
            cuts.push(at.max(prev + 1).min(n));
        }
        cuts.push(n);
        // Each part's key image, encoded once: it is what the leaf is built from.
        let mut imgs = Vec::with_capacity(parts);
        for w in cuts.windows(2) {
            match *w {
                [a, b] if a < b => match node_image(spec, true, &e, a..b, budget, parent, &[])? {
                    Some(img) => imgs.push(img),
                    None => break,
                },
                _ => break,
            }
        }
        if imgs.len() == parts {
            break (cuts, imgs);
        }
        parts += 1;
        if parts >= m {
            return Ok(());
        }
    };
    // The parent on a copy first: new separators may be longer than the ones they replace.
    let mut ppage = sink.page(parent)?.to_vec();
    let mut pl = Layout::read(&ppage, parent, spec)?;
    for _ in 1..m {
        node::remove(&mut ppage, &mut pl, first)?;
    }
    for k in 1..parts {
        let (Some(&at), Some(&id)) = (cuts.get(k), ids.get(k)) else {
            return Err(corrupt(parent, "leaf part out of range"));
        };
        if !node::insert(
            &mut ppage,
            &mut pl,
            first + k - 1,
            e.key(at),
            &id.to_le_bytes(),
        )? {
            return Ok(());
        }
    }
    for (k, (w, img)) in cuts.windows(2).zip(&imgs).enumerate() {
        let (Some(&id), &[a, b]) = (ids.get(k), w) else {
            return Err(corrupt(parent, "leaf part out of range"));
        };
        let recs = (a..b).map(|i| e.rec(i));
        node::build_image(sink.page_mut(id)?, id, spec, true, 0, img, recs)?;
    }
    for &id in ids.get(parts..).unwrap_or_default() {
        sink.free(id)?;
    }
    sink.page_mut(parent)?.copy_from_slice(&ppage);
    Ok(())
}

fn not_ascending() -> Error {
    Error::InvalidKey("append: the key is not greater than every key in the database".into())
}

/// Whether the (dirty) node `id` could not take one more entry: for a leaf the entry of `cost`
/// bytes, for a branch the longest separator.
fn needs_split<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    id: PageId,
    cost: usize,
) -> Result<bool> {
    let page = sink.page_mut(id)?;
    if spec.leaves_split_on_insert() && node::is_leaf(page) {
        // Split when an insert finds no room (`leaf_put_packed`, which reads the leaf), not on
        // the way down.
        return Ok(false);
    }
    let l = Layout::read(page, id, spec)?;
    let need = if l.leaf {
        cost
    } else {
        spec.max_branch_entry_cost()
    };
    let free = l.free(page)?;
    if free < need && node::reorganize(page, &l, spec)? {
        // DB2: the node regrouped its prefixes before splitting.
        let l = Layout::read(page, id, spec)?;
        return Ok(l.free(page)? < need);
    }
    Ok(free < need)
}

/// The index at which entries reach half of their bytes, kept within `1..n` (n >= 2).
fn middle(e: &Entries, spec: &Spec, leaf: bool) -> usize {
    let (keys, recs) = (spec.keys(leaf), spec.records(leaf));
    let n = e.len();
    let total = e.cost(keys, recs, 0..n);
    let mut acc = 0;
    for i in 0..n {
        acc += e.cost(keys, recs, i..i + 1);
        if acc * 2 >= total {
            return (i + 1).clamp(1, n.saturating_sub(1).max(1));
        }
    }
    (n / 2).max(1)
}

/// The split point of a tail-compressed node: among the cut points in `lo..=hi` that leave
/// the left part within `spec.tail` percent of the middle of the node's bytes, the one whose
/// separator (`sep_len`) is shortest; ties go to the one nearest the byte middle `mid`. With
/// the range at most 25% each half keeps at most 3/4 of the bytes, so the half that gets the
/// new entry has room for it.
fn tail_split(
    spec: &Spec,
    e: &Entries,
    leaf: bool,
    mid: usize,
    lo: usize,
    hi: usize,
    sep_len: impl Fn(usize) -> usize,
) -> usize {
    let (keys, recs) = (spec.keys(leaf), spec.records(leaf));
    let n = e.len();
    let total = e.cost(keys, recs, 0..n);
    let slack = total * spec.tail as usize / 100;
    let mut best = (usize::MAX, usize::MAX, mid);
    let mut acc = 0usize;
    for s in 0..=hi.min(n) {
        if s >= lo && (2 * acc).abs_diff(total) <= 2 * slack {
            let c = (sep_len(s), s.abs_diff(mid), s);
            if c < best {
                best = c;
            }
        }
        if s < n {
            acc += e.cost(keys, recs, s..s + 1);
        }
    }
    best.2
}

/// Splits the dirty child `child` (at index `ci` of the dirty branch `parent`) into itself and a
/// new right sibling, inserting the separator into `parent`. Returns the sibling and whether
/// `probe` belongs to it. `f` are the child's fences (head compression: the halves get the
/// prefixes of their new fences).
#[allow(clippy::too_many_arguments)]
fn split_child<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    parent: PageId,
    ci: usize,
    child: PageId,
    probe: &Key<'_>,
    probe_raw: &[u8],
    f: &Fences,
) -> Result<(PageId, bool)> {
    let tail = spec.tail > 0;
    let head = spec.head();
    let lo = f.lo.as_deref();
    let hi = f.hi.as_deref();
    let right = sink.alloc()?;
    let page = sink.page_mut(child)?;
    let l = Layout::read(page, child, spec)?;
    let mut e = Entries::default();
    let sep: Vec<u8>;
    if l.leaf && spec.leaves_split_on_insert() {
        sep = split_packed_leaf(sink, spec, child, right, probe)?;
    } else if l.leaf {
        let s = match l.search(page, probe)? {
            Err(p) if p == l.count => l.count,
            Err(0) => 0,
            _ => usize::MAX,
        };
        if s == l.count {
            sep = if tail && l.count > 0 {
                shortest_sep(&key_bytes(page, &l, l.count - 1)?, probe_raw)
            } else {
                probe_raw.to_vec()
            };
            if head && l.count > 0 {
                // The left node's range shrank: give it its new fences' prefix.
                e.extend_from(page, &l)?;
                let pfx = Fences::prefix(lo, Some(&sep));
                node::build_with(page, child, spec, true, 0, &e, 0..e.len(), &pfx)?;
            }
            node::init(sink.page_mut(right)?, spec, true, 0);
        } else if s == 0 {
            // An insert below every key (descending loads): the entries move to the new right
            // node as they are, the new key gets the emptied left one.
            let first = key_bytes(page, &l, 0)?;
            sep = if tail {
                shortest_sep(probe_raw, &first)
            } else {
                first
            };
            let copy = page.to_vec();
            sink.page_mut(right)?.copy_from_slice(&copy);
            node::init(sink.page_mut(child)?, spec, true, 0);
        } else {
            e.extend_from(page, &l)?;
            let n = e.len();
            let s = if tail {
                tail_split(spec, &e, true, middle(&e, spec, true), 1, n - 1, |s| {
                    lcp(e.key(s - 1), e.key(s))
                })
            } else {
                middle(&e, spec, true)
            };
            sep = if tail {
                shortest_sep(e.key(s - 1), e.key(s))
            } else {
                e.key(s).to_vec()
            };
            let (lp, rp) = if head {
                (
                    Fences::prefix(lo, Some(&sep)),
                    Fences::prefix(Some(&sep), hi),
                )
            } else {
                (Vec::new(), Vec::new())
            };
            node::build_with(page, child, spec, true, 0, &e, 0..s, &lp)?;
            node::build_with(sink.page_mut(right)?, right, spec, true, 0, &e, s..n, &rp)?;
        }
    } else {
        if l.count < 3 {
            return Err(corrupt(child, "full branch with fewer than 3 keys"));
        }
        let child0 = l.child(page, 0)?;
        e.extend_from(page, &l)?;
        // Descending into the last child (ascending loads): keep the left node full.
        let n = e.len();
        let m = if l.child_index(page, probe)? == l.count {
            l.count - 1
        } else if tail {
            // Shortest separator near the middle ("applies to internal nodes at every level").
            tail_split(
                spec,
                &e,
                false,
                middle(&e, spec, false).min(n - 1),
                1,
                n - 1,
                |m| e.key(m).len(),
            )
        } else {
            middle(&e, spec, false).min(n - 1)
        };
        sep = e.key(m).to_vec();
        let rchild0 = super::slots::le_u64(e.rec(m));
        let (lp, rp) = if head {
            (
                Fences::prefix(lo, Some(&sep)),
                Fences::prefix(Some(&sep), hi),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        node::build_with(page, child, spec, false, child0, &e, 0..m, &lp)?;
        node::build_with(
            sink.page_mut(right)?,
            right,
            spec,
            false,
            rchild0,
            &e,
            m + 1..n,
            &rp,
        )?;
    }
    let ppage = sink.page_mut(parent)?;
    let mut pl = Layout::read(ppage, parent, spec)?;
    if !node::insert(ppage, &mut pl, ci, &sep, &right.to_le_bytes())? {
        return Err(corrupt(parent, "branch has no room for a separator"));
    }
    let go_right = *probe >= spec.decode_key(&sep);
    Ok((right, go_right))
}

/// Splits the leaf `child`, whose list is split where an insert finds no room (a compressed
/// list), into itself and the empty page `right`; returns the separator's stored bytes. An
/// insert past the last key gets a leaf of its own (ascending loads fill leaves); otherwise the
/// list's own split is used (`KeyList::split_images`: blocks copied as they are), or, when it has
/// none, the entries are rebuilt in two halves.
/// The split point of the leaf entries `e` for two leaves of `cap` bytes: the middle by cost
/// when both halves fit, else the point nearest it at which they do. Compressed records are
/// re-encoded per half, and a half can take more than its share of the whole (a chunk's kind
/// and widths follow the values it holds: 239 records took 769 bytes in place, their first 119
/// re-encoded 962).
fn fitting_middle(spec: &Spec, e: &Entries, cap: usize, id: PageId) -> Result<usize> {
    let n = e.len();
    let m = middle(e, spec, true);
    let fits = |r: std::ops::Range<usize>| -> Result<bool> {
        Ok(node_image(spec, true, e, r, cap, id, &[])?.is_some())
    };
    if n < 3 || (fits(0..m)? && fits(m..n)?) {
        return Ok(m);
    }
    // The largest left half that fits, and the smallest start of a right half that fits.
    let (mut lo, mut hi) = (1, n - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(0..mid)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let most = lo;
    let (mut lo, mut hi) = (1, n - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(mid..n)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let least = lo;
    if least > most {
        return Err(corrupt(
            id,
            "no split point leaves both halves within a page",
        ));
    }
    Ok(m.clamp(least, most))
}

fn split_packed_leaf<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    child: PageId,
    right: PageId,
    probe: &Key<'_>,
) -> Result<Vec<u8>> {
    let page = sink.page_mut(child)?;
    let l = Layout::read(page, child, spec)?;
    // (Keys read owned: with compressed records, the keys may be byte strings.)
    if l.count == 0 || l.above_last(page, probe)? {
        node::init(sink.page_mut(right)?, spec, true, 0);
        return Ok(spec.encode_key(probe)?.bytes().to_vec());
    }
    let below_first = *probe < l.key_owned(page, 0)?.as_key();
    // The key list's own split sizes the halves by each record's fixed cost; compressed
    // records are rebuilt and measured instead.
    let split = if l.recs.cost_is_exact() {
        l.keys
            .split_images(l.kregion(page), l.count, below_first, |i| {
                Ok(l.recs.cost(l.recs.get(l.rregion(page), l.count, i)?.len()))
            })
            .map_err(|f| l.err(f))?
    } else {
        None
    };
    let Some(super::keys::SplitImages {
        left_keys: base,
        left: limg,
        right: rimg,
    }) = split
    else {
        let mut e = Entries::default();
        e.extend_from(page, &l)?;
        let m = fitting_middle(spec, &e, l.capacity(), child)?;
        let sep = e.key(m).to_vec();
        node::build(page, child, spec, true, 0, &e, 0..m)?;
        node::build(sink.page_mut(right)?, right, spec, true, 0, &e, m..e.len())?;
        return Ok(sep);
    };
    let mut recs = Entries::default();
    for i in 0..l.count {
        recs.push(&[], &l.record_raw(page, i)?);
    }
    node::build_image(
        page,
        child,
        spec,
        true,
        0,
        &limg,
        (0..base).map(|i| recs.rec(i)),
    )?;
    node::build_image(
        sink.page_mut(right)?,
        right,
        spec,
        true,
        0,
        &rimg,
        (base..recs.len()).map(|i| recs.rec(i)),
    )?;
    // The separator: the right leaf's first key.
    let page = sink.page_mut(right)?;
    let rl = Layout::read(page, right, spec)?;
    Ok(spec
        .encode_key(&rl.key_owned(page, 0)?.as_key())?
        .bytes()
        .to_vec())
}

/// Removes `key`. Returns false (changing nothing) when it is absent.
pub fn erase<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
    key: &Key<'_>,
    hint: &mut Option<AppendHint>,
) -> Result<bool> {
    erase_keeping(sink, spec, root, key, hint, None)
}

/// `erase` that also hands back, in `old`, the value it removed: read in the leaf before the
/// entry goes (an overflow value before its chain is freed), as `put_keeping` does for an
/// overwrite, so "get and remove" costs what `erase` costs. `old` stays `None` when the key
/// is absent.
pub fn erase_keeping<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
    key: &Key<'_>,
    hint: &mut Option<AppendHint>,
    mut keep: Option<&mut Option<Vec<u8>>>,
) -> Result<bool> {
    let probe = spec.probe(key)?;
    if !contains(&*sink, spec, *root, &probe)? {
        return Ok(false);
    }
    *hint = None;
    let packed = !spec.leaf_keys.cost_is_exact();
    let enc = spec.encode_key(&probe)?;
    let kb = enc.bytes();
    let mut done = false;
    let mut at = LeafAt {
        id: *root,
        parent: None,
        rightmost: false,
    };
    let head = spec.head();
    // Rounds: a compressed leaf that has no room to remove a key even after a split starts a
    // fresh descent (see `put`).
    'round: for _ in 0..MAX_DEPTH {
        let r = sink.cow(*root)?;
        *root = r;
        at = LeafAt {
            id: r,
            parent: None,
            rightmost: false,
        };
        let mut fences = FenceRef::default();
        for _ in 0..MAX_DEPTH {
            let cur = at.id;
            let page = sink.page_mut(cur)?;
            let mut l = Layout::read(page, cur, spec)?;
            if l.leaf {
                let i = match l.search(page, &probe)? {
                    Ok(i) => i,
                    Err(_) => return Err(corrupt(cur, "key found by lookup but not by erase")),
                };
                let old = match overflow::decode(spec, l.record_raw(page, i)?, cur)? {
                    Stored::Overflow { first, len } => Some((first, len)),
                    Stored::Inline(b) => {
                        if let Some(slot) = keep.as_deref_mut() {
                            *slot = Some(b.to_vec());
                        }
                        None
                    }
                };
                if !node::remove(page, &mut l, i)? {
                    // A compressed block would grow and the leaf is full: split, then remove.
                    let half = split_leaf_at(sink, spec, at, root, &probe, kb)?;
                    let page = sink.page_mut(half.id)?;
                    let mut l = Layout::read(page, half.id, spec)?;
                    let i = match l.search(page, &probe)? {
                        Ok(i) => i,
                        Err(_) => return Err(corrupt(half.id, "key lost by a split")),
                    };
                    if !node::remove(page, &mut l, i)? {
                        continue 'round;
                    }
                }
                if let Some((first, len)) = old {
                    if let Some(slot) = keep.as_deref_mut() {
                        *slot = Some(overflow::read(&*sink, first, len)?);
                    }
                    overflow::free(sink, first, len)?;
                }
                done = true;
                break 'round;
            }
            let ci = l.child_index(page, &probe)?;
            let (mut next, mut ni) = descend_for_erase(sink, spec, cur, ci, fences)?;
            // With compressed leaves an erase may split a leaf, so, as on insert, the branches on
            // the way down keep room for a separator.
            if packed && needs_split(sink, spec, next, 0)? {
                let cf = Fences::default();
                let (right, go_right) = split_child(sink, spec, cur, ni, next, &probe, kb, &cf)?;
                if go_right {
                    next = right;
                    ni += 1;
                }
            }
            if head {
                let page = sink.page_mut(cur)?;
                let count = Layout::read(page, cur, spec)?.count;
                fences = fences.child(cur, count, ni);
            }
            at = LeafAt {
                id: next,
                parent: Some((cur, ni)),
                rightmost: false,
            };
        }
        break;
    }
    let cur = at.id;
    if !done {
        return Err(too_deep(cur));
    }
    collapse_root(sink, spec, root)?;
    Ok(true)
}

/// Replaces a root branch with a single child by that child; frees an empty root leaf.
fn collapse_root<S: PageSink + ?Sized>(sink: &mut S, spec: &Spec, root: &mut PageId) -> Result<()> {
    for _ in 0..MAX_DEPTH {
        if *root == 0 {
            return Ok(());
        }
        let page = sink.page(*root)?;
        let l = Layout::read(&page, *root, spec)?;
        if l.count > 0 {
            return Ok(());
        }
        let next = if l.leaf { 0 } else { l.child(&page, 0)? };
        sink.free(*root)?;
        *root = next;
    }
    Err(too_deep(*root))
}

/// Returns the writable child `ci` of the dirty branch `parent`, first merging it with a
/// neighbour when it is under-full (see the module docs).
fn descend_for_erase<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    parent: PageId,
    ci: usize,
    pf: FenceRef,
) -> Result<(PageId, usize)> {
    let ppage = sink.page_mut(parent)?;
    let pl = Layout::read(ppage, parent, spec)?;
    let child = pl.child(ppage, ci)?;
    if pl.count >= 1 {
        let li = if ci < pl.count { ci } else { ci - 1 };
        let left = pl.child(ppage, li)?;
        let right = pl.child(ppage, li + 1)?;
        let sep = key_bytes(ppage, &pl, li)?;
        // The merged node's fences: left of the left child, right of the right one.
        let pfx = if spec.head() {
            let a = if li > 0 {
                Some(key_bytes(ppage, &pl, li - 1)?)
            } else {
                None
            };
            let b = if li + 1 < pl.count {
                Some(key_bytes(ppage, &pl, li + 1)?)
            } else {
                None
            };
            let (a, b) = (
                match a {
                    Some(a) => Some(a),
                    None => FenceRef::key(&*sink, spec, pf.lo)?,
                },
                match b {
                    Some(b) => Some(b),
                    None => FenceRef::key(&*sink, spec, pf.hi)?,
                },
            );
            Fences::prefix(a.as_deref(), b.as_deref())
        } else {
            Vec::new()
        };
        let cpage = sink.page(child)?;
        let cl = Layout::read(&cpage, child, spec)?;
        // Leaves: merge below half full into at most 7/8 of a page (the gap between the two
        // keeps a merged leaf from splitting again at once); branches: below a quarter, into
        // at most 3/4.
        let (under, budget) = if cl.leaf {
            (cl.used(&cpage)? * 2 < cl.capacity(), cl.capacity() * 7 / 8)
        } else {
            (cl.used(&cpage)? * 4 < cl.capacity(), cl.capacity() * 3 / 4)
        };
        if under {
            let lp = sink.page(left)?;
            let ll = Layout::read(&lp, left, spec)?;
            let rp = sink.page(right)?;
            let rl = Layout::read(&rp, right, spec)?;
            if ll.leaf != rl.leaf {
                return Err(corrupt(parent, "children at different levels"));
            }
            let extra = if ll.leaf {
                0
            } else {
                spec.branch_keys.cost(sep.len()) + 8
            };
            if ll.used(&lp)? + rl.used(&rp)? + extra <= budget {
                let mut e = Entries::default();
                e.extend_from(&lp, &ll)?;
                let child0 = if ll.leaf {
                    0
                } else {
                    e.push(&sep, &rl.child(&rp, 0)?.to_le_bytes());
                    ll.child(&lp, 0)?
                };
                e.extend_from(&rp, &rl)?;
                drop((lp, rp, cpage));
                if node_image(spec, ll.leaf, &e, 0..e.len(), budget, parent, &pfx)?.is_none() {
                    return cow_child(sink, spec, parent, ci, child);
                }
                let nl = sink.cow(left)?;
                node::build_with(
                    sink.page_mut(nl)?,
                    nl,
                    spec,
                    ll.leaf,
                    child0,
                    &e,
                    0..e.len(),
                    &pfx,
                )?;
                sink.free(right)?;
                let ppage = sink.page_mut(parent)?;
                let mut pl = Layout::read(ppage, parent, spec)?;
                node::remove(ppage, &mut pl, li)?;
                node::set_child(ppage, &pl, li, nl)?;
                return Ok((nl, li));
            }
        }
    }
    cow_child(sink, spec, parent, ci, child)
}

/// Copies child `ci` of the dirty branch `parent` on write; returns it and its index.
fn cow_child<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    parent: PageId,
    ci: usize,
    child: PageId,
) -> Result<(PageId, usize)> {
    let c2 = sink.cow(child)?;
    if c2 != child {
        let ppage = sink.page_mut(parent)?;
        let pl = Layout::read(ppage, parent, spec)?;
        node::set_child(ppage, &pl, ci, c2)?;
    }
    Ok((c2, ci))
}

/// The key image of a node (a leaf when `leaf`) rebuilt from entries `range` of `e` under
/// the head `prefix`, when it and the records stay within `budget` bytes. Plain lists cost what
/// their parts did; a compressed KeyList is re-encoded, which may cost more (a block may now
/// span a wide delta), and a merged head-compressed node gets a shorter prefix and new prefix
/// deltas, so the image is built and measured.
fn node_image(
    spec: &Spec,
    leaf: bool,
    e: &Entries,
    range: std::ops::Range<usize>,
    budget: usize,
    id: PageId,
    prefix: &[u8],
) -> Result<Option<Vec<u8>>> {
    let ks: Vec<&[u8]> = range.clone().map(|i| e.key(i)).collect();
    let mut img = Vec::new();
    if !spec
        .keys(leaf)
        .build(&ks, e.shares(range.clone()), prefix, budget, &mut img)
        .map_err(|f| corrupt(id, f.0))?
    {
        return Ok(None);
    }
    let ru = spec
        .records(leaf)
        .cost_of(range.map(|i| e.rec(i)))
        .map_err(|f| corrupt(id, f.0))?;
    Ok((img.len() + ru <= budget).then_some(img))
}

/// Moves every page of the tree at or above page id `limit` (nodes and overflow chains) to the
/// lowest free pages, copying the branches on the way to them (their child ids change); `root`
/// may change. Contents stay byte for byte (only child ids and overflow references change), so
/// keys, fences and blocks are as before. Pages this transaction already wrote stay where they
/// are. Returns how many pages moved. `Env::shrink` calls this for every tree, then gives the
/// freed tail of the file back.
pub fn relocate<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    root: &mut PageId,
    limit: PageId,
) -> Result<u64> {
    if *root == 0 {
        return Ok(0);
    }
    let mut moved = 0;
    if let Some(new) = relocate_node(sink, spec, *root, limit, 0, &mut moved)? {
        *root = new;
    }
    Ok(moved)
}

/// [`relocate`] of the subtree at `id`: its new id when it moved.
fn relocate_node<S: PageSink + ?Sized>(
    sink: &mut S,
    spec: &Spec,
    id: PageId,
    limit: PageId,
    depth: usize,
    moved: &mut u64,
) -> Result<Option<PageId>> {
    if depth >= MAX_DEPTH {
        return Err(too_deep(id));
    }
    let page = sink.page(id)?;
    let l = Layout::read(&page, id, spec)?;
    if l.leaf {
        // Overflow chains with a page at or above the limit are written anew.
        let mut chains = Vec::new();
        if spec.recs.may_overflow() {
            for i in 0..l.count {
                if let Stored::Overflow { first, len } =
                    overflow::decode(spec, l.record_raw(&page, i)?, id)?
                {
                    let (mut high, mut pages) = (false, 0u64);
                    overflow::walk(&*sink, first, len, |pid, _| {
                        high |= pid >= limit;
                        pages += 1;
                        Ok(())
                    })?;
                    if high {
                        chains.push((i, first, len, pages));
                    }
                }
            }
        }
        drop(page);
        if id < limit && chains.is_empty() {
            return Ok(None);
        }
        let new = sink.cow(id)?;
        *moved += u64::from(new != id);
        let mut rec = Vec::new();
        for (i, first, len, pages) in chains {
            let value = overflow::read(&*sink, first, len)?;
            overflow::free(sink, first, len)?;
            overflow::store(sink, spec, &value, &mut rec)?;
            *moved += pages;
            let p = sink.page_mut(new)?;
            let mut l = Layout::read(p, new, spec)?;
            // A reference replaces a reference of the same size: it always fits.
            if !node::set_record(p, &mut l, i, &rec)? {
                return Err(corrupt(new, "no room to rewrite an overflow reference"));
            }
        }
        return Ok((new != id).then_some(new));
    }
    let kids = (0..=l.count)
        .map(|i| l.child(&page, i))
        .collect::<Result<Vec<_>>>()?;
    drop(page);
    let mut changed = Vec::new();
    for (i, &c) in kids.iter().enumerate() {
        if let Some(n) = relocate_node(sink, spec, c, limit, depth + 1, moved)? {
            changed.push((i, n));
        }
    }
    if id < limit && changed.is_empty() {
        return Ok(None);
    }
    let new = sink.cow(id)?;
    *moved += u64::from(new != id);
    if !changed.is_empty() {
        let p = sink.page_mut(new)?;
        let pl = Layout::read(p, new, spec)?;
        for (i, n) in changed {
            node::set_child(p, &pl, i, n)?;
        }
    }
    Ok((new != id).then_some(new))
}

/// A callback for every node: `(page id, depth, page bytes, layout)`.
pub type NodeVisitor<'a> = dyn FnMut(PageId, usize, &[u8], &Layout) -> Result<()> + 'a;

/// Calls `f(id, depth, page, layout)` for every node in depth-first order (children left to
/// right), and `g(id)` for every overflow page. Depth-bounded.
pub fn walk<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    f: &mut NodeVisitor<'_>,
    g: &mut dyn FnMut(PageId) -> Result<()>,
) -> Result<()> {
    fn rec<S: PageSource + ?Sized>(
        src: &S,
        spec: &Spec,
        id: PageId,
        depth: usize,
        seen: &mut std::collections::HashSet<PageId>,
        f: &mut NodeVisitor<'_>,
        g: &mut dyn FnMut(PageId) -> Result<()>,
    ) -> Result<()> {
        if depth >= MAX_DEPTH {
            return Err(too_deep(id));
        }
        // A corrupt tree may share subtrees; without this a walk could take exponential time.
        if !seen.insert(id) {
            return Err(corrupt(id, "node reachable twice"));
        }
        let page = src.page(id)?;
        let l = Layout::read(&page, id, spec)?;
        f(id, depth, &page, &l)?;
        if l.leaf {
            if spec.recs.may_overflow() {
                for i in 0..l.count {
                    if let Stored::Overflow { first, len } =
                        overflow::decode(spec, l.record_raw(&page, i)?, id)?
                    {
                        overflow::walk(src, first, len, |pid, _| g(pid))?;
                    }
                }
            }
        } else {
            for i in 0..=l.count {
                rec(src, spec, l.child(&page, i)?, depth + 1, seen, f, g)?;
            }
        }
        Ok(())
    }
    if root == 0 {
        return Ok(());
    }
    rec(
        src,
        spec,
        root,
        0,
        &mut std::collections::HashSet::new(),
        f,
        g,
    )
}

/// Frees every page of a tree (nodes and overflow chains).
pub fn drop_tree<S: PageSink + ?Sized>(sink: &mut S, spec: &Spec, root: PageId) -> Result<()> {
    let mut ids = Vec::new();
    {
        let mut ov = Vec::new();
        walk(
            &*sink,
            spec,
            root,
            &mut |id, _, _, _| {
                ids.push(id);
                Ok(())
            },
            &mut |id| {
                ov.push(id);
                Ok(())
            },
        )?;
        ids.extend(ov);
    }
    for id in ids {
        sink.free(id)?;
    }
    Ok(())
}
