//! The command's own names for key types, record types and compression, as `import` takes them
//! (`u32`, `binary`, `bp128`), for `info` and for messages: never the engine's Rust names.

use tersedb::{DbConfig, KeyScheme, KeyType, RecordType, ValueType};

/// `u32`, `u64`, `binary` (variable length) or `binary(N)` (exactly N bytes).
pub fn key_type(t: KeyType) -> String {
    match t {
        KeyType::U32 => "u32".into(),
        KeyType::U64 => "u64".into(),
        KeyType::VarBinary => "binary".into(),
        KeyType::Binary(n) => format!("binary({n})"),
    }
}

/// What the records are: `none` (keys only), a numeric type, `N bytes` or `variable`.
pub fn record_type(t: RecordType) -> String {
    match t {
        RecordType::None => "none (keys only)".into(),
        RecordType::Fixed(n) => format!("{n} bytes"),
        RecordType::Variable => "variable size".into(),
    }
}

/// The records as `import --record-type` names them, or their byte layout.
pub fn records(c: &DbConfig) -> String {
    match (c.value_type, c.record_type) {
        (ValueType::Bytes, rt) => record_type(rt),
        (vt, _) => vt.name().to_string(),
    }
}

/// The key compression in use: the codec of integer keys, the scheme of binary keys.
pub fn compression(c: &DbConfig) -> String {
    match (c.key_type, c.key_codec) {
        (KeyType::U32 | KeyType::U64, Some(k)) => k.name().to_string(),
        (KeyType::U32 | KeyType::U64, None) if c.auto_codec => "auto".into(),
        (KeyType::U32 | KeyType::U64, None) => "none".into(),
        (_, _) => {
            let param = match c.key_scheme {
                KeyScheme::WiredTiger => format!(" (a full key every {} keys)", c.scheme_param),
                KeyScheme::Pkb => format!(" ({}-byte partial keys)", c.scheme_param),
                _ => String::new(),
            };
            format!("{}{param}", c.key_scheme.name())
        }
    }
}
