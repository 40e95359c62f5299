//! The B+-tree: nodes, key lists, record lists, and descent with top-down local balancing.
//!
//! A tree lives in pages reached through [`PageSource`](crate::storage::PageSource) (reads) and
//! [`PageSink`](crate::storage::PageSink) (copy-on-write). It knows nothing of environments,
//! catalogs or transactions: callers hand it a root page id and get the new root back.
//!
//! Node layout (every integer little-endian; `P` = page size):
//!
//! ```text
//! leaf:   [0..8 checksum][8 kind=4][9 keylist id][10..12 rrange u16][12..16 count u32]
//!         [16 .. P-rrange: KeyList region][P-rrange .. P: RecordList region]
//! branch: [0..8 checksum][8 kind=3][9 keylist id][10..12 rrange u16][12..16 count u32]
//!         [16..24 child0 u64][24 .. P-rrange: KeyList][P-rrange .. P: child ids, u64 each]
//! ```
//!
//! A branch with `count` keys has `count + 1` children: child 0 sits in the header, child `i + 1`
//! is the "record" of key `i`. Every key in child `i + 1` is `>= key i` and `< key i + 1`.
//! Each list keeps its bytes at the start of its region; the free space of a node is the slack at
//! the end of both regions. When one region is full but the node is not, the boundary between the
//! regions moves (the RecordList's bytes are moved); only a node whose total free space cannot hold
//! an entry is split. Capacity is measured in bytes, never in keys.
//!
//! Pages are untrusted bytes: indexing, `unwrap`, `expect` and `panic!` are denied in the tree's
//! modules outside their unit tests; parsers use `get()` and return faults.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

pub(crate) mod config;
pub(crate) mod cursor;
pub(crate) mod db2;
pub mod fold;
pub(crate) mod keys;
pub(crate) mod node;
pub(crate) mod numrecs;
pub(crate) mod overflow;
pub(crate) mod packed;
pub(crate) mod records;
pub mod scan;
pub(crate) mod slots;
pub(crate) mod strkeys;
pub(crate) mod tree;
pub(crate) mod zone;

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests;

use crate::error::{Error, Result};
use std::cmp::Ordering;

pub(crate) use keys::KeyList;
pub(crate) use records::RecordList;

/// Deepest tree a descent follows; deeper means a corrupt (possibly cyclic) file.
pub const MAX_DEPTH: usize = 32;

/// Largest value a variable-size record may hold (64 MiB).
pub const MAX_RECORD_LEN: usize = 64 << 20;

/// Smallest page size for compressed leaves: a leaf must hold a worst-case block of the packed
/// codecs (BP128: 512 payload bytes for any two keys more than 2^31 apart) twice over.
pub const MIN_PACKED_PAGE: usize = 1024;

/// Bytes of a leaf header.
pub const LEAF_HEADER: usize = 16;
/// Bytes of a branch header (a leaf header plus child 0).
pub const BRANCH_HEADER: usize = 24;

/// The type of a database's keys. Stored in the catalog; checked on open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `u32`, ordered numerically.
    U32,
    /// `u64`, ordered numerically.
    U64,
    /// Byte strings of exactly this length, ordered lexicographically (unsigned).
    Binary(u16),
    /// Byte strings of 0 up to [`Limits::max_key_len`] bytes, ordered lexicographically (unsigned).
    VarBinary,
}

/// How a database of variable-length byte-string keys compresses them in its nodes (seed 002).
/// Stored in the catalog; the default for new `VarBinary` databases is `HeadTail`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyScheme {
    /// Keys stored as they are.
    #[default]
    None,
    /// A per-node prefix (the common prefix of the node's fence keys) stored once.
    Head,
    /// Shortest separators in branches, split points chosen to make them short.
    Tail,
    /// Head and Tail.
    HeadTail,
    /// DB2's prefix groups (a quarter of the page at most for prefixes).
    Db2,
    /// Prefix delta to the previous key, a full key every `scheme_param` keys (default 10),
    /// binary search with roll-forward, shortest separators.
    WiredTiger,
    /// Prefix delta to the previous key, sequential search.
    MyIsam,
    /// Partial keys of `scheme_param` bytes (default 2) in front of the full keys.
    Pkb,
}

