//! `Env.read()`: a snapshot. Every call releases the GIL while the engine works, and one
//! snapshot may be read from several threads at once.

use crate::arrays::{self, Keys, ValVec};
use crate::config::{KeyKind, RecKind};
use crate::env::Db;
use crate::errors::{IntoPy, TransactionClosed};
use crate::ops::{self, KeyVec};
use crate::rows;
use numpy::PyArray1;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};

/// A read-only snapshot of the environment: never blocks the writer, never sees later commits.
/// Ranges are inclusive at both ends (`lo <= key <= hi`); `None` leaves an end open.
#[pyclass(frozen, module = "tersedb")]
pub struct ReadTxn {
    inner: RwLock<Option<Arc<tersedb::ReadTxn>>>,
}

impl ReadTxn {
    pub fn new(t: Arc<tersedb::ReadTxn>) -> ReadTxn {
        ReadTxn {
            inner: RwLock::new(Some(t)),
        }
    }

    fn txn(&self) -> PyResult<Arc<tersedb::ReadTxn>> {
        self.inner
            .read()
            .ok()
            .and_then(|g| g.clone())
            .ok_or_else(|| TransactionClosed::new_err("the read transaction was closed"))
    }

    /// Runs `f` on the snapshot without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&tersedb::ReadTxn) -> tersedb::Result<T> + Send,
    ) -> PyResult<T> {
        let t = self.txn()?;
        py.detach(|| f(&t)).py_err()
    }

    fn fold(
        &self,
        py: Python<'_>,
        db: &Db,
        lo: Option<u64>,
        hi: Option<u64>,
        sum: bool,
    ) -> PyResult<tersedb::KeyFold> {
        int_keys(db)?;
        let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(u64::MAX));
        self.with(py, |t| t.fold_keys(&db.db, lo, hi, sum))
    }
}

fn int_keys(db: &Db) -> PyResult<()> {
    if db.key == KeyKind::Bytes {
        return Err(PyTypeError::new_err(
            "ranges, aggregates and iteration need a database of u32 or u64 keys",
        ));
    }
    Ok(())
}

fn key_vec(kind: KeyKind, cap: usize) -> KeyVec {
    match kind {
        KeyKind::U32 => KeyVec::U32(Vec::with_capacity(cap)),
        _ => KeyVec::U64(Vec::with_capacity(cap)),
    }
}

#[pymethods]
impl ReadTxn {
    /// The value of `key`, or `default` when absent.
    #[pyo3(signature = (db, key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        db: &Db,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let k = arrays::key(db.key, key)?;
        match self.with(py, |t| t.get(&db.db, &k))? {
            Some(v) => arrays::value_to_py(py, db.rec, &v),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    fn contains(&self, py: Python<'_>, db: &Db, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = arrays::key(db.key, key)?;
        self.with(py, |t| t.contains(&db.db, &k))
    }

    /// Number of keys.
    fn len(&self, py: Python<'_>, db: &Db) -> PyResult<u64> {
        self.with(py, |t| t.len(&db.db))
    }

    /// `(values, found)`: the values of `keys` (a numpy array of the record dtype with 0 where
    /// absent; a list with None for bytes records; None for a key-only database) and a bool
    /// array saying which keys were found.
    fn get_many(
        &self,
        py: Python<'_>,
        db: &Db,
        keys: &Bound<'_, PyAny>,
    ) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        let keys = Keys::new(db.key, keys)?;
        let ks = keys.slice();
        let (vals, found) = self.with(py, |mut t| {
            let mut vals = ValVec::new(db.rec, ks.len());
            let mut found = Vec::with_capacity(ks.len());
            ops::get_many(&mut t, &db.db, db.rec, ks, &mut vals, &mut found)?;
            Ok((vals, found))
        })?;
        Ok((
            vals.into_py(py)?,
            PyArray1::from_vec(py, found).into_any().unbind(),
        ))
    }

    /// A bool array: whether each key of the array is present.
    fn contains_many(
        &self,
        py: Python<'_>,
        db: &Db,
        keys: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let keys = Keys::new(db.key, keys)?;
        let ks = keys.slice();
        let out = self.with(py, |mut t| {
            let mut out = Vec::with_capacity(ks.len());
            ops::contains_many(&mut t, &db.db, ks, &mut out)?;
            Ok(out)
        })?;
        Ok(PyArray1::from_vec(py, out).into_any().unbind())
    }

