//! The handle registry: every object C can name lives here under a number that is never reused.
//! A call looks its handles up (and checks their kind) under one global mutex, clones the
//! object's `Arc` out and works without the lock, so a closed handle is an error and an object
//! in use by another thread stays alive until that call ends.

use crate::ffi::{fail, Fail, Res};
use crate::tersedb_status::*;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

/// A transaction: a shared snapshot, or the write transaction behind a mutex (calls on it from
/// several threads are serialised; commit/abort take it out).
pub enum Txn {
    Read(Arc<tersedb::ReadTxn>),
    Write(Arc<WriteObj>),
}

/// The write transaction of a C handle.
pub struct WriteObj {
    /// `None` once committed or aborted (cursors may still hold the `Arc<Txn>`).
    pub txn: Mutex<Option<tersedb::WriteTxn>>,
    /// Bumped (under `txn`'s lock) by every call that may change the transaction's data, so a
    /// cursor knows when the entries it fetched are stale.
    pub version: AtomicU64,
}

impl WriteObj {
    pub fn new(t: tersedb::WriteTxn) -> WriteObj {
        WriteObj {
            txn: Mutex::new(Some(t)),
            version: AtomicU64::new(0),
        }
    }

    /// The transaction, locked (a panic in another call leaves it usable: no call leaves it
    /// half-changed in a way the engine does not undo).
    pub fn lock(&self) -> MutexGuard<'_, Option<tersedb::WriteTxn>> {
        self.txn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub enum Obj {
    Env(tersedb::Env),
    Txn(Arc<Txn>),
    Db(tersedb::Db),
    Cursor(Arc<Mutex<crate::cursor::CursorObj>>),
    Result(Arc<crate::query::ResultObj>),
}

impl Obj {
    fn kind(&self) -> &'static str {
        match self {
            Obj::Env(_) => "an environment",
            Obj::Txn(_) => "a transaction",
            Obj::Db(_) => "a database",
            Obj::Cursor(_) => "a cursor",
            Obj::Result(_) => "a query result",
        }
    }
    fn dup(&self) -> Obj {
        match self {
            Obj::Env(e) => Obj::Env(e.clone()),
            Obj::Txn(t) => Obj::Txn(t.clone()),
            Obj::Db(d) => Obj::Db(d.clone()),
            Obj::Cursor(c) => Obj::Cursor(c.clone()),
            Obj::Result(r) => Obj::Result(r.clone()),
        }
    }
}

struct Registry {
    next: u64,
    objects: BTreeMap<u64, Obj>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 1,
    objects: BTreeMap::new(),
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves the map consistent (no call mutates it half-way).
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn insert(obj: Obj) -> u64 {
    let mut r = registry();
    let id = r.next;
    r.next += 1;
    r.objects.insert(id, obj);
    id
}

fn missing(r: &Registry, id: u64, want: &str) -> Fail {
    if id == 0 {
        fail(
            TERSEDB_EBADHANDLE,
            format!("null handle where {want} was expected"),
        )
    } else if id >= r.next {
        fail(TERSEDB_EBADHANDLE, format!("handle {id} was never issued"))
    } else {
        fail(
            TERSEDB_ECLOSED,
            format!("handle {id} was closed (or its transaction committed or aborted)"),
        )
    }
}

/// The object `id`, if it is of the kind `pick` accepts (`want` names the kind for errors).
pub fn get<T>(id: u64, want: &str, pick: impl FnOnce(Obj) -> Result<T, Obj>) -> Res<T> {
    let r = registry();
    let obj = r
        .objects
        .get(&id)
        .ok_or_else(|| missing(&r, id, want))?
        .dup();
    drop(r);
    pick(obj).map_err(|o| {
        fail(
            TERSEDB_EBADHANDLE,
            format!("handle {id} is {}, not {want}", o.kind()),
        )
    })
}

/// Removes the object `id` if it is of the kind `pick` accepts.
pub fn remove<T>(id: u64, want: &str, pick: impl FnOnce(Obj) -> Result<T, Obj>) -> Res<T> {
    let mut r = registry();
    let obj = r.objects.remove(&id).ok_or_else(|| missing(&r, id, want))?;
    match pick(obj) {
        Ok(t) => Ok(t),
        Err(o) => {
            let msg = format!("handle {id} is {}, not {want}", o.kind());
            r.objects.insert(id, o);
            Err(fail(TERSEDB_EBADHANDLE, msg))
        }
    }
}

pub fn env(id: u64) -> Res<tersedb::Env> {
    get(id, "an environment", |o| match o {
        Obj::Env(e) => Ok(e),
        o => Err(o),
    })
}

pub fn txn(id: u64) -> Res<Arc<Txn>> {
    get(id, "a transaction", |o| match o {
        Obj::Txn(t) => Ok(t),
        o => Err(o),
    })
}

pub fn db(id: u64) -> Res<tersedb::Db> {
    get(id, "a database", |o| match o {
        Obj::Db(d) => Ok(d),
        o => Err(o),
    })
}

/// Objects alive (for tests of handle leaks).
pub fn live() -> usize {
    registry().objects.len()
}
