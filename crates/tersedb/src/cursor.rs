//! Cursors and range iterators.
//!
//! A [`Cursor`] is bidirectional and positioned by key (exact or lower bound). It keeps the path
//! from the root to its leaf (no sibling pointers exist under copy-on-write) and holds the pages
//! of that path, so moving within a leaf touches no other page. At either end, `next`/`prev`
//! return false and the cursor stays on the last/first key. A [`WriteCursor`] can also erase the
//! key under it and then sits on the following key.
//!
//! `next` and `prev` compare each key with the one they left and with its leaf's fence (the
//! separators that lead to the leaf; two comparisons per step), or, inside a compressed leaf,
//! check each decoded block once when they reach it: a damaged page behind a valid checksum can
//! hold keys out of order or outside their leaf's range, and a cursor returns
//! `Error::Corrupted` rather than such a key.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::cursor::RawCursor;
use crate::btree::{Key, KeyBuf, Spec};
use crate::db::Db;
use crate::error::{Error, PageId, Result};
use crate::storage::PageSource;
use crate::txn::{key_error, ReadTxn, WriteTxn};
use std::ops::{Bound, RangeBounds};

/// A read cursor over one database, borrowed from a transaction.
///
/// ```
/// # use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};
/// # let env = Env::in_memory(&EnvOptions::default())?;
/// let mut w = env.begin_write()?;
/// let db = w.create_db("ids", DbConfig::new(KeyType::U64, RecordType::None))?;
/// for id in [10u64, 20, 30] {
///     w.put(&db, id, b"")?;
/// }
/// let mut c = w.cursor(&db)?;
/// assert!(c.lower_bound(15u64)?); // the first key >= 15
/// assert_eq!(c.key_u64(), Some(20));
/// assert!(c.next()? && c.key_u64() == Some(30));
/// assert!(!c.next()?); // at the end: stays on 30
/// assert!(c.prev()? && c.key_u64() == Some(20));
/// assert!(!c.seek(25u64)?); // exact seek of an absent key: unpositioned
/// # Ok::<(), tersedb::Error>(())
/// ```
pub struct Cursor<'t> {
    src: &'t dyn PageSource,
    spec: Spec,
    root: PageId,
    raw: RawCursor,
    trail: Trail,
}

/// The key the cursor is on, held to prove that the next step goes past it. Integer keys are
/// held as a number, byte strings in a buffer reused from step to step.
///
/// A step onto a key of a decoded codec block is proven by the block, checked once when the
/// cursor cached it (`RawCursor::on_checked_block`): the trail then holds nothing
/// ([`Trail::let_go`]), and the next step that is not onto such a block is into another leaf
/// (every slot of a compressed leaf is served from its cached block), which the leaf fences
/// order: it is checked against both bounds of its fence instead of against a key.
#[derive(Debug, Default)]
struct Trail {
    int: Option<u64>,
    bytes: Option<Vec<u8>>,
}

impl Trail {
    /// After a step the cursor proved by other means (see above): hold nothing.
    #[inline(always)]
    fn let_go(&mut self) {
        self.int = None;
    }

    /// Holds the current key (after a positioning move or a step).
    #[inline]
    fn hold(&mut self, raw: &RawCursor) -> Result<()> {
        if let Some(k) = raw.key_int() {
            self.int = Some(k);
            return Ok(());
        }
        self.int = None;
        match raw.key()? {
            Some(Key::U64(k)) => self.int = Some(k),
            Some(Key::U32(k)) => self.int = Some(k as u64),
            Some(Key::Bytes(k)) => {
                let b = self.bytes.get_or_insert_with(Vec::new);
                b.clear();
                b.extend_from_slice(k);
                return Ok(());
            }
            None => {}
        }
        self.bytes = None;
        Ok(())
    }

