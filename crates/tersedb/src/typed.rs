//! Typed handles: numbers and strings in and out, no byte juggling (in the style of redb's
//! `TableDefinition<K, V>` and heed's `Database<KC, DC>`).
//!
//! A [`TableDef`] names a database and fixes its key and value types at compile time;
//! opening it in a transaction checks them against the stored configuration and gives a
//! [`Table`], a cheap handle (like [`Db`], which it wraps) valid in every transaction of the
//! environment. Its methods take the transaction, read or write:
//!
//! ```
//! use tersedb::{Env, EnvOptions, TableDef};
//!
//! const PRICES: TableDef<u32, f64> = TableDef::new("prices");
//!
//! # fn main() -> tersedb::Result<()> {
//! let env = Env::in_memory(&EnvOptions::default())?;
//! let mut w = env.begin_write()?;
//! let prices = w.open_table(PRICES)?; // created on first use
//! assert_eq!(prices.put(&mut w, 7, 9.5)?, None); // new key
//! assert_eq!(prices.put(&mut w, 7, 9.75)?, Some(9.5)); // overwritten: the old value
//! assert!(prices.insert_new(&mut w, 7, 1.0).is_err()); // refuses: key 7 is in "prices"
//! w.commit()?;
//!
//! let r = env.begin_read()?;
//! assert_eq!(prices.get(&r, 7)?, Some(9.75));
//! for item in prices.range(&r, 0..10)? {
//!     let (id, price) = item?;
//!     println!("{id}: {price}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Key types: `u32`, `u64` (numeric order), `&[u8]` and `&str` (byte order). Value types:
//! `u32`, `u64`, `i16`, `i32`, `i64`, `f64` (stored little-endian in fixed-size records, so
//! queries can sum them), `&[u8]`, `&str` and `()` (a set: keys only).
//!
//! Borrowed reads: [`Table::get_ref`] returns a guard that holds the leaf page and lends the
//! value from it, except values too large for a leaf, which span several overflow pages and
//! are assembled into one buffer. [`Table::get`] returns the value by value through the tree's
//! point lookup, which copies the record out of the page because it releases the page before
//! returning; for numbers that copy of 2 to 8 bytes is all, and the lookup is faster than
//! positioning a guard.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::cursor::RawCursor;
use crate::btree::overflow::{self, Stored};
use crate::btree::{Key, KeyBuf, KeyScheme, KeyType, RecordType, Spec};
use crate::cursor::Range;
use crate::db::{CodecId, Db, DbConfig, ValueType};
use crate::error::{Error, PageId, Result};
use crate::storage::PageSource;
use crate::txn::{key_error, key_text, ReadAccess, ReadTxn, WriteTxn};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
    impl Sealed for i16 {}
    impl Sealed for f64 {}
    impl Sealed for () {}
    impl Sealed for &[u8] {}
    impl Sealed for &str {}
}

/// A key type of a [`Table`]: `u32`, `u64`, `&[u8]` or `&str`. Sealed: the tree orders keys
/// itself (numbers numerically, byte strings bytewise), so only these map onto its key types.
pub trait TableKey: sealed::Sealed {
    /// A key as it goes in: `u32`, `u64`, `&[u8]`, `&str`.
    type Ref<'a>: Copy + fmt::Debug;
    /// A key as range items hold it: `u32`, `u64`, `Vec<u8>`, `String`.
    type Owned: Clone + fmt::Debug + Ord;
    /// The key type of a database created for this key.
    #[doc(hidden)]
    fn key_type() -> KeyType;
    /// Whether a database with keys of `t` can be read and written as this type.
    #[doc(hidden)]
    fn accepts(t: KeyType) -> bool;
    /// The engine's key.
    #[doc(hidden)]
    fn key<'a>(k: Self::Ref<'a>) -> Key<'a>;
    /// The typed key of a stored key; `Err` names what did not fit (a string not UTF-8).
    #[doc(hidden)]
    fn owned(k: KeyBuf) -> std::result::Result<Self::Owned, KeyBuf>;
}

