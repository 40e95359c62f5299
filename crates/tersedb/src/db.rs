//! Databases: the configuration a database is created with, the handle the API takes, and the
//! statistics it reports.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

pub(crate) use crate::btree::config::key_type_name;
pub use crate::btree::config::{DbConfig, ValueType};
use crate::btree::Spec;
pub use crate::btree::{Key, KeyBuf, KeyScheme, KeyType, Limits, RecordType, MAX_RECORD_LEN};
use std::sync::Arc;
pub use tersedb_codecs::CodecId;

/// A handle on a named database. Cheap to clone; valid in every transaction of the environment
/// that opened it, as long as the database is not dropped or renamed.
#[derive(Clone, Debug)]
pub struct Db {
    pub(crate) name: Arc<str>,
    pub(crate) spec: Spec,
    pub(crate) value_type: ValueType,
}

impl Db {
    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The database's configuration (in its effective form: block size 0 resolved).
    pub fn config(&self) -> DbConfig {
        self.spec.config().with_value_type(self.value_type)
    }
    /// How queries read this database's records.
    pub fn value_type(&self) -> ValueType {
        self.value_type
    }

    /// Size limits of this database (they follow from the page size).
    pub fn limits(&self) -> Limits {
        self.spec.limits
    }
}

/// Statistics of one database, from a walk of its tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Keys in the database.
    pub key_count: u64,
    /// Levels (0 for an empty database, 1 for a single leaf).
    pub height: usize,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Branch (internal node) pages.
    pub branch_pages: u64,
    /// Pages of values too large for a leaf.
    pub overflow_pages: u64,
    /// Bytes of all its pages.
    pub bytes: u64,
    /// Bytes used by keys and records inside its nodes.
    pub used_bytes: u64,
    /// Bytes the nodes' key lists use (keys, per-key metadata, prefixes, block indexes).
    pub key_bytes: u64,
    /// Bytes the key lists of the leaves use.
    pub leaf_key_bytes: u64,
    /// Bytes the record lists of the leaves use (inline records and overflow references).
    pub leaf_record_bytes: u64,
    /// Keys (separators) in the branches.
    pub branch_keys: u64,
    /// The leaves' compressed key blocks per codec, indexed by `CodecId as usize` (an `auto`
    /// database mixes codecs; see [`DbStats::codec_mix`]).
    pub key_blocks: [u64; CodecId::TABLE_LEN],
    /// The leaves' compressed record chunks per layout, indexed as [`DbStats::RECORD_LAYOUTS`]
    /// names them (see [`DbStats::record_mix`]).
    pub record_chunks: [u64; 5],
}

impl DbStats {
    /// The layouts of compressed record chunks (docs/FORMAT.md), by their number.
    pub const RECORD_LAYOUTS: [&'static str; 5] = crate::btree::records::RECORD_LAYOUTS;

    /// The layouts of the leaves' compressed record chunks and how many chunks each codes, most
    /// used first (empty for plain records).
    pub fn record_mix(&self) -> Vec<(&'static str, u64)> {
        let mut mix: Vec<(&'static str, u64)> = Self::RECORD_LAYOUTS
            .iter()
            .zip(self.record_chunks)
            .filter(|&(_, n)| n > 0)
            .map(|(&l, n)| (l, n))
            .collect();
        mix.sort_by_key(|m| std::cmp::Reverse(m.1));
        mix
    }

    /// The codecs of the leaves' key blocks and how many blocks each codes, most used first
    /// (empty for uncompressed keys).
    pub fn codec_mix(&self) -> Vec<(CodecId, u64)> {
        let mut mix: Vec<(CodecId, u64)> = CodecId::ALL
            .iter()
            .map(|&c| (c, self.key_blocks.get(c as usize).copied().unwrap_or(0)))
            .filter(|&(_, n)| n > 0)
            .collect();
        mix.sort_by(|a, b| b.1.cmp(&a.1).then((a.0 as u8).cmp(&(b.0 as u8))));
        mix
    }
}

impl KeyBuf {
    /// The key as a `u32`, if it is one.
    pub fn key_u32(&self) -> Option<u32> {
        self.as_key().as_u32()
    }
    /// The key as a `u64` (u32 keys widen): `for e in txn.range(&db, ..)? { e?.0.key_u64() }`.
    pub fn key_u64(&self) -> Option<u64> {
        self.as_key().as_u64()
    }
    /// The key's bytes, if it is a byte-string key.
    pub fn key_bytes(&self) -> Option<&[u8]> {
        match self {
            KeyBuf::Bytes(b) => Some(b),
            _ => None,
        }
    }
}
