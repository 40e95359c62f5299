//! The engine's errors: one public [`Error`] with messages a user can act on, and one
//! `#[non_exhaustive]` enum per family that converts into it (redb's `error.rs` layout).
//!
//! ```text
//! family            enum                         what it covers
//! storage           StorageError                 the file and the environment: I/O, damage,
//!                                                format, locks, read-only, a full disk
//! tree              TreeError                    databases and keys: names, configuration,
//!                                                duplicate keys, keys or records of the wrong type
//! query             QueryError                   the query language: syntax, types, arithmetic
//! codec             tersedb_codecs::CodecError   a compressed block; the leaf that decoded it
//!                                                reports it as Error::Corrupted naming its page
//! ```
//!
//! [`Error`] keeps every family's variants flat, so one `match` reaches any of them; its
//! [`Error::family`] says which family a variant belongs to, and `TryFrom<Error>` gives the
//! family enum back (the error itself when it belongs elsewhere). Each message is written once,
//! in the functions of `text` below, and both the family and the flat variant print it.

use std::fmt;
use std::io;

pub use crate::query::error::QueryError;

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
    Query(QueryError),
}

/// Errors of the file and the environment that holds it.
#[derive(Debug)]
#[non_exhaustive]
pub enum StorageError {
    /// The operating system reported an I/O error.
    Io(io::Error),
    /// A page failed its checksum or a structural check.
    Corrupted {
        /// The damaged page.
        page: PageId,
        /// What was wrong with it.
        what: String,
    },
    /// The file is not a tersedb file, or was written by an unsupported format version.
    BadFormat(String),
    /// An earlier write or fsync failed; reopen the environment.
    PreviousIo,
    /// Another handle or process holds the file open for writing.
    Locked {
        /// Who holds the lock (a process id when known).
        holder: String,
    },
    /// A write was attempted on an environment opened read-only.
    ReadOnly,
    /// A write transaction is already active in this environment.
    WriteTxnActive,
    /// Storage is out of space; the transaction was not committed.
    DiskFull,
}

/// Errors of databases and the keys and records in them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeError {
    /// The named database does not exist.
    DbNotFound(String),
    /// A database of that name already exists.
    DbExists(String),
    /// The database was opened with a configuration that differs from the stored one.
    ConfigMismatch {
        /// The database's name.
        db: String,
        /// The differences, in words.
        what: String,
    },
    /// An insert that refuses present keys met one.
    DuplicateKey {
        /// The database's name.
        db: String,
        /// The key, as [`crate::Key`] displays it.
        key: String,
    },
    /// The key does not match the database's key type, or is too long.
    InvalidKey(String),
    /// The record does not match the database's record type, or is too large.
    InvalidRecord(String),
}

/// The family an [`Error`] belongs to: what kind of remedy it calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorFamily {
    /// [`StorageError`]: the file or the environment; after a failed write or a damaged page
    /// the write transaction refuses further work.
    Storage,
    /// [`TreeError`]: a database or key the caller named; the transaction stays usable.
    Tree,
    /// [`QueryError`]: the query text; the transaction stays usable.
    Query,
    /// [`Error::InvalidArgument`]: an option or name outside its range; nothing was done.
    Argument,
}

impl Error {
    /// The family of this error.
    ///
    /// ```
    /// use tersedb::error::{Error, ErrorFamily, TreeError};
    /// let e: Error = TreeError::DbNotFound("events".into()).into();
    /// assert_eq!(e.family(), ErrorFamily::Tree);
    /// assert!(matches!(e, Error::DbNotFound(ref n) if n == "events"));
    /// ```
    pub fn family(&self) -> ErrorFamily {
        // Exhaustive on purpose: a new variant must be given a family here.
        match self {
            Error::Io(_)
            | Error::Corrupted { .. }
            | Error::BadFormat(_)
            | Error::PreviousIo
            | Error::Locked { .. }
            | Error::ReadOnly
            | Error::WriteTxnActive
            | Error::DiskFull => ErrorFamily::Storage,
            Error::DbNotFound(_)
            | Error::DbExists(_)
            | Error::ConfigMismatch { .. }
            | Error::DuplicateKey { .. }
            | Error::KeyExists
            | Error::InvalidKey(_)
            | Error::InvalidRecord(_) => ErrorFamily::Tree,
            Error::Query(_) => ErrorFamily::Query,
            Error::InvalidArgument(_) => ErrorFamily::Argument,
        }
    }
}

