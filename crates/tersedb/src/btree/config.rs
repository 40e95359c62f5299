//! How a database stores its keys and records ([`DbConfig`], [`ValueType`]): the public
//! description a tree's format ([`super::Spec`]) is built from, kept beside the tree so that the
//! tree never imports the database layer above it (re-exported by `crate::db`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::{KeyScheme, KeyType, RecordType};
use tersedb_codecs::CodecId;

/// How a database stores its keys and records. Fixed at creation; stored in the file and checked
/// when the database is opened with [`crate::ReadTxn::open_db_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DbConfig {
    /// The keys' type and order.
    pub key_type: KeyType,
    /// How records are stored (none, fixed size, variable size).
    pub record_type: RecordType,
    /// Codec of the leaves' keys (u32 and u64 keys); `None` stores them uncompressed (unless
    /// `auto_codec`).
    pub key_codec: Option<CodecId>,
    /// Compresses the leaves' keys with a codec chosen per block: the smallest of BP128, SIMD
    /// FOR, StreamVByte, FOR and PFOR-DELTA, a faster one winning unless a slower one saves a
    /// tenth (u32 and u64 keys; `key_codec` is then `None`).
    pub auto_codec: bool,
    /// Most keys per compressed block, start key included; 0 = the codec's maximum (257 for
    /// the byte-oriented codecs and FOR, 129 for BP128, SIMD FOR and the PFOR family, 511 for
    /// Rice).
    pub block_size: u16,
    /// How queries read fixed-size records: opaque bytes, or a little-endian number (then the
    /// record type must be `Fixed(2)` for i16, `Fixed(4)` for u32/i32, `Fixed(8)` for
    /// u64/i64/f64).
    pub value_type: ValueType,
    /// How byte-string keys are compressed (`VarBinary` keys only; default `HeadTail` for them).
    pub key_scheme: KeyScheme,
    /// The scheme's parameter: WiredTiger's roll-forward distance (default 10), PkB's partial
    /// key length (default 2); 0 = the default.
    pub scheme_param: u8,
    /// Tail schemes: split points are chosen within this many percent of a node's bytes around
    /// its middle (1..=25, default 17, about 1/6); 0 = the default.
    pub split_range: u8,
    /// Compresses the leaves' fixed-size records (1..=8 bytes, read as `value_type`: FOR,
    /// dictionary or, for f64, decimal coding, chosen per chunk of up to 255 records). Stored in the
    /// catalog as record type 3.
    pub compress_records: bool,
}

/// The typed interpretation of a database's fixed-size records, for queries (`SUM(record)`,
/// `WHERE record > 5`). Stored in the catalog (entry byte 28); the bytes themselves are the
/// number in little-endian order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// Opaque bytes (no numeric interpretation).
    #[default]
    Bytes,
    /// `u32`, in a `Fixed(4)` record.
    U32,
    /// `u64`, in a `Fixed(8)` record.
    U64,
    /// `i64`, in a `Fixed(8)` record.
    I64,
    /// `f64`, in a `Fixed(8)` record.
    F64,
    /// `i32`, in a `Fixed(4)` record.
    I32,
    /// `i16`, in a `Fixed(2)` record.
    I16,
}

