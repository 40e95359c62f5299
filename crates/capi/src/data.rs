//! Keys and values: put / get / contains / erase / len, bulk calls over u32 and u64 arrays, and
//! COUNT/SUM/MIN/MAX over a key range.

use crate::env::{read_txn, tersedb_db, tersedb_txn, with_txn, with_write, TxnRef};
use crate::ffi::{self, fail, inval, run, Res};
use crate::handles;
use crate::tersedb_status::{self, *};
use std::ffi::c_void;
use tersedb::{Db, Key, KeyType};

/// How `tersedb_put` treats a key that is present.
#[repr(u32)]
pub enum tersedb_put_mode {
    /// Overwrite the value.
    TERSEDB_UPSERT = 0,
    /// Fail with `TERSEDB_EKEYEXISTS`.
    TERSEDB_INSERT = 1,
    /// The key must be above every key (`TERSEDB_EINVALIDKEY` otherwise): the bulk-load path.
    TERSEDB_APPEND = 2,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Upsert,
    Insert,
    Append,
}

fn mode(m: u32) -> Res<Mode> {
    match m {
        0 => Ok(Mode::Upsert),
        1 => Ok(Mode::Insert),
        2 => Ok(Mode::Append),
        m => Err(inval(format!("unknown put mode {m}"))),
    }
}

/// The key bytes as the database's key type.
fn key<'a>(db: &Db, raw: &'a [u8]) -> Res<Key<'a>> {
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
        KeyType::U32 => Key::U32(u32::from_ne_bytes(raw.try_into().map_err(|_| bad(4))?)),
        KeyType::U64 => Key::U64(u64::from_ne_bytes(raw.try_into().map_err(|_| bad(8))?)),
        _ => Key::Bytes(raw),
    })
}

/// Returns whether the key was new.
fn put(w: &mut tersedb::WriteTxn, db: &Db, k: Key<'_>, v: &[u8], m: Mode) -> Res<bool> {
    Ok(match m {
        Mode::Upsert => w.upsert(db, k, v)?,
        Mode::Insert => w.insert(db, k, v).map(|_| true)?,
        Mode::Append => w.append(db, k, v).map(|_| true)?,
    })
}

/// Stores `key -> value` (`value` may be NULL when `value_len` is 0, as for key-only
/// databases). `mode`: a `tersedb_put_mode`.
///
/// # Safety
/// `key` must point to `key_len` bytes, `value` to `value_len` bytes (or be NULL when 0).
#[no_mangle]
pub unsafe extern "C" fn tersedb_put(
    txn: tersedb_txn,
    db: tersedb_db,
    key: *const c_void,
    key_len: usize,
    value: *const c_void,
    value_len: usize,
    mode: u32,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (k, v) = unsafe {
            (
                ffi::bytes(key, key_len, "key")?,
                ffi::bytes(value, value_len, "value")?,
            )
        };
        let (db, m) = (handles::db(db.id)?, self::mode(mode)?);
        let k = self::key(&db, k)?;
        with_write(txn.id, |w| put(w, &db, k, v, m))?;
        Ok(TERSEDB_OK)
    })
}

/// Copies the value of `key` into `buf` (`cap` bytes) and its length into `*len`.
/// `TERSEDB_NOTFOUND` when absent; `TERSEDB_EBUFFER` (with `*len` set) when it does not fit.
///
/// # Safety
/// `key` must point to `key_len` bytes; `buf` be NULL or point to `cap` writable bytes; `len`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_get(
    txn: tersedb_txn,
    db: tersedb_db,
    key: *const c_void,
    key_len: usize,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
) -> tersedb_status {
    run(|| {
        ffi::need_len(len)?;
        // SAFETY: the caller's contract.
        let k = unsafe { ffi::bytes(key, key_len, "key")? };
        let db = handles::db(db.id)?;
        let k = self::key(&db, k)?;
        let v = with_txn(txn.id, |t| match t {
            TxnRef::Read(r) => Ok(r.get(&db, k)?),
            TxnRef::Write(w) => Ok(w.get(&db, k)?),
        })?;
        match v {
            None => Ok(TERSEDB_NOTFOUND),
            Some(v) => {
                // SAFETY: the caller's contract.
                unsafe { ffi::copy_out(&v, buf, cap, len)? };
                Ok(TERSEDB_OK)
            }
        }
    })
}

/// `TERSEDB_OK` when `key` is present, `TERSEDB_NOTFOUND` when not.
///
/// # Safety
/// `key` must point to `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tersedb_contains(
    txn: tersedb_txn,
    db: tersedb_db,
    key: *const c_void,
    key_len: usize,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let k = unsafe { ffi::bytes(key, key_len, "key")? };
        let db = handles::db(db.id)?;
        let k = self::key(&db, k)?;
        let found = with_txn(txn.id, |t| match t {
            TxnRef::Read(r) => Ok(r.contains(&db, k)?),
            TxnRef::Write(w) => Ok(w.contains(&db, k)?),
        })?;
        Ok(if found { TERSEDB_OK } else { TERSEDB_NOTFOUND })
    })
}