impl TableKey for u32 {
    type Ref<'a> = u32;
    type Owned = u32;
    fn key_type() -> KeyType {
        KeyType::U32
    }
    fn accepts(t: KeyType) -> bool {
        t == KeyType::U32
    }
    fn key<'a>(k: Self::Ref<'a>) -> Key<'a> {
        Key::U32(k)
    }
    fn owned(k: KeyBuf) -> std::result::Result<u32, KeyBuf> {
        match k {
            KeyBuf::U32(v) => Ok(v),
            k => Err(k),
        }
    }
}

impl TableKey for u64 {
    type Ref<'a> = u64;
    type Owned = u64;
    fn key_type() -> KeyType {
        KeyType::U64
    }
    fn accepts(t: KeyType) -> bool {
        t == KeyType::U64
    }
    fn key<'a>(k: Self::Ref<'a>) -> Key<'a> {
        Key::U64(k)
    }
    fn owned(k: KeyBuf) -> std::result::Result<u64, KeyBuf> {
        match k {
            KeyBuf::U64(v) => Ok(v),
            k => Err(k),
        }
    }
}

impl TableKey for &[u8] {
    type Ref<'a> = &'a [u8];
    type Owned = Vec<u8>;
    fn key_type() -> KeyType {
        KeyType::VarBinary
    }
    fn accepts(t: KeyType) -> bool {
        matches!(t, KeyType::VarBinary | KeyType::Binary(_))
    }
    fn key<'a>(k: Self::Ref<'a>) -> Key<'a> {
        Key::Bytes(k)
    }
    fn owned(k: KeyBuf) -> std::result::Result<Vec<u8>, KeyBuf> {
        match k {
            KeyBuf::Bytes(v) => Ok(v),
            k => Err(k),
        }
    }
}

impl TableKey for &str {
    type Ref<'a> = &'a str;
    type Owned = String;
    fn key_type() -> KeyType {
        KeyType::VarBinary
    }
    fn accepts(t: KeyType) -> bool {
        matches!(t, KeyType::VarBinary | KeyType::Binary(_))
    }
    fn key<'a>(k: Self::Ref<'a>) -> Key<'a> {
        Key::Bytes(k.as_bytes())
    }
    fn owned(k: KeyBuf) -> std::result::Result<String, KeyBuf> {
        match k {
            KeyBuf::Bytes(v) => String::from_utf8(v).map_err(|e| KeyBuf::Bytes(e.into_bytes())),
            k => Err(k),
        }
    }
}

/// A value type of a [`Table`]: `u32`, `u64`, `i16`, `i32`, `i64`, `f64`, `&[u8]`, `&str` or
/// `()`.
/// Numbers are stored little-endian in fixed-size records with the matching
/// [`ValueType`], so queries read them as numbers (`SUM(record)`). Sealed.
pub trait TableValue: sealed::Sealed {
    /// A value as it goes in, and as a guard lends it: the number, `&[u8]`, `&str`, `()`.
    type Ref<'a>: Copy + fmt::Debug;
    /// A value as [`Table::get`] and range items return it: the number, `Vec<u8>`,
    /// `String`, `()`.
    type Owned: Clone + fmt::Debug + PartialEq;
    /// The configuration of a database created for this value (record and value type).
    #[doc(hidden)]
    fn records() -> (RecordType, ValueType);
    /// Whether a database with these records can be read and written as this type.
    #[doc(hidden)]
    fn accepts(r: RecordType, v: ValueType) -> bool;
    /// The stored bytes of `v` (numbers are written into `buf`).
    #[doc(hidden)]
    fn encode<'a>(v: &'a Self::Ref<'_>, buf: &'a mut [u8; 8]) -> &'a [u8];
    /// The value of stored bytes; `Err` says why they do not fit.
    #[doc(hidden)]
    fn decode(b: &[u8]) -> std::result::Result<Self::Ref<'_>, String>;
    /// The value of bytes that [`TableValue::decode`] accepted before (a default otherwise).
    #[doc(hidden)]
    fn decode_checked(b: &[u8]) -> Self::Ref<'_>;
    /// An owned copy.
    #[doc(hidden)]
    fn to_owned(v: Self::Ref<'_>) -> Self::Owned;
    /// The owned value of stored bytes handed over as a buffer (no copy for bytes).
    #[doc(hidden)]
    fn from_vec(b: Vec<u8>) -> std::result::Result<Self::Owned, String> {
        Self::decode(&b).map(Self::to_owned)
    }
}