    /// After a step: checks that it went past the held key, then holds the new one.
    #[inline(always)]
    fn stepped(&mut self, raw: &RawCursor, moved: bool, forward: bool) -> Result<bool> {
        if !moved {
            return Ok(false);
        }
        let want = if forward {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Less
        };
        let ok = match (self.int, raw.key_int()) {
            // The scan fast path: no `Key` built.
            (Some(prev), Some(now)) => {
                self.int = Some(now);
                // Keys ascend (descend) from a key checked against both bounds where the
                // cursor entered the leaf: only the bound ahead can be crossed.
                if !raw.int_within(now, forward) {
                    raw.check_fence()?;
                }
                now.cmp(&prev) == want
            }
            _ => {
                raw.check_fence()?;
                match (raw.key()?, self.int, &mut self.bytes) {
                    (Some(Key::U64(now)), Some(prev), _) => {
                        self.int = Some(now);
                        now.cmp(&prev) == want
                    }
                    (Some(Key::Bytes(now)), None, Some(prev)) => {
                        let ok = now.cmp(prev.as_slice()) == want;
                        prev.clear();
                        prev.extend_from_slice(now);
                        ok
                    }
                    _ => {
                        self.hold(raw)?;
                        true
                    }
                }
            }
        };
        if !ok {
            return Err(out_of_order(raw, forward));
        }
        Ok(true)
    }
}

#[cold]
#[inline(never)]
fn out_of_order(raw: &RawCursor, forward: bool) -> Error {
    Error::Corrupted {
        page: raw.leaf_id().unwrap_or(0),
        what: format!(
            "keys out of order: {} {} the key before it",
            raw.key()
                .ok()
                .flatten()
                .map(|k| k.to_owned().to_string())
                .unwrap_or_default(),
            if forward { "follows" } else { "precedes" },
        ),
    }
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("root", &self.root)
            .field("key", &self.key())
            .finish()
    }
}

// `next`/`prev` are cursor moves returning whether they moved, not iterator steps; `Range` is
// the iterator.
#[allow(clippy::should_implement_trait)]
impl<'t> Cursor<'t> {
    pub(crate) fn new(src: &'t dyn PageSource, spec: Spec, root: PageId) -> Self {
        Cursor {
            src,
            spec,
            root,
            raw: RawCursor::new(),
            trail: Trail::default(),
        }
    }

    /// Validates the entry the cursor moved to, so `key()` cannot fail afterwards.
    fn checked(&self, moved: bool) -> Result<bool> {
        if moved && !self.raw.key_is_checked() {
            self.raw.key()?;
        }
        Ok(moved)
    }

    /// After a positioning move: holds the key for the next step's order check.
    fn placed(&mut self, moved: bool) -> Result<bool> {
        let m = self.checked(moved)?;
        self.raw.check_fence()?;
        self.trail.hold(&self.raw)?;
        Ok(m)
    }

    /// Moves to the smallest key; false when the database is empty.
    pub fn first(&mut self) -> Result<bool> {
        let m = self.raw.first(self.src, &self.spec, self.root)?;
        self.placed(m)
    }
    /// Moves to the largest key; false when the database is empty.
    pub fn last(&mut self) -> Result<bool> {
        let m = self.raw.last(self.src, &self.spec, self.root)?;
        self.placed(m)
    }
    /// Moves to the next key; false (staying put) at the end or when unpositioned.
    pub fn next(&mut self) -> Result<bool> {
        let m = self.raw.next(self.src, &self.spec)?;
        if m && self.raw.on_checked_block() {
            self.trail.let_go();
            return Ok(true);
        }
        self.step_checked(m, true)
    }
    /// The checks of a step off a checked block, out of line so that the step within one
    /// stays small.
    #[inline(never)]
    fn step_checked(&mut self, moved: bool, forward: bool) -> Result<bool> {
        let m = self.checked(moved)?;
        self.trail.stepped(&self.raw, m, forward)
    }
    /// Moves to the previous key; false (staying put) at the start or when unpositioned.
    pub fn prev(&mut self) -> Result<bool> {
        let m = self.raw.prev(self.src, &self.spec)?;
        if m && self.raw.on_checked_block() {
            self.trail.let_go();
            return Ok(true);
        }
        self.step_checked(m, false)
    }
    /// Moves to `key` exactly; false (unpositioned) when absent.
    pub fn seek<'k>(&mut self, key: impl Into<Key<'k>>) -> Result<bool> {
        let probe = self.spec.probe(&key.into())?;
        let m = self
            .raw
            .seek(self.src, &self.spec, self.root, &probe, true)?;
        self.placed(m)
    }
    /// Moves to the first key `>= key`; false (unpositioned) when there is none.
    pub fn lower_bound<'k>(&mut self, key: impl Into<Key<'k>>) -> Result<bool> {
        let probe = self.spec.probe(&key.into())?;
        let m = self
            .raw
            .seek(self.src, &self.spec, self.root, &probe, false)?;
        self.placed(m)
    }
    /// The key under the cursor (`None` when unpositioned). Borrowed from the cursor's page.
    pub fn key(&self) -> Option<Key<'_>> {
        self.raw.key().ok().flatten()
    }
    /// The key as u32 (for u32 databases): the scan fast path.
    pub fn key_u32(&self) -> Option<u32> {
        self.raw.key_u32()
    }
    /// The key as u64 (u32 keys widen; `None` for byte-string keys or when unpositioned).
    pub fn key_u64(&self) -> Option<u64> {
        self.raw.key_int()
    }
    /// The value under the cursor (read from overflow pages when large), copied.
    pub fn value(&self) -> Result<Option<Vec<u8>>> {
        self.raw.value(self.src, &self.spec)
    }
    /// The value under the cursor, borrowed from its page when it sits there; values in
    /// overflow pages span several pages and are assembled into one buffer.
    pub fn value_ref(&self) -> Result<Option<std::borrow::Cow<'_, [u8]>>> {
        use crate::btree::overflow::{self, Stored};
        Ok(match self.raw.stored(&self.spec)? {
            // A compressed record is decoded: owned.
            Some(Stored::Inline(b)) => Some(match b.page() {
                Some(p) => std::borrow::Cow::Borrowed(p),
                None => std::borrow::Cow::Owned(b.to_vec()),
            }),
            Some(Stored::Overflow { first, len }) => Some(std::borrow::Cow::Owned(overflow::read(
                self.src, first, len,
            )?)),
            None => None,
        })
    }
    /// Whether the cursor is on a key.
    pub fn is_positioned(&self) -> bool {
        self.raw.is_positioned()
    }
}