impl KeyScheme {
    pub const ALL: [KeyScheme; 8] = [
        KeyScheme::None,
        KeyScheme::Head,
        KeyScheme::Tail,
        KeyScheme::HeadTail,
        KeyScheme::Db2,
        KeyScheme::WiredTiger,
        KeyScheme::MyIsam,
        KeyScheme::Pkb,
    ];
    /// Catalog byte.
    pub fn id(self) -> u8 {
        match self {
            KeyScheme::None => 0,
            KeyScheme::Head => 1,
            KeyScheme::Tail => 2,
            KeyScheme::HeadTail => 3,
            KeyScheme::Db2 => 4,
            KeyScheme::WiredTiger => 5,
            KeyScheme::MyIsam => 6,
            KeyScheme::Pkb => 7,
        }
    }
    pub fn from_id(id: u8) -> Option<KeyScheme> {
        KeyScheme::ALL.into_iter().find(|s| s.id() == id)
    }
    /// Name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            KeyScheme::None => "none",
            KeyScheme::Head => "head",
            KeyScheme::Tail => "tail",
            KeyScheme::HeadTail => "head-tail",
            KeyScheme::Db2 => "db2",
            KeyScheme::WiredTiger => "wiredtiger",
            KeyScheme::MyIsam => "myisam",
            KeyScheme::Pkb => "pkb",
        }
    }
    pub fn from_name(s: &str) -> Option<KeyScheme> {
        KeyScheme::ALL.into_iter().find(|k| k.name() == s)
    }
    /// Whether splits promote shortest separators (and choose the split point for them).
    pub fn tail(self) -> bool {
        matches!(
            self,
            KeyScheme::Tail | KeyScheme::HeadTail | KeyScheme::WiredTiger
        )
    }
}

/// Default roll-forward distance of `KeyScheme::WiredTiger`.
pub const DEFAULT_WT_DISTANCE: u8 = 10;
/// Default partial key length of `KeyScheme::Pkb`.
pub const DEFAULT_PKB_LEN: u8 = 2;
/// Default split range of the tail schemes, in percent of a node around its middle (r = 1/6).
pub const DEFAULT_SPLIT_RANGE: u8 = 17;

/// The type of a database's records. Stored in the catalog; checked on open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordType {
    /// Keys only (a set).
    None,
    /// Every record has exactly this many bytes, stored in the leaf.
    Fixed(u32),
    /// Records of 0 up to [`MAX_RECORD_LEN`] bytes: in the leaf when small, else in overflow pages.
    Variable,
}

/// A key as passed to and returned by the API. Typed: a `U32` key only fits a `KeyType::U32`
/// database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key<'a> {
    U32(u32),
    U64(u64),
    Bytes(&'a [u8]),
}

impl Key<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> KeyBuf {
        match *self {
            Key::U32(v) => KeyBuf::U32(v),
            Key::U64(v) => KeyBuf::U64(v),
            Key::Bytes(b) => KeyBuf::Bytes(b.to_vec()),
        }
    }
    /// The key as a `u32`, if it is one.
    pub fn as_u32(&self) -> Option<u32> {
        match *self {
            Key::U32(v) => Some(v),
            _ => None,
        }
    }
    /// The key as a `u64` (u32 keys widen).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Key::U32(v) => Some(v as u64),
            Key::U64(v) => Some(v),
            _ => None,
        }
    }
    /// The key's bytes, if it is a byte-string key.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match *self {
            Key::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

impl From<u32> for Key<'_> {
    fn from(v: u32) -> Self {
        Key::U32(v)
    }
}
impl From<u64> for Key<'_> {
    fn from(v: u64) -> Self {
        Key::U64(v)
    }
}
impl<'a> From<&'a [u8]> for Key<'a> {
    fn from(v: &'a [u8]) -> Self {
        Key::Bytes(v)
    }
}
impl<'a, const N: usize> From<&'a [u8; N]> for Key<'a> {
    fn from(v: &'a [u8; N]) -> Self {
        Key::Bytes(v)
    }
}
impl<'a> From<&'a Vec<u8>> for Key<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Key::Bytes(v)
    }
}
impl<'a> From<&'a str> for Key<'a> {
    fn from(v: &'a str) -> Self {
        Key::Bytes(v.as_bytes())
    }
}
impl<'a> From<&'a KeyBuf> for Key<'a> {
    fn from(v: &'a KeyBuf) -> Self {
        v.as_key()
    }
}