macro_rules! number_value {
    ($t:ty, $vt:expr, $n:expr) => {
        impl TableValue for $t {
            type Ref<'a> = $t;
            type Owned = $t;
            fn records() -> (RecordType, ValueType) {
                (RecordType::Fixed($n), $vt)
            }
            fn accepts(r: RecordType, v: ValueType) -> bool {
                r == RecordType::Fixed($n) && v == $vt
            }
            fn encode<'a>(v: &'a $t, buf: &'a mut [u8; 8]) -> &'a [u8] {
                let (head, _) = buf.split_at_mut($n);
                head.copy_from_slice(&v.to_le_bytes());
                head
            }
            fn decode(b: &[u8]) -> std::result::Result<$t, String> {
                match <[u8; $n]>::try_from(b) {
                    Ok(a) => Ok(<$t>::from_le_bytes(a)),
                    Err(_) => Err(format!(
                        "a record of {} bytes is not {} ({} bytes)",
                        b.len(),
                        stringify!($t),
                        $n
                    )),
                }
            }
            fn decode_checked(b: &[u8]) -> $t {
                <$t>::from_le_bytes(<[u8; $n]>::try_from(b).unwrap_or([0; $n]))
            }
            fn to_owned(v: $t) -> $t {
                v
            }
        }
    };
}

number_value!(u32, ValueType::U32, 4);
number_value!(u64, ValueType::U64, 8);
number_value!(i64, ValueType::I64, 8);
number_value!(i32, ValueType::I32, 4);
number_value!(i16, ValueType::I16, 2);
number_value!(f64, ValueType::F64, 8);

impl TableValue for () {
    type Ref<'a> = ();
    type Owned = ();
    fn records() -> (RecordType, ValueType) {
        (RecordType::None, ValueType::Bytes)
    }
    fn accepts(r: RecordType, _: ValueType) -> bool {
        r == RecordType::None
    }
    fn encode<'a>(_: &'a (), _: &'a mut [u8; 8]) -> &'a [u8] {
        &[]
    }
    fn decode(b: &[u8]) -> std::result::Result<(), String> {
        if b.is_empty() {
            Ok(())
        } else {
            Err(format!("a set has no records, got {} bytes", b.len()))
        }
    }
    fn decode_checked(_: &[u8]) {}
    fn to_owned(_: ()) {}
}

impl TableValue for &[u8] {
    type Ref<'a> = &'a [u8];
    type Owned = Vec<u8>;
    fn records() -> (RecordType, ValueType) {
        (RecordType::Variable, ValueType::Bytes)
    }
    fn accepts(r: RecordType, v: ValueType) -> bool {
        r != RecordType::None && v == ValueType::Bytes
    }
    fn encode<'a>(v: &'a &[u8], _: &'a mut [u8; 8]) -> &'a [u8] {
        v
    }
    fn decode(b: &[u8]) -> std::result::Result<&[u8], String> {
        Ok(b)
    }
    fn decode_checked(b: &[u8]) -> &[u8] {
        b
    }
    fn to_owned(v: &[u8]) -> Vec<u8> {
        v.to_vec()
    }
    fn from_vec(b: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
        Ok(b)
    }
}

