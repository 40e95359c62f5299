//! Databases: the configuration a database is created with, the handle the API takes, and the
//! statistics it reports.

use crate::btree::Spec;
pub use crate::btree::{Key, KeyBuf, KeyType, Limits, RecordType, MAX_RECORD_LEN};
use std::sync::Arc;
pub use tersedb_codecs::CodecId;

/// How a database stores its keys and records. Fixed at creation; stored in the file and checked
/// when the database is opened with [`crate::ReadTxn::open_db_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DbConfig {
    pub key_type: KeyType,
    pub record_type: RecordType,
    /// Codec of the leaves' keys (u32 keys only); `None` stores them uncompressed.
    pub key_codec: Option<CodecId>,
    /// Most keys per compressed block, start key included; 0 = the codec's maximum (257 for
    /// the byte-oriented codecs and FOR, 129 for BP128, SIMD FOR and the PFOR family).
    pub block_size: u16,
}

impl DbConfig {
    pub fn new(key_type: KeyType, record_type: RecordType) -> Self {
        DbConfig {
            key_type,
            record_type,
            key_codec: None,
            block_size: 0,
        }
    }
    /// Compresses the leaves' keys with `codec` (`None`: uncompressed).
    pub fn with_codec(mut self, codec: Option<CodecId>) -> Self {
        self.key_codec = codec;
        self
    }
    /// Most keys per compressed block (0: the codec's maximum).
    pub fn with_block_size(mut self, keys: u16) -> Self {
        self.block_size = keys;
        self
    }
    /// u32 keys, no records.
    pub fn u32_set() -> Self {
        Self::new(KeyType::U32, RecordType::None)
    }
}

/// A handle on a named database. Cheap to clone; valid in every transaction of the environment
/// that opened it, as long as the database is not dropped or renamed.
#[derive(Clone, Debug)]
pub struct Db {
    pub(crate) name: Arc<str>,
    pub(crate) spec: Spec,
}

impl Db {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn config(&self) -> DbConfig {
        self.spec.config()
    }
    /// Size limits of this database (they follow from the page size).
    pub fn limits(&self) -> Limits {
        self.spec.limits
    }
}

/// Statistics of one database, from a walk of its tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbStats {
    pub key_count: u64,
    /// Levels (0 for an empty database, 1 for a single leaf).
    pub height: usize,
    pub leaf_pages: u64,
    pub branch_pages: u64,
    pub overflow_pages: u64,
    /// Bytes of all its pages.
    pub bytes: u64,
    /// Bytes used by keys and records inside its nodes.
    pub used_bytes: u64,
}
