//! Queries: the text of a SELECT run in a transaction; the result is a handle holding a table
//! of rows (one row for an aggregate query, one per entry or group for row and GROUP BY
//! queries), read one typed cell at a time.
//!
//! ```text
//! tersedb_query(txn, text) -> result --rows/columns/name--> shape
//!                                    --cell(row, col)-----> tersedb_value (any kind)
//!                                    --u64/i64/f64/bytes--> one C type, or NOTFOUND for NULL
//!                                    --is_null------------> 1 or 0
//! ```

use crate::env::{tersedb_txn, with_txn, TxnRef};
use crate::ffi::{self, fail, inval, run, Res};
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
    /// NULL: AVG, MIN, MAX of an empty selection.
    TERSEDB_NULL = 0,
    /// An exact integer: `int_hi * 2^64 + int_lo` (two's complement; `int_hi` is 0 or -1 when
    /// the value fits an int64_t, which is then `(int64_t)int_lo`).
    TERSEDB_INT = 1,
    /// A double in `f`.
    TERSEDB_FLOAT = 2,
    /// TOP / BOTTOM: `len` items, read with `tersedb_result_item` / `tersedb_result_cell_item`.
    TERSEDB_LIST = 3,
    /// A byte string of `len` bytes (a string key, a byte record, MIN/MAX of string keys),
    /// read with `tersedb_result_bytes`.
    TERSEDB_BYTES = 4,
}

/// One value of a result.
#[repr(C)]
#[derive(Debug, Default)]
pub struct tersedb_value {
    /// A `tersedb_value_kind`.
    pub kind: u32,
    pub int_lo: u64,
    pub int_hi: i64,
    /// The value as a double (integers converted; 0 for NULL, lists and bytes).
    pub f: f64,
    /// Items of a list, bytes of a byte string.
    pub len: usize,
}

/// A result as the registry keeps it. Invariant: every row has `names.len()` cells (an
/// aggregate query is one row).
pub struct ResultObj {
    names: Vec<CString>,
    rows: Vec<Vec<Value>>,
}

impl ResultObj {
    /// The cell at (`row`, `col`); the error names what exists.
    fn cell(&self, row: usize, col: usize) -> Res<&Value> {
        let r = self
            .rows
            .get(row)
            .ok_or_else(|| inval(format!("row {row} of a result of {} rows", self.rows.len())))?;
        r.get(col)
            .ok_or_else(|| inval(format!("column {col} of a result of {} columns", r.len())))
    }

    /// `row`, `col` and the column's name, for errors.
    fn at(&self, row: usize, col: usize) -> String {
        let name = self
            .names
            .get(col)
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        format!("row {row}, column {col} ({name})")
    }
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
            kind: tersedb_value_kind::TERSEDB_INT as u32,
            int_lo: *i as u64,
            int_hi: (*i >> 64) as i64,
            f: *i as f64,
            len: 0,
        },
        Value::Float(f) => tersedb_value {
            kind: tersedb_value_kind::TERSEDB_FLOAT as u32,
            f: *f,
            ..Default::default()
        },
        Value::List(l) => tersedb_value {
            kind: tersedb_value_kind::TERSEDB_LIST as u32,
            len: l.len(),
            ..Default::default()
        },
        Value::Bytes(b) => tersedb_value {
            kind: tersedb_value_kind::TERSEDB_BYTES as u32,
            len: b.len(),
            ..Default::default()
        },
    }
}

/// What a value is, for errors.
fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a double",
        Value::List(_) => "a list",
        Value::Bytes(_) => "a byte string",
    }
}

/// Runs a query in a read transaction or in the write transaction (which sees its own
/// uncommitted writes). Aggregate queries (`"SELECT COUNT(*), AVG(key) FROM events WHERE key >
/// 10"`) give one row; row queries (`"SELECT key, record FROM events WHERE key > 10 ORDER BY
/// key DESC LIMIT 5 OFFSET 10"`) one row per entry; GROUP BY queries (`"SELECT key / 60 * 60,
/// AVG(record) FROM events GROUP BY key / 60"`) one row per non-empty group.
/// `TERSEDB_EQUERY` with the message on a syntax or type error. Free the result with
/// `tersedb_result_free`.
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
        let r = with_txn(txn.id, |t| {
            Ok(match t {
                TxnRef::Read(r) => r.query_str(text)?,
                TxnRef::Write(w) => w.query_str(text)?,
            })
        })?;
        let names = r
            .columns
            .iter()
            .map(|c| CString::new(c.replace('\0', " ")).unwrap_or_default())
            .collect();
        let rows = if r.is_rows() { r.rows } else { vec![r.values] };
        let obj = ResultObj { names, rows };
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
        *out = result(r)?.names.len();
        Ok(TERSEDB_OK)
    })
}

/// The number of rows: 1 for an aggregate query (even over an empty selection: its values are
/// then COUNT 0 and NULLs), the entries or non-empty groups for a row or GROUP BY query (0 when
/// nothing matched).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_rows(r: tersedb_result, out: *mut usize) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        *out = result(r)?.rows.len();
        Ok(TERSEDB_OK)
    })
}

/// The name of column `i` (e.g. "COUNT(*)", or the alias of `AS`); the string lives as long as
/// the result.
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

/// The value of column `i` of the first row (the one row of an aggregate query); the same as
/// `tersedb_result_cell(r, 0, i, out)`.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_value(
    r: tersedb_result,
    i: usize,
    out: *mut tersedb_value,
) -> tersedb_status {
    // SAFETY: forwarded contract.
    unsafe { tersedb_result_cell(r, 0, i, out) }
}