/// The messages, each written once for both the flat variant and its family's.
mod text {
    use super::PageId;
    use std::fmt::{Formatter, Result};

    pub fn io(f: &mut Formatter<'_>, e: &std::io::Error) -> Result {
        write!(f, "I/O error: {e}")
    }
    pub fn corrupted(f: &mut Formatter<'_>, page: PageId, what: &str) -> Result {
        write!(f, "corrupted page {page}: {what}")
    }
    pub fn bad_format(f: &mut Formatter<'_>, what: &str) -> Result {
        write!(f, "not a usable tersedb file: {what}")
    }
    pub const PREVIOUS_IO: &str = "an earlier I/O error left the file in an unknown state; \
                                   reopen the environment (committed data is safe)";
    pub fn locked(f: &mut Formatter<'_>, holder: &str) -> Result {
        write!(f, "the file is already open for writing by {holder}")
    }
    pub const READ_ONLY: &str = "the environment was opened read-only";
    pub const WRITE_TXN_ACTIVE: &str = "a write transaction is already active";
    pub const DISK_FULL: &str = "the disk is full; the transaction was not committed";
    pub fn db_not_found(f: &mut Formatter<'_>, n: &str) -> Result {
        write!(f, "no database named {n:?}")
    }
    pub fn db_exists(f: &mut Formatter<'_>, n: &str) -> Result {
        write!(f, "a database named {n:?} already exists")
    }
    pub fn config_mismatch(f: &mut Formatter<'_>, db: &str, what: &str) -> Result {
        write!(
            f,
            "database {db:?} was created with a different configuration ({what}); \
             open it with the stored configuration, or drop it and create it anew"
        )
    }
    pub fn duplicate_key(f: &mut Formatter<'_>, db: &str, key: &str) -> Result {
        write!(
            f,
            "key {key} is already in database {db:?} (`put` overwrites, `insert_new` refuses)"
        )
    }
    pub fn invalid_key(f: &mut Formatter<'_>, w: &str) -> Result {
        write!(f, "invalid key: {w}")
    }
    pub fn invalid_record(f: &mut Formatter<'_>, w: &str) -> Result {
        write!(f, "invalid record: {w}")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => text::io(f, e),
            Error::Corrupted { page, what } => text::corrupted(f, *page, what),
            Error::BadFormat(what) => text::bad_format(f, what),
            Error::PreviousIo => f.write_str(text::PREVIOUS_IO),
            Error::Locked { holder } => text::locked(f, holder),
            Error::ReadOnly => f.write_str(text::READ_ONLY),
            Error::WriteTxnActive => f.write_str(text::WRITE_TXN_ACTIVE),
            Error::DbNotFound(n) => text::db_not_found(f, n),
            Error::DbExists(n) => text::db_exists(f, n),
            Error::ConfigMismatch { db, what } => text::config_mismatch(f, db, what),
            Error::DuplicateKey { db, key } => text::duplicate_key(f, db, key),
            Error::KeyExists => write!(f, "the key already exists"),
            Error::InvalidKey(w) => text::invalid_key(f, w),
            Error::InvalidRecord(w) => text::invalid_record(f, w),
            Error::InvalidArgument(w) => write!(f, "invalid argument: {w}"),
            Error::DiskFull => f.write_str(text::DISK_FULL),
            Error::Query(e) => write!(f, "{e}"),
        }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Io(e) => text::io(f, e),
            StorageError::Corrupted { page, what } => text::corrupted(f, *page, what),
            StorageError::BadFormat(what) => text::bad_format(f, what),
            StorageError::PreviousIo => f.write_str(text::PREVIOUS_IO),
            StorageError::Locked { holder } => text::locked(f, holder),
            StorageError::ReadOnly => f.write_str(text::READ_ONLY),
            StorageError::WriteTxnActive => f.write_str(text::WRITE_TXN_ACTIVE),
            StorageError::DiskFull => f.write_str(text::DISK_FULL),
        }
    }
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeError::DbNotFound(n) => text::db_not_found(f, n),
            TreeError::DbExists(n) => text::db_exists(f, n),
            TreeError::ConfigMismatch { db, what } => text::config_mismatch(f, db, what),
            TreeError::DuplicateKey { db, key } => text::duplicate_key(f, db, key),
            TreeError::InvalidKey(w) => text::invalid_key(f, w),
            TreeError::InvalidRecord(w) => text::invalid_record(f, w),
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

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl std::error::Error for TreeError {}