impl ValueType {
    /// Catalog byte: 0 bytes, 1 u32, 2 u64, 3 i64, 4 f64, 5 i32, 6 i16.
    pub fn id(self) -> u8 {
        match self {
            ValueType::Bytes => 0,
            ValueType::U32 => 1,
            ValueType::U64 => 2,
            ValueType::I64 => 3,
            ValueType::F64 => 4,
            ValueType::I32 => 5,
            ValueType::I16 => 6,
        }
    }
    /// The value type of a catalog byte (`None` for an unknown one).
    pub fn from_id(id: u8) -> Option<ValueType> {
        Some(match id {
            0 => ValueType::Bytes,
            1 => ValueType::U32,
            2 => ValueType::U64,
            3 => ValueType::I64,
            4 => ValueType::F64,
            5 => ValueType::I32,
            6 => ValueType::I16,
            _ => return None,
        })
    }
    /// Lowercase name, as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Bytes => "bytes",
            ValueType::U32 => "u32",
            ValueType::U64 => "u64",
            ValueType::I64 => "i64",
            ValueType::F64 => "f64",
            ValueType::I32 => "i32",
            ValueType::I16 => "i16",
        }
    }
    /// Every value type, in catalog-id order.
    pub const ALL: [ValueType; 7] = [
        ValueType::Bytes,
        ValueType::U32,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
        ValueType::I32,
        ValueType::I16,
    ];
    /// The value type the CLI names `s` (`u32`, `u64`, `i16`, `i32`, `i64`, `f64`, `bytes`).
    pub fn from_name(s: &str) -> Option<ValueType> {
        Self::ALL.into_iter().find(|v| v.name() == s)
    }
    /// Whether the records are signed integers (i16, i32, i64).
    pub fn is_signed(self) -> bool {
        matches!(self, ValueType::I16 | ValueType::I32 | ValueType::I64)
    }
    /// Record size a numeric type needs (`None` for bytes).
    pub fn width(self) -> Option<u32> {
        match self {
            ValueType::Bytes => None,
            ValueType::I16 => Some(2),
            ValueType::U32 | ValueType::I32 => Some(4),
            ValueType::U64 | ValueType::I64 | ValueType::F64 => Some(8),
        }
    }
}

impl DbConfig {
    /// Keys of `key_type`, records of `record_type`, compressed as a new database should be:
    /// integer keys (u32, u64) with a codec chosen per block ([`DbConfig::auto_codec`]; on
    /// pages under 1 KiB, where no block fits, they stay uncompressed), fixed-size records of
    /// 1 to 8 bytes compressed per chunk ([`DbConfig::compress_records`]), byte-string keys
    /// with the `HeadTail` scheme; records are opaque bytes until
    /// [`DbConfig::with_value_type`] says otherwise. [`DbConfig::raw`] stores everything
    /// uncompressed.
    pub fn new(key_type: KeyType, record_type: RecordType) -> Self {
        let mut c = Self::raw(key_type, record_type);
        c.auto_codec = matches!(key_type, KeyType::U32 | KeyType::U64);
        c.compress_records = matches!(record_type, RecordType::Fixed(1..=8));
        c
    }
    /// Keys of `key_type`, records of `record_type`, keys and records uncompressed (byte-string
    /// keys use the default scheme, `HeadTail`), records opaque bytes.
    pub fn raw(key_type: KeyType, record_type: RecordType) -> Self {
        DbConfig {
            key_type,
            record_type,
            key_codec: None,
            auto_codec: false,
            block_size: 0,
            value_type: ValueType::Bytes,
            key_scheme: if key_type == KeyType::VarBinary {
                KeyScheme::HeadTail
            } else {
                KeyScheme::None
            },
            scheme_param: 0,
            split_range: 0,
            compress_records: false,
        }
    }
    /// Compresses byte-string keys with `scheme` (see [`KeyScheme`]).
    pub fn with_key_scheme(mut self, scheme: KeyScheme) -> Self {
        self.key_scheme = scheme;
        self
    }
    /// The scheme's parameter (see [`DbConfig::scheme_param`]).
    pub fn with_scheme_param(mut self, p: u8) -> Self {
        self.scheme_param = p;
        self
    }
    /// The tail schemes' split range in percent (see [`DbConfig::split_range`]).
    pub fn with_split_range(mut self, pct: u8) -> Self {
        self.split_range = pct;
        self
    }
    /// Interprets the fixed-size records as numbers of this type (see [`ValueType`]).
    pub fn with_value_type(mut self, t: ValueType) -> Self {
        self.value_type = t;
        self
    }
    /// Compresses the records (fixed-size records of 1..=8 bytes; see
    /// [`DbConfig::compress_records`]).
    pub fn with_compressed_records(mut self, on: bool) -> Self {
        self.compress_records = on;
        self
    }
    /// Checks that the value type fits the record type.
    pub(crate) fn check_value_type(&self) -> crate::Result<()> {
        match self.value_type.width() {
            None => Ok(()),
            Some(w) if self.record_type == RecordType::Fixed(w) => Ok(()),
            Some(w) => Err(crate::Error::InvalidArgument(format!(
                "value type {} needs RecordType::Fixed({w}), the database has {:?}",
                self.value_type.name(),
                self.record_type
            ))),
        }
    }
    /// Compresses the leaves' keys with `codec`; `None` stores them uncompressed. Either way
    /// the automatic choice per block is off (turn it on again with
    /// [`DbConfig::with_auto_codec`]).
    pub fn with_codec(mut self, codec: Option<CodecId>) -> Self {
        self.key_codec = codec;
        self.auto_codec = false;
        self
    }
    /// Compresses the leaves' keys with a codec chosen per block (see
    /// [`DbConfig::auto_codec`]); `false` leaves them as `key_codec` says.
    pub fn with_auto_codec(mut self, on: bool) -> Self {
        self.auto_codec = on;
        if on {
            self.key_codec = None;
        }
        self
    }
    /// Most keys per compressed block (0: the codec's maximum).
    pub fn with_block_size(mut self, keys: u16) -> Self {
        self.block_size = keys;
        self
    }
    /// u32 keys, no records, compressed as [`DbConfig::new`] does.
    pub fn u32_set() -> Self {
        Self::new(KeyType::U32, RecordType::None)
    }
}

