//! `tersedb.open(path)` -> `Env`; `Env.create_db` / `Env.db` -> `Db`; `Env.read()` / `Env.write()`;
//! `Env.execute(query)` in a snapshot of its own.

use crate::config::{self, KeyKind, RecKind};
use crate::errors::{Closed, IntoPy};
use crate::read::ReadTxn;
use crate::write::WriteTxn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, RwLock};
use tersedb::{Durability, EnvOptions};

/// A handle on a named database: valid in every transaction of its environment. Cheap; made by
/// `Env.create_db`, `Env.db` or the transactions' `create_db` / `db`.
#[pyclass(frozen, module = "tersedb")]
pub struct Db {
    pub db: tersedb::Db,
    pub key: KeyKind,
    pub rec: RecKind,
}

impl Db {
    pub fn new(db: tersedb::Db) -> Db {
        let c = db.config();
        Db {
            key: KeyKind::of(&c),
            rec: RecKind::of(&c),
            db,
        }
    }
}

#[pymethods]
impl Db {
    /// The database's name.
    #[getter]
    fn name(&self) -> &str {
        self.db.name()
    }
    /// Key type: "u32", "u64" or "bytes".
    #[getter]
    fn key(&self) -> &'static str {
        self.key.name()
    }
    /// Record type: None (keys only), "u32", "u64", "i16", "i32", "i64", "f64" or "bytes".
    #[getter]
    fn record(&self) -> Option<&'static str> {
        self.rec.name()
    }
    /// Key codec (u32 keys) or key scheme (byte-string keys); None when uncompressed.
    #[getter]
    fn compression(&self) -> Option<&'static str> {
        config::compression_name(&self.db.config())
    }
    /// "auto" when the records are compressed (chunk by chunk), None when stored raw.
    #[getter]
    fn record_compression(&self) -> Option<&'static str> {
        self.db.config().compress_records.then_some("auto")
    }
    fn __repr__(&self) -> String {
        format!(
            "Db({:?}, key={:?}, record={}, compression={})",
            self.db.name(),
            self.key.name(),
            self.rec.name().map_or("None".into(), |r| format!("{r:?}")),
            self.compression()
                .map_or("None".into(), |c| format!("{c:?}")),
        )
    }
}

pub fn durability(name: &str) -> PyResult<Durability> {
    match name {
        "immediate" => Ok(Durability::Immediate),
        "none" => Ok(Durability::None),
        d => Err(PyValueError::new_err(format!(
            "durability must be \"immediate\" or \"none\", not {d:?}"
        ))),
    }
}

/// An environment: one file holding named databases. Thread-safe; `close()` (or leaving a
/// `with` block) releases it once its open transactions are gone.
#[pyclass(frozen, module = "tersedb")]
pub struct Env {
    inner: RwLock<Option<tersedb::Env>>,
}

impl Env {
    pub fn env(&self) -> PyResult<tersedb::Env> {
        self.inner
            .read()
            .map_err(|_| Closed::new_err("environment lock poisoned"))?
            .clone()
            .ok_or_else(|| Closed::new_err("the environment is closed"))
    }
}

fn options(
    page_size: Option<usize>,
    cache_bytes: Option<usize>,
    durability: &str,
) -> PyResult<EnvOptions> {
    let mut o = EnvOptions::default().durability(self::durability(durability)?);
    if let Some(n) = page_size {
        o = o.page_size(n);
    }
    if let Some(n) = cache_bytes {
        o = o.cache_bytes(n);
    }
    Ok(o)
}

/// Opens (by default creating) the environment in the file at `path`.
#[pyfunction]
#[pyo3(signature = (path, *, create=true, read_only=false, page_size=None, cache_bytes=None, durability="immediate"))]
pub fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    create: bool,
    read_only: bool,
    page_size: Option<usize>,
    cache_bytes: Option<usize>,
    durability: &str,
) -> PyResult<Env> {
    let o = options(page_size, cache_bytes, durability)?;
    let env = py
        .detach(|| {
            if read_only {
                tersedb::Env::open_read_only(&path, &o)
            } else if create {
                tersedb::Env::open_or_create(&path, &o)
            } else {
                tersedb::Env::open(&path, &o)
            }
        })
        .py_err()?;
    Ok(Env {
        inner: RwLock::new(Some(env)),
    })
}

