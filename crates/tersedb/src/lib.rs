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
//!
//! # Example
//!
//! ```
//! use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};
//!
//! # fn main() -> tersedb::Result<()> {
//! // `Env::in_memory` keeps everything in RAM; files work the same way.
//! let env = Env::in_memory(&EnvOptions::default())?;
//!
//! // One write transaction at a time: create a database and fill it.
//! let mut w = env.begin_write()?;
//! let events = w.create_db("events", DbConfig::new(KeyType::U32, RecordType::Variable))?;
//! for id in 0..1000u32 {
//!     w.append(&events, id, format!("event {id}").as_bytes())?; // ascending: fast path
//! }
//! w.insert(&events, 5000u32, b"late")?;
//! assert!(w.insert(&events, 5000u32, b"again").is_err()); // Error::KeyExists
//! w.upsert(&events, 5000u32, b"overwritten")?;
//! assert!(w.erase(&events, 7u32)?);
//! w.commit()?;
//!
//! // Read transactions are snapshots, shareable between threads.
//! let r = env.begin_read()?;
//! assert_eq!(r.len(&events)?, 1000);
//! assert_eq!(r.get(&events, 5000u32)?.as_deref(), Some(&b"overwritten"[..]));
//! let some: Vec<u32> = r
//!     .range(&events, 5u32..10)?
//!     .map(|e| e.map(|(k, _)| k.as_key().as_u32().unwrap()))
//!     .collect::<tersedb::Result<_>>()?;
//! assert_eq!(some, [5, 6, 8, 9]);
//!
//! // Cursors move both ways and seek by key.
//! let mut c = r.cursor(&events)?;
//! assert!(c.lower_bound(998u32)?);
//! assert_eq!(c.key_u32(), Some(998));
//! assert!(c.next()? && c.key_u32() == Some(999));
//! assert!(c.next()? && c.key_u32() == Some(5000));
//! assert!(!c.next()?); // stays on the last key
//! assert!(c.prev()? && c.key_u32() == Some(999));
//!
//! assert!(env.check()?.is_clean());
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod btree;
pub(crate) mod catalog;
pub mod check;
pub mod compact;
pub mod cursor;
pub mod db;
pub mod env;
mod env_pager;
pub mod error;
pub mod query;
pub mod storage;
#[cfg(test)]
mod testing;
pub mod txn;

pub use btree::fold::KeyFold;
pub use check::{CheckFault, CheckReport, DbReport};
pub use compact::{compact_file, CompactReport};
pub use cursor::{Cursor, Range, WriteCursor};
pub use db::{
    CodecId, Db, DbConfig, DbStats, Key, KeyBuf, KeyScheme, KeyType, Limits, RecordType, ValueType,
};
pub use env::{Env, EnvOptions, SpaceUsage};
pub use error::{Error, Result};
pub use query::{Query, QueryResult, Value};
pub use storage::Durability;
pub use txn::{ReadTxn, WriteTxn};