/// An owned key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyBuf {
    U32(u32),
    U64(u64),
    Bytes(Vec<u8>),
}

impl KeyBuf {
    /// A borrowed view.
    pub fn as_key(&self) -> Key<'_> {
        match self {
            KeyBuf::U32(v) => Key::U32(*v),
            KeyBuf::U64(v) => Key::U64(*v),
            KeyBuf::Bytes(b) => Key::Bytes(b),
        }
    }
}

impl std::fmt::Display for KeyBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_key().fmt_display(f)
    }
}

impl Key<'_> {
    fn fmt_display(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::U32(v) => write!(f, "{v}"),
            Key::U64(v) => write!(f, "{v}"),
            Key::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) if s.chars().all(|c| !c.is_control()) => write!(f, "{s:?}"),
                _ => {
                    write!(f, "0x")?;
                    for x in b.iter() {
                        write!(f, "{x:02x}")?;
                    }
                    Ok(())
                }
            },
        }
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.fmt_display(f)
    }
}

/// Size limits that follow from the page size, so that every node holds at least four entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest variable-length (or fixed-length) binary key, in bytes: `(page_size - 32) / 8 - 10`
    /// (2,034 bytes on 16 KiB pages, 50 on 512-byte pages).
    pub max_key_len: usize,
    /// Largest variable-size record stored in the leaf itself; longer ones go to overflow pages.
    pub max_inline_record: usize,
    /// Largest fixed record size: a leaf entry (longest key + record) must fit a quarter page.
    pub max_fixed_record: usize,
}

impl Limits {
    /// Limits for a page size.
    pub fn for_page_size(page_size: usize) -> Limits {
        let budget = (page_size - BRANCH_HEADER - 8) / 4;
        Limits {
            max_key_len: budget / 2 - 10,
            max_inline_record: budget / 2 - 3,
            max_fixed_record: budget / 2,
        }
    }
}

/// Everything the tree needs to know about one database's format: the key and record types and
/// the list implementations derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub page_size: usize,
    pub key_type: KeyType,
    pub record_type: RecordType,
    pub limits: Limits,
    /// KeyList of leaves.
    pub leaf_keys: KeyList,
    /// KeyList of branches (always uncompressed).
    pub branch_keys: KeyList,
    /// RecordList of leaves.
    pub recs: RecordList,
    /// Tail compression: splits promote shortest separators, choosing the split point within
    /// this many percent of the node around its middle; 0 = full separators.
    pub tail: u8,
}

impl Spec {
    /// Validates a configuration for a page size.
    pub fn new(page_size: usize, key_type: KeyType, record_type: RecordType) -> Result<Spec> {
        let limits = Limits::for_page_size(page_size);
        let keys = match key_type {
            KeyType::U32 => KeyList::U32,
            KeyType::U64 => KeyList::U64,
            KeyType::Binary(w) => {
                if w == 0 || w as usize > limits.max_key_len {
                    return Err(Error::InvalidArgument(format!(
                        "fixed key length {w} must be 1..={} for page size {page_size}",
                        limits.max_key_len
                    )));
                }
                KeyList::Fixed(w as usize)
            }
            KeyType::VarBinary => KeyList::Var,
        };
        let recs = match record_type {
            RecordType::None => RecordList::None,
            RecordType::Fixed(n) => {
                if n == 0 || n as usize > limits.max_fixed_record {
                    return Err(Error::InvalidArgument(format!(
                        "fixed record size {n} must be 1..={} for page size {page_size} \
                         (use RecordType::None for no records, Variable for large ones)",
                        limits.max_fixed_record
                    )));
                }
                RecordList::Fixed(n as usize)
            }
            RecordType::Variable => RecordList::Var,
        };
        Ok(Spec {
            page_size,
            key_type,
            record_type,
            limits,
            leaf_keys: keys,
            branch_keys: keys,
            recs,
            tail: 0,
        })
    }