/// An environment in memory only (nothing is written anywhere).
#[pyfunction]
#[pyo3(signature = (*, page_size=None, cache_bytes=None))]
pub fn in_memory(page_size: Option<usize>, cache_bytes: Option<usize>) -> PyResult<Env> {
    let env = tersedb::Env::in_memory(&options(page_size, cache_bytes, "immediate")?).py_err()?;
    Ok(Env {
        inner: RwLock::new(Some(env)),
    })
}

#[pymethods]
impl Env {
    /// Creates a database in its own write transaction and commits it. `key`: "u32", "u64" or
    /// "bytes"; `record`: None (a set), "u32", "u64", "i16", "i32", "i64", "f64" or "bytes";
    /// `compression`: a key codec for integer keys ("auto", "bp128", "streamvbyte", ... ) or a key scheme for
    /// byte-string keys ("head-tail", ...), "none" for keys as they are; None (the default)
    /// gives integer keys "auto" (a codec chosen per block) and byte strings "head-tail".
    /// `record_compression`: "auto" compresses numeric records (each chunk of up to 255 as
    /// frame of reference, a dictionary, a patched dictionary or, for f64, decimals, whichever is
    /// smallest), "none" stores them raw; None (the default) compresses numeric records.
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
        let env = self.env()?;
        let db = py
            .detach(|| {
                let mut w = env.begin_write()?;
                let db = w.create_db(name, c)?;
                w.commit()?;
                Ok(db)
            })
            .py_err()?;
        Ok(Db::new(db))
    }

    /// Opens an existing database (`DbNotFound` when absent).
    fn db(&self, py: Python<'_>, name: &str) -> PyResult<Db> {
        let env = self.env()?;
        let db = py.detach(|| env.begin_read()?.open_db(name)).py_err()?;
        Ok(Db::new(db))
    }

    /// Names of the databases, in order.
    fn dbs(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let env = self.env()?;
        let l = py.detach(|| env.begin_read()?.list_dbs()).py_err()?;
        Ok(l.into_iter().map(|(n, _)| n).collect())
    }

    /// A snapshot of the last committed state (`with env.read() as r:`).
    fn read(&self, py: Python<'_>) -> PyResult<ReadTxn> {
        let env = self.env()?;
        let t = py.detach(|| env.begin_read()).py_err()?;
        Ok(ReadTxn::new(Arc::new(t)))
    }

    /// Runs any query (`execute` of a read transaction) in a snapshot of its own, released
    /// when the query is done: `env.execute("SELECT key, record FROM events LIMIT 10")` is
    /// `with env.read() as r: r.execute(...)`. Returns a `QueryResult`.
    fn execute(&self, py: Python<'_>, text: &str) -> PyResult<crate::rows::QueryResult> {
        let env = self.env()?;
        let r = py.detach(|| env.begin_read()?.query_str(text)).py_err()?;
        Ok(crate::rows::QueryResult::new(r))
    }

    /// The write transaction (`with env.write() as w:` commits on success, aborts on an
    /// exception). `WriteTxnActive` while another is open.
    #[pyo3(signature = (*, durability=None))]
    fn write(&self, py: Python<'_>, durability: Option<&str>) -> PyResult<WriteTxn> {
        let env = self.env()?;
        let d = durability.map(self::durability).transpose()?;
        let mut t = py.detach(|| env.begin_write()).py_err()?;
        if let Some(d) = d {
            t.set_durability(d);
        }
        Ok(WriteTxn::new(t))
    }

    /// Verifies every page and tree invariant; returns the faults found (empty when clean),
    /// each as "page N: what" text.
    fn check(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let env = self.env()?;
        let r = py.detach(|| env.check()).py_err()?;
        Ok(r.faults
            .iter()
            .map(|f| match f.page {
                Some(p) => format!("page {p}: {}", f.what),
                None => f.what.clone(),
            })
            .collect())
    }

    /// Page size of the file.
    #[getter]
    fn page_size(&self) -> PyResult<usize> {
        Ok(self.env()?.page_size())
    }

    /// Whether the environment was opened read-only.
    #[getter]
    fn read_only(&self) -> PyResult<bool> {
        Ok(self.env()?.is_read_only())
    }

    /// Closes the handle; the file is released once every transaction is gone.
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