    /// The keys (and records) in `lo..=hi` as numpy arrays, in key order: a `Range` with
    /// `.keys`, `.values` (None for a key-only database, a list for bytes records), that
    /// unpacks as `keys, values = r.range(db)` and converts with `to_pandas()` / `to_arrow()`.
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn range(&self, py: Python<'_>, db: &Db, lo: Option<u64>, hi: Option<u64>) -> PyResult<Range> {
        int_keys(db)?;
        let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(u64::MAX));
        let (keys, vals) = self.with(py, |t| {
            // COUNT comes from the block index: size the arrays exactly.
            let n = t.fold_keys(&db.db, lo, hi, false)?.count as usize;
            let mut keys = key_vec(db.key, n);
            let mut vals = ValVec::new(db.rec, n);
            ops::collect_range(
                t,
                &db.db,
                db.key,
                db.rec,
                lo,
                hi,
                usize::MAX,
                &mut keys,
                &mut vals,
            )?;
            Ok((keys, vals))
        })?;
        Ok(Range {
            keys: keys.into_py(py),
            values: vals.into_py(py)?,
        })
    }

    /// Number of keys in `lo..=hi`, from the block index where whole blocks lie inside.
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn count(&self, py: Python<'_>, db: &Db, lo: Option<u64>, hi: Option<u64>) -> PyResult<u64> {
        Ok(self.fold(py, db, lo, hi, false)?.count)
    }

    /// Exact sum of the keys in `lo..=hi`, computed inside the tree block by block.
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn sum(&self, py: Python<'_>, db: &Db, lo: Option<u64>, hi: Option<u64>) -> PyResult<u128> {
        Ok(self.fold(py, db, lo, hi, true)?.sum)
    }

    /// Smallest key in `lo..=hi`, or None.
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn min(
        &self,
        py: Python<'_>,
        db: &Db,
        lo: Option<u64>,
        hi: Option<u64>,
    ) -> PyResult<Option<u64>> {
        Ok(self.fold(py, db, lo, hi, false)?.min)
    }

    /// Largest key in `lo..=hi`, or None.
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn max(
        &self,
        py: Python<'_>,
        db: &Db,
        lo: Option<u64>,
        hi: Option<u64>,
    ) -> PyResult<Option<u64>> {
        Ok(self.fold(py, db, lo, hi, false)?.max)
    }

    /// Runs an aggregate query of the query language (`"SELECT COUNT(*), AVG(key) FROM events
    /// WHERE key > 10"`); returns a dict of column name -> value (int, float, None, bytes, or a
    /// list for TOP and BOTTOM), in the order of the SELECT list. Row and GROUP BY queries are
    /// run with `execute`.
    fn query<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyDict>> {
        let r = self.with(py, |t| t.query_str(text))?;
        rows::aggregates_dict(py, &r)
    }

    /// Runs any query (aggregates, `SELECT key, record ... ORDER BY key DESC LIMIT n OFFSET m`,
    /// `GROUP BY key / N`, `GROUP BY record`); returns a `QueryResult` (rows as tuples, columns
    /// as numpy arrays).
    fn execute(&self, py: Python<'_>, text: &str) -> PyResult<rows::QueryResult> {
        let r = self.with(py, |t| t.query_str(text))?;
        Ok(rows::QueryResult::new(r))
    }

    /// Iterates over the keys in `lo..=hi`, in order (fetched in batches).
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn keys(&self, db: &Db, lo: Option<u64>, hi: Option<u64>) -> PyResult<Iter> {
        Iter::new(self.txn()?, db, lo, hi, false)
    }

    /// Iterates over the `(key, value)` pairs in `lo..=hi`, in order (fetched in batches).
    #[pyo3(signature = (db, lo=None, hi=None))]
    fn items(&self, db: &Db, lo: Option<u64>, hi: Option<u64>) -> PyResult<Iter> {
        Iter::new(self.txn()?, db, lo, hi, true)
    }

    /// Opens an existing database.
    fn db(&self, py: Python<'_>, name: &str) -> PyResult<Db> {
        Ok(Db::new(self.with(py, |t| t.open_db(name))?))
    }

    /// Names of the databases, in order.
    fn dbs(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let l = self.with(py, |t| t.list_dbs())?;
        Ok(l.into_iter().map(|(n, _)| n).collect())
    }

    /// Releases the snapshot (iterators made from it keep it alive until they are gone).
    fn close(&self) {
        if let Ok(mut g) = self.inner.write() {
            *g = None;
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().map_or(true, |g| g.is_none())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }
}

/// The result of `ReadTxn.range`: numpy arrays of keys and values.
#[pyclass(frozen, module = "tersedb")]
pub struct Range {
    /// Keys, a numpy array of uint32 or uint64.
    #[pyo3(get)]
    keys: Py<PyAny>,
    /// Records: a numpy array of the record dtype, a list of bytes, or None for a set.
    #[pyo3(get)]
    values: Py<PyAny>,
}

#[pymethods]
impl Range {
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.keys.bind(py).len()
    }

    /// `keys, values = r.range(db)`.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = (self.keys.clone_ref(py), self.values.clone_ref(py));
        Ok(t.into_pyobject(py)?.try_iter()?.into_any().unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Range({} keys)", self.__len__(py)?))
    }

    /// A pandas DataFrame with columns "key" and (for databases with records) "value".
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = py.import("pandas")?;
        let cols = self.columns(py)?;
        pd.getattr("DataFrame")?.call1((cols,))
    }

    /// A pyarrow Table with columns "key" and (for databases with records) "value"; numeric
    /// columns wrap the numpy buffers without a copy.
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pa = py.import("pyarrow")?;
        let cols = self.columns(py)?;
        pa.getattr("table")?.call1((cols,))
    }

    /// A polars DataFrame with columns "key" and (for databases with records) "value".
    fn to_polars<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pl = py.import("polars")?;
        let cols = self.columns(py)?;
        pl.getattr("DataFrame")?.call1((cols,))
    }
}