/// A cursor of the write transaction: reads like [`Cursor`], and erases.
pub struct WriteCursor<'t> {
    txn: &'t mut WriteTxn,
    db: Db,
    raw: RawCursor,
    trail: Trail,
}

impl std::fmt::Debug for WriteCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteCursor")
            .field("db", &self.db.name())
            .field("key", &self.key())
            .finish()
    }
}

#[allow(clippy::should_implement_trait)]
impl<'t> WriteCursor<'t> {
    pub(crate) fn new(txn: &'t mut WriteTxn, db: Db) -> Self {
        WriteCursor {
            txn,
            db,
            raw: RawCursor::new(),
            trail: Trail::default(),
        }
    }

    fn go(
        &mut self,
        f: impl FnOnce(&mut RawCursor, &dyn PageSource, &Spec, PageId) -> Result<bool>,
    ) -> Result<bool> {
        let spec = self.db.spec;
        let (src, root) = self.txn.view(&self.db)?;
        let m = f(&mut self.raw, src, &spec, root)?;
        if m {
            self.raw.key()?;
        }
        Ok(m)
    }

    /// A positioning move, holding the key for the next step's order check.
    fn place(
        &mut self,
        f: impl FnOnce(&mut RawCursor, &dyn PageSource, &Spec, PageId) -> Result<bool>,
    ) -> Result<bool> {
        let m = self.go(f)?;
        self.trail.hold(&self.raw)?;
        Ok(m)
    }

