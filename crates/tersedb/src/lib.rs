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
//! # Typed tables
//!
//! ```
//! use tersedb::{Env, EnvOptions, TableDef};
//!
//! // Key and value types fixed at compile time: u64 microsecond timestamps -> f64 readings.
//! const READINGS: TableDef<u64, f64> = TableDef::new("readings");
//!
//! # fn main() -> tersedb::Result<()> {
//! // `Env::in_memory` keeps everything in RAM; `Env::open_or_create(path, ..)` opens a file.
//! let env = Env::in_memory(&EnvOptions::default())?;
//!
//! let mut w = env.begin_write()?; // one write transaction at a time
//! let readings = w.open_table(READINGS)?; // created on first use, type-checked after
//! for t in 0..1000u64 {
//!     readings.put(&mut w, t * 1_000_000, t as f64 / 10.0)?; // put overwrites
//! }
//! assert_eq!(readings.put(&mut w, 0, -1.0)?, Some(0.0)); // ... and returns the old value
//! assert!(readings.insert_new(&mut w, 0, 5.0).is_err()); // insert_new refuses
//! // Queries see the write transaction's own changes.
//! let sum = w.query_str("SELECT COUNT(*) FROM readings WHERE key < 10000000")?;
//! assert_eq!(sum.values[0], tersedb::Value::Int(10));
//! w.commit()?;
//!
//! // Read transactions are snapshots, shareable between threads; they never block the writer.
//! let r = env.begin_read()?;
//! assert_eq!(readings.get(&r, 5_000_000)?, Some(0.5));
//! let last: Vec<(u64, f64)> = readings.range(&r, ..)?.rev().take(2).collect::<Result<_, _>>()?;
//! assert_eq!(last, [(999_000_000, 99.9), (998_000_000, 99.8)]);
//!
//! // Ten-second buckets, each folded block by block inside the tree.
//! let per_10s = r.query_str(
//!     "SELECT key / 10000000 AS bucket, AVG(record) FROM readings GROUP BY key / 10000000",
//! )?;
//! assert_eq!(per_10s.rows.len(), 100);
//! # Ok(())
//! # }
//! ```
//!
//! # The byte API
//!
//! [`Db`] handles take keys as [`Key`] (`u32`, `u64` or bytes) and values as bytes; they open
//! any database whatever its types, and give cursors.
//!
//! ```
//! use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};
//!
//! # fn main() -> tersedb::Result<()> {
//! let env = Env::in_memory(&EnvOptions::default())?;
//! let mut w = env.begin_write()?;
//! let events = w.create_db("events", DbConfig::new(KeyType::U32, RecordType::Variable))?;
//! for id in 0..1000u32 {
//!     w.append(&events, id, format!("event {id}").as_bytes())?; // ascending: fast path
//! }
//! w.insert_new(&events, 5000u32, b"late")?;
//! let e = w.insert_new(&events, 5000u32, b"again").unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "key 5000 is already in database \"events\" (`put` overwrites, `insert_new` refuses)"
//! );
//! assert_eq!(w.put(&events, 5000u32, b"overwritten")?.as_deref(), Some(&b"late"[..]));
//! assert!(w.erase(&events, 7u32)?);
//! w.commit()?;
//!
//! let r = env.begin_read()?;
//! assert_eq!(r.len(&events)?, 1000);
//! let some: Vec<u64> = r
//!     .range(&events, 5u32..10)?
//!     .map(|e| e.map(|(k, _)| k.key_u64().unwrap_or(0)))
//!     .collect::<tersedb::Result<_>>()?;
//! assert_eq!(some, [5, 6, 8, 9]);
//!
//! // Cursors move both ways and seek by key.
//! let mut c = r.cursor(&events)?;
//! assert!(c.lower_bound(998u32)?);
//! assert_eq!(c.key_u32(), Some(998));
//! assert!(c.next()? && c.key_u64() == Some(999));
//! assert!(c.next()? && c.key_u32() == Some(5000));
//! assert!(!c.next()?); // stays on the last key
//! assert!(c.prev()? && c.key_u32() == Some(999));
//!
//! assert!(env.check()?.is_clean());
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The tree is the engine's inside, reached through `Db`, `Table`, transactions and cursors.
// Its items re-exported at the root (`Key`, `KeyType`, ...) keep their docs there; the
// `pub use` lists and a few helpers inside it (`Spec::cmp`, `LeafScan::blocks`, ...) serve
// only its own tests since it stopped being public.
#[allow(unused_imports, dead_code, missing_docs)]
mod btree;
pub(crate) mod catalog;
pub mod check;
pub mod compact;
pub mod cursor;
pub mod db;
pub mod env;
mod env_pager;
pub mod error;
pub mod query;
pub mod scan;
pub mod storage;
#[cfg(test)]
mod testing;
pub mod txn;
pub mod typed;

pub use btree::fold::KeyFold;
/// One compressed record chunk on its own, for `tersedb bench pfor` (not a stable API).
#[doc(hidden)]
pub use btree::numrecs::{ChunkCodec, ChunkInfo};
pub use check::{CheckFault, CheckReport, DbReport};
pub use compact::{compact_file, CompactReport, ShrinkReport};
pub use cursor::{Cursor, Range, WriteCursor};
pub use db::{
    CodecId, Db, DbConfig, DbStats, Key, KeyBuf, KeyScheme, KeyType, Limits, RecordType, ValueType,
};
pub use env::{Env, EnvOptions, SpaceUsage};
pub use error::{Error, ErrorFamily, QueryError, Result, StorageError, TreeError};
pub use query::{Query, QueryResult, Value};
pub use storage::Durability;
pub use txn::{ReadAccess, ReadTxn, WriteTxn};
pub use typed::{Table, TableDef, TableKey, TableRange, TableValue, ValueGuard};