impl TableValue for &str {
    type Ref<'a> = &'a str;
    type Owned = String;
    fn records() -> (RecordType, ValueType) {
        (RecordType::Variable, ValueType::Bytes)
    }
    fn accepts(r: RecordType, v: ValueType) -> bool {
        r != RecordType::None && v == ValueType::Bytes
    }
    fn encode<'a>(v: &'a &str, _: &'a mut [u8; 8]) -> &'a [u8] {
        v.as_bytes()
    }
    fn decode(b: &[u8]) -> std::result::Result<&str, String> {
        std::str::from_utf8(b).map_err(|e| format!("the record is not UTF-8 text: {e}"))
    }
    fn decode_checked(b: &[u8]) -> &str {
        std::str::from_utf8(b).unwrap_or_default()
    }
    fn to_owned(v: &str) -> String {
        v.to_string()
    }
    fn from_vec(b: Vec<u8>) -> std::result::Result<String, String> {
        String::from_utf8(b).map_err(|e| format!("the record is not UTF-8 text: {e}"))
    }
}

/// How a new table compresses its keys (an existing one keeps what it was created with).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    /// Integer keys: a codec chosen per block; byte strings: the default scheme (`HeadTail`).
    Default,
    Codec(CodecId),
    Scheme(KeyScheme),
    None,
}

/// A database's name and its key and value types, fixed at compile time (redb's
/// `TableDefinition`). `const`-constructible; open it with [`WriteTxn::open_table`] (creates
/// it when absent) or [`ReadTxn::open_table`].
///
/// ```
/// use tersedb::{CodecId, TableDef};
/// const EVENTS: TableDef<u64, f64> = TableDef::new("events");
/// const IDS: TableDef<u32, ()> = TableDef::new("ids").codec(CodecId::Bp128);
/// const NAMES: TableDef<&str, u64> = TableDef::new("names");
/// ```
pub struct TableDef<'n, K: TableKey, V: TableValue> {
    name: &'n str,
    compression: Compression,
    block_size: u16,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K: TableKey, V: TableValue> Clone for TableDef<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K: TableKey, V: TableValue> Copy for TableDef<'_, K, V> {}

impl<K: TableKey, V: TableValue> fmt::Debug for TableDef<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableDef")
            .field("name", &self.name)
            .field("key", &std::any::type_name::<K>())
            .field("value", &std::any::type_name::<V>())
            .finish()
    }
}

impl<'n, K: TableKey, V: TableValue> TableDef<'n, K, V> {
    /// A table named `name`. New tables compress integer keys with a codec chosen per block
    /// (`auto`; uncompressed on pages under 1 KiB, too small for compressed leaves),
    /// byte-string keys with `HeadTail`, and numeric values (integers, floats) chunk by chunk
    /// (see [`DbConfig::new`]).
    pub const fn new(name: &'n str) -> Self {
        TableDef {
            name,
            compression: Compression::Default,
            block_size: 0,
            _types: PhantomData,
        }
    }

    /// Integer keys of a new table are compressed with `codec` (ignored for byte strings).
    pub const fn codec(mut self, codec: CodecId) -> Self {
        self.compression = Compression::Codec(codec);
        self
    }

    /// Byte-string keys of a new table are compressed with `scheme` (ignored for integers).
    pub const fn key_scheme(mut self, scheme: KeyScheme) -> Self {
        self.compression = Compression::Scheme(scheme);
        self
    }

    /// Keys and values of a new table are stored uncompressed.
    pub const fn uncompressed(mut self) -> Self {
        self.compression = Compression::None;
        self
    }

    /// Most keys per compressed block of a new table with a codec (0: the codec's maximum).
    pub const fn block_size(mut self, keys: u16) -> Self {
        self.block_size = keys;
        self
    }

