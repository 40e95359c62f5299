//! A cursor over one tree: the path from the root to the current leaf entry. With copy-on-write
//! there are no sibling pointers; moving past the end of a leaf climbs the path to the nearest
//! ancestor with a next (previous) child and descends its leftmost (rightmost) edge. Empty
//! leaves, which local balancing may leave behind, are skipped.
//!
//! A cursor holds its pages (`Page` is shared), so it stays valid as a snapshot of the tree it
//! was positioned in; a write made through the tree afterwards is not seen until it is
//! re-positioned.

use super::keys::KeyCache;
use super::node::Layout;
use super::overflow::{self, Stored};
use super::{Key, Spec, MAX_DEPTH};
use crate::error::{PageId, Result};
use crate::storage::{Page, PageSource};

#[derive(Clone, Debug)]
struct Frame {
    page: Page,
    l: Layout,
    /// Child index (branches) or entry index (the leaf).
    i: usize,
    /// Where the last record read of this page was (compressed records).
    rhint: super::records::RecHint,
}

/// The keys the separators on the path allow in the current leaf: each branch on the path
/// bounds its child by the separators around it, and the leaf's fence is the intersection of
/// them all, so a separator forged outside its parent's range only narrows it. A key outside
/// is on a page damaged behind a valid checksum: a lookup would never find it there.
#[derive(Clone, Debug)]
struct Fence {
    /// Integer trees: keys `lo..=hi` (none when `lo > hi`).
    lo: u64,
    hi: u64,
    /// Byte-string trees: keys `>= blo` and `< bhi`.
    blo: Option<Vec<u8>>,
    bhi: Option<Vec<u8>>,
}

impl Default for Fence {
    fn default() -> Self {
        Fence {
            lo: 0,
            hi: u64::MAX,
            blo: None,
            bhi: None,
        }
    }
}

impl Fence {
    fn holds(&self, k: &Key<'_>) -> bool {
        match *k {
            Key::U32(v) => self.holds_int(v as u64),
            Key::U64(v) => self.holds_int(v),
            Key::Bytes(b) => {
                self.blo.as_deref().is_none_or(|lo| b >= lo)
                    && self.bhi.as_deref().is_none_or(|hi| b < hi)
            }
        }
    }

    #[inline(always)]
    fn holds_int(&self, v: u64) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// Whether no key fits: separators out of order or outside their parent's range, which a
    /// sound tree never has (every separator lies strictly inside its node's fence).
    fn is_empty(&self) -> bool {
        match (&self.blo, &self.bhi) {
            (Some(lo), Some(hi)) => lo >= hi,
            _ => self.lo > self.hi,
        }
    }

    /// Whether every key of this fence is below every key of `next` (the next leaf's).
    fn before(&self, next: &Fence) -> bool {
        match (&self.bhi, &next.blo) {
            (Some(hi), Some(lo)) => hi <= lo,
            (None, None) => self.hi < next.lo,
            // The left fence is open above or the right one open below.
            _ => false,
        }
    }

    /// Cuts the fence by separator `sep`: keys `>= sep` (`below` false) or `< sep`.
    fn cut(&mut self, sep: Key<'_>, below: bool) {
        match (sep, below) {
            (Key::Bytes(b), false) => {
                if self.blo.as_deref().is_none_or(|lo| b > lo) {
                    self.blo = Some(b.to_vec());
                }
            }
            (Key::Bytes(b), true) => {
                if self.bhi.as_deref().is_none_or(|hi| b < hi) {
                    self.bhi = Some(b.to_vec());
                }
            }
            (k, false) => self.lo = self.lo.max(k.as_u64().unwrap_or(0)),
            (k, true) => match k.as_u64().and_then(|v| v.checked_sub(1)) {
                Some(h) => self.hi = self.hi.min(h),
                // Keys below 0: none.
                None => (self.lo, self.hi) = (1, 0),
            },
        }
    }
}

/// A position in a tree: unpositioned, or on one entry.
#[derive(Clone, Debug, Default)]
pub struct RawCursor {
    path: Vec<Frame>,
    leaf: Option<Frame>,
    cache: KeyCache,
    fence: Fence,
}

