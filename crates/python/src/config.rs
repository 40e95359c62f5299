//! Database configurations as Python spells them (`key="u32"`, `record="f64"`,
//! `compression="bp128"`), and the kinds of keys and records the bindings convert.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tersedb::{CodecId, DbConfig, KeyType, RecordType, ValueType};

/// The key type of a database, as the bindings convert keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    U32,
    U64,
    /// Byte strings (fixed or variable length): single-key calls only.
    Bytes,
}

/// The record type of a database, as the bindings convert values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecKind {
    /// Keys only.
    None,
    U32,
    U64,
    I64,
    I32,
    I16,
    F64,
    /// Variable-length bytes, or fixed-length bytes without a numeric type.
    Bytes,
}

impl KeyKind {
    pub fn of(c: &DbConfig) -> KeyKind {
        match c.key_type {
            KeyType::U32 => KeyKind::U32,
            KeyType::U64 => KeyKind::U64,
            _ => KeyKind::Bytes,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::U32 => "u32",
            KeyKind::U64 => "u64",
            KeyKind::Bytes => "bytes",
        }
    }
}

impl RecKind {
    pub fn of(c: &DbConfig) -> RecKind {
        match (c.record_type, c.value_type) {
            (RecordType::None, _) => RecKind::None,
            (_, ValueType::U32) => RecKind::U32,
            (_, ValueType::U64) => RecKind::U64,
            (_, ValueType::I64) => RecKind::I64,
            (_, ValueType::I32) => RecKind::I32,
            (_, ValueType::I16) => RecKind::I16,
            (_, ValueType::F64) => RecKind::F64,
            (_, ValueType::Bytes) => RecKind::Bytes,
        }
    }
    pub fn name(self) -> Option<&'static str> {
        match self {
            RecKind::None => None,
            RecKind::U32 => Some("u32"),
            RecKind::U64 => Some("u64"),
            RecKind::I64 => Some("i64"),
            RecKind::I32 => Some("i32"),
            RecKind::I16 => Some("i16"),
            RecKind::F64 => Some("f64"),
            RecKind::Bytes => Some("bytes"),
        }
    }
    /// Bytes of a numeric record.
    pub fn width(self) -> Option<usize> {
        match self {
            RecKind::I16 => Some(2),
            RecKind::U32 | RecKind::I32 => Some(4),
            RecKind::U64 | RecKind::I64 | RecKind::F64 => Some(8),
            RecKind::None | RecKind::Bytes => None,
        }
    }
}

/// The configuration `create_db(name, key, record, compression, block_size,
/// record_compression)` asks for.
pub fn db_config(
    key: &str,
    record: Option<&str>,
    compression: Option<&str>,
    block_size: u16,
    record_compression: Option<&str>,
) -> PyResult<DbConfig> {
    let key_type = match key {
        "u32" => KeyType::U32,
        "u64" => KeyType::U64,
        "bytes" => KeyType::VarBinary,
        k => {
            return Err(PyValueError::new_err(format!(
                "key must be \"u32\", \"u64\" or \"bytes\", not {k:?}"
            )))
        }
    };
    let (record_type, value_type) = match record {
        None | Some("none") => (RecordType::None, ValueType::Bytes),
        Some("u32") => (RecordType::Fixed(4), ValueType::U32),
        Some("u64") => (RecordType::Fixed(8), ValueType::U64),
        Some("i64") => (RecordType::Fixed(8), ValueType::I64),
        Some("i32") => (RecordType::Fixed(4), ValueType::I32),
        Some("i16") => (RecordType::Fixed(2), ValueType::I16),
        Some("f64") => (RecordType::Fixed(8), ValueType::F64),
        Some("bytes") => (RecordType::Variable, ValueType::Bytes),
        Some(r) => {
            return Err(PyValueError::new_err(format!(
                "record must be None, \"u32\", \"u64\", \"i16\", \"i32\", \"i64\", \"f64\" or \
                 \"bytes\", not {r:?}"
            )))
        }
    };
    // No `compression` / `record_compression`: what a new database should get
    // (`DbConfig::new`: integer keys `auto`, numeric records compressed); "none": stored as
    // they are.
    let mut c = DbConfig::new(key_type, record_type)
        .with_value_type(value_type)
        .with_block_size(block_size);
    match record_compression {
        None => {}
        Some("none") => c = c.with_compressed_records(false),
        Some("auto") => c = c.with_compressed_records(true),
        Some(r) => {
            return Err(PyValueError::new_err(format!(
                "record_compression must be None, \"none\" or \"auto\", not {r:?}"
            )))
        }
    }
    match (compression, key_type) {
        (None, _) => {}
        (Some("none"), KeyType::VarBinary) => c = c.with_key_scheme(tersedb::KeyScheme::None),
        (Some("none"), _) => c = c.with_auto_codec(false).with_codec(None),
        (Some(name), KeyType::VarBinary) => {
            let s = tersedb::KeyScheme::from_name(name).ok_or_else(|| {
                let all: Vec<_> = tersedb::KeyScheme::ALL.iter().map(|s| s.name()).collect();
                PyValueError::new_err(format!(
                    "unknown key scheme {name:?} for byte-string keys (one of {})",
                    all.join(", ")
                ))
            })?;
            c = c.with_key_scheme(s);
        }
        (Some("auto"), _) => c = c.with_auto_codec(true),
        (Some(name), _) => {
            let codec = CodecId::from_name(name).ok_or_else(|| {
                let all: Vec<_> = CodecId::ALL.iter().map(|c| c.name()).collect();
                PyValueError::new_err(format!(
                    "unknown compression {name:?} (None, auto or one of {})",
                    all.join(", ")
                ))
            })?;
            c = c.with_codec(Some(codec));
        }
    }
    Ok(c)
}

/// The `compression` a configuration was created with (`None` when uncompressed).
pub fn compression_name(c: &DbConfig) -> Option<&'static str> {
    if let Some(codec) = c.key_codec {
        return Some(codec.name());
    }
    if c.auto_codec {
        return Some("auto");
    }
    match c.key_scheme {
        tersedb::KeyScheme::None => None,
        s => Some(s.name()),
    }
}
