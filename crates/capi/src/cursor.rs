//! Cursors over a read transaction's snapshot or over the write transaction. The engine's
//! cursor borrows its transaction, so a C cursor keeps its transaction (a snapshot's `Arc`, or
//! the write transaction's handle object) and a window of entries around its position, fetched
//! with one short-lived engine cursor per window (up to 256 entries or 1 MiB of values); moving
//! inside the window touches no page.
//!
//! In a write transaction the window goes stale when a call changes data (the transaction's
//! version moves on): the next move fetches from the current key again, so the cursor sees the
//! transaction's own puts and erases. Once the write transaction is committed or aborted every
//! call on its cursors is `TERSEDB_ECLOSED` (a snapshot's cursor outlives its handle instead).
//!
//! `tersedb_cursor_del` erases the current key as LMDB's `mdb_cursor_del` does: the cursor moves
//! to the next key, or, after the last key, into the gap the key left (`next` and `prev` move
//! from there; the window of a fresh cursor loses the one entry instead of being fetched again).

use crate::env::{ended, tersedb_db, tersedb_txn};
use crate::ffi::{self, fail, run, Res};
use crate::handles::{self, Obj, Txn, WriteObj};
use crate::tersedb_status::{self, *};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tersedb::{Db, KeyBuf, KeyType};

/// A cursor over one database of a read transaction or of the write transaction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tersedb_cursor {
    pub id: u64,
}

const WINDOW: usize = 256;
const WINDOW_BYTES: usize = 1 << 20;

/// Entries in key order: a cursor's window.
type Entries = Vec<(KeyBuf, Vec<u8>)>;

/// Where a cursor's entries come from.
enum Source {
    /// A snapshot, kept alive by the cursor.
    Read(Arc<tersedb::ReadTxn>),
    /// The write transaction of handle `id` (`None` inside once it ended).
    Write { txn: Arc<WriteObj>, id: u64 },
}

pub struct CursorObj {
    src: Source,
    db: Db,
    /// Entries in key order; `pos` indexes the current one.
    window: Entries,
    pos: Option<usize>,
    /// The write transaction's version when `window` was fetched (0 for a snapshot).
    seen: u64,
    /// Set (with `pos` `None`) when `tersedb_cursor_del` erased this key and no key followed
    /// it: the cursor stands in its gap, `next` and `prev` move to the keys around it.
    gap: Option<KeyBuf>,
}