fn too_deep(id: PageId) -> crate::Error {
    super::node::corrupt(
        id,
        format!("tree deeper than {MAX_DEPTH} levels (a cycle?)"),
    )
}

impl RawCursor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.path.clear();
        self.leaf = None;
        self.cache.clear();
    }

    /// Computes the fence of the leaf just entered from the separators on the path.
    fn enter_leaf(&mut self) -> Result<()> {
        let mut fence = Fence::default();
        let mut buf = Vec::new();
        for f in &self.path {
            for (i, below) in [(f.i.checked_sub(1), false), (Some(f.i), true)] {
                let Some(i) = i.filter(|&i| i < f.l.count) else {
                    continue;
                };
                if f.l.keys.contiguous() {
                    fence.cut(f.l.key(&f.page, i)?, below);
                } else {
                    f.l.key_into(&f.page, i, &mut buf)?;
                    fence.cut(Key::Bytes(&buf), below);
                }
            }
        }
        if fence.is_empty() {
            let id = self.leaf.as_ref().map_or(0, |f| f.l.id);
            return Err(super::node::corrupt(
                id,
                "separators above the leaf out of order",
            ));
        }
        self.fence = fence;
        Ok(())
    }

    /// Whether integer key `k` is within the current leaf's fence on the side a step goes to
    /// (its upper bound forward, its lower one backward): the key a cursor enters a leaf at is
    /// checked against both (see [`RawCursor::check_fence`]), and steps keep the order.
    #[inline(always)]
    pub fn int_within(&self, k: u64, forward: bool) -> bool {
        if forward {
            k <= self.fence.hi
        } else {
            k >= self.fence.lo
        }
    }

    /// Checks that the current key lies between the separators that lead to its leaf: a cursor
    /// that checks this at every position it returns, with keys in order between steps, never
    /// returns a key a lookup could not find there.
    pub fn check_fence(&self) -> Result<()> {
        let Some(f) = &self.leaf else {
            return Ok(());
        };
        match self.key()? {
            Some(k) if !self.fence.holds(&k) => Err(super::node::corrupt(
                f.l.id,
                format!(
                    "key {} outside its leaf's fence (separators above it)",
                    k.to_owned()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Makes the key cache hold the current entry's key where the list needs one (see
    /// [`super::KeyList::cache_key`]). A codec block newly cached is checked once for all the
    /// steps inside it: `decode_block_checked` proved its keys strictly ascending between its
    /// descriptor's first and last; here its first and last must lie inside the leaf's fence
    /// and beyond the block the cursor comes from (after it forward, before it backward).
    fn sync(&mut self) -> Result<()> {
        let Some(f) = &self.leaf else {
            return Ok(());
        };
        let before = self.cache.block_edges();
        f.l.keys
            .cache_key(
                f.l.kregion(&f.page),
                f.l.count,
                f.i,
                f.l.id,
                &mut self.cache,
            )
            .map_err(|e| f.l.err(e))?;
        let Some((b, first, last)) = self.cache.block_edges() else {
            return Ok(());
        };
        let ordered = match before {
            Some((ob, _, _)) if ob == b => return Ok(()),
            Some((ob, _, olast)) if ob < b => first > olast,
            Some((_, ofirst, _)) => last < ofirst,
            None => true,
        };
        if ordered && self.fence.holds_int(first) && self.fence.holds_int(last) {
            return Ok(());
        }
        let id = f.l.id;
        self.cache.clear();
        Err(super::node::corrupt(
            id,
            format!(
                "codec block of keys {first}..={last} outside its leaf's fence or out of order \
                 with the block before it"
            ),
        ))
    }

    /// Whether the current key is in the cursor's decoded codec block. Such a block was checked
    /// when it was cached (see [`RawCursor::sync`]), so a step onto its key, from a key of the
    /// same block or the block next to it, needs no comparison: the key is inside the fence and
    /// beyond the key the step left.
    #[inline]
    pub fn on_checked_block(&self) -> bool {
        match &self.leaf {
            Some(f) => self.cache.holds(f.i),
            None => false,
        }
    }

    pub fn is_positioned(&self) -> bool {
        self.leaf.is_some()
    }

    /// The leaf the cursor is on.
    pub fn leaf_id(&self) -> Option<PageId> {
        self.leaf.as_ref().map(|f| f.l.id)
    }

    /// The current key.
    pub fn key(&self) -> Result<Option<Key<'_>>> {
        let Some(f) = &self.leaf else {
            return Ok(None);
        };
        if let Some(k) = f.l.keys.cached_key(&self.cache, f.l.id, f.i) {
            return Ok(Some(k));
        }
        if !f.l.keys.contiguous() {
            return Err(f.l.err(super::slots::Fault("cursor key not decoded")));
        }
        Ok(Some(f.l.key(&f.page, f.i)?))
    }

    /// Whether reading the current key cannot fail: fixed-width keys at an index below the
    /// count, which `Layout::read` already checked against the region, or a cached key.
    #[inline]
    pub fn key_is_checked(&self) -> bool {
        match &self.leaf {
            Some(f) if f.i < f.l.count => {
                self.cache.int(f.i).is_some() || f.l.keys.reads_in_place()
            }
            _ => false,
        }
    }

    /// The current key of an integer leaf, read straight from the page or the block cache
    /// (the scan fast path: no `Key` built).
    #[inline]
    pub fn key_int(&self) -> Option<u64> {
        let f = self.leaf.as_ref()?;
        if let Some(k) = self.cache.int(f.i) {
            return Some(k);
        }
        self.key_int_uncached()
    }

    /// [`RawCursor::key_int`] off the block cache: out of line, so that the cached step stays
    /// small where it is inlined.
    #[inline(never)]
    fn key_int_uncached(&self) -> Option<u64> {
        let f = self.leaf.as_ref()?;
        if let Some(k) = f.l.keys.int_at(f.l.kregion(&f.page), f.l.count, f.i) {
            return Some(k);
        }
        self.key().ok().flatten().and_then(|k| k.as_u64())
    }

    /// The current key of a u32 leaf (see [`RawCursor::key_int`]).
    #[inline]
    pub fn key_u32(&self) -> Option<u32> {
        if self.leaf.as_ref()?.l.keys.int_width() != Some(4) {
            return None;
        }
        self.key_int().map(|k| k as u32)
    }

    /// The current entry's stored record (inline bytes or an overflow reference).
    pub fn stored(&self, spec: &Spec) -> Result<Option<Stored<'_>>> {
        match &self.leaf {
            Some(f) => Ok(Some(overflow::decode(
                spec,
                f.l.record_hinted(&f.page, f.i, &f.rhint)?,
                f.l.id,
            )?)),
            None => Ok(None),
        }
    }

    /// The current entry's value.
    pub fn value<S: PageSource + ?Sized>(&self, src: &S, spec: &Spec) -> Result<Option<Vec<u8>>> {
        Ok(match self.stored(spec)? {
            Some(Stored::Inline(b)) => Some(b.to_vec()),
            Some(Stored::Overflow { first, len }) => Some(overflow::read(src, first, len)?),
            None => None,
        })
    }

    /// Descends from `id` along the leftmost (`left`) or rightmost edge.
    fn descend_edge<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        mut id: PageId,
        left: bool,
    ) -> Result<()> {
        while self.path.len() < MAX_DEPTH {
            let page = src.page(id)?;
            let l = Layout::open(&page, id, spec)?;
            if l.leaf {
                let i = if left { 0 } else { l.count.saturating_sub(1) };
                self.leaf = Some(Frame {
                    page,
                    l,
                    i,
                    rhint: Default::default(),
                });
                self.cache.clear();
                return self.enter_leaf();
            }
            let i = if left { 0 } else { l.count };
            let child = l.child(&page, i)?;
            self.path.push(Frame {
                page,
                l,
                i,
                rhint: Default::default(),
            });
            id = child;
        }
        Err(too_deep(id))
    }

    fn leaf_count(&self) -> usize {
        self.leaf.as_ref().map_or(0, |f| f.l.count)
    }

    pub fn first<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        root: PageId,
    ) -> Result<bool> {
        self.edge(src, spec, root, true)
    }

    pub fn last<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        root: PageId,
    ) -> Result<bool> {
        self.edge(src, spec, root, false)
    }

    fn edge<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        root: PageId,
        left: bool,
    ) -> Result<bool> {
        self.clear();
        if root == 0 {
            return Ok(false);
        }
        self.descend_edge(src, spec, root, left)?;
        if self.leaf_count() > 0 {
            self.sync()?;
            return Ok(true);
        }
        if self.step_leaf(src, spec, left)? {
            Ok(true)
        } else {
            self.clear();
            Ok(false)
        }
    }

    /// Moves to the next entry; false (staying put) at the end or when unpositioned.
    pub fn next<S: PageSource + ?Sized>(&mut self, src: &S, spec: &Spec) -> Result<bool> {
        match &mut self.leaf {
            None => Ok(false),
            Some(f) if f.i + 1 < f.l.count => {
                f.i += 1;
                // Within the cached block (the common case) there is nothing else to do.
                if !self.cache.holds(f.i) {
                    self.sync()?;
                }
                Ok(true)
            }
            Some(_) => self.step_leaf(src, spec, true),
        }
    }

    /// Moves to the previous entry; false (staying put) at the start or when unpositioned.
    pub fn prev<S: PageSource + ?Sized>(&mut self, src: &S, spec: &Spec) -> Result<bool> {
        match &mut self.leaf {
            None => Ok(false),
            Some(f) if f.i > 0 && f.i <= f.l.count => {
                f.i -= 1;
                if !self.cache.holds(f.i) {
                    self.sync()?;
                }
                Ok(true)
            }
            Some(_) => self.step_leaf(src, spec, false),
        }
    }

    /// Moves to the first (last) entry of the next (previous) non-empty leaf; on failure the
    /// cursor is left where it was.
    fn step_leaf<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        forward: bool,
    ) -> Result<bool> {
        let saved = (
            self.path.clone(),
            self.leaf.clone(),
            self.cache.clone(),
            self.fence.clone(),
        );
        loop {
            let child = loop {
                match self.path.last_mut() {
                    None => {
                        (self.path, self.leaf, self.cache, self.fence) = saved;
                        return Ok(false);
                    }
                    Some(f) => {
                        if forward && f.i < f.l.count {
                            f.i += 1;
                        } else if !forward && f.i > 0 {
                            f.i -= 1;
                        } else {
                            self.path.pop();
                            continue;
                        }
                        break f.l.child(&f.page, f.i)?;
                    }
                }
            };
            let left = self.fence.clone();
            self.descend_edge(src, spec, child, forward)?;
            // Leaves come in key order: their fences too, or separators are damaged.
            let ordered = if forward {
                left.before(&self.fence)
            } else {
                self.fence.before(&left)
            };
            if !ordered {
                let id = self.leaf_id().unwrap_or(0);
                return Err(super::node::corrupt(
                    id,
                    "leaf fences out of order (separators damaged)",
                ));
            }
            if self.leaf_count() > 0 {
                self.sync()?;
                // The key the cursor enters the leaf at, against both bounds.
                self.check_fence()?;
                return Ok(true);
            }
        }
    }

    /// Positions on `probe` (`exact`) or on the first key `>= probe`. False (unpositioned) when
    /// there is none. `probe` has the database's key type.
    pub fn seek<S: PageSource + ?Sized>(
        &mut self,
        src: &S,
        spec: &Spec,
        root: PageId,
        probe: &Key<'_>,
        exact: bool,
    ) -> Result<bool> {
        self.clear();
        if root == 0 {
            return Ok(false);
        }
        let mut id = root;
        while self.path.len() < MAX_DEPTH {
            let page = src.page(id)?;
            let l = Layout::open(&page, id, spec)?;
            if l.leaf {
                let (i, found) = match l.search(&page, probe)? {
                    Ok(i) => (i, true),
                    Err(i) => (i, false),
                };
                let count = l.count;
                self.leaf = Some(Frame {
                    page,
                    l,
                    i,
                    rhint: Default::default(),
                });
                self.cache.clear();
                self.enter_leaf()?;
                if found || (!exact && i < count) {
                    self.sync()?;
                    return Ok(true);
                }
                if !exact && self.step_leaf(src, spec, true)? {
                    return Ok(true);
                }
                self.clear();
                return Ok(false);
            }
            let i = l.child_index(&page, probe)?;
            let child = l.child(&page, i)?;
            self.path.push(Frame {
                page,
                l,
                i,
                rhint: Default::default(),
            });
            id = child;
        }
        Err(too_deep(id))
    }
}