impl Range {
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("key", self.keys.bind(py))?;
        if !self.values.is_none(py) {
            d.set_item("value", self.values.bind(py))?;
        }
        Ok(d)
    }
}

/// Entries fetched per batch by an iterator.
const BATCH: usize = 1024;

struct IterState {
    txn: Arc<tersedb::ReadTxn>,
    db: tersedb::Db,
    kind: KeyKind,
    rec: RecKind,
    /// Where the next batch starts; None once the range is exhausted.
    next: Option<u64>,
    hi: u64,
    keys: VecDeque<u64>,
    vals: VecDeque<Py<PyAny>>,
    items: bool,
}

/// An iterator over keys or `(key, value)` pairs of a snapshot. It holds the snapshot, and
/// fetches entries in batches of 1024 with one descent per batch.
#[pyclass(frozen, module = "tersedb")]
pub struct Iter {
    state: Mutex<IterState>,
}

impl Iter {
    fn new(
        txn: Arc<tersedb::ReadTxn>,
        db: &Db,
        lo: Option<u64>,
        hi: Option<u64>,
        items: bool,
    ) -> PyResult<Iter> {
        int_keys(db)?;
        Ok(Iter {
            state: Mutex::new(IterState {
                txn,
                db: db.db.clone(),
                kind: db.key,
                rec: if items { db.rec } else { RecKind::None },
                next: Some(lo.unwrap_or(0)),
                hi: hi.unwrap_or(u64::MAX),
                keys: VecDeque::new(),
                vals: VecDeque::new(),
                items,
            }),
        })
    }
}

#[pymethods]
impl Iter {
    #[allow(clippy::self_named_constructors)] // Python's iterator protocol, not a constructor
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.keys.is_empty() {
            let Some(lo) = s.next else {
                return Ok(None);
            };
            let (txn, db, kind, rec, hi) = (s.txn.clone(), s.db.clone(), s.kind, s.rec, s.hi);
            let (keys, vals, done) = py
                .detach(|| {
                    let mut keys = key_vec(kind, BATCH);
                    let mut vals = ValVec::new(rec, BATCH);
                    let done = ops::collect_range(
                        &txn, &db, kind, rec, lo, hi, BATCH, &mut keys, &mut vals,
                    )?;
                    Ok((keys, vals, done))
                })
                .py_err()?;
            let keys: Vec<u64> = match keys {
                KeyVec::U32(v) => v.into_iter().map(u64::from).collect(),
                KeyVec::U64(v) => v,
            };
            s.next = match keys.last() {
                Some(&k) if !done && k < u64::MAX => Some(k + 1),
                _ => None,
            };
            if s.items {
                let mut buf = [0u8; 8];
                let vals: Vec<Py<PyAny>> = match vals {
                    ValVec::None => keys.iter().map(|_| py.None()).collect(),
                    ValVec::Bytes(v) => v
                        .into_iter()
                        .map(|b| arrays::value_to_py(py, RecKind::Bytes, &b.unwrap_or_default()))
                        .collect::<PyResult<_>>()?,
                    ValVec::U32(v) => v
                        .into_iter()
                        .map(|x| arrays::value_to_py(py, RecKind::U32, &x.to_le_bytes()))
                        .collect::<PyResult<_>>()?,
                    ValVec::U64(v) => v
                        .into_iter()
                        .map(|x| arrays::value_to_py(py, RecKind::U64, &x.to_le_bytes()))
                        .collect::<PyResult<_>>()?,
                    ValVec::I64(v) => v
                        .into_iter()
                        .map(|x| arrays::value_to_py(py, RecKind::I64, &x.to_le_bytes()))
                        .collect::<PyResult<_>>()?,
                    ValVec::I32(v) => v
                        .into_iter()
                        .map(|x| arrays::value_to_py(py, RecKind::I32, &x.to_le_bytes()))
                        .collect::<PyResult<_>>()?,
                    ValVec::I16(v) => v
                        .into_iter()
                        .map(|x| arrays::value_to_py(py, RecKind::I16, &x.to_le_bytes()))
                        .collect::<PyResult<_>>()?,
                    ValVec::F64(v) => v
                        .into_iter()
                        .map(|x| {
                            buf = x.to_le_bytes();
                            arrays::value_to_py(py, RecKind::F64, &buf)
                        })
                        .collect::<PyResult<_>>()?,
                };
                s.vals = vals.into();
            }
            s.keys = keys.into();
        }
        let Some(k) = s.keys.pop_front() else {
            return Ok(None);
        };
        if s.items {
            let v = s.vals.pop_front().unwrap_or_else(|| py.None());
            Ok(Some((k, v).into_pyobject(py)?.into_any().unbind()))
        } else {
            Ok(Some(k.into_pyobject(py)?.into_any().unbind()))
        }
    }
}