    /// The format of a database configuration: `Spec::new` plus the leaves' key codec.
    pub fn for_config(page_size: usize, c: &config::DbConfig) -> Result<Spec> {
        let mut spec = Spec::new(page_size, c.key_type, c.record_type)?;
        // Automatic choice on pages too small for a block chooses no codec (the default of
        // `DbConfig::new` must work on every page size); a named codec there is an error.
        let auto = c.auto_codec && page_size >= MIN_PACKED_PAGE;
        let codec = match (auto, c.key_codec) {
            (true, _) => Some(tersedb_codecs::CodecId::Bp128),
            (false, _) if c.auto_codec => None,
            (false, k) => k,
        };
        match codec {
            None => {
                if c.block_size != 0 {
                    return Err(Error::InvalidArgument(
                        "a block size needs a key codec".into(),
                    ));
                }
            }
            Some(codec) => {
                let wide = match c.key_type {
                    KeyType::U32 => false,
                    KeyType::U64 => true,
                    other => {
                        return Err(Error::InvalidArgument(format!(
                            "key codec {} needs u32 or u64 keys, the database has {other:?}",
                            codec.name(),
                        )))
                    }
                };
                if page_size < MIN_PACKED_PAGE {
                    return Err(Error::InvalidArgument(format!(
                        "compressed keys need pages of at least {MIN_PACKED_PAGE} bytes, got {page_size}"
                    )));
                }
                let max = if auto {
                    packed::AUTO_CODECS
                        .iter()
                        .map(|&a| tersedb_codecs::codec::max_keys(a))
                        .min()
                        .unwrap_or(2)
                } else {
                    tersedb_codecs::codec::max_keys(codec)
                }
                .min(packed::MAX_BLOCK_KEYS);
                let bk = match c.block_size as usize {
                    0 => max,
                    n if (2..=max).contains(&n) => n,
                    n => {
                        return Err(Error::InvalidArgument(format!(
                            "block size {n} must be 2..={max} keys for codec {}",
                            if auto { "auto" } else { codec.name() }
                        )))
                    }
                };
                spec.leaf_keys = KeyList::Packed(packed::Packed {
                    codec,
                    block_keys: bk as u16,
                    wide,
                    auto,
                });
            }
        }
        if c.compress_records {
            // Signed records (i16, i32, i64) are sign-extended from their width.
            let num = match c.value_type {
                vt if vt.is_signed() => numrecs::Num::Signed,
                config::ValueType::F64 => numrecs::Num::Float,
                _ => numrecs::Num::Unsigned,
            };
            spec.recs = match c.record_type {
                RecordType::Fixed(w @ 1..=8) => RecordList::Packed(numrecs::NumRecs {
                    width: w as u8,
                    num,
                    chunk: numrecs::chunk_for(page_size, w as usize),
                }),
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "compressed records need fixed-size records of 1 to 8 bytes, the \
                         database has {other:?}"
                    )))
                }
            };
        }
        let scheme = c.key_scheme;
        if scheme == KeyScheme::None {
            if c.scheme_param != 0 || c.split_range != 0 {
                return Err(Error::InvalidArgument(
                    "scheme parameters need a key compression scheme".into(),
                ));
            }
            return Ok(spec);
        }
        if c.key_type != KeyType::VarBinary {
            return Err(Error::InvalidArgument(format!(
                "key compression {} needs variable-length binary keys, the database has {:?}",
                scheme.name(),
                c.key_type
            )));
        }
        let param = |default: u8, max: u8, what: &str| -> Result<u8> {
            match c.scheme_param {
                0 => Ok(default),
                p if p <= max => Ok(p),
                p => Err(Error::InvalidArgument(format!(
                    "{what} {p} must be 1..={max} for key compression {}",
                    scheme.name()
                ))),
            }
        };
        let list = match scheme {
            KeyScheme::None | KeyScheme::Tail => KeyList::Var,
            KeyScheme::Head | KeyScheme::HeadTail => KeyList::Str(strkeys::StrList::Head),
            KeyScheme::WiredTiger => KeyList::Str(strkeys::StrList::WiredTiger(param(
                DEFAULT_WT_DISTANCE,
                255,
                "roll-forward distance",
            )?)),
            KeyScheme::MyIsam => KeyList::Str(strkeys::StrList::MyIsam),
            KeyScheme::Pkb => KeyList::Str(strkeys::StrList::Pkb(param(
                DEFAULT_PKB_LEN,
                16,
                "partial key length",
            )?)),
            // Prefix area capped at a quarter of the page (seed 002 §2.4).
            KeyScheme::Db2 => {
                KeyList::Str(strkeys::StrList::Db2((page_size / 4).min(0xffff) as u16))
            }
        };
        if !matches!(scheme, KeyScheme::WiredTiger | KeyScheme::Pkb) && c.scheme_param != 0 {
            return Err(Error::InvalidArgument(format!(
                "key compression {} takes no parameter",
                scheme.name()
            )));
        }
        if scheme.tail() {
            spec.tail = match c.split_range {
                0 => DEFAULT_SPLIT_RANGE,
                r if r <= 25 => r,
                r => {
                    return Err(Error::InvalidArgument(format!(
                        "split range {r}% must be 1..=25 (each half of a split keeps at most \
                         3/4 of the node)"
                    )))
                }
            };
        } else if c.split_range != 0 {
            return Err(Error::InvalidArgument(format!(
                "key compression {} has no split range (only the tail schemes)",
                scheme.name()
            )));
        }
        spec.leaf_keys = list;
        spec.branch_keys = list;
        Ok(spec)
    }

    /// The key compression scheme of this format.
    pub fn key_scheme(&self) -> KeyScheme {
        use strkeys::StrList;
        match (self.leaf_keys, self.tail > 0) {
            (KeyList::Var, false) => KeyScheme::None,
            (KeyList::Var, true) => KeyScheme::Tail,
            (KeyList::Str(StrList::Head), false) => KeyScheme::Head,
            (KeyList::Str(StrList::Head), true) => KeyScheme::HeadTail,
            (KeyList::Str(StrList::WiredTiger(_)), _) => KeyScheme::WiredTiger,
            (KeyList::Str(StrList::MyIsam), _) => KeyScheme::MyIsam,
            (KeyList::Str(StrList::Pkb(_)), _) => KeyScheme::Pkb,
            (KeyList::Str(StrList::Db2(_)), _) => KeyScheme::Db2,
            _ => KeyScheme::None,
        }
    }

    /// Whether nodes keep a head prefix (and so need their fence keys when rebuilt).
    pub fn head(&self) -> bool {
        matches!(self.leaf_keys, KeyList::Str(strkeys::StrList::Head))
    }

    /// The configuration this format was made from (block size as stored: the effective one).
    pub fn config(&self) -> config::DbConfig {
        let c = config::DbConfig::raw(self.key_type, self.record_type);
        let c = match self.leaf_keys.packed() {
            Some(p) if p.auto => c.with_auto_codec(true).with_block_size(p.block_keys),
            Some(p) => c.with_codec(Some(p.codec)).with_block_size(p.block_keys),
            None => c,
        };
        let param = match self.leaf_keys {
            KeyList::Str(strkeys::StrList::WiredTiger(d)) => d,
            KeyList::Str(strkeys::StrList::Pkb(l)) => l,
            _ => 0,
        };
        c.with_key_scheme(self.key_scheme())
            .with_scheme_param(param)
            .with_split_range(self.tail)
            .with_compressed_records(!self.recs.cost_is_exact())
    }

    /// The KeyList of a leaf (`true`) or branch.
    pub fn keys(&self, leaf: bool) -> KeyList {
        if leaf {
            self.leaf_keys
        } else {
            self.branch_keys
        }
    }

    /// Whether leaves are split when a change finds no room rather than on the way down: the
    /// cost of one entry depends on the compressed block or chunk it lands in.
    pub fn leaves_split_on_insert(&self) -> bool {
        !self.leaf_keys.cost_is_exact() || !self.recs.cost_is_exact()
    }

    /// The RecordList of a leaf (`true`) or branch (child ids).
    pub fn records(&self, leaf: bool) -> RecordList {
        if leaf {
            self.recs
        } else {
            RecordList::Fixed(8)
        }
    }

    /// Checks that `key` fits this database and returns its stored bytes.
    pub fn encode_key<'k>(&self, key: &Key<'k>) -> Result<EncodedKey<'k>> {
        match (self.key_type, *key) {
            (KeyType::U32, Key::U32(v)) => Ok(EncodedKey::small(&v.to_le_bytes())),
            (KeyType::U64, Key::U64(v)) => Ok(EncodedKey::small(&v.to_le_bytes())),
            (KeyType::U64, Key::U32(v)) => Ok(EncodedKey::small(&(v as u64).to_le_bytes())),
            (KeyType::Binary(w), Key::Bytes(b)) => {
                if b.len() != w as usize {
                    Err(Error::InvalidKey(format!(
                        "key has {} bytes, the database's fixed key length is {w}",
                        b.len()
                    )))
                } else {
                    Ok(EncodedKey::Borrowed(b))
                }
            }
            (KeyType::VarBinary, Key::Bytes(b)) => {
                if b.len() > self.limits.max_key_len {
                    Err(Error::InvalidKey(format!(
                        "key has {} bytes, the limit for page size {} is {}",
                        b.len(),
                        self.page_size,
                        self.limits.max_key_len
                    )))
                } else {
                    Ok(EncodedKey::Borrowed(b))
                }
            }
            (kt, k) => Err(Error::InvalidKey(format!(
                "a {} key does not fit a database with key type {kt:?}",
                match k {
                    Key::U32(_) => "u32",
                    Key::U64(_) => "u64",
                    Key::Bytes(_) => "byte-string",
                }
            ))),
        }
    }

    /// Normalises a probe key to the database's key type (a u32 probe widens for u64 keys).
    /// Integer probes of integer trees are answered without encoding the key (every such pair
    /// is valid; the 24 instructions of `encode_key` were 2% of a lookup).
    #[inline]
    pub fn probe<'k>(&self, key: &Key<'k>) -> Result<Key<'k>> {
        match (self.key_type, *key) {
            (KeyType::U32, Key::U32(_)) | (KeyType::U64, Key::U64(_)) => return Ok(*key),
            (KeyType::U64, Key::U32(v)) => return Ok(Key::U64(v as u64)),
            _ => {}
        }
        // Byte-string keys (or a mismatch, which `encode_key` refuses) as they are.
        self.encode_key(key)?;
        Ok(*key)
    }

    /// Decodes stored key bytes.
    pub fn decode_key<'a>(&self, raw: &'a [u8]) -> Key<'a> {
        match self.key_type {
            KeyType::U32 => Key::U32(slots::le_u32(raw)),
            KeyType::U64 => Key::U64(slots::le_u64(raw)),
            _ => Key::Bytes(raw),
        }
    }

    /// Checks a record value against the record type.
    pub fn check_record(&self, value: &[u8]) -> Result<()> {
        match self.record_type {
            RecordType::None if !value.is_empty() => Err(Error::InvalidRecord(format!(
                "the database stores no records, got {} bytes",
                value.len()
            ))),
            RecordType::Fixed(n) if value.len() != n as usize => {
                Err(Error::InvalidRecord(format!(
                    "record has {} bytes, the database's fixed record size is {n}",
                    value.len()
                )))
            }
            RecordType::Variable if value.len() > MAX_RECORD_LEN => {
                Err(Error::InvalidRecord(format!(
                    "record has {} bytes, the limit is {MAX_RECORD_LEN} (64 MiB)",
                    value.len()
                )))
            }
            _ => Ok(()),
        }
    }

    /// Bytes a leaf entry with this key and value takes (key slot + record slot).
    pub fn leaf_entry_cost(&self, key_len: usize, value_len: usize) -> usize {
        self.leaf_keys.cost(key_len) + self.recs.cost(self.stored_record_len(value_len))
    }

    /// Length of the stored record for a value of this length (inline tag + bytes, or a
    /// reference to an overflow chain).
    pub fn stored_record_len(&self, value_len: usize) -> usize {
        self.recs
            .stored_len(value_len, self.limits.max_inline_record)
    }

    /// Bytes the largest separator takes in a branch (key slot + child id).
    pub fn max_branch_entry_cost(&self) -> usize {
        let klen = match self.key_type {
            KeyType::U32 => 4,
            KeyType::U64 => 8,
            KeyType::Binary(w) => w as usize,
            KeyType::VarBinary => self.limits.max_key_len,
        };
        self.branch_keys.cost(klen) + 8
    }

    /// Orders two keys of this database.
    pub fn cmp(&self, a: &Key<'_>, b: &Key<'_>) -> Ordering {
        a.cmp(b)
    }
}

/// A key in its stored form: little-endian integers, or the bytes themselves.
#[derive(Clone, Copy, Debug)]
pub enum EncodedKey<'k> {
    Small([u8; 8], u8),
    Borrowed(&'k [u8]),
}

impl EncodedKey<'_> {
    fn small(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        for (d, s) in a.iter_mut().zip(b) {
            *d = *s;
        }
        EncodedKey::Small(a, b.len().min(8) as u8)
    }
    /// The stored bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            EncodedKey::Small(a, n) => a.get(..*n as usize).unwrap_or(a),
            EncodedKey::Borrowed(b) => b,
        }
    }
}
