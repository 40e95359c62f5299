//! The catalog: a B+-tree rooted at the pager's root, mapping database names (variable-length
//! byte keys, UTF-8) to a 32-byte entry.
//!
//! ```text
//! entry: [0 version=1][1 key type][2..4 fixed key length u16][4 record type]
//!        [5..9 fixed record size u32][9..17 root page u64, 0 = empty][17..25 key count u64]
//!        [25 key codec, 0 = none][26..28 keys per block u16, 0 without a codec]
//!        [28 value type: 0 bytes, 1 u32, 2 u64, 3 i64, 4 f64, 5 i32, 6 i16]
//!        [29 key scheme: 0 none, 1 head, 2 tail, 3 head-tail, 4 db2, 5 wiredtiger, 6 myisam,
//!         7 pkb][30 scheme parameter][31 split range, percent]
//! key type: 1 u32, 2 u64, 3 fixed-length binary, 4 variable-length binary
//! record type: 0 none, 1 fixed size, 2 variable size, 3 fixed size compressed (numrecs.rs)
//! ```
//!
//! Entries come from disk: the decoder reads them as a `[u8; ENTRY_LEN]` (constant offsets,
//! checked at compile time) and returns `Corrupted` or `BadFormat`, never panics.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::{tree, KeyType, RecordType, Spec};
use crate::db::{DbConfig, ValueType};
use crate::error::{Error, PageId, Result};
use crate::storage::{PageSink, PageSource};
use tersedb_codecs::CodecId;

pub const ENTRY_LEN: usize = 32;
/// Longest database name in bytes (further limited by the page size's key limit).
pub const MAX_NAME_LEN: usize = 255;

/// Catalog byte 25 of a database whose key codec is chosen per block (`auto`).
const AUTO_CODEC_ID: u8 = 255;

/// A database's catalog entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub config: DbConfig,
    pub root: PageId,
    pub count: u64,
}

/// The catalog tree's own format.
pub fn spec(page_size: usize) -> Spec {
    // Always valid: VarBinary/Variable exist for every supported page size.
    Spec::new(page_size, KeyType::VarBinary, RecordType::Variable)
        .unwrap_or_else(|_| unreachable!("catalog spec is valid for every page size"))
}

pub fn check_name(page_size: usize, name: &str) -> Result<()> {
    let max = MAX_NAME_LEN.min(spec(page_size).limits.max_key_len);
    if name.is_empty() || name.len() > max {
        return Err(Error::InvalidArgument(format!(
            "database names have 1..={max} bytes, got {}",
            name.len()
        )));
    }
    Ok(())
}

impl Entry {
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0] = 1;
        let (kt, klen) = match self.config.key_type {
            KeyType::U32 => (1, 0),
            KeyType::U64 => (2, 0),
            KeyType::Binary(w) => (3, w),
            KeyType::VarBinary => (4, 0),
        };
        b[1] = kt;
        b[2..4].copy_from_slice(&klen.to_le_bytes());
        let (rt, rsize) = match self.config.record_type {
            RecordType::None => (0, 0),
            RecordType::Fixed(n) if self.config.compress_records => (3, n),
            RecordType::Fixed(n) => (1, n),
            RecordType::Variable => (2, 0),
        };
        b[4] = rt;
        b[5..9].copy_from_slice(&rsize.to_le_bytes());
        b[9..17].copy_from_slice(&self.root.to_le_bytes());
        b[17..25].copy_from_slice(&self.count.to_le_bytes());
        b[25] = if self.config.auto_codec {
            AUTO_CODEC_ID
        } else {
            self.config.key_codec.map_or(0, |c| c as u8)
        };
        b[26..28].copy_from_slice(&self.config.block_size.to_le_bytes());
        b[28] = self.config.value_type.id();
        b[29] = self.config.key_scheme.id();
        b[30] = self.config.scheme_param;
        b[31] = self.config.split_range;
        b
    }

    /// Decodes an entry; `page` names the catalog page for errors.
    pub fn decode(b: &[u8], page: PageId) -> Result<Entry> {
        let bad = |what: &str| Error::Corrupted {
            page,
            what: format!("catalog entry: {what}"),
        };
        let b: &[u8; ENTRY_LEN] = b.try_into().map_err(|_| bad("wrong length"))?;
        if b[0] != 1 {
            return Err(Error::BadFormat(format!(
                "catalog entry version {} is not supported",
                b[0]
            )));
        }
        let klen = u16::from_le_bytes([b[2], b[3]]);
        let key_type = match b[1] {
            1 => KeyType::U32,
            2 => KeyType::U64,
            3 => KeyType::Binary(klen),
            4 => KeyType::VarBinary,
            _ => return Err(bad("unknown key type")),
        };
        let rsize = u32::from_le_bytes([b[5], b[6], b[7], b[8]]);
        let record_type = match b[4] {
            0 => RecordType::None,
            1 | 3 => RecordType::Fixed(rsize),
            2 => RecordType::Variable,
            _ => return Err(bad("unknown record type")),
        };
        let compress_records = b[4] == 3;
        let auto = b[25] == AUTO_CODEC_ID;
        let key_codec = match b[25] {
            0 | AUTO_CODEC_ID => None,
            c => Some(CodecId::from_u8(c).ok_or_else(|| {
                Error::BadFormat(format!(
                    "database uses key codec {c}, which this version does not support"
                ))
            })?),
        };
        let block_size = u16::from_le_bytes([b[26], b[27]]);
        let value_type = ValueType::from_id(b[28]).ok_or_else(|| {
            Error::BadFormat(format!(
                "database uses value type {}, which this version does not support",
                b[28]
            ))
        })?;
        let key_scheme = crate::btree::KeyScheme::from_id(b[29]).ok_or_else(|| {
            Error::BadFormat(format!(
                "database uses key compression scheme {}, which this version does not support",
                b[29]
            ))
        })?;
        let mut r = [0u8; 8];
        r.copy_from_slice(&b[9..17]);
        let root = u64::from_le_bytes(r);
        r.copy_from_slice(&b[17..25]);
        let count = u64::from_le_bytes(r);
        if root == 1 {
            return Err(bad("root points at a meta page"));
        }
        Ok(Entry {
            config: DbConfig::raw(key_type, record_type)
                .with_codec(key_codec)
                .with_auto_codec(auto)
                .with_block_size(block_size)
                .with_value_type(value_type)
                .with_key_scheme(key_scheme)
                .with_scheme_param(b[30])
                .with_split_range(b[31])
                .with_compressed_records(compress_records),
            root,
            count,
        })
    }
}