    /// Moves to the smallest key; false when the database is empty.
    pub fn first(&mut self) -> Result<bool> {
        self.place(|c, s, sp, r| c.first(s, sp, r))
    }
    /// Moves to the largest key; false when the database is empty.
    pub fn last(&mut self) -> Result<bool> {
        self.place(|c, s, sp, r| c.last(s, sp, r))
    }
    /// Moves to the next key; false (staying put) at the end or when unpositioned.
    pub fn next(&mut self) -> Result<bool> {
        let m = self.go(|c, s, sp, _| c.next(s, sp))?;
        self.trail.stepped(&self.raw, m, true)
    }
    /// Moves to the previous key; false (staying put) at the start or when unpositioned.
    pub fn prev(&mut self) -> Result<bool> {
        let m = self.go(|c, s, sp, _| c.prev(s, sp))?;
        self.trail.stepped(&self.raw, m, false)
    }
    /// Moves to `key` exactly; false (unpositioned) when absent.
    pub fn seek<'k>(&mut self, key: impl Into<Key<'k>>) -> Result<bool> {
        let probe = self.db.spec.probe(&key.into())?;
        self.place(|c, s, sp, r| c.seek(s, sp, r, &probe, true))
    }
    /// Moves to the first key `>= key`; false (unpositioned) when there is none.
    pub fn lower_bound<'k>(&mut self, key: impl Into<Key<'k>>) -> Result<bool> {
        let probe = self.db.spec.probe(&key.into())?;
        self.place(|c, s, sp, r| c.seek(s, sp, r, &probe, false))
    }
    /// The key under the cursor (`None` when unpositioned).
    pub fn key(&self) -> Option<Key<'_>> {
        self.raw.key().ok().flatten()
    }
    /// The value under the cursor, copied.
    pub fn value(&mut self) -> Result<Option<Vec<u8>>> {
        let spec = self.db.spec;
        let (src, _) = self.txn.view(&self.db)?;
        self.raw.value(src, &spec)
    }

    /// Erases the key under the cursor; the cursor then sits on the next key (returns false,
    /// unpositioned, when the erased key was the last). Returns false when unpositioned.
    ///
    /// ```
    /// # use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let db = w.create_db("n", DbConfig::new(KeyType::U32, RecordType::None))?;
    /// for k in 0..10u32 {
    ///     w.put(&db, k, b"")?;
    /// }
    /// // Erase the odd keys: after an erase the cursor already stands on the next key.
    /// let mut c = w.cursor_mut(&db)?;
    /// let mut more = c.first()?;
    /// while more {
    ///     more = match c.key().and_then(|k| k.as_u64()) {
    ///         Some(k) if k % 2 == 1 => c.erase()?,
    ///         _ => c.next()?,
    ///     };
    /// }
    /// drop(c);
    /// assert_eq!(w.len(&db)?, 5);
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn erase(&mut self) -> Result<bool> {
        let Some(k) = self.key().map(|k| k.to_owned()) else {
            return Ok(false);
        };
        self.raw.clear();
        self.txn.erase(&self.db, &k)?;
        self.lower_bound(&k)
    }
}

/// An iterator over `(key, value)` pairs of a key range, in key order; `.rev()` and mixing
/// `next` / `next_back` work too (two cursors that stop where they meet).
pub struct Range<'t> {
    front: Cursor<'t>,
    back: Cursor<'t>,
    start: Bound<KeyBuf>,
    end: Bound<KeyBuf>,
    front_started: bool,
    back_started: bool,
    done: bool,
}

impl std::fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("start", &self.start)
            .field("end", &self.end)
            .finish()
    }
}

