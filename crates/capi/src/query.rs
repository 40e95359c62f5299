//! Queries: the text of a SELECT run in a read transaction; the result is a handle whose
//! columns are read one typed value at a time.

use crate::env::{read_txn, tersedb_txn};
use crate::ffi::{self, inval, run, Res};
use crate::handles::{self, Obj};
use crate::tersedb_status::{self, *};
use std::ffi::{c_char, CString};
use std::sync::Arc;
use tersedb::Value;

/// A query result.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tersedb_result {
    pub id: u64,
}

/// Kinds of `tersedb_value.kind`.
#[repr(u32)]
pub enum tersedb_value_kind {
    /// AVG, MIN, MAX of an empty selection.
    TERSEDB_NULL = 0,
    /// An exact integer: `int_hi * 2^64 + int_lo` (two's complement; `int_hi` is 0 or -1 when
    /// the value fits an int64_t, which is then `(int64_t)int_lo`).
    TERSEDB_INT = 1,
    /// A double in `f`.
    TERSEDB_FLOAT = 2,
    /// TOP / BOTTOM: `len` items, read with `tersedb_result_item`.
    TERSEDB_LIST = 3,
}

/// One value of a result.
#[repr(C)]
#[derive(Debug, Default)]
pub struct tersedb_value {
    /// A `tersedb_value_kind`.
    pub kind: u32,
    pub int_lo: u64,
    pub int_hi: i64,
    /// The value as a double (integers converted; 0 for NULL and lists).
    pub f: f64,
    /// Items of a list.
    pub len: usize,
}

pub struct ResultObj {
    names: Vec<CString>,
    values: Vec<Value>,
}

fn result(r: tersedb_result) -> Res<Arc<ResultObj>> {
    handles::get(r.id, "a query result", |o| match o {
        Obj::Result(r) => Ok(r),
        o => Err(o),
    })
}

fn typed(v: &Value) -> tersedb_value {
    match v {
        Value::Null => tersedb_value::default(),
        Value::Int(i) => tersedb_value {
            kind: 1,
            int_lo: *i as u64,
            int_hi: (*i >> 64) as i64,
            f: *i as f64,
            len: 0,
        },
        Value::Float(f) => tersedb_value {
            kind: 2,
            f: *f,
            ..Default::default()
        },
        Value::List(l) => tersedb_value {
            kind: 3,
            len: l.len(),
            ..Default::default()
        },
        // MIN/MAX of string keys: not representable in `tersedb_value` yet, reported as NULL
        // (kind 0) until the C API grows a byte-string kind.
        Value::Bytes(_) => tersedb_value::default(),
    }
}

/// Runs a query (`"SELECT COUNT(*), AVG(key) FROM events WHERE key > 10"`) in a read
/// transaction; `TERSEDB_EQUERY` with the message on a syntax or type error.
///
/// # Safety
/// `text` must be a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_query(
    txn: tersedb_txn,
    text: *const c_char,
    out: *mut tersedb_result,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (text, out) = unsafe { (ffi::string(text, "text")?, ffi::out(out, "out")?) };
        let r = read_txn(txn.id, "a query")?.query_str(text)?;
        if r.is_rows() {
            return Err(tersedb::Error::InvalidArgument(
                "row and GROUP BY queries are not in the C API yet (the Rust API and \
                 `tersedb query` run them)"
                    .into(),
            )
            .into());
        }
        let names = r
            .columns
            .iter()
            .map(|c| CString::new(c.replace('\0', " ")).unwrap_or_default())
            .collect();
        let obj = ResultObj {
            names,
            values: r.values,
        };
        out.id = handles::insert(Obj::Result(Arc::new(obj)));
        Ok(TERSEDB_OK)
    })
}

/// The number of columns.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_columns(
    r: tersedb_result,
    out: *mut usize,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        *out = result(r)?.values.len();
        Ok(TERSEDB_OK)
    })
}

/// The name of column `i` (e.g. "COUNT(*)"); the string lives as long as the result.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_name(
    r: tersedb_result,
    i: usize,
    out: *mut *const c_char,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let res = result(r)?;
        let name = res
            .names
            .get(i)
            .ok_or_else(|| inval(format!("column {i} of {}", res.names.len())))?;
        // The CString's buffer is owned by the result object, which the registry keeps until
        // tersedb_result_free.
        *out = name.as_ptr();
        Ok(TERSEDB_OK)
    })
}

/// The value of column `i`.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_value(
    r: tersedb_result,
    i: usize,
    out: *mut tersedb_value,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let res = result(r)?;
        let v = res
            .values
            .get(i)
            .ok_or_else(|| inval(format!("column {i} of {}", res.values.len())))?;
        *out = typed(v);
        Ok(TERSEDB_OK)
    })
}

/// Item `j` of the list in column `i` (TOP / BOTTOM).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_item(
    r: tersedb_result,
    i: usize,
    j: usize,
    out: *mut tersedb_value,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let res = result(r)?;
        let item = match res.values.get(i) {
            Some(Value::List(l)) => l
                .get(j)
                .ok_or_else(|| inval(format!("item {j} of {} in column {i}", l.len())))?,
            Some(_) => return Err(inval(format!("column {i} is not a list"))),
            None => return Err(inval(format!("column {i} of {}", res.values.len()))),
        };
        *out = typed(item);
        Ok(TERSEDB_OK)
    })
}

/// Frees a result (its column names with it).
#[no_mangle]
pub extern "C" fn tersedb_result_free(r: tersedb_result) -> tersedb_status {
    run(|| {
        handles::remove(r.id, "a query result", |o| match o {
            Obj::Result(r) => Ok(r),
            o => Err(o),
        })?;
        Ok(TERSEDB_OK)
    })
}
