//! Environments, transactions and database handles.

use crate::ffi::{self, fail, inval, run, Res};
use crate::handles::{self, Obj, Txn, WriteObj};
use crate::tersedb_status::{self, *};
use std::ffi::c_char;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tersedb::{
    CodecId, DbConfig, Durability, EnvOptions, KeyScheme, KeyType, RecordType, ValueType,
};

/// An environment: one file holding named databases.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tersedb_env {
    pub id: u64,
}

/// A read transaction (a snapshot) or the write transaction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tersedb_txn {
    pub id: u64,
}

/// A named database; valid in every transaction of its environment until closed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tersedb_db {
    pub id: u64,
}

/// `tersedb_env_open` flag: create the file when it does not exist.
pub const TERSEDB_CREATE: u32 = 1;
/// `tersedb_env_open` flag: open read-only (readers only; shares the file with a writer).
pub const TERSEDB_READ_ONLY: u32 = 2;
/// `tersedb_env_open` / `tersedb_txn_begin_write` flag: commits skip fsync (still atomic;
/// the last commits may be lost on power loss).
pub const TERSEDB_NO_SYNC: u32 = 4;

/// Key types of `tersedb_db_config.key_type`.
#[repr(u32)]
pub enum tersedb_key_type {
    TERSEDB_KEY_U32 = 1,
    TERSEDB_KEY_U64 = 2,
    /// Byte strings of variable length.
    TERSEDB_KEY_BINARY = 3,
}

/// Record types of `tersedb_db_config.record_type`.
#[repr(u32)]
pub enum tersedb_record_type {
    /// Keys only (a set).
    TERSEDB_RECORD_NONE = 0,
    TERSEDB_RECORD_U32 = 1,
    TERSEDB_RECORD_U64 = 2,
    TERSEDB_RECORD_I64 = 3,
    TERSEDB_RECORD_F64 = 4,
    /// Byte strings of variable length.
    TERSEDB_RECORD_BYTES = 5,
    /// Opaque byte strings of exactly `record_size` bytes.
    TERSEDB_RECORD_FIXED = 6,
    /// `int32_t`, 4 little-endian bytes.
    TERSEDB_RECORD_I32 = 7,
    /// `int16_t`, 2 little-endian bytes.
    TERSEDB_RECORD_I16 = 8,
}

/// How a database stores keys and records (fixed at creation).
#[repr(C)]
#[derive(Debug)]
pub struct tersedb_db_config {
    /// A `tersedb_key_type`.
    pub key_type: u32,
    /// A `tersedb_record_type`.
    pub record_type: u32,
    /// Bytes per record for `TERSEDB_RECORD_FIXED`, else 0.
    pub record_size: u32,
    /// Most keys per compressed block (0: the codec's maximum).
    pub block_size: u32,
    /// A key codec for u32 and u64 keys ("auto": chosen per block, "bp128", "streamvbyte",
    /// "vbyte", "masked-vbyte", "varintgb", "for", "simd-for", "pfor", "pfor-delta", "rice"), a key
    /// scheme for byte-string keys ("head-tail", "head", "tail", "db2", "wiredtiger", "myisam",
    /// "pkb"), or "none" for keys as they are. NULL: the default, "auto" for integer keys and
    /// "head-tail" for byte strings.
    pub compression: *const c_char,
    /// "auto" compresses fixed-size records of 1 to 8 bytes (chunk by chunk: frame of
    /// reference, a dictionary or, for f64, decimals), "none" stores them raw. NULL: the
    /// default, compressed where the records allow it.
    pub record_compression: *const c_char,
}

fn opts(page_size: u32, flags: u32) -> Res<EnvOptions> {
    if flags & !(TERSEDB_CREATE | TERSEDB_READ_ONLY | TERSEDB_NO_SYNC) != 0 {
        return Err(inval(format!("unknown flags {flags:#x}")));
    }
    let mut o = EnvOptions::default();
    if page_size != 0 {
        o = o.page_size(page_size as usize);
    }
    if flags & TERSEDB_NO_SYNC != 0 {
        o = o.durability(Durability::None);
    }
    Ok(o)
}