fn owned<'k, K: Into<Key<'k>> + Copy>(b: Bound<&K>) -> Bound<KeyBuf> {
    match b {
        Bound::Included(k) => Bound::Included((*k).into().to_owned()),
        Bound::Excluded(k) => Bound::Excluded((*k).into().to_owned()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'t> Range<'t> {
    pub(crate) fn new<'k, K: Into<Key<'k>> + Copy, R: RangeBounds<K>>(
        cur: Cursor<'t>,
        r: &R,
    ) -> Result<Self> {
        let norm = |b: Bound<KeyBuf>| -> Result<Bound<KeyBuf>> {
            Ok(match b {
                Bound::Included(k) => Bound::Included(cur.spec.probe(&k.as_key())?.to_owned()),
                Bound::Excluded(k) => Bound::Excluded(cur.spec.probe(&k.as_key())?.to_owned()),
                Bound::Unbounded => Bound::Unbounded,
            })
        };
        let start = norm(owned(r.start_bound()))?;
        let end = norm(owned(r.end_bound()))?;
        let back = Cursor::new(cur.src, cur.spec, cur.root);
        Ok(Range {
            front: cur,
            back,
            start,
            end,
            front_started: false,
            back_started: false,
            done: false,
        })
    }

    fn advance_front(&mut self) -> Result<bool> {
        if self.front_started {
            return self.front.next();
        }
        self.front_started = true;
        match self.start.clone() {
            Bound::Unbounded => self.front.first(),
            Bound::Included(k) => self.front.lower_bound(&k),
            Bound::Excluded(k) => {
                if self.front.lower_bound(&k)? && self.front.key() == Some(k.as_key()) {
                    self.front.next()
                } else {
                    Ok(self.front.is_positioned())
                }
            }
        }
    }

    fn advance_back(&mut self) -> Result<bool> {
        if self.back_started {
            return self.back.prev();
        }
        self.back_started = true;
        match self.end.clone() {
            Bound::Unbounded => self.back.last(),
            Bound::Included(k) => {
                if !self.back.lower_bound(&k)? {
                    self.back.last()
                } else if self.back.key() == Some(k.as_key()) {
                    Ok(true)
                } else {
                    self.back.prev()
                }
            }
            Bound::Excluded(k) => {
                if self.back.lower_bound(&k)? {
                    self.back.prev()
                } else {
                    self.back.last()
                }
            }
        }
    }

    fn below_end(&self, k: &Key<'_>) -> bool {
        match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => *k <= e.as_key(),
            Bound::Excluded(e) => *k < e.as_key(),
        }
    }

    fn above_start(&self, k: &Key<'_>) -> bool {
        match &self.start {
            Bound::Unbounded => true,
            Bound::Included(s) => *k >= s.as_key(),
            Bound::Excluded(s) => *k > s.as_key(),
        }
    }

    fn step(&mut self, forward: bool) -> Result<Option<(KeyBuf, Vec<u8>)>> {
        let moved = if forward {
            self.advance_front()?
        } else {
            self.advance_back()?
        };
        if !moved {
            return Ok(None);
        }
        let (this, other, other_started) = if forward {
            (&self.front, &self.back, self.back_started)
        } else {
            (&self.back, &self.front, self.front_started)
        };
        let Some(k) = this.key() else {
            return Ok(None);
        };
        let inside = if forward {
            self.below_end(&k)
        } else {
            self.above_start(&k)
        };
        // The other end sits on the last key it yielded: stop before crossing it.
        let not_met = !other_started
            || other
                .key()
                .is_none_or(|o| if forward { k < o } else { k > o });
        if !inside || !not_met {
            return Ok(None);
        }
        let k = k.to_owned();
        let v = this.value()?.unwrap_or_default();
        Ok(Some((k, v)))
    }

    fn finish(
        &mut self,
        r: Result<Option<(KeyBuf, Vec<u8>)>>,
    ) -> Option<Result<(KeyBuf, Vec<u8>)>> {
        match r {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for Range<'_> {
    type Item = Result<(KeyBuf, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step(true);
        self.finish(r)
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step(false);
        self.finish(r)
    }
}

// The transactions' cursor constructors live here, above `txn` (which knows nothing of
// cursors: no import circle between the two).
impl ReadTxn {
    /// An unpositioned cursor.
    pub fn cursor(&self, db: &Db) -> Result<Cursor<'_>> {
        let e = self.entry(db)?;
        Ok(Cursor::new(self.src(), db.spec, e.root))
    }

    /// Iterates over the keys in `range`, in order: `txn.range(&db, 10u32..20)`.
    pub fn range<'k, K: Into<Key<'k>> + Copy, R: RangeBounds<K>>(
        &self,
        db: &Db,
        range: R,
    ) -> Result<Range<'_>> {
        Range::new(self.cursor(db)?, &range).map_err(|e| range_error(db, &range, e))
    }

    /// Iterates over every key, in order.
    pub fn iter(&self, db: &Db) -> Result<Range<'_>> {
        Range::new::<u32, _>(self.cursor(db)?, &(..))
    }
}

impl WriteTxn {
    /// A read-only cursor over the database as of now.
    pub fn cursor(&mut self, db: &Db) -> Result<Cursor<'_>> {
        let e = self.entry(db)?;
        Ok(Cursor::new(self.w()?.source(), db.spec, e.root))
    }

    /// A cursor that can also erase at its position.
    pub fn cursor_mut(&mut self, db: &Db) -> Result<WriteCursor<'_>> {
        self.entry(db)?;
        Ok(WriteCursor::new(self, db.clone()))
    }

    /// Iterates over the keys in `range` as of now, in order.
    pub fn range<'k, K: Into<Key<'k>> + Copy, R: RangeBounds<K>>(
        &mut self,
        db: &Db,
        range: R,
    ) -> Result<Range<'_>> {
        Range::new(self.cursor(db)?, &range).map_err(|e| range_error(db, &range, e))
    }

    /// Iterates over every key as of now, in order.
    pub fn iter(&mut self, db: &Db) -> Result<Range<'_>> {
        Range::new::<u32, _>(self.cursor(db)?, &(..))
    }
}

/// Names the database and the bound of `range` that does not fit it.
#[cold]
fn range_error<'k, K: Into<Key<'k>> + Copy, R: RangeBounds<K>>(
    db: &Db,
    range: &R,
    e: Error,
) -> Error {
    use std::ops::Bound;
    for b in [range.start_bound(), range.end_bound()] {
        if let Bound::Included(k) | Bound::Excluded(k) = b {
            let k: Key<'k> = (*k).into();
            if db.spec.probe(&k).is_err() {
                return key_error(db, &k, e);
            }
        }
    }
    e
}
