//! The bulk work of both transaction kinds, done without the GIL: one call into the engine per
//! key, the same calls a Rust program makes.

use crate::arrays::{KeySlice, ValSlice, ValVec};
use crate::config::{KeyKind, RecKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tersedb::{Db, Key, Result};

/// Keys per GIL-free stretch of a bulk call: between two stretches the call checks for Ctrl-C.
pub const CHUNK: usize = 1 << 16;

/// How `put` treats a key that is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Upsert,
    Insert,
    Append,
}

impl Mode {
    pub fn parse(s: &str) -> PyResult<Mode> {
        match s {
            "upsert" => Ok(Mode::Upsert),
            "insert" => Ok(Mode::Insert),
            "append" => Ok(Mode::Append),
            m => Err(PyValueError::new_err(format!(
                "mode must be \"upsert\", \"insert\" or \"append\", not {m:?}"
            ))),
        }
    }
}

/// Point reads shared by read and write transactions.
pub trait Reader {
    fn get(&mut self, db: &Db, key: Key<'_>) -> Result<Option<Vec<u8>>>;
    fn contains(&mut self, db: &Db, key: Key<'_>) -> Result<bool>;
}

impl Reader for &tersedb::ReadTxn {
    fn get(&mut self, db: &Db, key: Key<'_>) -> Result<Option<Vec<u8>>> {
        tersedb::ReadTxn::get(self, db, key)
    }
    fn contains(&mut self, db: &Db, key: Key<'_>) -> Result<bool> {
        tersedb::ReadTxn::contains(self, db, key)
    }
}

impl Reader for tersedb::WriteTxn {
    fn get(&mut self, db: &Db, key: Key<'_>) -> Result<Option<Vec<u8>>> {
        tersedb::WriteTxn::get(self, db, key)
    }
    fn contains(&mut self, db: &Db, key: Key<'_>) -> Result<bool> {
        tersedb::WriteTxn::contains(self, db, key)
    }
}

/// Puts `keys[i] -> values[i]`; returns how many keys were new.
pub fn put_many(
    t: &mut tersedb::WriteTxn,
    db: &Db,
    keys: KeySlice<'_>,
    values: ValSlice<'_>,
    mode: Mode,
) -> Result<u64> {
    let mut new = 0;
    let mut buf = [0u8; 8];
    for i in 0..keys.len() {
        let k = keys.key(i);
        let v = values.bytes(i, &mut buf);
        match mode {
            Mode::Upsert => new += t.upsert(db, k, v)? as u64,
            Mode::Insert => {
                t.insert(db, k, v)?;
                new += 1
            }
            Mode::Append => {
                t.append(db, k, v)?;
                new += 1
            }
        }
    }
    Ok(new)
}

/// Erases `keys`; returns how many were present.
pub fn erase_many(t: &mut tersedb::WriteTxn, db: &Db, keys: KeySlice<'_>) -> Result<u64> {
    let mut n = 0;
    for i in 0..keys.len() {
        n += t.erase(db, keys.key(i))? as u64;
    }
    Ok(n)
}

/// The values of `keys` (absent: 0, or None for bytes) and whether each was found.
pub fn get_many<R: Reader>(
    r: &mut R,
    db: &Db,
    rec: RecKind,
    keys: KeySlice<'_>,
    vals: &mut ValVec,
    found: &mut Vec<bool>,
) -> Result<()> {
    for i in 0..keys.len() {
        if rec == RecKind::None {
            found.push(r.contains(db, keys.key(i))?);
            continue;
        }
        let v = r.get(db, keys.key(i))?;
        found.push(v.is_some());
        vals.push(v.as_deref())?;
    }
    Ok(())
}

pub fn contains_many<R: Reader>(
    r: &mut R,
    db: &Db,
    keys: KeySlice<'_>,
    out: &mut Vec<bool>,
) -> Result<()> {
    for i in 0..keys.len() {
        out.push(r.contains(db, keys.key(i))?);
    }
    Ok(())
}

/// Keys of a range, in the database's key width.
pub enum KeyVec {
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl KeyVec {
    pub fn into_py(self, py: Python<'_>) -> Py<PyAny> {
        match self {
            KeyVec::U32(v) => numpy::PyArray1::from_vec(py, v).into_any().unbind(),
            KeyVec::U64(v) => numpy::PyArray1::from_vec(py, v).into_any().unbind(),
        }
    }
}

/// The probe key for `v` in a database of `kind` (`None`: `v` is above every u32 key).
pub fn int_key(kind: KeyKind, v: u64) -> Option<Key<'static>> {
    match kind {
        KeyKind::U32 => u32::try_from(v).ok().map(Key::U32),
        _ => Some(Key::U64(v)),
    }
}

/// Keys and records in `[lo, hi]`, in key order, at most `limit`. Returns the collected keys
/// and records, and whether the range was exhausted.
#[allow(clippy::too_many_arguments)]
pub fn collect_range(
    t: &tersedb::ReadTxn,
    db: &Db,
    kind: KeyKind,
    rec: RecKind,
    lo: u64,
    hi: u64,
    limit: usize,
    keys: &mut KeyVec,
    vals: &mut ValVec,
) -> Result<bool> {
    let mut c = t.cursor(db)?;
    let mut ok = match int_key(kind, lo) {
        Some(k) if lo <= hi => c.lower_bound(k)?,
        _ => false,
    };
    let mut n = 0;
    while ok {
        if n == limit {
            return Ok(false);
        }
        match keys {
            KeyVec::U32(v) => {
                let k = c.key_u32().unwrap_or(u32::MAX);
                if k as u64 > hi {
                    break;
                }
                v.push(k);
            }
            KeyVec::U64(v) => {
                let k = c.key().and_then(|k| k.as_u64()).unwrap_or(u64::MAX);
                if k > hi {
                    break;
                }
                v.push(k);
            }
        }
        if rec != RecKind::None {
            vals.push(c.value()?.as_deref())?;
        }
        n += 1;
        ok = c.next()?;
    }
    Ok(true)
}

/// A query result value as Python sees it.
pub fn value_to_py(py: Python<'_>, v: &tersedb::Value) -> PyResult<Py<PyAny>> {
    use pyo3::IntoPyObjectExt;
    Ok(match v {
        tersedb::Value::Null => py.None(),
        tersedb::Value::Int(i) => i.into_py_any(py)?,
        tersedb::Value::Float(f) => f.into_py_any(py)?,
        tersedb::Value::List(l) => {
            let items = l
                .iter()
                .map(|x| value_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            items.into_py_any(py)?
        }
        tersedb::Value::Bytes(b) => pyo3::types::PyBytes::new(py, b).into_py_any(py)?,
    })
}