impl From<io::Error> for StorageError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::StorageFull {
            StorageError::DiskFull
        } else {
            StorageError::Io(e)
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        StorageError::from(e).into()
    }
}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Io(e) => Error::Io(e),
            StorageError::Corrupted { page, what } => Error::Corrupted { page, what },
            StorageError::BadFormat(w) => Error::BadFormat(w),
            StorageError::PreviousIo => Error::PreviousIo,
            StorageError::Locked { holder } => Error::Locked { holder },
            StorageError::ReadOnly => Error::ReadOnly,
            StorageError::WriteTxnActive => Error::WriteTxnActive,
            StorageError::DiskFull => Error::DiskFull,
        }
    }
}

impl From<TreeError> for Error {
    fn from(e: TreeError) -> Self {
        match e {
            TreeError::DbNotFound(n) => Error::DbNotFound(n),
            TreeError::DbExists(n) => Error::DbExists(n),
            TreeError::ConfigMismatch { db, what } => Error::ConfigMismatch { db, what },
            TreeError::DuplicateKey { db, key } => Error::DuplicateKey { db, key },
            TreeError::InvalidKey(w) => Error::InvalidKey(w),
            TreeError::InvalidRecord(w) => Error::InvalidRecord(w),
        }
    }
}

impl From<QueryError> for Error {
    fn from(e: QueryError) -> Self {
        Error::Query(e)
    }
}

impl TryFrom<Error> for StorageError {
    type Error = Error;

    /// The storage error, or the error itself when it is of another family.
    fn try_from(e: Error) -> Result<Self, Error> {
        Ok(match e {
            Error::Io(e) => StorageError::Io(e),
            Error::Corrupted { page, what } => StorageError::Corrupted { page, what },
            Error::BadFormat(w) => StorageError::BadFormat(w),
            Error::PreviousIo => StorageError::PreviousIo,
            Error::Locked { holder } => StorageError::Locked { holder },
            Error::ReadOnly => StorageError::ReadOnly,
            Error::WriteTxnActive => StorageError::WriteTxnActive,
            Error::DiskFull => StorageError::DiskFull,
            other => return Err(other),
        })
    }
}

impl TryFrom<Error> for TreeError {
    type Error = Error;

    /// The tree error, or the error itself when it is of another family. The tree's internal
    /// `KeyExists` signal, which names no key, stays an [`Error`].
    fn try_from(e: Error) -> Result<Self, Error> {
        Ok(match e {
            Error::DbNotFound(n) => TreeError::DbNotFound(n),
            Error::DbExists(n) => TreeError::DbExists(n),
            Error::ConfigMismatch { db, what } => TreeError::ConfigMismatch { db, what },
            Error::DuplicateKey { db, key } => TreeError::DuplicateKey { db, key },
            Error::InvalidKey(w) => TreeError::InvalidKey(w),
            Error::InvalidRecord(w) => TreeError::InvalidRecord(w),
            other => return Err(other),
        })
    }
}

impl TryFrom<Error> for QueryError {
    type Error = Error;