/// Opens the environment in the file `path`. `flags`: `TERSEDB_CREATE`, `TERSEDB_READ_ONLY`,
/// `TERSEDB_NO_SYNC`; `page_size`: for a new file (0: 16 KiB).
///
/// # Safety
/// `path` must be a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_env_open(
    path: *const c_char,
    flags: u32,
    page_size: u32,
    out: *mut tersedb_env,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (path, out) = unsafe { (ffi::string(path, "path")?, ffi::out(out, "out")?) };
        let o = opts(page_size, flags)?;
        let env = if flags & TERSEDB_READ_ONLY != 0 {
            tersedb::Env::open_read_only(path, &o)?
        } else if flags & TERSEDB_CREATE != 0 {
            tersedb::Env::open_or_create(path, &o)?
        } else {
            tersedb::Env::open(path, &o)?
        };
        out.id = handles::insert(Obj::Env(env));
        Ok(TERSEDB_OK)
    })
}

/// An environment in memory only.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_env_open_memory(
    page_size: u32,
    out: *mut tersedb_env,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let env = tersedb::Env::in_memory(&opts(page_size, 0)?)?;
        out.id = handles::insert(Obj::Env(env));
        Ok(TERSEDB_OK)
    })
}

/// Closes the handle. The file is released once the environment's transactions, cursors
/// and results are closed too.
#[no_mangle]
pub extern "C" fn tersedb_env_close(env: tersedb_env) -> tersedb_status {
    run(|| {
        handles::remove(env.id, "an environment", |o| match o {
            Obj::Env(e) => Ok(e),
            o => Err(o),
        })?;
        Ok(TERSEDB_OK)
    })
}

/// Verifies every page and tree invariant. `TERSEDB_OK` when clean; `TERSEDB_ECORRUPTED`
/// with the first fault as the message otherwise. `*faults` (if not NULL) gets the count.
///
/// # Safety
/// `faults` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_env_check(env: tersedb_env, faults: *mut u64) -> tersedb_status {
    run(|| {
        let report = handles::env(env.id)?.check()?;
        if !faults.is_null() {
            // SAFETY: the caller's contract (not NULL).
            *unsafe { ffi::out(faults, "faults")? } = report.faults.len() as u64;
        }
        match report.faults.first() {
            None => Ok(TERSEDB_OK),
            Some(f) => Err(fail(
                TERSEDB_ECORRUPTED,
                format!(
                    "{} fault(s); first: page {}: {}",
                    report.faults.len(),
                    f.page.map_or("-".into(), |p| p.to_string()),
                    f.what
                ),
            )),
        }
    })
}

/// Begins a read transaction: a snapshot of the last commit, usable from several threads.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_txn_begin_read(
    env: tersedb_env,
    out: *mut tersedb_txn,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let t = handles::env(env.id)?.begin_read()?;
        out.id = handles::insert(Obj::Txn(Arc::new(Txn::Read(Arc::new(t)))));
        Ok(TERSEDB_OK)
    })
}

/// Begins the write transaction (`TERSEDB_EWRITETXNACTIVE` while another is open). `flags`:
/// 0 or `TERSEDB_NO_SYNC`.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_txn_begin_write(
    env: tersedb_env,
    flags: u32,
    out: *mut tersedb_txn,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        if flags & !TERSEDB_NO_SYNC != 0 {
            return Err(inval(format!("unknown flags {flags:#x}")));
        }
        let mut t = handles::env(env.id)?.begin_write()?;
        if flags & TERSEDB_NO_SYNC != 0 {
            t.set_durability(Durability::None);
        }
        out.id = handles::insert(Obj::Txn(Arc::new(Txn::Write(Arc::new(WriteObj::new(t))))));
        Ok(TERSEDB_OK)
    })
}

fn take(txn: tersedb_txn) -> Res<Arc<Txn>> {
    handles::remove(txn.id, "a transaction", |o| match o {
        Obj::Txn(t) => Ok(t),
        o => Err(o),
    })
}