/// The value in row `row`, column `col`, of any kind (`TERSEDB_EINVAL` outside the table).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_cell(
    r: tersedb_result,
    row: usize,
    col: usize,
    out: *mut tersedb_value,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        *out = typed(result(r)?.cell(row, col)?);
        Ok(TERSEDB_OK)
    })
}

/// Item `j` of the list in column `i` of the first row (TOP / BOTTOM of an aggregate query).
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
    // SAFETY: forwarded contract.
    unsafe { tersedb_result_cell_item(r, 0, i, j, out) }
}

/// Item `j` of the list in row `row`, column `col` (TOP / BOTTOM, e.g. per group).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_cell_item(
    r: tersedb_result,
    row: usize,
    col: usize,
    j: usize,
    out: *mut tersedb_value,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let res = result(r)?;
        let item = match res.cell(row, col)? {
            Value::List(l) => l
                .get(j)
                .ok_or_else(|| inval(format!("item {j} of {} in {}", l.len(), res.at(row, col))))?,
            v => {
                return Err(inval(format!(
                    "{} is {}, not a list",
                    res.at(row, col),
                    kind_name(v)
                )))
            }
        };
        *out = typed(item);
        Ok(TERSEDB_OK)
    })
}

/// Whether the value in row `row`, column `col` is NULL: `*out` = 1 (NULL) or 0.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_is_null(
    r: tersedb_result,
    row: usize,
    col: usize,
    out: *mut u8,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        *out = u8::from(result(r)?.cell(row, col)?.is_null());
        Ok(TERSEDB_OK)
    })
}

/// The cell at (`row`, `col`) converted by `conv`; `TERSEDB_NOTFOUND` for NULL, `TERSEDB_EINVAL`
/// naming the cell when `conv` refuses it.
fn typed_cell<T>(
    r: tersedb_result,
    row: usize,
    col: usize,
    want: &str,
    conv: impl FnOnce(&Value) -> Option<T>,
) -> Res<Option<T>> {
    let res = result(r)?;
    let v = res.cell(row, col)?;
    if v.is_null() {
        return Ok(None);
    }
    match conv(v) {
        Some(t) => Ok(Some(t)),
        None => Err(inval(format!(
            "{} is {} ({v}), not {want}",
            res.at(row, col),
            kind_name(v)
        ))),
    }
}

/// Stores `v` in `out`: `TERSEDB_OK`, or `TERSEDB_NOTFOUND` (out untouched) for NULL.
fn store<T>(v: Option<T>, out: &mut T) -> tersedb_status {
    match v {
        Some(v) => {
            *out = v;
            TERSEDB_OK
        }
        None => TERSEDB_NOTFOUND,
    }
}

/// The integer in row `row`, column `col` as a uint64_t (keys, counts, u32/u64 records).
/// `TERSEDB_NOTFOUND` when the cell is NULL (`*out` untouched); `TERSEDB_EINVAL` when it is not
/// an integer in 0..=UINT64_MAX (the message names the cell and its value).
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_u64(
    r: tersedb_result,
    row: usize,
    col: usize,
    out: *mut u64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let v = typed_cell(r, row, col, "an integer in the uint64_t range", |v| {
            v.as_int().and_then(|i| u64::try_from(i).ok())
        })?;
        Ok(store(v, out))
    })
}

/// The integer in row `row`, column `col` as an int64_t (i16/i32/i64 records, sums that fit).
/// `TERSEDB_NOTFOUND` when the cell is NULL (`*out` untouched); `TERSEDB_EINVAL` when it is not
/// an integer in the int64_t range.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_i64(
    r: tersedb_result,
    row: usize,
    col: usize,
    out: *mut i64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let v = typed_cell(r, row, col, "an integer in the int64_t range", |v| {
            v.as_int().and_then(|i| i64::try_from(i).ok())
        })?;
        Ok(store(v, out))
    })
}

/// The number in row `row`, column `col` as a double (AVG, f64 records; integers are converted,
/// rounding beyond 2^53). `TERSEDB_NOTFOUND` when the cell is NULL (`*out` untouched);
/// `TERSEDB_EINVAL` for lists and byte strings.
///
/// # Safety
/// `out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_f64(
    r: tersedb_result,
    row: usize,
    col: usize,
    out: *mut f64,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { ffi::out(out, "out")? };
        let v = typed_cell(r, row, col, "a number", Value::as_f64)?;
        Ok(store(v, out))
    })
}

/// The byte string in row `row`, column `col` (a string key, a byte record): `*data` points at
/// `*len` bytes owned by the result (valid until `tersedb_result_free`; not NUL-terminated).
/// `TERSEDB_NOTFOUND` when the cell is NULL (outputs untouched); `TERSEDB_EINVAL` when it is not
/// a byte string.
///
/// # Safety
/// `data` and `len` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tersedb_result_bytes(
    r: tersedb_result,
    row: usize,
    col: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> tersedb_status {
    run(|| {
        // SAFETY: the caller's contract.
        let (data, len) = unsafe { (ffi::out(data, "data")?, ffi::out(len, "len")?) };
        let res = result(r)?;
        let v = res.cell(row, col)?;
        match v {
            Value::Null => Ok(TERSEDB_NOTFOUND),
            // The bytes live in the result object, which the registry keeps until
            // tersedb_result_free.
            Value::Bytes(b) => {
                *data = b.as_ptr();
                *len = b.len();
                Ok(TERSEDB_OK)
            }
            v => Err(fail(
                TERSEDB_EINVAL,
                format!(
                    "{} is {} ({v}), not a byte string",
                    res.at(row, col),
                    kind_name(v)
                ),
            )),
        }
    })
}

/// Frees a result (its column names and byte strings with it).
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