    /// The table's name.
    pub const fn name(&self) -> &'n str {
        self.name
    }

    /// The configuration a new table gets.
    pub fn config(&self) -> DbConfig {
        let (rt, vt) = V::records();
        let kt = K::key_type();
        // Numeric values are compressed unless the table is `uncompressed`.
        let c = match self.compression {
            Compression::None => DbConfig::raw(kt, rt),
            _ => DbConfig::new(kt, rt),
        }
        .with_value_type(vt);
        let int = matches!(kt, KeyType::U32 | KeyType::U64);
        let c = match (self.compression, int) {
            (Compression::Codec(codec), true) => c.with_codec(Some(codec)),
            (Compression::Scheme(s), false) => c.with_key_scheme(s),
            (Compression::None, false) => c.with_key_scheme(KeyScheme::None),
            _ => c,
        };
        if int && c.key_codec.is_some() || c.auto_codec {
            c.with_block_size(self.block_size)
        } else {
            c
        }
    }

    /// A handle on `db` after checking that its keys and values are of this table's types.
    fn check(&self, db: Db) -> Result<Table<K, V>> {
        let c = db.config();
        let keys_ok = K::accepts(c.key_type);
        let values_ok = V::accepts(c.record_type, c.value_type);
        if keys_ok && values_ok {
            return Ok(Table {
                db,
                _types: PhantomData,
            });
        }
        let want = self.config();
        let mut what = Vec::new();
        if !keys_ok {
            what.push(format!(
                "key type: stored {}, requested {} ({})",
                crate::db::key_type_name(c.key_type),
                crate::db::key_type_name(want.key_type),
                std::any::type_name::<K>()
            ));
        }
        if !values_ok {
            what.push(format!(
                "values: stored {}, requested {}",
                values_words(&c),
                std::any::type_name::<V>()
            ));
        }
        Err(Error::ConfigMismatch {
            db: self.name.to_string(),
            what: what.join("; "),
        })
    }
}

fn values_words(c: &DbConfig) -> String {
    match (c.value_type, c.record_type) {
        (ValueType::Bytes, RecordType::None) => "none (keys only)".into(),
        (ValueType::Bytes, RecordType::Fixed(n)) => format!("{n}-byte records"),
        (ValueType::Bytes, RecordType::Variable) => "byte strings".into(),
        (vt, _) => vt.name().into(),
    }
}

impl ReadTxn {
    /// Opens a table: the database `def` names, checked to have its key and value types
    /// (`Error::DbNotFound` when absent, `Error::ConfigMismatch` naming the difference).
    pub fn open_table<K: TableKey, V: TableValue>(
        &self,
        def: TableDef<'_, K, V>,
    ) -> Result<Table<K, V>> {
        def.check(self.open_db(def.name)?)
    }
}

impl WriteTxn {
    /// Opens a table, creating it with [`TableDef::config`] when absent; an existing one must
    /// have the table's key and value types (its compression may be any).
    pub fn open_table<K: TableKey, V: TableValue>(
        &mut self,
        def: TableDef<'_, K, V>,
    ) -> Result<Table<K, V>> {
        match self.open_db(def.name) {
            Ok(db) => def.check(db),
            Err(Error::DbNotFound(_)) => self.create_table(def),
            Err(e) => Err(e),
        }
    }

    /// Creates a table (`Error::DbExists` if the name is taken).
    pub fn create_table<K: TableKey, V: TableValue>(
        &mut self,
        def: TableDef<'_, K, V>,
    ) -> Result<Table<K, V>> {
        let mut config = def.config();
        if config.auto_codec && self.page_size()? < crate::btree::MIN_PACKED_PAGE {
            // Compressed leaves need room for two worst-case blocks: small pages store keys
            // as they are (the default adapts; an explicit codec is refused instead).
            config = config.with_auto_codec(false).with_block_size(0);
        }
        let db = self.create_db(def.name, config)?;
        def.check(db)
    }
}

/// A typed handle on a database: keys of type `K`, values of type `V` (see [`TableKey`],
/// [`TableValue`]). Cheap to clone; valid in every transaction of its environment, like the
/// [`Db`] it wraps. Reads take any transaction (`&ReadTxn` or `&WriteTxn`, which sees its
/// own changes), writes take `&mut WriteTxn`.
pub struct Table<K: TableKey, V: TableValue> {
    db: Db,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K: TableKey, V: TableValue> Clone for Table<K, V> {
    fn clone(&self) -> Self {
        Table {
            db: self.db.clone(),
            _types: PhantomData,
        }
    }
}

impl<K: TableKey, V: TableValue> fmt::Debug for Table<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.db.name())
            .field("key", &std::any::type_name::<K>())
            .field("value", &std::any::type_name::<V>())
            .finish()
    }
}