/// The key type in words, as the CLI names it: `u32`, `u64`, `binary`, `binary(N)`.
pub(crate) fn key_type_name(t: KeyType) -> String {
    match t {
        KeyType::U32 => "u32".into(),
        KeyType::U64 => "u64".into(),
        KeyType::VarBinary => "binary".into(),
        KeyType::Binary(n) => format!("binary({n})"),
    }
}

fn record_type_name(t: RecordType) -> String {
    match t {
        RecordType::None => "none (keys only)".into(),
        RecordType::Fixed(n) => format!("{n} bytes"),
        RecordType::Variable => "variable size".into(),
    }
}

impl DbConfig {
    /// The values in words: a numeric type, or the record layout.
    fn values_name(&self) -> String {
        match self.value_type {
            ValueType::Bytes => record_type_name(self.record_type),
            vt => vt.name().to_string(),
        }
    }

    /// The key compression in words: a codec, `auto`, `none`, or a byte-string key scheme.
    fn compression_name(&self) -> String {
        match (self.key_type, self.key_codec) {
            (KeyType::U32 | KeyType::U64, Some(c)) => c.name().to_string(),
            (KeyType::U32 | KeyType::U64, None) if self.auto_codec => "auto".into(),
            (KeyType::U32 | KeyType::U64, None) => "none".into(),
            _ => self.key_scheme.name().to_string(),
        }
    }

    /// What differs between `self` (stored) and `other` (requested), in words:
    /// `key type: stored u64, requested u32; values: stored f64, requested i64`.
    pub(crate) fn differences(&self, other: &DbConfig) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut field = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what}: stored {a}, requested {b}"));
            }
        };
        field(
            "key type",
            key_type_name(self.key_type),
            key_type_name(other.key_type),
        );
        field("values", self.values_name(), other.values_name());
        field(
            "key compression",
            self.compression_name(),
            other.compression_name(),
        );
        field(
            "block size",
            self.block_size.to_string(),
            other.block_size.to_string(),
        );
        field(
            "scheme parameter",
            self.scheme_param.to_string(),
            other.scheme_param.to_string(),
        );
        field(
            "split range",
            format!("{}%", self.split_range),
            format!("{}%", other.split_range),
        );
        if out.is_empty() {
            // Unreachable for unequal configurations; said plainly rather than as a dump.
            return "no visible difference".into();
        }
        out.join("; ")
    }
}

/// In words, as the CLI shows it: `u32 keys (auto), f64 values`.
impl std::fmt::Display for DbConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} keys ({}), {} values",
            key_type_name(self.key_type),
            self.compression_name(),
            self.values_name()
        )
    }
}