    /// The query error, or the error itself when it is of another family.
    fn try_from(e: Error) -> Result<Self, Error> {
        match e {
            Error::Query(q) => Ok(q),
            other => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage_samples() -> Vec<StorageError> {
        vec![
            StorageError::Io(io::Error::other("boom")),
            StorageError::Corrupted {
                page: 7,
                what: "bad checksum".into(),
            },
            StorageError::BadFormat("version 9".into()),
            StorageError::PreviousIo,
            StorageError::Locked {
                holder: "process 12".into(),
            },
            StorageError::ReadOnly,
            StorageError::WriteTxnActive,
            StorageError::DiskFull,
        ]
    }

    fn tree_samples() -> Vec<TreeError> {
        vec![
            TreeError::DbNotFound("a".into()),
            TreeError::DbExists("b".into()),
            TreeError::ConfigMismatch {
                db: "c".into(),
                what: "key type: stored u64, requested u32".into(),
            },
            TreeError::DuplicateKey {
                db: "d".into(),
                key: "5".into(),
            },
            TreeError::InvalidKey("too long".into()),
            TreeError::InvalidRecord("too large".into()),
        ]
    }

    #[test]
    fn storage_errors_keep_message_and_family_through_error() {
        for s in storage_samples() {
            let text = s.to_string();
            let debug = format!("{s:?}");
            let e = Error::from(s);
            assert_eq!(e.to_string(), text);
            assert_eq!(e.family(), ErrorFamily::Storage, "{text}");
            let back = StorageError::try_from(e).expect("a storage error");
            assert_eq!(format!("{back:?}"), debug);
        }
        let e = TreeError::try_from(Error::from(StorageError::ReadOnly)).unwrap_err();
        assert!(matches!(e, Error::ReadOnly));
    }

    #[test]
    fn tree_errors_keep_message_and_family_through_error() {
        for t in tree_samples() {
            let e = Error::from(t.clone());
            assert_eq!(e.to_string(), t.to_string());
            assert_eq!(e.family(), ErrorFamily::Tree);
            assert_eq!(TreeError::try_from(e).expect("a tree error"), t);
        }
    }

    #[test]
    fn other_families_come_back_unchanged() {
        let q = QueryError::UnknownName {
            what: "no database named \"dealy\"; did you mean \"delay\"?".into(),
        };
        let e = Error::from(q.clone());
        assert_eq!(e.family(), ErrorFamily::Query);
        let e = StorageError::try_from(e).unwrap_err();
        let e = TreeError::try_from(e).unwrap_err();
        assert_eq!(QueryError::try_from(e).expect("a query error"), q);

        let a = Error::InvalidArgument("page size 100".into());
        assert_eq!(a.family(), ErrorFamily::Argument);
        let a = QueryError::try_from(a).unwrap_err();
        assert!(matches!(a, Error::InvalidArgument(ref w) if w == "page size 100"));
        // The tree's internal signal is of the tree family but names no key: it stays an Error.
        assert_eq!(Error::KeyExists.family(), ErrorFamily::Tree);
        assert!(matches!(
            TreeError::try_from(Error::KeyExists),
            Err(Error::KeyExists)
        ));
    }

    #[test]
    fn a_full_disk_is_its_own_error() {
        let full = io::Error::from(io::ErrorKind::StorageFull);
        assert!(matches!(StorageError::from(full), StorageError::DiskFull));
        let other = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(matches!(Error::from(other), Error::Io(_)));
    }

    #[test]
    fn messages_say_what_to_do() {
        assert_eq!(
            Error::from(TreeError::ConfigMismatch {
                db: "t".into(),
                what: "key type: stored u64, requested u32".into()
            })
            .to_string(),
            "database \"t\" was created with a different configuration (key type: stored u64, \
             requested u32); open it with the stored configuration, or drop it and create it anew"
        );
        assert!(StorageError::PreviousIo
            .to_string()
            .contains("reopen the environment"));
    }
}