/// An error for stored bytes that do not decode as the table's type (text that is not UTF-8
/// in a `&str` table over a byte database), naming the key and the database.
fn bad_value(db: &Db, key: &Key<'_>, what: String) -> Error {
    Error::InvalidRecord(format!(
        "value of key {} in database {:?}: {what} (open it with &[u8] values)",
        key_text(key),
        db.name()
    ))
}

fn bad_key(db: &Db, k: KeyBuf) -> Error {
    Error::InvalidKey(format!(
        "stored key {} of database {:?} is not valid UTF-8 (open it with &[u8] keys)",
        key_text(&k.as_key()),
        db.name()
    ))
}

impl<K: TableKey, V: TableValue> Table<K, V> {
    /// A table definition, for a `let` where the types are written once:
    /// `w.open_table(Table::<u32, f64>::def("prices"))`.
    pub const fn def(name: &str) -> TableDef<'_, K, V> {
        TableDef::new(name)
    }

    /// The untyped handle (for cursors, statistics and the byte API).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.db.name()
    }

    /// The value of `key`, or `None` when absent.
    ///
    /// Numbers come back by value; bytes and strings as an owned copy (see
    /// [`Table::get_ref`] for reading them in place).
    pub fn get(&self, txn: &impl ReadAccess, key: K::Ref<'_>) -> Result<Option<V::Owned>> {
        let (src, root, _) = txn.db_view(&self.db)?;
        let key = K::key(key);
        self.lookup(src, root, &key)
    }

    /// The tree's point lookup, decoded. It copies the record out of the page (it releases
    /// the page before returning): for numbers that copy is the only cost, and it is faster
    /// than positioning a cursor, which keeps the path's pages (measured: `typed_speed`).
    fn lookup(
        &self,
        src: &dyn PageSource,
        root: PageId,
        key: &Key<'_>,
    ) -> Result<Option<V::Owned>> {
        let found = crate::btree::tree::get(src, &self.db.spec, root, key)
            .map_err(|e| key_error(&self.db, key, e))?;
        match found {
            Some(b) => V::from_vec(b)
                .map(Some)
                .map_err(|w| bad_value(&self.db, key, w)),
            None => Ok(None),
        }
    }

    /// The value of `key` in place: the guard holds the leaf page and lends the value from
    /// it (values in overflow pages are assembled into one buffer first). Positioning the
    /// guard costs more than [`Table::get`]'s copy of a small value (it keeps the path's
    /// pages); it pays off for values of some size.
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let docs = w.open_table(Table::<u32, &[u8]>::def("docs"))?;
    /// docs.put(&mut w, 1, b"hello")?;
    /// let v = docs.get_ref(&w, 1)?.unwrap();
    /// assert_eq!(v.value(), b"hello"); // no copy
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn get_ref<'t>(
        &self,
        txn: &'t impl ReadAccess,
        key: K::Ref<'_>,
    ) -> Result<Option<ValueGuard<'t, V>>> {
        let (src, root, _) = txn.db_view(&self.db)?;
        let key = K::key(key);
        ValueGuard::find(src, &self.db, root, &key)
    }

    /// Whether `key` is present.
    pub fn contains(&self, txn: &impl ReadAccess, key: K::Ref<'_>) -> Result<bool> {
        let (src, root, _) = txn.db_view(&self.db)?;
        let key = K::key(key);
        crate::btree::tree::contains(src, &self.db.spec, root, &key)
            .map_err(|e| key_error(&self.db, &key, e))
    }

    /// Number of keys.
    pub fn len(&self, txn: &impl ReadAccess) -> Result<u64> {
        Ok(txn.db_view(&self.db)?.2)
    }

    /// Whether the table holds no key.
    pub fn is_empty(&self, txn: &impl ReadAccess) -> Result<bool> {
        Ok(self.len(txn)? == 0)
    }

    /// The entries with keys in `range`, in key order (`.rev()` for descending):
    /// `t.range(&txn, 10..20)`, `t.range(&txn, "a".."b")`.
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let cities = w.open_table(Table::<&str, u64>::def("cities"))?;
    /// cities.put(&mut w, "fr/lyon", 522_000)?;
    /// cities.put(&mut w, "fr/paris", 2_103_000)?;
    /// cities.put(&mut w, "it/rome", 2_749_000)?;
    /// // A prefix is a range: every key from "fr/" up to (not including) "fr0".
    /// let fr: Vec<(String, u64)> = cities.range(&w, "fr/".."fr0")?.collect::<Result<_, _>>()?;
    /// assert_eq!(fr, [("fr/lyon".into(), 522_000), ("fr/paris".into(), 2_103_000)]);
    /// let (last, _) = cities.range(&w, ..)?.rev().next().unwrap()?;
    /// assert_eq!(last, "it/rome");
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn range<'t, 'k, R: RangeBounds<K::Ref<'k>>>(
        &self,
        txn: &'t impl ReadAccess,
        range: R,
    ) -> Result<TableRange<'t, K, V>> {
        let (src, root, _) = txn.db_view(&self.db)?;
        let b = |b: Bound<&K::Ref<'k>>| match b {
            Bound::Included(k) => Bound::Included(K::key(*k)),
            Bound::Excluded(k) => Bound::Excluded(K::key(*k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let r = (b(range.start_bound()), b(range.end_bound()));
        let cur = crate::cursor::Cursor::new(src, self.db.spec, root);
        let inner = Range::new(cur, &r).map_err(|e| match r.0 {
            Bound::Included(k) | Bound::Excluded(k) => key_error(&self.db, &k, e),
            Bound::Unbounded => e,
        })?;
        Ok(TableRange {
            inner,
            db: self.db.clone(),
            _types: PhantomData,
        })
    }

    /// Every entry, in key order.
    pub fn iter<'t>(&self, txn: &'t impl ReadAccess) -> Result<TableRange<'t, K, V>> {
        self.range(txn, ..)
    }

    /// The entry with the smallest key, or `None` when empty.
    pub fn first(&self, txn: &impl ReadAccess) -> Result<Option<(K::Owned, V::Owned)>> {
        self.iter(txn)?.next().transpose()
    }

    /// The entry with the largest key, or `None` when empty.
    pub fn last(&self, txn: &impl ReadAccess) -> Result<Option<(K::Owned, V::Owned)>> {
        self.iter(txn)?.next_back().transpose()
    }

    /// Inserts or overwrites; returns the value it replaced (`None` for a new key).
    pub fn put(
        &self,
        w: &mut WriteTxn,
        key: K::Ref<'_>,
        value: V::Ref<'_>,
    ) -> Result<Option<V::Owned>> {
        let mut buf = [0u8; 8];
        let bytes = V::encode(&value, &mut buf);
        let key = K::key(key);
        match w.put(&self.db, key, bytes)? {
            Some(old) => V::from_vec(old)
                .map(Some)
                .map_err(|why| bad_value(&self.db, &key, why)),
            None => Ok(None),
        }
    }

    /// Inserts a new key; [`Error::DuplicateKey`] naming the key and the table when it is
    /// present (nothing changes then).
    pub fn insert_new(&self, w: &mut WriteTxn, key: K::Ref<'_>, value: V::Ref<'_>) -> Result<()> {
        let mut buf = [0u8; 8];
        w.insert_new(&self.db, K::key(key), V::encode(&value, &mut buf))
    }

    /// Appends a key greater than every key in the table (`Error::InvalidKey` otherwise):
    /// the fast path for ascending bulk loads.
    pub fn append(&self, w: &mut WriteTxn, key: K::Ref<'_>, value: V::Ref<'_>) -> Result<()> {
        let mut buf = [0u8; 8];
        w.append(&self.db, K::key(key), V::encode(&value, &mut buf))
    }

    /// Removes `key`; returns its value (`None` when it was absent).
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let stock = w.open_table(Table::<u32, u64>::def("stock"))?;
    /// stock.put(&mut w, 7, 40)?;
    /// assert_eq!(stock.remove(&mut w, 7)?, Some(40));
    /// assert_eq!(stock.remove(&mut w, 7)?, None);
    /// assert!(stock.is_empty(&w)?);
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn remove(&self, w: &mut WriteTxn, key: K::Ref<'_>) -> Result<Option<V::Owned>> {
        let key = K::key(key);
        match w.remove(&self.db, key)? {
            Some(old) => V::from_vec(old)
                .map(Some)
                .map_err(|why| bad_value(&self.db, &key, why)),
            None => Ok(None),
        }
    }
}