enum Start<'a> {
    First,
    Last,
    /// The first key >= this one (forward only).
    At(&'a KeyBuf),
    /// The first key > this one / the last key < it.
    After(&'a KeyBuf),
}

/// Up to a window of entries from `start` going forward (`fwd`) or backward, in key order.
fn fill(mut c: tersedb::Cursor<'_>, start: Start<'_>, fwd: bool) -> Res<Entries> {
    let mut ok = match start {
        Start::First => c.first()?,
        Start::Last => c.last()?,
        Start::At(k) => c.lower_bound(k)?,
        Start::After(k) if fwd => {
            if c.lower_bound(k)? {
                if c.key() == Some(k.as_key()) {
                    c.next()? // false at the end: nothing after k
                } else {
                    true
                }
            } else {
                false
            }
        }
        Start::After(k) => {
            if c.lower_bound(k)? {
                c.prev()? // false at the start: nothing before k
            } else {
                c.last()?
            }
        }
    };
    let mut out = Vec::new();
    let mut bytes = 0;
    while ok && out.len() < WINDOW && bytes < WINDOW_BYTES {
        let Some(k) = c.key().map(|k| k.to_owned()) else {
            break;
        };
        let v = c.value()?.unwrap_or_default();
        bytes += v.len() + 16;
        out.push((k, v));
        ok = if fwd { c.next()? } else { c.prev()? };
    }
    if !fwd {
        out.reverse();
    }
    Ok(out)
}

impl CursorObj {
    /// Fills a window going forward (`fwd`) or backward from `start`, with the version of the
    /// data it shows.
    fn fetch(&self, start: Start<'_>, fwd: bool) -> Res<(Entries, u64)> {
        match &self.src {
            Source::Read(t) => Ok((fill(t.cursor(&self.db)?, start, fwd)?, 0)),
            Source::Write { txn, id } => {
                let mut g = txn.lock();
                let w = g.as_mut().ok_or_else(|| ended(*id))?;
                let seen = txn.version.load(Ordering::Relaxed);
                Ok((fill(w.cursor(&self.db)?, start, fwd)?, seen))
            }
        }
    }

    /// Whether the transaction changed data since the window was fetched; `TERSEDB_ECLOSED`
    /// once a write transaction ended.
    fn stale(&self) -> Res<bool> {
        match &self.src {
            Source::Read(_) => Ok(false),
            Source::Write { txn, id } => {
                let g = txn.lock();
                if g.is_none() {
                    return Err(ended(*id));
                }
                Ok(txn.version.load(Ordering::Relaxed) != self.seen)
            }
        }
    }

    fn current(&self) -> Option<&(KeyBuf, Vec<u8>)> {
        self.pos.and_then(|p| self.window.get(p))
    }

    /// Positions at the window fetched from `start` (unpositioned when it is empty).
    fn reset(&mut self, start: Start<'_>, fwd: bool) -> Res<tersedb_status> {
        let (w, seen) = self.fetch(start, fwd)?;
        self.gap = None;
        self.pos = if w.is_empty() {
            None
        } else if fwd {
            Some(0)
        } else {
            Some(w.len() - 1)
        };
        self.window = w;
        self.seen = seen;
        Ok(if self.pos.is_some() {
            TERSEDB_OK
        } else {
            TERSEDB_NOTFOUND
        })
    }

    fn step(&mut self, fwd: bool) -> Res<tersedb_status> {
        let Some(p) = self.pos else {
            let Some(k) = self.gap.clone() else {
                return Ok(TERSEDB_NOTFOUND);
            };
            let (w, seen) = self.fetch(Start::After(&k), fwd)?;
            if w.is_empty() {
                return Ok(TERSEDB_NOTFOUND); // stays in the gap
            }
            self.pos = Some(if fwd { 0 } else { w.len() - 1 });
            self.window = w;
            self.seen = seen;
            self.gap = None;
            return Ok(TERSEDB_OK);
        };
        if !self.stale()? {
            if fwd && p + 1 < self.window.len() {
                self.pos = Some(p + 1);
                return Ok(TERSEDB_OK);
            }
            if !fwd && p > 0 {
                self.pos = Some(p - 1);
                return Ok(TERSEDB_OK);
            }
        }
        let k = self.window[p].0.clone();
        let (w, seen) = self.fetch(Start::After(&k), fwd)?;
        if w.is_empty() {
            return Ok(TERSEDB_NOTFOUND); // stays on the end key
        }
        self.pos = Some(if fwd { 0 } else { w.len() - 1 });
        self.window = w;
        self.seen = seen;
        Ok(TERSEDB_OK)
    }

    /// The current entry with its value as the transaction has it now: a stale window is
    /// fetched again from the current key; `TERSEDB_NOTFOUND` when that key was erased since.
    fn fresh(&mut self) -> Res<&(KeyBuf, Vec<u8>)> {
        let (k, _) = self.here()?;
        if self.stale()? {
            let k = k.clone();
            let (w, seen) = self.fetch(Start::At(&k), true)?;
            if w.first().is_none_or(|(x, _)| *x != k) {
                return Err(fail(
                    TERSEDB_NOTFOUND,
                    format!(
                        "the cursor's key {} was erased in this transaction",
                        k.as_key()
                    ),
                ));
            }
            self.window = w;
            self.pos = Some(0);
            self.seen = seen;
        }
        self.current().ok_or_else(unpositioned)
    }

    /// The current entry as the cursor holds it; `TERSEDB_NOTFOUND` when unpositioned or in a
    /// deleted key's gap.
    fn here(&self) -> Res<&(KeyBuf, Vec<u8>)> {
        match (self.current(), &self.gap) {
            (Some(e), _) => Ok(e),
            (None, Some(k)) => Err(fail(
                TERSEDB_NOTFOUND,
                format!(
                    "the cursor's key {} was deleted and no key follows it",
                    k.as_key()
                ),
            )),
            (None, None) => Err(unpositioned()),
        }
    }

    /// Erases the current key in the write transaction and moves to the next one (see
    /// `tersedb_cursor_del`).
    fn del(&mut self) -> Res<tersedb_status> {
        let Source::Write { txn, id } = &self.src else {
            return Err(fail(
                TERSEDB_EREADONLY,
                "the cursor belongs to a read transaction: open it in the write transaction to \
                 delete through it",
            ));
        };
        let k = self.here()?.0.clone();
        let Some(p) = self.pos else {
            return Err(unpositioned()); // not reached: `here` found the entry at `pos`
        };
        let mut g = txn.lock();
        let w = g.as_mut().ok_or_else(|| ended(*id))?;
        // The window shows the transaction as it is now unless a call changed data since.
        let exact = txn.version.load(Ordering::Relaxed) == self.seen;
        txn.version.fetch_add(1, Ordering::Relaxed);
        if !w.erase(&self.db, k.as_key())? {
            return Err(fail(
                TERSEDB_NOTFOUND,
                format!(
                    "the cursor's key {} was erased in this transaction",
                    k.as_key()
                ),
            ));
        }
        let seen = txn.version.load(Ordering::Relaxed);
        if exact {
            self.window.remove(p);
            self.seen = seen;
            if p < self.window.len() {
                return Ok(TERSEDB_OK); // `pos` now indexes the next key
            }
        }
        let next = fill(w.cursor(&self.db)?, Start::After(&k), true)?;
        self.seen = seen;
        if next.is_empty() {
            self.pos = None;
            self.gap = Some(k);
        } else {
            self.pos = Some(0);
        }
        self.window = next;
        Ok(TERSEDB_OK)
    }
}

fn cursor(c: tersedb_cursor) -> Res<Arc<Mutex<CursorObj>>> {
    handles::get(c.id, "a cursor", |o| match o {
        Obj::Cursor(c) => Ok(c),
        o => Err(o),
    })
}

/// Runs `f` on cursor `c`; `TERSEDB_ECLOSED` when it is closed or its write transaction ended.
fn with<T>(c: tersedb_cursor, f: impl FnOnce(&mut CursorObj) -> Res<T>) -> Res<T> {
    let c = cursor(c)?;
    let mut g = c.lock().unwrap_or_else(|p| p.into_inner());
    g.stale()?;
    f(&mut g)
}

/// Opens an unpositioned cursor on `db` in a read transaction or in the write transaction. A
/// read transaction's cursor keeps the snapshot alive until closed, even after the transaction
/// handle is closed. A write transaction's cursor sees the transaction's own puts and erases
/// (made before or while it moves); after the transaction is committed or aborted every call on
/// it but `tersedb_cursor_close` is `TERSEDB_ECLOSED`.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_cursor_open(
    txn: tersedb_txn,
    db: tersedb_db,
    out: *mut tersedb_cursor,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let db = handles::db(db.id)?;
        // The database exists in the transaction.
        let src = match &*handles::txn(txn.id)? {
            Txn::Read(r) => {
                r.len(&db)?;
                Source::Read(r.clone())
            }
            Txn::Write(w) => {
                w.lock().as_mut().ok_or_else(|| ended(txn.id))?.len(&db)?;
                Source::Write {
                    txn: w.clone(),
                    id: txn.id,
                }
            }
        };
        let obj = CursorObj {
            src,
            db,
            window: Vec::new(),
            pos: None,
            seen: 0,
            gap: None,
        };
        out.id = handles::insert(Obj::Cursor(Arc::new(Mutex::new(obj))));
        Ok(TERSEDB_OK)
    })
}