/// Commits a write transaction (a read transaction is just closed). The handle is closed
/// afterwards, even when the commit fails.
#[no_mangle]
pub extern "C" fn tersedb_txn_commit(txn: tersedb_txn) -> tersedb_status {
    run(|| {
        if let Txn::Write(m) = &*take(txn)? {
            let w = m.lock().take();
            if let Some(w) = w {
                w.commit()?;
            }
        }
        Ok(TERSEDB_OK)
    })
}

/// Aborts a write transaction, or closes a read transaction. The handle is closed afterwards.
#[no_mangle]
pub extern "C" fn tersedb_txn_abort(txn: tersedb_txn) -> tersedb_status {
    run(|| {
        if let Txn::Write(m) = &*take(txn)? {
            let w = m.lock().take();
            if let Some(w) = w {
                w.abort();
            }
        }
        Ok(TERSEDB_OK)
    })
}

/// A transaction as a call uses it.
pub enum TxnRef<'a> {
    Read(&'a tersedb::ReadTxn),
    Write(&'a mut tersedb::WriteTxn),
}

/// Runs `f` on the transaction `id` (the write transaction locked for the call).
pub fn with_txn<T>(id: u64, f: impl FnOnce(TxnRef<'_>) -> Res<T>) -> Res<T> {
    let t = handles::txn(id)?;
    match &*t {
        Txn::Read(r) => f(TxnRef::Read(r)),
        Txn::Write(m) => {
            let mut g = m.lock();
            let w = g.as_mut().ok_or_else(|| ended(id))?;
            f(TxnRef::Write(w))
        }
    }
}

/// The error of a call on a write transaction that was committed or aborted.
pub fn ended(id: u64) -> ffi::Fail {
    fail(
        TERSEDB_ECLOSED,
        format!("transaction {id} was committed or aborted"),
    )
}

/// Runs `f` on the write transaction `id` (`TERSEDB_EREADONLY` for a read transaction). Every
/// call that may change data goes through here: it marks the entries cursors fetched stale.
pub fn with_write<T>(id: u64, f: impl FnOnce(&mut tersedb::WriteTxn) -> Res<T>) -> Res<T> {
    match &*handles::txn(id)? {
        Txn::Write(m) => {
            let mut g = m.lock();
            let w = g.as_mut().ok_or_else(|| ended(id))?;
            m.version.fetch_add(1, Ordering::Relaxed);
            f(w)
        }
        Txn::Read(_) => Err(fail(
            TERSEDB_EREADONLY,
            format!("transaction {id} is a read transaction"),
        )),
    }
}

/// Runs `f` on the read transaction `id` (`TERSEDB_EINVAL` for the write transaction).
pub fn read_txn(id: u64, what: &str) -> Res<Arc<tersedb::ReadTxn>> {
    match &*handles::txn(id)? {
        Txn::Read(r) => Ok(r.clone()),
        Txn::Write(_) => Err(inval(format!("{what} needs a read transaction"))),
    }
}

fn config(c: &tersedb_db_config) -> Res<DbConfig> {
    let key = match c.key_type {
        1 => KeyType::U32,
        2 => KeyType::U64,
        3 => KeyType::VarBinary,
        k => return Err(inval(format!("unknown key type {k}"))),
    };
    let (rec, vt) = match (c.record_type, c.record_size) {
        (0, 0) => (RecordType::None, ValueType::Bytes),
        (1, 0) => (RecordType::Fixed(4), ValueType::U32),
        (2, 0) => (RecordType::Fixed(8), ValueType::U64),
        (3, 0) => (RecordType::Fixed(8), ValueType::I64),
        (4, 0) => (RecordType::Fixed(8), ValueType::F64),
        (5, 0) => (RecordType::Variable, ValueType::Bytes),
        (6, n) if n > 0 => (RecordType::Fixed(n), ValueType::Bytes),
        (7, 0) => (RecordType::Fixed(4), ValueType::I32),
        (8, 0) => (RecordType::Fixed(2), ValueType::I16),
        (6, _) => return Err(inval("TERSEDB_RECORD_FIXED needs a record_size > 0")),
        (r @ (0..=5 | 7 | 8), n) => {
            return Err(inval(format!(
                "record_size {n} is only for TERSEDB_RECORD_FIXED (record type {r})"
            )))
        }
        (r, _) => return Err(inval(format!("unknown record type {r}"))),
    };
    let block = u16::try_from(c.block_size)
        .map_err(|_| inval(format!("block_size {} is too large", c.block_size)))?;
    // NULL fields: what a new database should get (`DbConfig::new`).
    let mut cfg = DbConfig::new(key, rec)
        .with_value_type(vt)
        .with_block_size(block);
    if !c.compression.is_null() {
        // SAFETY: the caller's contract on tersedb_db_config (NUL-terminated or NULL).
        let name = unsafe { ffi::string(c.compression, "compression")? };
        if key == KeyType::VarBinary {
            let s = KeyScheme::from_name(name)
                .ok_or_else(|| inval(format!("unknown key scheme {name:?}")))?;
            cfg = cfg.with_key_scheme(s);
        } else if name == "auto" {
            cfg = cfg.with_auto_codec(true);
        } else if name == "none" {
            cfg = cfg.with_auto_codec(false).with_codec(None);
        } else {
            let codec = CodecId::from_name(name)
                .ok_or_else(|| inval(format!("unknown compression {name:?}")))?;
            cfg = cfg.with_codec(Some(codec));
        }
    }
    if !c.record_compression.is_null() {
        // SAFETY: as for `compression`.
        let name = unsafe { ffi::string(c.record_compression, "record_compression")? };
        cfg = cfg.with_compressed_records(match name {
            "auto" => true,
            "none" => false,
            _ => {
                return Err(inval(format!(
                    "record_compression must be NULL, \"none\" or \"auto\", not {name:?}"
                )))
            }
        });
    }
    Ok(cfg)
}

/// Creates a database in the write transaction `txn`.
///
/// # Safety
/// `name` must be a NUL-terminated string; `config` NULL or a valid `tersedb_db_config`
/// whose `compression` and `record_compression` are NULL or NUL-terminated; `out` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_db_create(
    txn: tersedb_txn,
    name: *const c_char,
    config: *const tersedb_db_config,
    out: *mut tersedb_db,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (name, out) = unsafe { (ffi::string(name, "name")?, ffi::out(out, "out")?) };
        // SAFETY: the caller's contract; a one-item slice is the checked reference.
        let c = unsafe { ffi::slice(config, 1, "config")? };
        let cfg = self::config(&c[0])?;
        let db = with_write(txn.id, |w| Ok(w.create_db(name, cfg)?))?;
        out.id = handles::insert(Obj::Db(db));
        Ok(TERSEDB_OK)
    })
}

/// Opens an existing database (`TERSEDB_EDBNOTFOUND` when absent) in any transaction.
///
/// # Safety
/// `name` must be a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_db_open(
    txn: tersedb_txn,
    name: *const c_char,
    out: *mut tersedb_db,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (name, out) = unsafe { (ffi::string(name, "name")?, ffi::out(out, "out")?) };
        let db = with_txn(txn.id, |t| match t {
            TxnRef::Read(r) => Ok(r.open_db(name)?),
            TxnRef::Write(w) => Ok(w.open_db(name)?),
        })?;
        out.id = handles::insert(Obj::Db(db));
        Ok(TERSEDB_OK)
    })
}

/// Closes a database handle (the database itself stays).
#[no_mangle]
pub extern "C" fn tersedb_db_close(db: tersedb_db) -> tersedb_status {
    run(|| {
        handles::remove(db.id, "a database", |o| match o {
            Obj::Db(d) => Ok(d),
            o => Err(o),
        })?;
        Ok(TERSEDB_OK)
    })
}

/// The number of live handles of every kind (to find handle leaks in tests).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_live_handles(out: *mut usize) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        *unsafe { ffi::out(out, "out")? } = handles::live();
        Ok(TERSEDB_OK)
    })
}