/// A value lent from its page ([`Table::get_ref`]): holds the leaf page (shared, immutable)
/// so the value can be read in place for as long as the guard lives.
pub struct ValueGuard<'t, V: TableValue> {
    raw: RawCursor,
    spec: Spec,
    /// A value from overflow pages, assembled.
    assembled: Option<Vec<u8>>,
    _t: GuardMarker<'t, V>,
}

/// The guard lives no longer than its transaction and holds no `V` itself.
type GuardMarker<'t, V> = PhantomData<(&'t (), fn() -> V)>;

impl<V: TableValue> fmt::Debug for ValueGuard<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ValueGuard").field(&self.value()).finish()
    }
}

impl<'t, V: TableValue> ValueGuard<'t, V> {
    /// Looks `key` up; the guard is checked to decode as `V` before it is returned.
    fn find(src: &'t dyn PageSource, db: &Db, root: PageId, key: &Key<'_>) -> Result<Option<Self>> {
        let probe = db.spec.probe(key).map_err(|e| key_error(db, key, e))?;
        let mut raw = RawCursor::new();
        if !raw.seek(src, &db.spec, root, &probe, true)? {
            return Ok(None);
        }
        let assembled = match raw.stored(&db.spec)? {
            Some(Stored::Inline(b)) => {
                V::decode(&b).map_err(|w| bad_value(db, key, w))?;
                // A compressed record is decoded, not on the page: the guard keeps it.
                b.page().is_none().then(|| b.to_vec())
            }
            Some(Stored::Overflow { first, len }) => {
                let b = overflow::read(src, first, len)?;
                V::decode(&b).map_err(|w| bad_value(db, key, w))?;
                Some(b)
            }
            None => return Ok(None),
        };
        Ok(Some(ValueGuard {
            raw,
            spec: db.spec,
            assembled,
            _t: PhantomData,
        }))
    }