/// Closes a cursor.
#[no_mangle]
pub extern "C" fn tersedb_cursor_close(c: tersedb_cursor) -> tersedb_status {
    run(|| {
        handles::remove(c.id, "a cursor", |o| match o {
            Obj::Cursor(c) => Ok(c),
            o => Err(o),
        })?;
        Ok(TERSEDB_OK)
    })
}

/// Moves to the smallest key (`TERSEDB_NOTFOUND` when the database is empty).
#[no_mangle]
pub extern "C" fn tersedb_cursor_first(c: tersedb_cursor) -> tersedb_status {
    run(|| with(c, |c| c.reset(Start::First, true)))
}

/// Moves to the largest key (`TERSEDB_NOTFOUND` when the database is empty).
#[no_mangle]
pub extern "C" fn tersedb_cursor_last(c: tersedb_cursor) -> tersedb_status {
    run(|| with(c, |c| c.reset(Start::Last, false)))
}

/// Moves to the next key; `TERSEDB_NOTFOUND` (staying put) at the end or when unpositioned.
#[no_mangle]
pub extern "C" fn tersedb_cursor_next(c: tersedb_cursor) -> tersedb_status {
    run(|| with(c, |c| c.step(true)))
}

/// Moves to the previous key; `TERSEDB_NOTFOUND` (staying put) at the start or when
/// unpositioned.
#[no_mangle]
pub extern "C" fn tersedb_cursor_prev(c: tersedb_cursor) -> tersedb_status {
    run(|| with(c, |c| c.step(false)))
}

