//! tersedb: an embedded, type-aware key-value store whose B+-tree keeps leaf keys compressed in
//! memory and on disk.
//!
//! Layers (each knows nothing of those above it):
//!
//! ```text
//! Env (one file) -> Db (one B+-tree) -> Txn -> Cursor / queries
//!     btree/    nodes, key and record lists, descent with local balancing
//!     storage/  pager: file format, page cache, free space, meta pages, checksums, I/O trait
//! tersedb-codecs   integer codecs over sorted u32 blocks
//! ```

#![forbid(unsafe_code)]

pub mod btree;
pub(crate) mod catalog;
pub mod check;
pub mod cursor;
pub mod db;
pub mod env;
mod env_pager;
pub mod error;
pub mod storage;
pub mod txn;

pub use check::{CheckFault, CheckReport, DbReport};
pub use cursor::{Cursor, Range, WriteCursor};
pub use db::{Db, DbConfig, DbStats, Key, KeyBuf, KeyType, Limits, RecordType};
pub use env::{Env, EnvOptions};
pub use error::{Error, Result};
pub use storage::Durability;
pub use txn::{ReadTxn, WriteTxn};