    /// The stored bytes (checked to decode when the guard was made).
    pub fn bytes(&self) -> &[u8] {
        if let Some(b) = &self.assembled {
            return b;
        }
        match self.raw.stored(&self.spec) {
            Ok(Some(Stored::Inline(b))) => b.page().unwrap_or(&[]),
            // Unreachable: the same page decoded when the guard was made.
            _ => &[],
        }
    }

    /// The value, borrowed from the page.
    pub fn value(&self) -> V::Ref<'_> {
        V::decode_checked(self.bytes())
    }
}

/// The entries of a key range of a [`Table`], typed, in key order; double-ended.
pub struct TableRange<'t, K: TableKey, V: TableValue> {
    inner: Range<'t>,
    db: Db,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<K: TableKey, V: TableValue> fmt::Debug for TableRange<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableRange")
            .field("db", &self.db.name())
            .field("range", &self.inner)
            .finish()
    }
}

impl<K: TableKey, V: TableValue> TableRange<'_, K, V> {
    fn typed(&self, item: Result<(KeyBuf, Vec<u8>)>) -> Result<(K::Owned, V::Owned)> {
        let (k, v) = item?;
        let value = match V::from_vec(v) {
            Ok(v) => v,
            Err(what) => return Err(bad_value(&self.db, &k.as_key(), what)),
        };
        let key = K::owned(k).map_err(|k| bad_key(&self.db, k))?;
        Ok((key, value))
    }
}

impl<K: TableKey, V: TableValue> Iterator for TableRange<'_, K, V> {
    type Item = Result<(K::Owned, V::Owned)>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next()?;
        Some(self.typed(item))
    }
}

impl<K: TableKey, V: TableValue> DoubleEndedIterator for TableRange<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let item = self.inner.next_back()?;
        Some(self.typed(item))
    }
}