/// Moves to `key` (`exact` != 0) or to the first key >= `key` (`exact` == 0);
/// `TERSEDB_NOTFOUND` (unpositioned) when there is none.
///
/// # Safety
/// `key` must point to `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tersedb_cursor_seek(
    c: tersedb_cursor,
    key: *const c_void,
    key_len: usize,
    exact: i32,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let raw = unsafe { ffi::bytes(key, key_len, "key")? };
        with(c, |c| {
            let k = owned_key(&c.db, raw)?;
            let s = c.reset(Start::At(&k), true)?;
            if exact != 0 && c.current().is_some_and(|(x, _)| *x != k) {
                c.pos = None;
                return Ok(TERSEDB_NOTFOUND);
            }
            Ok(s)
        })
    })
}

fn owned_key(db: &Db, raw: &[u8]) -> Res<KeyBuf> {
    let bad = |w: usize| {
        fail(
            TERSEDB_EINVALIDKEY,
            format!(
                "a key of database {:?} has {w} bytes, not {}",
                db.name(),
                raw.len()
            ),
        )
    };
    Ok(match db.config().key_type {
        KeyType::U32 => KeyBuf::U32(u32::from_ne_bytes(raw.try_into().map_err(|_| bad(4))?)),
        KeyType::U64 => KeyBuf::U64(u64::from_ne_bytes(raw.try_into().map_err(|_| bad(8))?)),
        _ => KeyBuf::Bytes(raw.to_vec()),
    })
}

fn unpositioned() -> ffi::Fail {
    fail(TERSEDB_NOTFOUND, "the cursor is not positioned")
}

/// Copies the current key into `buf` (a u32 or u64 key as its native-order bytes) and its
/// length into `*len`; `TERSEDB_NOTFOUND` when unpositioned, `TERSEDB_EBUFFER` when too small.
///
/// # Safety
/// `buf` must be NULL or point to `cap` writable bytes; `len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_cursor_key(
    c: tersedb_cursor,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
) -> tersedb_status {
    run(|| {
        ffi::need_len(len)?;
        with(c, |c| {
            let (k, _) = c.here()?;
            let bytes = match k {
                KeyBuf::U32(v) => v.to_ne_bytes().to_vec(),
                KeyBuf::U64(v) => v.to_ne_bytes().to_vec(),
                KeyBuf::Bytes(b) => b.clone(),
            };
            // SAFETY: the caller's contract.
            unsafe { ffi::copy_out(&bytes, buf, cap, len)? };
            Ok(TERSEDB_OK)
        })
    })
}

/// The current key of a u32 or u64 database as a u64.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_cursor_key_u64(
    c: tersedb_cursor,
    out: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        with(c, |c| {
            let (k, _) = c.here()?;
            *out = k
                .as_key()
                .as_u64()
                .ok_or_else(|| ffi::inval("the database's keys are byte strings"))?;
            Ok(TERSEDB_OK)
        })
    })
}

/// Copies the current value into `buf` and its length into `*len`; `TERSEDB_NOTFOUND` when
/// unpositioned or when the key was erased in the cursor's write transaction since the cursor
/// moved there, `TERSEDB_EBUFFER` when too small.
///
/// # Safety
/// `buf` must be NULL or point to `cap` writable bytes; `len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_cursor_value(
    c: tersedb_cursor,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
) -> tersedb_status {
    run(|| {
        ffi::need_len(len)?;
        with(c, |c| {
            let (_, v) = c.fresh()?;
            // SAFETY: the caller's contract.
            unsafe { ffi::copy_out(v, buf, cap, len)? };
            Ok(TERSEDB_OK)
        })
    })
}

/// Erases the cursor's current key in its write transaction, as LMDB's `mdb_cursor_del`: the
/// cursor then stands on the next key. When the erased key was the last one, the cursor stands
/// in its gap: `tersedb_cursor_key` and `_value` are `TERSEDB_NOTFOUND`, `tersedb_cursor_next`
/// moves to a key put after it since (else `TERSEDB_NOTFOUND`), `tersedb_cursor_prev` to the new
/// last key. The transaction's other cursors see the erase. `TERSEDB_NOTFOUND` (the cursor
/// stays) when it is unpositioned or its key was erased since it moved there;
/// `TERSEDB_EREADONLY` for a read transaction's cursor.
///
/// A loop that erases some keys steps only past the keys it keeps:
/// `for (s = tersedb_cursor_first(c); s == TERSEDB_OK && tersedb_cursor_key_u64(c, &k) ==
/// TERSEDB_OK;) s = unwanted(k) ? tersedb_cursor_del(c) : tersedb_cursor_next(c);`
#[no_mangle]
pub extern "C" fn tersedb_cursor_del(c: tersedb_cursor) -> tersedb_status {
    run(|| with(c, |c| c.del()))
}
