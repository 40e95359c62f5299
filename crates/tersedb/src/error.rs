//! The engine's errors: one public [`Error`] with messages a user can act on.

use std::fmt;
use std::io;

/// A page number: the page's byte offset in the file divided by the page size.
pub type PageId = u64;

/// Result type of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the engine.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The operating system reported an I/O error.
    Io(io::Error),
    /// A page failed its checksum or a structural check. Never a wrong answer instead.
    Corrupted {
        /// The damaged page.
        page: PageId,
        /// What was wrong with it.
        what: String,
    },
    /// The file is not a tersedb file, or was written by an unsupported format version.
    BadFormat(String),
    /// An earlier write or fsync failed; the environment refuses writes until it is reopened,
    /// because the state on disk is unknown (nothing committed before is lost).
    PreviousIo,
    /// Another handle or process holds the file open for writing; `holder` says which.
    Locked {
        /// Who holds the lock, as far as the lock file tells (a process id when known).
        holder: String,
    },
    /// A write was attempted on an environment opened read-only.
    ReadOnly,
    /// A write transaction is already active in this environment.
    WriteTxnActive,
    /// The named database does not exist.
    DbNotFound(String),
    /// A database of that name already exists.
    DbExists(String),
    /// The database was opened with a configuration that differs from the stored one.
    ConfigMismatch {
        /// The database's name.
        db: String,
        /// The differences, in words: `key type: stored u64, requested u32`.
        what: String,
    },
    /// `insert_new` (or `insert`) of a key that is already present; `put` or `upsert`
    /// overwrite instead.
    DuplicateKey {
        /// The database's name.
        db: String,
        /// The key, as [`crate::Key`] displays it (numbers as they are, strings quoted).
        key: String,
    },
    /// The B+-tree's signal for a present key; the transactions turn it into
    /// [`Error::DuplicateKey`] naming the key and the database, so the API never returns it.
    #[doc(hidden)]
    KeyExists,
    /// The key is not present.
    KeyNotFound,
    /// The key does not match the database's key type, or is too long. The text names the
    /// database and the key.
    InvalidKey(String),
    /// The record does not match the database's record type, or is too large. The text names
    /// the database and the key.
    InvalidRecord(String),
    /// An argument is out of range (page size, names, options).
    InvalidArgument(String),
    /// Storage is out of space; the transaction was not committed.
    DiskFull,
    /// A query has a syntax or type error, or its constant arithmetic failed.
    Query(crate::query::error::QueryError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Corrupted { page, what } => write!(f, "corrupted page {page}: {what}"),
            Error::BadFormat(what) => write!(f, "not a usable tersedb file: {what}"),
            Error::PreviousIo => write!(
                f,
                "an earlier I/O error left the file in an unknown state; reopen the environment \
                 (committed data is safe)"
            ),
            Error::Locked { holder } => {
                write!(f, "the file is already open for writing by {holder}")
            }
            Error::ReadOnly => write!(f, "the environment was opened read-only"),
            Error::WriteTxnActive => write!(f, "a write transaction is already active"),
            Error::DbNotFound(n) => write!(f, "no database named {n:?}"),
            Error::DbExists(n) => write!(f, "a database named {n:?} already exists"),
            Error::ConfigMismatch { db, what } => {
                write!(
                    f,
                    "database {db:?} was created with a different configuration ({what}); \
                     open it with the stored configuration, or drop it and create it anew"
                )
            }
            Error::DuplicateKey { db, key } => write!(
                f,
                "key {key} is already in database {db:?} (`put` overwrites, `insert_new` refuses)"
            ),
            Error::KeyExists => write!(f, "the key already exists"),
            Error::KeyNotFound => write!(f, "the key was not found"),
            Error::InvalidKey(w) => write!(f, "invalid key: {w}"),
            Error::InvalidRecord(w) => write!(f, "invalid record: {w}"),
            Error::InvalidArgument(w) => write!(f, "invalid argument: {w}"),
            Error::DiskFull => write!(f, "the disk is full; the transaction was not committed"),
            Error::Query(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Query(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::StorageFull {
            Error::DiskFull
        } else {
            Error::Io(e)
        }
    }
}

impl From<crate::query::error::QueryError> for Error {
    fn from(e: crate::query::error::QueryError) -> Self {
        Error::Query(e)
    }
}
