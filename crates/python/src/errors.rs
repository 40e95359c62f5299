//! The exception hierarchy: `tersedb.Error` and one subclass per engine error kind, carrying the
//! engine's message. Wrong argument types and shapes are plain `TypeError` / `ValueError`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    tersedb,
    Error,
    PyException,
    "Base class of every tersedb error."
);
create_exception!(
    tersedb,
    IoError,
    Error,
    "The operating system reported an I/O error."
);
create_exception!(
    tersedb,
    Corrupted,
    Error,
    "A page failed its checksum or a structural check."
);
create_exception!(
    tersedb,
    BadFormat,
    Error,
    "Not a tersedb file, or an unsupported format version."
);
create_exception!(
    tersedb,
    PreviousIo,
    Error,
    "An earlier I/O error: reopen the environment."
);
create_exception!(
    tersedb,
    Locked,
    Error,
    "Another handle or process holds the file open for writing."
);
create_exception!(
    tersedb,
    ReadOnly,
    Error,
    "A write on an environment opened read-only."
);
create_exception!(
    tersedb,
    WriteTxnActive,
    Error,
    "A write transaction is already active."
);
create_exception!(tersedb, DbNotFound, Error, "No database of that name.");
create_exception!(
    tersedb,
    DbExists,
    Error,
    "A database of that name already exists."
);
create_exception!(
    tersedb,
    ConfigMismatch,
    Error,
    "The database's stored configuration differs."
);
create_exception!(
    tersedb,
    KeyExists,
    Error,
    "Insert of a key that is already present."
);
create_exception!(
    tersedb,
    InvalidKey,
    Error,
    "The key does not fit the database's key type."
);
create_exception!(
    tersedb,
    InvalidRecord,
    Error,
    "The value does not fit the database's record type."
);
create_exception!(
    tersedb,
    InvalidArgument,
    Error,
    "An argument is out of range."
);
create_exception!(
    tersedb,
    DiskFull,
    Error,
    "The disk is full; the transaction was not committed."
);
create_exception!(
    tersedb,
    QueryError,
    Error,
    "A query has a syntax or type error."
);
create_exception!(
    tersedb,
    TransactionClosed,
    Error,
    "The transaction was committed, aborted or closed."
);
create_exception!(tersedb, Closed, Error, "The environment was closed.");

/// The Python exception for an engine error, with the engine's message.
pub fn to_py(e: tersedb::Error) -> PyErr {
    use tersedb::Error as E;
    let msg = e.to_string();
    match e {
        E::Io(_) => IoError::new_err(msg),
        E::Corrupted { .. } => Corrupted::new_err(msg),
        E::BadFormat(_) => BadFormat::new_err(msg),
        E::PreviousIo => PreviousIo::new_err(msg),
        E::Locked { .. } => Locked::new_err(msg),
        E::ReadOnly => ReadOnly::new_err(msg),
        E::WriteTxnActive => WriteTxnActive::new_err(msg),
        E::DbNotFound(_) => DbNotFound::new_err(msg),
        E::DbExists(_) => DbExists::new_err(msg),
        E::ConfigMismatch { .. } => ConfigMismatch::new_err(msg),
        E::DuplicateKey { .. } | E::KeyExists => KeyExists::new_err(msg),
        E::InvalidKey(_) => InvalidKey::new_err(msg),
        E::InvalidRecord(_) => InvalidRecord::new_err(msg),
        E::InvalidArgument(_) => InvalidArgument::new_err(msg),
        E::DiskFull => DiskFull::new_err(msg),
        E::Query(_) => QueryError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// `result.map_err(to_py)` as a method.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for tersedb::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    macro_rules! add {
        ($($t:ident),*) => { $( m.add(stringify!($t), py.get_type::<$t>())?; )* };
    }
    add!(
        Error,
        IoError,
        Corrupted,
        BadFormat,
        PreviousIo,
        Locked,
        ReadOnly,
        WriteTxnActive,
        DbNotFound,
        DbExists,
        ConfigMismatch,
        KeyExists,
        InvalidKey,
        InvalidRecord,
        InvalidArgument,
        DiskFull,
        QueryError,
        TransactionClosed,
        Closed
    );
    Ok(())
}