/// Erases `key`: `TERSEDB_OK`, or `TERSEDB_NOTFOUND` when it was absent.
///
/// # Safety
/// `key` must point to `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tersedb_erase(
    txn: tersedb_txn,
    db: tersedb_db,
    key: *const c_void,
    key_len: usize,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let k = unsafe { ffi::bytes(key, key_len, "key")? };
        let db = handles::db(db.id)?;
        let k = self::key(&db, k)?;
        let erased = with_write(txn.id, |w| Ok(w.erase(&db, k)?))?;
        Ok(if erased { TERSEDB_OK } else { TERSEDB_NOTFOUND })
    })
}

/// The number of keys in `*out`.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_len(
    txn: tersedb_txn,
    db: tersedb_db,
    out: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let db = handles::db(db.id)?;
        *out = with_txn(txn.id, |t| match t {
            TxnRef::Read(r) => Ok(r.len(&db)?),
            TxnRef::Write(w) => Ok(w.len(&db)?),
        })?;
        Ok(TERSEDB_OK)
    })
}

/// The values of a bulk put: none, or `n` records of `size` bytes back to back.
///
/// # Safety
/// `values` must be NULL or point to `n * size` bytes for `'a`.
unsafe fn records<'a>(values: *const c_void, size: usize, n: usize) -> Res<(&'a [u8], usize)> {
    if values.is_null() {
        return Ok((&[], 0));
    }
    let total = size
        .checked_mul(n)
        .ok_or_else(|| inval(format!("{n} values of {size} bytes is too many")))?;
    // SAFETY: the caller's contract.
    Ok((unsafe { ffi::bytes(values, total, "values")? }, size))
}

fn put_many<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: &[K],
    (vals, size): (&[u8], usize),
    mode: u32,
) -> Res<u64> {
    let (db, m) = (handles::db(db.id)?, self::mode(mode)?);
    with_write(txn.id, |w| {
        let mut new = 0;
        for (i, k) in keys.iter().enumerate() {
            let v = vals.get(i * size..(i + 1) * size).unwrap_or(&[]);
            new += put(w, &db, (*k).into(), v, m)? as u64;
        }
        Ok(new)
    })
}

fn get_many<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: &[K],
    values: Option<(&mut [u8], usize)>,
    mut found: Option<&mut [u8]>,
) -> Res<u64> {
    let db = handles::db(db.id)?;
    with_txn(txn.id, |mut t| {
        let mut hits = 0;
        let mut values = values;
        for (i, k) in keys.iter().enumerate() {
            let v = match &mut t {
                TxnRef::Read(r) => r.get(&db, (*k).into())?,
                TxnRef::Write(w) => w.get(&db, (*k).into())?,
            };
            hits += v.is_some() as u64;
            if let Some(f) = found.as_deref_mut() {
                f[i] = v.is_some() as u8;
            }
            if let Some((out, size)) = values.as_mut() {
                let slot = &mut out[i * *size..(i + 1) * *size];
                let v = v.unwrap_or_default();
                if v.len() > slot.len() {
                    return Err(fail(
                        TERSEDB_EBUFFER,
                        format!(
                            "value {i} has {} bytes, value_size is {}",
                            v.len(),
                            slot.len()
                        ),
                    ));
                }
                slot[..v.len()].copy_from_slice(&v);
                slot[v.len()..].fill(0);
            }
        }
        Ok(hits)
    })
}

fn erase_many<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: &[K],
) -> Res<u64> {
    let db = handles::db(db.id)?;
    with_write(txn.id, |w| {
        let mut n = 0;
        for k in keys {
            n += w.erase(&db, (*k).into())? as u64;
        }
        Ok(n)
    })
}

/// # Safety
/// As `tersedb_put_many_u32`.
#[allow(clippy::too_many_arguments)]
unsafe fn put_many_raw<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const K,
    n: usize,
    values: *const c_void,
    value_size: usize,
    mode: u32,
    new_keys: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (keys, vals) = unsafe {
            (
                ffi::slice(keys, n, "keys")?,
                records(values, value_size, n)?,
            )
        };
        let new = put_many(txn, db, keys, vals, mode)?;
        if !new_keys.is_null() {
            // SAFETY: the caller's contract (not NULL).
            *unsafe { ffi::out(new_keys, "new_keys")? } = new;
        }
        Ok(TERSEDB_OK)
    })
}

/// # Safety
/// As `tersedb_get_many_u32`.
#[allow(clippy::too_many_arguments)]
unsafe fn get_many_raw<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const K,
    n: usize,
    values: *mut c_void,
    value_size: usize,
    found: *mut u8,
    found_count: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let keys = unsafe { ffi::slice(keys, n, "keys")? };
        let vals = if values.is_null() {
            None
        } else {
            let total = value_size
                .checked_mul(n)
                .ok_or_else(|| inval("values: too many bytes"))?;
            // SAFETY: the caller's contract.
            Some((
                unsafe { ffi::slice_mut(values.cast::<u8>(), total, "values")? },
                value_size,
            ))
        };
        let found = if found.is_null() {
            None
        } else {
            // SAFETY: the caller's contract.
            Some(unsafe { ffi::slice_mut(found, n, "found")? })
        };
        let hits = get_many(txn, db, keys, vals, found)?;
        if !found_count.is_null() {
            // SAFETY: the caller's contract (not NULL).
            *unsafe { ffi::out(found_count, "found_count")? } = hits;
        }
        Ok(TERSEDB_OK)
    })
}

