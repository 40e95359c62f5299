//! `Env.write()`: the write transaction. `with env.write() as w:` commits when the block ends
//! normally and aborts when it raises. Bulk calls release the GIL.

use crate::arrays::{self, KeySlice, Keys, ValVec, Values};
use crate::config;
use crate::env::Db;
use crate::errors::{to_py, IntoPy, TransactionClosed};
use crate::ops::{self, Mode, CHUNK};
use numpy::PyArray1;
use pyo3::prelude::*;
use std::sync::Mutex;

/// The write transaction (one at a time per environment). Its changes become visible atomically
/// at `commit()`; `abort()` (or an exception in its `with` block) discards them. An error inside
/// a bulk call leaves the keys before the failing one written in the transaction.
#[pyclass(frozen, module = "tersedb")]
pub struct WriteTxn {
    inner: Mutex<Option<tersedb::WriteTxn>>,
}

impl WriteTxn {
    pub fn new(t: tersedb::WriteTxn) -> WriteTxn {
        WriteTxn {
            inner: Mutex::new(Some(t)),
        }
    }

    /// Runs `f` on the transaction without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut tersedb::WriteTxn) -> tersedb::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            g.as_mut().map(f)
        })
        .ok_or_else(closed)?
        .py_err()
    }

    fn take(&self) -> PyResult<tersedb::WriteTxn> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(closed)
    }

    /// Runs `f` over `keys` in chunks, checking for Ctrl-C between them; sums the results.
    fn chunked(
        &self,
        py: Python<'_>,
        n: usize,
        f: impl Fn(&mut tersedb::WriteTxn, std::ops::Range<usize>) -> tersedb::Result<u64> + Sync,
    ) -> PyResult<u64> {
        let mut total = 0;
        let mut start = 0;
        while start < n {
            let end = n.min(start + CHUNK);
            total += self.with(py, |t| f(t, start..end))?;
            start = end;
            if start < n {
                py.check_signals()?;
            }
        }
        Ok(total)
    }
}

fn closed() -> PyErr {
    TransactionClosed::new_err("the write transaction was committed or aborted")
}

#[pymethods]
impl WriteTxn {
    /// Puts `key -> value` (value: an int or float of the record type, bytes, or None for a
    /// key-only database). `mode`: "upsert" overwrites, "insert" raises `KeyExists`, "append"
    /// needs a key above every key. Returns whether the key was new.
    #[pyo3(signature = (db, key, value=None, mode="upsert"))]
    fn put(
        &self,
        py: Python<'_>,
        db: &Db,
        key: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        mode: &str,
    ) -> PyResult<bool> {
        let k = arrays::key(db.key, key)?;
        let v = arrays::value(db.rec, value)?;
        let mode = Mode::parse(mode)?;
        self.with(py, |t| match mode {
            Mode::Upsert => t.upsert(&db.db, &k, &v),
            Mode::Insert => t.insert(&db.db, &k, &v).map(|_| true),
            Mode::Append => t.append(&db.db, &k, &v).map(|_| true),
        })
    }

    /// Puts every `keys[i] -> values[i]` in one call, without the GIL. `keys`: a 1-D numpy
    /// array of uint32 or uint64 (the database's key type); `values`: None for a key-only
    /// database, else a 1-D array of the record type's dtype (uint32, uint64, int64, float64)
    /// or a sequence of bytes, as long as `keys`. Returns how many keys were new. Ascending
    /// keys take the engine's append fast path.
    #[pyo3(signature = (db, keys, values=None, mode="upsert"))]
    fn put_many(
        &self,
        py: Python<'_>,
        db: &Db,
        keys: &Bound<'_, PyAny>,
        values: Option<&Bound<'_, PyAny>>,
        mode: &str,
    ) -> PyResult<u64> {
        let mode = Mode::parse(mode)?;
        let keys = Keys::new(db.key, keys)?;
        let ks = keys.slice();
        let vals = Values::new(db.rec, values, ks.len())?;
        let vs = vals.slice();
        self.chunked(py, ks.len(), |t, r| {
            ops::put_many(t, &db.db, ks.sub(r.clone()), vs.sub(r), mode)
        })
    }

    /// Erases `key`; returns whether it was present.
    fn erase(&self, py: Python<'_>, db: &Db, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = arrays::key(db.key, key)?;
        self.with(py, |t| t.erase(&db.db, &k))
    }