/// Looks a database up.
pub fn get<S: PageSource + ?Sized>(src: &S, root: PageId, name: &str) -> Result<Option<Entry>> {
    let spec = spec(src.page_size());
    match tree::get(src, &spec, root, &name.as_bytes().into())? {
        Some(b) => Ok(Some(Entry::decode(&b, root)?)),
        None => Ok(None),
    }
}

/// Writes a database's entry.
pub fn put<S: PageSink + ?Sized>(
    sink: &mut S,
    root: &mut PageId,
    name: &str,
    e: &Entry,
) -> Result<()> {
    let spec = spec(sink.page_size());
    tree::put(
        sink,
        &spec,
        root,
        &name.as_bytes().into(),
        &e.encode(),
        tree::PutMode::Upsert,
        &mut None,
    )?;
    Ok(())
}

/// Removes a database's entry.
pub fn remove<S: PageSink + ?Sized>(sink: &mut S, root: &mut PageId, name: &str) -> Result<bool> {
    let spec = spec(sink.page_size());
    tree::erase(sink, &spec, root, &name.as_bytes().into(), &mut None)
}

/// Every database, in name order.
pub fn list<S: PageSource + ?Sized>(src: &S, root: PageId) -> Result<Vec<(String, Entry)>> {
    let spec = spec(src.page_size());
    let mut c = crate::btree::cursor::RawCursor::new();
    let mut out = Vec::new();
    let mut ok = c.first(src, &spec, root)?;
    while ok {
        let page = root;
        let name = match c.key()? {
            Some(k) => {
                String::from_utf8(k.as_bytes().unwrap_or_default().to_vec()).map_err(|_| {
                    Error::Corrupted {
                        page,
                        what: "database name is not UTF-8".into(),
                    }
                })?
            }
            None => break,
        };
        let v = c.value(src, &spec)?.unwrap_or_default();
        out.push((name, Entry::decode(&v, page)?));
        ok = c.next(src, &spec)?;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::db::ValueType;

    #[test]
    fn value_type_byte_round_trips_and_unknown_is_bad_format() {
        let e = Entry {
            config: DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
                .with_value_type(ValueType::I64),
            root: 7,
            count: 3,
        };
        let mut b = e.encode();
        assert_eq!(b[28], 3);
        assert_eq!(Entry::decode(&b, 9).unwrap(), e);
        b[28] = 0;
        assert_eq!(
            Entry::decode(&b, 9).unwrap().config.value_type,
            ValueType::Bytes
        );
        b[28] = 200;
        assert!(matches!(Entry::decode(&b, 9), Err(Error::BadFormat(_))));
    }

    #[test]
    fn every_value_type_has_its_catalog_byte() {
        // The ids are the format: 0-4 as files before i32 and i16 have them, then 5 and 6.
        let ids: Vec<u8> = ValueType::ALL.iter().map(|v| v.id()).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6]);
        for vt in ValueType::ALL {
            let rt = vt.width().map_or(RecordType::Variable, RecordType::Fixed);
            let e = Entry {
                config: DbConfig::new(KeyType::U32, rt).with_value_type(vt),
                root: 0,
                count: 0,
            };
            let b = e.encode();
            assert_eq!(b[28], vt.id());
            assert_eq!(Entry::decode(&b, 9).unwrap(), e, "{vt:?}");
            assert_eq!(ValueType::from_name(vt.name()), Some(vt));
        }
        assert_eq!(ValueType::from_id(7), None);
    }
}