/// # Safety
/// As `tersedb_erase_many_u32`.
unsafe fn erase_many_raw<K: Copy + Into<Key<'static>>>(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const K,
    n: usize,
    erased: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let keys = unsafe { ffi::slice(keys, n, "keys")? };
        let e = erase_many(txn, db, keys)?;
        if !erased.is_null() {
            // SAFETY: the caller's contract (not NULL).
            *unsafe { ffi::out(erased, "erased")? } = e;
        }
        Ok(TERSEDB_OK)
    })
}

/// Puts `keys[i] -> value i` for `n` u32 keys in the write transaction. `values`: NULL (empty
/// records, as for key-only databases) or `n` records of `value_size` bytes back to back.
/// `mode`: a `tersedb_put_mode`. `*new_keys` (if not NULL) gets how many keys were new. On an
/// error the keys before the failing one stay written in the transaction.
///
/// # Safety
/// `keys` must point to `n` keys; `values` be NULL or point to `n * value_size` bytes;
/// `new_keys` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tersedb_put_many_u32(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u32,
    n: usize,
    values: *const c_void,
    value_size: usize,
    mode: u32,
    new_keys: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { put_many_raw(txn, db, keys, n, values, value_size, mode, new_keys) }
}

/// `tersedb_put_many_u32` for u64 keys.
///
/// # Safety
/// As `tersedb_put_many_u32`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tersedb_put_many_u64(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u64,
    n: usize,
    values: *const c_void,
    value_size: usize,
    mode: u32,
    new_keys: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { put_many_raw(txn, db, keys, n, values, value_size, mode, new_keys) }
}

/// Looks up `n` u32 keys. `values` (if not NULL) gets `n` slots of `value_size` bytes: the
/// record, zero-padded (zeros where absent; `TERSEDB_EBUFFER` when a record is longer than
/// `value_size`); `found` (if not NULL) `n` bytes, 1 where the key is present; `*found_count`
/// (if not NULL) the number present.
///
/// # Safety
/// `keys` must point to `n` keys; `values` be NULL or point to `n * value_size` writable
/// bytes; `found` NULL or `n` writable bytes; `found_count` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tersedb_get_many_u32(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u32,
    n: usize,
    values: *mut c_void,
    value_size: usize,
    found: *mut u8,
    found_count: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { get_many_raw(txn, db, keys, n, values, value_size, found, found_count) }
}

/// `tersedb_get_many_u32` for u64 keys.
///
/// # Safety
/// As `tersedb_get_many_u32`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tersedb_get_many_u64(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u64,
    n: usize,
    values: *mut c_void,
    value_size: usize,
    found: *mut u8,
    found_count: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { get_many_raw(txn, db, keys, n, values, value_size, found, found_count) }
}

/// Erases `n` u32 keys in the write transaction; `*erased` (if not NULL) gets how many were
/// present.
///
/// # Safety
/// `keys` must point to `n` keys; `erased` be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_erase_many_u32(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u32,
    n: usize,
    erased: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { erase_many_raw(txn, db, keys, n, erased) }
}

/// `tersedb_erase_many_u32` for u64 keys.
///
/// # Safety
/// As `tersedb_erase_many_u32`.
#[no_mangle]
pub unsafe extern "C" fn tersedb_erase_many_u64(
    txn: tersedb_txn,
    db: tersedb_db,
    keys: *const u64,
    n: usize,
    erased: *mut u64,
) -> tersedb_status {
    // SAFETY: the same contract.
    unsafe { erase_many_raw(txn, db, keys, n, erased) }
}

/// COUNT, SUM, MIN and MAX of the keys in a range.
#[repr(C)]
#[derive(Debug, Default)]
pub struct tersedb_fold {
    pub count: u64,
    /// The exact sum is `sum_hi * 2^64 + sum_lo`.
    pub sum_lo: u64,
    pub sum_hi: u64,
    /// Smallest and largest key (0 when `count` is 0).
    pub min: u64,
    pub max: u64,
}

/// COUNT, SUM, MIN and MAX of the integer keys in `lo..=hi`, computed inside the tree block by
/// block, in a read transaction.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_fold_keys(
    txn: tersedb_txn,
    db: tersedb_db,
    lo: u64,
    hi: u64,
    out: *mut tersedb_fold,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let db = handles::db(db.id)?;
        let f = read_txn(txn.id, "tersedb_fold_keys")?.fold_keys(&db, lo, hi, true)?;
        *out = tersedb_fold {
            count: f.count,
            sum_lo: f.sum as u64,
            sum_hi: (f.sum >> 64) as u64,
            min: f.min.unwrap_or(0),
            max: f.max.unwrap_or(0),
        };
        Ok(TERSEDB_OK)
    })
}