    /// Erases every key of the array; returns how many were present.
    fn erase_many(&self, py: Python<'_>, db: &Db, keys: &Bound<'_, PyAny>) -> PyResult<u64> {
        let keys = Keys::new(db.key, keys)?;
        let ks = keys.slice();
        self.chunked(py, ks.len(), |t, r| ops::erase_many(t, &db.db, ks.sub(r)))
    }

    /// The value of `key` as of this transaction, or `default`.
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

    /// `(values, found)`: the values of `keys` as of this transaction (0 where absent; None for
    /// a key-only database; a list for bytes records) and a bool array.
    fn get_many(
        &self,
        py: Python<'_>,
        db: &Db,
        keys: &Bound<'_, PyAny>,
    ) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        let keys = Keys::new(db.key, keys)?;
        let ks = keys.slice();
        let (vals, found) = self.with(py, |t| {
            let mut vals = ValVec::new(db.rec, ks.len());
            let mut found = Vec::with_capacity(ks.len());
            ops::get_many(t, &db.db, db.rec, ks, &mut vals, &mut found)?;
            Ok((vals, found))
        })?;
        Ok((
            vals.into_py(py)?,
            PyArray1::from_vec(py, found).into_any().unbind(),
        ))
    }

    /// A bool array: whether each key is present, as of this transaction.
    fn contains_many(
        &self,
        py: Python<'_>,
        db: &Db,
        keys: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let keys = Keys::new(db.key, keys)?;
        let ks: KeySlice<'_> = keys.slice();
        let out = self.with(py, |t| {
            let mut out = Vec::with_capacity(ks.len());
            ops::contains_many(t, &db.db, ks, &mut out)?;
            Ok(out)
        })?;
        Ok(PyArray1::from_vec(py, out).into_any().unbind())
    }

    /// Number of keys, as of this transaction.
    fn len(&self, py: Python<'_>, db: &Db) -> PyResult<u64> {
        self.with(py, |t| t.len(&db.db))
    }

    /// `ReadTxn.query` on the state as of now (this transaction's writes included).
    fn query<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let r = self.with(py, |t| t.query_str(text))?;
        crate::rows::aggregates_dict(py, &r)
    }

    /// `ReadTxn.execute` on the state as of now (this transaction's writes included).
    fn execute(&self, py: Python<'_>, text: &str) -> PyResult<crate::rows::QueryResult> {
        let r = self.with(py, |t| t.query_str(text))?;
        Ok(crate::rows::QueryResult::new(r))
    }

    /// Creates a database in this transaction (see `Env.create_db`).
    #[pyo3(signature = (name, key="u32", record=None, compression=None, block_size=0, record_compression=None))]
    // One argument per Python keyword of `create_db`.
    #[allow(clippy::too_many_arguments)]
    fn create_db(
        &self,
        py: Python<'_>,
        name: &str,
        key: &str,
        record: Option<&str>,
        compression: Option<&str>,
        block_size: u16,
        record_compression: Option<&str>,
    ) -> PyResult<Db> {
        let c = config::db_config(key, record, compression, block_size, record_compression)?;
        Ok(Db::new(self.with(py, |t| t.create_db(name, c))?))
    }

    /// Opens an existing database.
    fn db(&self, py: Python<'_>, name: &str) -> PyResult<Db> {
        Ok(Db::new(self.with(py, |t| t.open_db(name))?))
    }

    /// Drops a database and frees its pages.
    fn drop_db(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.with(py, |t| t.drop_db(name))
    }

    /// Makes the changes visible (and durable, per the durability level). The transaction is
    /// over afterwards, even when the commit fails.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let t = self.take()?;
        py.detach(|| t.commit()).map_err(to_py)
    }

    /// Discards every change. The transaction is over afterwards.
    fn abort(&self) -> PyResult<()> {
        self.take()?.abort();
        Ok(())
    }

    /// Whether the transaction was committed or aborted.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits when the block ended normally, aborts when it raised (the exception goes on).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Ok(t) = self.take() else {
            return Ok(false); // committed or aborted inside the block
        };
        if exc_type.is_some_and(|t| !t.is_none()) {
            t.abort();
        } else {
            py.detach(|| t.commit()).map_err(to_py)?;
        }
        Ok(false)
    }
}
