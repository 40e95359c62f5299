//! Transactions. A [`ReadTxn`] is a snapshot: any number may be open, each usable from several
//! threads (`Send + Sync`), none ever blocks the writer. A [`WriteTxn`] is the one writer: it
//! copies the pages it touches, and its changes become visible atomically at [`WriteTxn::commit`];
//! dropping it (or [`WriteTxn::abort`]) leaves nothing behind.
//!
//! A write transaction keeps the state of each database it uses (root, key count, append hint)
//! in memory and writes the changed catalog entries at commit. Creating, dropping and renaming
//! databases write the catalog at once, so `list_dbs` sees them.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::fold::{self, KeyFold};
use crate::btree::tree::{self, AppendHint, PutMode};
use crate::btree::{Key, Spec};
use crate::catalog::{self, Entry};
use crate::db::{Db, DbConfig, DbStats};
use crate::error::{Error, ErrorFamily, PageId, Result};
use crate::storage::{Durability, FreeView, PageSink, PageSource};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// FNV-1a for the maps keyed by database name: names are short and trusted (they come from
/// the caller's handles), and these maps are probed on every operation.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }
}

pub(crate) type NameHasher = std::hash::BuildHasherDefault<Fnv>;

/// For maps keyed by an address (16-byte aligned: the low bits are dropped, the rest spread
/// by a multiply).
#[derive(Default, Clone, Copy)]
struct AddrHash(u64);

impl std::hash::Hasher for AddrHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n >> 4) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The catalog entries a read transaction looked up (its snapshot never changes).
#[derive(Debug, Default)]
struct EntryCache {
    /// By name, with a handle for each (`open_db` hands out clones of it).
    by_name: HashMap<Arc<str>, (Entry, Db), NameHasher>,
    /// By handle, for the handles whose config was found equal to the entry's: keyed by the
    /// address of the handle's name, which its clones share (a `Db` never changes). The name
    /// held in the value keeps that address from being taken by another handle's. A hit costs
    /// no hashing of the name and no config comparison.
    by_handle: HashMap<usize, (Entry, Arc<str>), std::hash::BuildHasherDefault<AddrHash>>,
}

/// Most handles [`EntryCache::by_handle`] keeps (it starts over past this).
const HANDLES_CACHED: usize = 256;

/// The first handles a read transaction used, and the first databases its queries opened by
/// name, each with its entry, read without a lock: a slot is written once and never changes,
/// so a hit is a few plain loads, where the `RwLock` of [`EntryCache`] took two atomic
/// read-modify-writes per lookup (and the cache line they write is shared by every thread
/// reading the transaction), and a query's open by name also hashed the name and cloned and
/// dropped the handle (~5% of a 0.1% range query's time, 2M keys, BP128). A slot holds a
/// handle whose config equals the entry's: it answers lookups by that handle (by the address
/// of its name, which its clones share and which the slot keeps from being reused) and by its
/// name (queries borrow the handle).
const PINNED: usize = 4;
type Pinned = std::sync::OnceLock<(Entry, Db)>;

fn handle_key(db: &Db) -> usize {
    Arc::as_ptr(&db.name).cast::<u8>() as usize
}

/// What a read transaction needs from the pager: one committed snapshot.
pub(crate) trait Snapshot: PageSource + Send + Sync + std::fmt::Debug {
    /// The catalog's root page (0 when the file holds no database yet).
    fn root(&self) -> PageId;
    fn source(&self) -> &dyn PageSource;
    /// The txn id of the commit this snapshot shows.
    fn txn_id(&self) -> u64 {
        0
    }
    /// Pages of the file as of this snapshot (0 without a file).
    fn page_count(&self) -> u64 {
        0
    }
    /// The pager's own pages and free pages as of this snapshot (for `Env::check`).
    fn pager_pages(&self) -> Result<crate::check::PagerPages> {
        Ok(crate::check::PagerPages::default())
    }
}

/// What a write transaction needs from the pager.
pub(crate) trait Writer: PageSink + Send + std::fmt::Debug {
    fn root(&self) -> PageId;
    fn set_root(&mut self, root: PageId);
    fn source(&self) -> &dyn PageSource;
    fn commit(self: Box<Self>, durability: Durability) -> Result<()>;
    fn abort(self: Box<Self>);
    /// The page count and reusable free pages, for planning a shrink (none by default: a
    /// backend without a file has nothing to give back).
    fn free_view(&self) -> FreeView {
        FreeView::default()
    }
}

fn spec_for(page_size: usize, name: &str, config: DbConfig) -> Result<Spec> {
    config
        .check_value_type()
        .and_then(|_| Spec::for_config(page_size, &config))
        .map_err(|e| match e {
            Error::InvalidArgument(what) => {
                Error::InvalidArgument(format!("database {name:?}: {what}"))
            }
            e => e,
        })
}

fn check_int_keys(db: &Db) -> Result<()> {
    match db.spec.key_type {
        crate::btree::KeyType::U32 | crate::btree::KeyType::U64 => Ok(()),
        kt => Err(Error::InvalidArgument(format!(
            "key aggregates need integer keys, database {:?} has {kt:?}",
            db.name()
        ))),
    }
}

/// A key as error messages show it: numbers as they are, strings quoted, other bytes in hex;
/// long keys cut after 64 bytes.
pub(crate) fn key_text(key: &Key<'_>) -> String {
    match key {
        Key::Bytes(b) if b.len() > 64 => {
            let head = b.get(..64).unwrap_or(b);
            format!("{} (first 64 of {} bytes)", Key::Bytes(head), b.len())
        }
        k => k.to_string(),
    }
}

/// Names the database and the key in the errors of a key operation: the tree's `KeyExists`
/// becomes `DuplicateKey`; invalid keys and records say which key of which database.
#[cold]
#[inline(never)]
pub(crate) fn key_error(db: &Db, key: &Key<'_>, e: Error) -> Error {
    use crate::btree::KeyType as KT;
    match e {
        Error::KeyExists => Error::DuplicateKey {
            db: db.name.to_string(),
            key: key_text(key),
        },
        Error::InvalidKey(what) => {
            let fits = matches!(
                (db.spec.key_type, key),
                (KT::U32, Key::U32(_))
                    | (KT::U64, Key::U32(_) | Key::U64(_))
                    | (KT::Binary(_) | KT::VarBinary, Key::Bytes(_))
            );
            let kind = match key {
                Key::U32(_) => "a u32",
                Key::U64(_) => "a u64",
                Key::Bytes(_) => "a byte-string",
            };
            Error::InvalidKey(if fits {
                format!("key {} of database {:?}: {what}", key_text(key), db.name())
            } else {
                format!(
                    "key {} is {kind} key, database {:?} has {} keys",
                    key_text(key),
                    db.name(),
                    crate::db::key_type_name(db.spec.key_type)
                )
            })
        }
        Error::InvalidRecord(what) => Error::InvalidRecord(format!(
            "key {} of database {:?}: {what}",
            key_text(key),
            db.name()
        )),
        e => e,
    }
}

/// What the query executor reads: a snapshot ([`ReadTxn`]) or the write transaction's state
/// as of now ([`WriteTxn::query`]).
pub(crate) trait Reader {
    /// The pages of the state read.
    fn pages(&self) -> &dyn PageSource;
    /// The handle and catalog entry of a database.
    fn open_db_entry(&self, name: &str) -> Result<(Cow<'_, Db>, Entry)>;
    /// Every database with its configuration, in name order.
    fn list_dbs(&self) -> Result<Vec<(String, DbConfig)>>;
    /// The root page of `db`'s tree in the state read (`pages` holds it).
    fn root(&self, db: &Db) -> Result<PageId>;
}

impl Reader for ReadTxn {
    fn pages(&self) -> &dyn PageSource {
        self.src()
    }
    fn open_db_entry(&self, name: &str) -> Result<(Cow<'_, Db>, Entry)> {
        self.named_entry(name)
    }
    fn list_dbs(&self) -> Result<Vec<(String, DbConfig)>> {
        ReadTxn::list_dbs(self)
    }
    fn root(&self, db: &Db) -> Result<PageId> {
        Ok(self.entry(db)?.root)
    }
}

impl Reader for WriteTxn {
    fn pages(&self) -> &dyn PageSource {
        match self.w() {
            Ok(w) => w.source(),
            // Unreachable: `WriteTxn::query` checks the writer first.
            Err(_) => &NoPages,
        }
    }
    fn open_db_entry(&self, name: &str) -> Result<(Cow<'_, Db>, Entry)> {
        let e = self
            .lookup(name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        Ok((
            Cow::Owned(open_handle(self.page_size()?, name, &e, None)?),
            e,
        ))
    }
    fn list_dbs(&self) -> Result<Vec<(String, DbConfig)>> {
        WriteTxn::list_dbs(self)
    }
    fn root(&self, db: &Db) -> Result<PageId> {
        Ok(self.entry_ref(db)?.root)
    }
}

/// The pages of a failed write transaction: none (every read is `PreviousIo`).
#[derive(Debug)]
struct NoPages;

impl PageSource for NoPages {
    fn page_size(&self) -> usize {
        crate::storage::DEFAULT_PAGE_SIZE
    }
    fn page(&self, _: PageId) -> Result<crate::storage::Page> {
        Err(Error::PreviousIo)
    }
}

/// Read access shared by [`ReadTxn`] and [`WriteTxn`], for the typed handles
/// ([`crate::Table`]): `table.get(&txn, key)` works in both. Sealed: implemented by the two
/// transaction types only.
pub trait ReadAccess: sealed::Sealed {
    /// The pages, root and key count of `db` in this transaction.
    #[doc(hidden)]
    fn db_view(&self, db: &Db) -> Result<(&dyn PageSource, PageId, u64)>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ReadTxn {}
    impl Sealed for super::WriteTxn {}
}

impl ReadAccess for ReadTxn {
    fn db_view(&self, db: &Db) -> Result<(&dyn PageSource, PageId, u64)> {
        let e = self.entry(db)?;
        Ok((self.src(), e.root, e.count))
    }
}

impl ReadAccess for WriteTxn {
    fn db_view(&self, db: &Db) -> Result<(&dyn PageSource, PageId, u64)> {
        let e = self.entry_ref(db)?;
        Ok((self.w()?.source(), e.root, e.count))
    }
}

fn mismatch(db: &Db, stored: DbConfig) -> Error {
    Error::ConfigMismatch {
        db: db.name.to_string(),
        what: stored.differences(&db.config()),
    }
}

fn open_handle(page_size: usize, name: &str, e: &Entry, want: Option<DbConfig>) -> Result<Db> {
    if let Some(w) = want {
        // Compare effective configurations (block size 0 means the codec's default).
        let w =
            Spec::for_config(page_size, &w).map_or(w, |s| s.config().with_value_type(w.value_type));
        if w != e.config {
            return Err(Error::ConfigMismatch {
                db: name.to_string(),
                what: e.config.differences(&w),
            });
        }
    }
    // A stored configuration that does not validate is damage to the file, not a bad argument.
    let spec = spec_for(page_size, name, e.config).map_err(|e| match e {
        Error::InvalidArgument(what) => {
            Error::BadFormat(format!("stored configuration is invalid: {what}"))
        }
        e => e,
    })?;
    // Databases are stored with their effective configuration (`create_db`); another form is
    // damage too (the handle's configuration would differ from the stored one at every use).
    if spec.config().with_value_type(e.config.value_type) != e.config {
        return Err(Error::BadFormat(format!(
            "stored configuration of database {name:?} is not in its effective form: {:?}",
            e.config
        )));
    }
    Ok(Db {
        name: name.into(),
        spec,
        value_type: e.config.value_type,
    })
}

/// Reads shared by both transaction kinds.
pub(crate) fn stats(src: &dyn PageSource, spec: &Spec, e: &Entry) -> Result<DbStats> {
    let mut s = DbStats {
        key_count: e.count,
        ..DbStats::default()
    };
    let ps = spec.page_size as u64;
    tree::walk(
        src,
        spec,
        e.root,
        &mut |_, depth, page, l| {
            s.height = s.height.max(depth + 1);
            if l.leaf {
                s.leaf_pages += 1;
            } else {
                s.branch_pages += 1;
            }
            let used = l.used(page)? as u64;
            s.used_bytes += used;
            let kb = l
                .keys
                .used(l.kregion(page), l.count)
                .map_err(|f| l.err(f))? as u64;
            s.key_bytes += kb;
            if l.leaf {
                s.leaf_key_bytes += kb;
                s.leaf_record_bytes += used - kb;
                l.keys
                    .codec_blocks(l.kregion(page), &mut s.key_blocks)
                    .map_err(|f| l.err(f))?;
                l.recs
                    .chunk_layouts(l.rregion(page), l.count, &mut s.record_chunks)
                    .map_err(|f| l.err(f))?;
            } else {
                s.branch_keys += l.count as u64;
            }
            Ok(())
        },
        &mut |_| {
            s.overflow_pages += 1;
            Ok(())
        },
    )?;
    s.bytes = (s.leaf_pages + s.branch_pages + s.overflow_pages) * ps;
    Ok(s)
}

/// A read-only snapshot of the environment.
#[derive(Debug)]
pub struct ReadTxn {
    pages: Box<dyn Snapshot>,
    /// Catalog entries looked up so far.
    cache: RwLock<EntryCache>,
    /// The first handles and names, with their entries, lock-free (see [`PINNED`]).
    pinned: [Pinned; PINNED],
}

impl ReadTxn {
    pub(crate) fn new(pages: Box<dyn Snapshot>) -> Self {
        ReadTxn {
            pages,
            cache: RwLock::new(EntryCache::default()),
            pinned: Default::default(),
        }
    }

    pub(crate) fn src(&self) -> &dyn PageSource {
        self.pages.source()
    }

    #[inline]
    pub(crate) fn entry(&self, db: &Db) -> Result<Entry> {
        let key = handle_key(db);
        match self.pinned_where(|p| handle_key(p) == key) {
            Some((e, _)) => Ok(*e),
            None => self.entry_slow(db, key),
        }
    }

    /// The pinned slot whose handle `hit` picks (the slots fill in order, so the first empty
    /// one ends the search).
    #[inline(always)]
    fn pinned_where(&self, hit: impl Fn(&Db) -> bool) -> Option<&(Entry, Db)> {
        for slot in &self.pinned {
            match slot.get() {
                Some(p) if hit(&p.1) => return Some(p),
                Some(_) => {}
                None => break,
            }
        }
        None
    }

    /// Pins `db` (its config equal to `e`'s) in the first free slot, if any is left.
    fn pin(&self, e: Entry, db: &Db) {
        if let Some(slot) = self.pinned.iter().find(|s| s.get().is_none()) {
            // Lost to another thread's handle: that one is pinned, this one stays cached.
            let _ = slot.set((e, db.clone()));
        }
    }

    #[inline(never)]
    fn entry_slow(&self, db: &Db, key: usize) -> Result<Entry> {
        if let Some(e) = self
            .cache
            .read()
            .ok()
            .and_then(|c| c.by_handle.get(&key).map(|v| v.0))
        {
            return Ok(e);
        }
        // A handle not seen yet: its config is compared with the entry's, so that a handle of
        // another database of the same name (from a later snapshot, after the database was
        // dropped and created again) is refused.
        let cached = self
            .cache
            .read()
            .ok()
            .and_then(|c| c.by_name.get(&db.name).map(|v| v.0));
        let e = match cached {
            Some(e) => e,
            None => catalog::get(self.src(), self.pages.root(), &db.name)?
                .ok_or_else(|| Error::DbNotFound(db.name.to_string()))?,
        };
        if e.config != db.config() {
            return Err(mismatch(db, e.config));
        }
        self.pin(e, db);
        if let Ok(mut c) = self.cache.write() {
            if c.by_handle.len() >= HANDLES_CACHED {
                c.by_handle.clear();
            }
            c.by_handle.insert(key, (e, db.name.clone()));
            c.by_name
                .entry(db.name.clone())
                .or_insert_with(|| (e, db.clone()));
        }
        Ok(e)
    }

    /// Opens a database, whatever its configuration.
    pub fn open_db(&self, name: &str) -> Result<Db> {
        Ok(self.open_db_entry(name)?.0)
    }

    /// [`ReadTxn::open_db`] with the database's catalog entry, from one lookup. The snapshot
    /// never changes: an entry looked up before is still the entry, and its handle is reused
    /// (queries open their database by name every time).
    pub(crate) fn open_db_entry(&self, name: &str) -> Result<(Db, Entry)> {
        self.named_entry(name).map(|(db, e)| (db.into_owned(), e))
    }

    /// [`ReadTxn::open_db_entry`] lending the handle when its name is pinned (a query's path:
    /// no lock, no hash, no reference count).
    #[inline]
    pub(crate) fn named_entry(&self, name: &str) -> Result<(Cow<'_, Db>, Entry)> {
        if let Some((e, db)) = self.pinned_where(|p| &*p.name == name) {
            return Ok((Cow::Borrowed(db), *e));
        }
        let (db, e) = self.open_db_entry_slow(name)?;
        self.pin(e, &db);
        Ok((Cow::Owned(db), e))
    }

    #[inline(never)]
    fn open_db_entry_slow(&self, name: &str) -> Result<(Db, Entry)> {
        if let Some((e, db)) = self
            .cache
            .read()
            .ok()
            .and_then(|c| c.by_name.get(name).cloned())
        {
            return Ok((db, e));
        }
        let e = catalog::get(self.src(), self.pages.root(), name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        let db = open_handle(self.src().page_size(), name, &e, None)?;
        if let Ok(mut c) = self.cache.write() {
            c.by_name.insert(db.name.clone(), (e, db.clone()));
        }
        Ok((db, e))
    }

    /// Opens a database, checking its stored configuration (`Error::ConfigMismatch`).
    pub fn open_db_with(&self, name: &str, config: DbConfig) -> Result<Db> {
        let e = catalog::get(self.src(), self.pages.root(), name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        open_handle(self.src().page_size(), name, &e, Some(config))
    }

    /// Every database with its configuration, in name order.
    pub fn list_dbs(&self) -> Result<Vec<(String, DbConfig)>> {
        Ok(catalog::list(self.src(), self.pages.root())?
            .into_iter()
            .map(|(n, e)| (n, e.config))
            .collect())
    }

    /// The value of `key` (empty for key-only databases), or `None`. A copy: the typed
    /// handles ([`crate::Table::get_ref`]) read values in place.
    pub fn get<'k>(&self, db: &Db, key: impl Into<Key<'k>>) -> Result<Option<Vec<u8>>> {
        let e = self.entry(db)?;
        let key = key.into();
        tree::get(self.src(), &db.spec, e.root, &key).map_err(|e| key_error(db, &key, e))
    }

    /// COUNT, SUM, MIN and MAX of the integer keys in `lo..=hi`, computed inside the tree block
    /// by block (see [`KeyFold`]); with `sum == false` blocks wholly in the range are answered
    /// from the block index without decoding.
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let ids = w.open_table(Table::<u32, ()>::def("ids"))?;
    /// for id in (0..10_000u32).map(|i| i * 3) {
    ///     ids.append(&mut w, id, ())?;
    /// }
    /// w.commit()?;
    /// let r = env.begin_read()?;
    /// let f = r.fold_keys(ids.db(), 100, 200, true)?; // keys 102, 105, .., 198
    /// assert_eq!((f.count, f.sum, f.min, f.max), (33, 4950, Some(102), Some(198)));
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn fold_keys(&self, db: &Db, lo: u64, hi: u64, sum: bool) -> Result<KeyFold> {
        let e = self.entry(db)?;
        check_int_keys(db)?;
        fold::fold_keys(self.src(), &db.spec, e.root, fold::FoldSpec { lo, hi, sum })
    }

    /// Whether `key` is present.
    pub fn contains<'k>(&self, db: &Db, key: impl Into<Key<'k>>) -> Result<bool> {
        let e = self.entry(db)?;
        let key = key.into();
        tree::contains(self.src(), &db.spec, e.root, &key).map_err(|e| key_error(db, &key, e))
    }

    /// Calls `visit(leaf, intervals)` for every leaf of an integer-key database that overlaps
    /// one of `ivs` (sorted, disjoint, inclusive `[lo, hi]` pairs), in key order (descending
    /// with `rev`), with the intervals that overlap it, until `visit` returns false. Subtrees
    /// outside every interval are not read. The block-by-block window of [`crate::scan`], for
    /// front ends that decode rows in bulk (the DataFusion table provider).
    pub fn scan_leaves(
        &self,
        db: &Db,
        ivs: &[(u64, u64)],
        rev: bool,
        visit: &mut crate::scan::LeafVisitor<'_>,
    ) -> Result<()> {
        let e = self.entry(db)?;
        if !matches!(db.spec.key_type, crate::KeyType::U32 | crate::KeyType::U64) {
            return Err(Error::InvalidArgument(format!(
                "block scans need integer keys, database {:?} has {:?}",
                db.name(),
                db.spec.key_type
            )));
        }
        if let Some(w) = ivs
            .iter()
            .zip(ivs.iter().skip(1).map(Some).chain([None]))
            .find(|(a, b)| a.0 > a.1 || b.is_some_and(|b| b.0 <= a.1))
        {
            return Err(Error::InvalidArgument(format!(
                "scan intervals must be sorted, disjoint [lo, hi] pairs with lo <= hi; \
                 {:?} is not (database {:?})",
                w.0,
                db.name()
            )));
        }
        crate::btree::scan::leaves_overlapping(
            self.src(),
            &db.spec,
            e.root,
            ivs,
            rev,
            &mut |leaf, ivs| visit(&crate::scan::Leaf(leaf), ivs),
        )
    }

    /// Number of keys.
    pub fn len(&self, db: &Db) -> Result<u64> {
        Ok(self.entry(db)?.count)
    }

    /// Whether the database holds no key.
    pub fn is_empty(&self, db: &Db) -> Result<bool> {
        Ok(self.len(db)? == 0)
    }

    /// Statistics from a walk of the database's tree.
    pub fn stats(&self, db: &Db) -> Result<DbStats> {
        let e = self.entry(db)?;
        stats(self.src(), &db.spec, &e)
    }

    pub(crate) fn catalog_root(&self) -> PageId {
        self.pages.root()
    }

    /// The txn id of the commit this snapshot shows (0: the new file's empty state).
    pub fn txn_id(&self) -> u64 {
        self.pages.txn_id()
    }

    pub(crate) fn snapshot(&self) -> &dyn Snapshot {
        &*self.pages
    }

    pub(crate) fn pages(&self) -> &dyn PageSource {
        self.src()
    }
}

#[derive(Debug)]
struct DbState {
    entry: Entry,
    hint: Option<AppendHint>,
    dirty: bool,
    /// The name of the last handle found to have the entry's configuration: its clones share
    /// the name (a `Db` never changes), so their calls skip the comparison. Held here, the
    /// name cannot be freed and its address taken by another handle's.
    checked: Option<Arc<str>>,
}

impl DbState {
    fn new(entry: Entry) -> DbState {
        DbState {
            entry,
            hint: None,
            dirty: false,
            checked: None,
        }
    }

    /// `ConfigMismatch` unless `db`'s config is the entry's: compared once per handle.
    #[inline]
    fn check(&mut self, db: &Db) -> Result<()> {
        if self
            .checked
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &db.name))
        {
            return Ok(());
        }
        self.check_config(db)
    }

    /// [`DbState::check`] for a handle not seen yet, out of line: inlined whole, the check
    /// was a call of 23 instructions per key of a bulk load (issue 21, callgrind).
    #[cold]
    #[inline(never)]
    fn check_config(&mut self, db: &Db) -> Result<()> {
        if self.entry.config != db.config() {
            return Err(mismatch(db, self.entry.config));
        }
        self.checked = Some(db.name.clone());
        Ok(())
    }
}

/// The databases a write transaction has touched, by name, with the one used last found
/// without hashing its name: a bulk load calls [`WriteTxn::parts`] once per key, and hashing
/// and comparing the name there (with an `Arc` clone for the map's entry) was 190
/// instructions per appended key, 13% of a BP128 ascending load (issue 21, callgrind).
///
/// Invariant: `index` maps every name in `slots` to its position; `last` is a position in
/// `slots` or `slots.len()` (none).
#[derive(Debug, Default)]
struct DbStates {
    slots: Vec<(Arc<str>, DbState)>,
    index: HashMap<Arc<str>, usize, NameHasher>,
    last: usize,
}

impl DbStates {
    fn get(&self, name: &str) -> Option<&DbState> {
        let &i = self.index.get(name)?;
        self.slots.get(i).map(|(_, s)| s)
    }

    fn contains_key(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut DbState> {
        let &i = self.index.get(name)?;
        self.slots.get_mut(i).map(|(_, s)| s)
    }

    fn insert(&mut self, name: Arc<str>, state: DbState) {
        match self.index.get(&name) {
            Some(&i) => {
                if let Some(slot) = self.slots.get_mut(i) {
                    *slot = (name, state);
                }
            }
            None => {
                self.index.insert(name.clone(), self.slots.len());
                self.slots.push((name, state));
            }
        }
    }

    fn remove(&mut self, name: &str) -> Option<DbState> {
        let i = self.index.remove(name)?;
        if i >= self.slots.len() {
            return None;
        }
        let (_, s) = self.slots.swap_remove(i);
        if let Some((moved, _)) = self.slots.get(i) {
            self.index.insert(moved.clone(), i);
        }
        self.last = self.slots.len();
        Some(s)
    }

    fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &DbState)> {
        self.slots.iter().map(|(n, s)| (n, s))
    }

    /// The state of the database named `db`: the one used last when `db` shares its name's
    /// allocation (clones of a handle do), else by the name (then the handle's name is kept,
    /// so its next call is the first case); `load` gives the entry of a database not touched
    /// yet.
    fn by_handle(
        &mut self,
        db: &Arc<str>,
        load: impl FnOnce() -> Result<Entry>,
    ) -> Result<&mut DbState> {
        let hit = self
            .slots
            .get(self.last)
            .is_some_and(|(n, _)| Arc::ptr_eq(n, db));
        if !hit {
            let i = match self.index.get(&**db) {
                Some(&i) => i,
                None => {
                    let entry = load()?;
                    self.insert(db.clone(), DbState::new(entry));
                    self.slots.len() - 1
                }
            };
            if let Some(slot) = self.slots.get_mut(i) {
                slot.0 = db.clone();
            }
            self.last = i;
        }
        match self.slots.get_mut(self.last) {
            Some((_, s)) => Ok(s),
            None => Err(Error::DbNotFound(db.to_string())),
        }
    }
}

/// The write transaction (one at a time per environment).
#[derive(Debug)]
pub struct WriteTxn {
    pages: Option<Box<dyn Writer>>,
    dbs: DbStates,
    durability: Durability,
    /// Set when an operation failed half-way (I/O error, full disk, corruption): the
    /// transaction can only be aborted, and every later call reports this failure.
    failed: Option<Failure>,
}

/// Why a write transaction failed (kept to report it again: `Error` is not `Clone`).
#[derive(Clone, Debug)]
enum Failure {
    /// A page was damaged: later calls say `Corrupted` naming the same page.
    Corrupted { page: PageId, what: String },
    /// An I/O error or a full disk: later calls say `PreviousIo`.
    Io,
}

impl Failure {
    fn error(&self) -> Error {
        match self {
            Failure::Corrupted { page, what } => Error::Corrupted {
                page: *page,
                what: format!("the transaction failed earlier on this page: {what}"),
            },
            Failure::Io => Error::PreviousIo,
        }
    }
}

impl WriteTxn {
    pub(crate) fn new(pages: Box<dyn Writer>, durability: Durability) -> Self {
        WriteTxn {
            pages: Some(pages),
            dbs: DbStates::default(),
            durability,
            failed: None,
        }
    }

    pub(crate) fn w(&self) -> Result<&dyn Writer> {
        if let Some(f) = &self.failed {
            return Err(f.error());
        }
        self.pages.as_deref().ok_or(Error::PreviousIo)
    }

    fn wm(&mut self) -> Result<&mut Box<dyn Writer>> {
        if let Some(f) = &self.failed {
            return Err(f.error());
        }
        self.pages.as_mut().ok_or(Error::PreviousIo)
    }

    /// Records whether an error leaves the transaction unusable.
    fn track<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            // Errors about what the caller asked for leave the pages as they were; a storage
            // error may have left them half-written.
            match e {
                _ if e.family() != ErrorFamily::Storage => {}
                Error::Corrupted { page, what } => {
                    self.failed.get_or_insert(Failure::Corrupted {
                        page: *page,
                        what: what.clone(),
                    });
                }
                _ => {
                    self.failed.get_or_insert(Failure::Io);
                }
            }
        }
        r
    }

    /// Durability of this transaction's commit (the environment's default unless changed).
    pub fn set_durability(&mut self, d: Durability) {
        self.durability = d;
    }

    pub(crate) fn page_size(&self) -> Result<usize> {
        Ok(self.w()?.page_size())
    }

    /// The catalog entry of `name`, as of this transaction.
    fn lookup(&self, name: &str) -> Result<Option<Entry>> {
        if let Some(s) = self.dbs.get(name) {
            return Ok(Some(s.entry));
        }
        let w = self.w()?;
        catalog::get(w.source(), w.root(), name)
    }

    fn state(&mut self, db: &Db) -> Result<&mut DbState> {
        if !self.dbs.contains_key(&db.name) {
            let e = self
                .lookup(&db.name)?
                .ok_or_else(|| Error::DbNotFound(db.name.to_string()))?;
            self.dbs.insert(db.name.clone(), DbState::new(e));
        }
        let s = self
            .dbs
            .get_mut(&db.name)
            .ok_or_else(|| Error::DbNotFound(db.name.to_string()))?;
        s.check(db)?;
        Ok(s)
    }

    pub(crate) fn entry(&mut self, db: &Db) -> Result<Entry> {
        Ok(self.state(db)?.entry)
    }

    /// The entry of `db` as of now, for reads through `&self` (not cached in `dbs`).
    fn entry_ref(&self, db: &Db) -> Result<Entry> {
        let e = self
            .lookup(&db.name)?
            .ok_or_else(|| Error::DbNotFound(db.name.to_string()))?;
        if e.config != db.config() {
            return Err(mismatch(db, e.config));
        }
        Ok(e)
    }

    /// Creates a database (`Error::DbExists` if the name is taken).
    pub fn create_db(&mut self, name: &str, config: DbConfig) -> Result<Db> {
        let ps = self.page_size()?;
        catalog::check_name(ps, name)?;
        let spec = spec_for(ps, name, config)?;
        let config = spec.config().with_value_type(config.value_type);
        if self.lookup(name)?.is_some() {
            return Err(Error::DbExists(name.to_string()));
        }
        let entry = Entry {
            config,
            root: 0,
            count: 0,
        };
        let r = self.write_entry(name, &entry);
        self.track(r)?;
        self.dbs.insert(name.into(), DbState::new(entry));
        Ok(Db {
            name: name.into(),
            spec,
            value_type: config.value_type,
        })
    }

    /// Opens a database, creating it with `config` when absent; checks the configuration.
    pub fn open_or_create_db(&mut self, name: &str, config: DbConfig) -> Result<Db> {
        match self.open_db_with(name, config) {
            Err(Error::DbNotFound(_)) => self.create_db(name, config),
            r => r,
        }
    }

    /// Packs the leaves this transaction wrote in database `name` ([`tree::pack_dirty`]).
    fn pack(&mut self, name: &str, e: &mut Entry) -> Result<()> {
        let spec = spec_for(self.page_size()?, name, e.config)?;
        tree::pack_dirty(&mut **self.wm()?, &spec, &mut e.root)
    }

    fn write_entry(&mut self, name: &str, e: &Entry) -> Result<()> {
        let w = self.wm()?;
        let mut root = w.root();
        catalog::put(&mut **w, &mut root, name, e)?;
        w.set_root(root);
        Ok(())
    }

    fn remove_entry(&mut self, name: &str) -> Result<()> {
        let w = self.wm()?;
        let mut root = w.root();
        catalog::remove(&mut **w, &mut root, name)?;
        w.set_root(root);
        Ok(())
    }

    /// Opens a database, whatever its configuration.
    pub fn open_db(&mut self, name: &str) -> Result<Db> {
        let ps = self.page_size()?;
        let e = self
            .lookup(name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        open_handle(ps, name, &e, None)
    }

    /// Opens a database, checking its stored configuration (`Error::ConfigMismatch`).
    pub fn open_db_with(&mut self, name: &str, config: DbConfig) -> Result<Db> {
        let ps = self.page_size()?;
        let e = self
            .lookup(name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        open_handle(ps, name, &e, Some(config))
    }

    /// Every database with its configuration, in name order.
    pub fn list_dbs(&self) -> Result<Vec<(String, DbConfig)>> {
        let w = self.w()?;
        Ok(catalog::list(w.source(), w.root())?
            .into_iter()
            .map(|(n, e)| (n, e.config))
            .collect())
    }

    /// Drops a database and frees all its pages.
    ///
    /// ```
    /// # use tersedb::{DbConfig, Env, EnvOptions, Error, KeyType, RecordType};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// w.create_db("scratch", DbConfig::new(KeyType::U32, RecordType::None))?;
    /// w.drop_db("scratch")?;
    /// assert!(matches!(w.open_db("scratch"), Err(Error::DbNotFound(_))));
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn drop_db(&mut self, name: &str) -> Result<()> {
        let e = self
            .lookup(name)?
            .ok_or_else(|| Error::DbNotFound(name.to_string()))?;
        let r = (|| {
            let ps = self.page_size()?;
            let spec = spec_for(ps, name, e.config)?;
            tree::drop_tree(&mut **self.wm()?, &spec, e.root)?;
            self.remove_entry(name)
        })();
        self.dbs.remove(name);
        self.track(r)
    }

    /// Renames a database (`Error::DbExists` if `to` is taken). Handles on the old name stop
    /// working.
    pub fn rename_db(&mut self, from: &str, to: &str) -> Result<()> {
        catalog::check_name(self.page_size()?, to)?;
        let e = self
            .lookup(from)?
            .ok_or_else(|| Error::DbNotFound(from.to_string()))?;
        if self.lookup(to)?.is_some() {
            return Err(Error::DbExists(to.to_string()));
        }
        let hint = self.dbs.remove(from).and_then(|s| s.hint);
        let r = self
            .remove_entry(from)
            .and_then(|_| self.write_entry(to, &e));
        self.track(r)?;
        self.dbs.insert(
            to.into(),
            DbState {
                hint,
                ..DbState::new(e)
            },
        );
        Ok(())
    }

    /// The writer and the state of `db`. The name is hashed only when another database was
    /// used last ([`DbStates::by_handle`]), and the configuration compared once per handle
    /// (see [`DbState::checked`]): two lookups and the comparison took a quarter of an
    /// uncompressed insert's instructions (callgrind, `tersedb bench`).
    fn parts(&mut self, db: &Db) -> Result<(&mut Box<dyn Writer>, &mut DbState)> {
        if let Some(f) = &self.failed {
            return Err(f.error());
        }
        let Some(pages) = self.pages.as_mut() else {
            return Err(Error::PreviousIo);
        };
        let s = self.dbs.by_handle(&db.name, || {
            catalog::get(pages.source(), pages.root(), &db.name)?
                .ok_or_else(|| Error::DbNotFound(db.name.to_string()))
        })?;
        s.check(db)?;
        Ok((pages, s))
    }

    fn put_mode(&mut self, db: &Db, key: Key<'_>, value: &[u8], mode: PutMode) -> Result<bool> {
        self.put_keeping(db, key, value, mode, None)
    }

    /// `put_mode`, handing an overwritten value to `old` when asked (see `tree::put_keeping`).
    fn put_keeping(
        &mut self,
        db: &Db,
        key: Key<'_>,
        value: &[u8],
        mode: PutMode,
        old: Option<&mut Option<Vec<u8>>>,
    ) -> Result<bool> {
        let (pages, s) = self.parts(db)?;
        let r = tree::put_keeping(
            &mut **pages,
            &db.spec,
            &mut s.entry.root,
            &key,
            value,
            mode,
            &mut s.hint,
            old,
        );
        s.dirty = true;
        if let Ok(true) = r {
            s.entry.count += 1;
        }
        let r = r.map_err(|e| key_error(db, &key, e));
        self.track(r)
    }

    /// Inserts a new key; [`Error::DuplicateKey`] (naming the key and the database) when it is
    /// present. The same as [`WriteTxn::insert`].
    pub fn insert_new<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>, value: &[u8]) -> Result<()> {
        self.put_mode(db, key.into(), value, PutMode::Insert)
            .map(|_| ())
    }

    /// Inserts a new key; [`Error::DuplicateKey`] when it is present (see
    /// [`WriteTxn::insert_new`], [`WriteTxn::put`] and [`WriteTxn::upsert`]).
    pub fn insert<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>, value: &[u8]) -> Result<()> {
        self.insert_new(db, key, value)
    }

    /// Inserts or overwrites; returns the value it replaced (`None` for a new key).
    ///
    /// One descent, like [`WriteTxn::upsert`]: the old value is read in the leaf before it is
    /// overwritten. [`WriteTxn::upsert`] says only whether the key was new.
    pub fn put<'k>(
        &mut self,
        db: &Db,
        key: impl Into<Key<'k>>,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let mut old = None;
        self.put_keeping(db, key.into(), value, PutMode::Upsert, Some(&mut old))?;
        Ok(old)
    }

    /// Inserts or overwrites; returns true when the key is new.
    pub fn upsert<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>, value: &[u8]) -> Result<bool> {
        self.put_mode(db, key.into(), value, PutMode::Upsert)
    }

    /// Appends a key greater than every key in the database (`Error::InvalidKey` otherwise).
    /// Bulk loads of ascending keys take a fast path that skips the descent.
    pub fn append<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>, value: &[u8]) -> Result<()> {
        self.put_mode(db, key.into(), value, PutMode::Append)
            .map(|_| ())
    }

    /// Removes a key; false when it was absent. [`WriteTxn::remove`] also returns the value.
    pub fn erase<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>) -> Result<bool> {
        self.erase_keeping(db, key.into(), None)
    }

    /// Removes a key and returns its value (`None` when it was absent, changing nothing).
    ///
    /// The value is read in the leaf as the entry is removed, so this costs what
    /// [`WriteTxn::erase`] costs, not a lookup more.
    ///
    /// ```
    /// # use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let names = w.create_db("names", DbConfig::new(KeyType::U32, RecordType::Variable))?;
    /// w.put(&names, 7u32, b"seven")?;
    /// assert_eq!(w.remove(&names, 7u32)?.as_deref(), Some(&b"seven"[..]));
    /// assert_eq!(w.remove(&names, 7u32)?, None);
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn remove<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>) -> Result<Option<Vec<u8>>> {
        let mut old = None;
        self.erase_keeping(db, key.into(), Some(&mut old))?;
        Ok(old)
    }

    /// `erase`, handing the removed value to `old` when asked (see `tree::erase_keeping`).
    fn erase_keeping(
        &mut self,
        db: &Db,
        key: Key<'_>,
        old: Option<&mut Option<Vec<u8>>>,
    ) -> Result<bool> {
        let (pages, s) = self.parts(db)?;
        let mut r = tree::erase_keeping(
            &mut **pages,
            &db.spec,
            &mut s.entry.root,
            &key,
            &mut s.hint,
            old,
        );
        if let Ok(true) = r {
            s.dirty = true;
            s.entry.count = s.entry.count.saturating_sub(1);
            if s.entry.count == 0 && s.entry.root != 0 {
                // Local balancing may leave empty nodes; an empty database owns no pages.
                r = tree::drop_tree(&mut **pages, &db.spec, s.entry.root).map(|_| true);
                s.entry.root = 0;
            }
        }
        let r = r.map_err(|e| key_error(db, &key, e));
        self.track(r)
    }

    /// The value of `key` as of now (this transaction's changes included), or `None`.
    pub fn get<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>) -> Result<Option<Vec<u8>>> {
        let e = self.entry(db)?;
        let key = key.into();
        let r = tree::get(self.w()?.source(), &db.spec, e.root, &key)
            .map_err(|e| key_error(db, &key, e));
        self.track(r)
    }

    /// Whether `key` is present as of now.
    pub fn contains<'k>(&mut self, db: &Db, key: impl Into<Key<'k>>) -> Result<bool> {
        let e = self.entry(db)?;
        let key = key.into();
        tree::contains(self.w()?.source(), &db.spec, e.root, &key)
            .map_err(|e| key_error(db, &key, e))
    }

    /// Number of keys as of now.
    pub fn len(&mut self, db: &Db) -> Result<u64> {
        Ok(self.entry(db)?.count)
    }

    /// Whether the database holds no key as of now.
    pub fn is_empty(&mut self, db: &Db) -> Result<bool> {
        Ok(self.len(db)? == 0)
    }

    /// Statistics from a walk of the database's tree as of now.
    pub fn stats(&mut self, db: &Db) -> Result<DbStats> {
        let e = self.entry(db)?;
        stats(self.w()?.source(), &db.spec, &e)
    }

    /// (source, root) for the write cursor.
    pub(crate) fn view(&mut self, db: &Db) -> Result<(&dyn PageSource, PageId)> {
        let e = self.entry(db)?;
        Ok((self.w()?.source(), e.root))
    }

    /// Writes the changed catalog entries, then commits (durably, per the durability level).
    pub fn commit(mut self) -> Result<()> {
        if let Some(f) = &self.failed {
            return Err(f.error());
        }
        let dirty: Vec<(Arc<str>, Entry)> = self
            .dbs
            .iter()
            .filter(|(_, s)| s.dirty)
            .map(|(n, s)| (n.clone(), s.entry))
            .collect();
        for (name, mut e) in dirty {
            let r = self
                .pack(&name, &mut e)
                .and_then(|_| self.write_entry(&name, &e));
            self.track(r)?;
        }
        let pages = self.pages.take().ok_or(Error::PreviousIo)?;
        pages.commit(self.durability)
    }

    /// Moves the pages at the end of the file into free pages lower down ([`tree::relocate`]
    /// for every database and the catalog), so that later commits can give the end back.
    /// The boundary is the lowest page id below which the free pages this transaction may
    /// reuse hold every live page at or above it, plus a copy of every branch and catalog page
    /// (a branch is copied when a child below it moves) and room for the free list. Returns
    /// the boundary and the pages moved; `None`, changing nothing, when the boundary would give
    /// back fewer than `min_gain` pages. Call it on a transaction that changed nothing else.
    pub(crate) fn relocate_tail(&mut self, min_gain: u64) -> Result<Option<(PageId, u64)>> {
        let r = self.relocate_tail_inner(min_gain);
        self.track(r)
    }

    fn relocate_tail_inner(&mut self, min_gain: u64) -> Result<Option<(PageId, u64)>> {
        if !self.dbs.is_empty() {
            return Err(Error::InvalidArgument(
                "a shrink runs in a transaction of its own".into(),
            ));
        }
        let ps = self.page_size()?;
        let FreeView {
            page_count,
            reusable,
            fixed,
        } = self.w()?.free_view();
        if page_count == 0 || reusable.is_empty() {
            return Ok(None);
        }
        let cat = catalog::spec(ps);
        let (root, dbs) = {
            let w = self.w()?;
            (w.root(), catalog::list(w.source(), w.root())?)
        };
        // Every live page, and the branches among them.
        let mut live: Vec<PageId> = Vec::new();
        let mut branches = 0u64;
        {
            let w = self.w()?;
            let mut visit = |spec: &Spec, root: PageId| -> Result<()> {
                let mut over = Vec::new();
                tree::walk(
                    w.source(),
                    spec,
                    root,
                    &mut |id, _, _, l| {
                        live.push(id);
                        branches += u64::from(!l.leaf);
                        Ok(())
                    },
                    &mut |id| {
                        over.push(id);
                        Ok(())
                    },
                )?;
                live.extend(over);
                Ok(())
            };
            visit(&cat, root)?;
            for (name, e) in &dbs {
                visit(&spec_for(ps, name, e.config)?, e.root)?;
            }
        }
        live.sort_unstable();
        // Catalog leaves are rewritten when a database's root moves; the free list of this
        // commit takes a page per (page_size - 32) / 16 entries of at most `page_count` free
        // pages; a margin for the rest.
        let per_list_page = ((ps - 32) / 16).max(1) as u64;
        let extra = branches + dbs.len() as u64 + page_count / per_list_page + 8;
        let floor = fixed.iter().max().map_or(2, |&f| f + 1).max(2);
        let fits = |limit: PageId| {
            let above = (live.len() - live.partition_point(|&p| p < limit)) as u64;
            let below = reusable.partition_point(|&p| p < limit) as u64;
            below >= above + extra
        };
        if !fits(page_count) {
            return Ok(None);
        }
        // `fits` turns true once and stays true as the boundary rises: search the lowest.
        let (mut lo, mut hi) = (floor, page_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let limit = lo;
        if page_count - limit < min_gain.max(1) {
            return Ok(None);
        }
        let mut moved = 0;
        for (name, mut e) in dbs {
            let spec = spec_for(ps, &name, e.config)?;
            let before = e.root;
            moved += tree::relocate(&mut **self.wm()?, &spec, &mut e.root, limit)?;
            if e.root != before {
                self.write_entry(&name, &e)?;
            }
        }
        let w = self.wm()?;
        let mut root = w.root();
        moved += tree::relocate(&mut **w, &cat, &mut root, limit)?;
        w.set_root(root);
        Ok(Some((limit, moved)))
    }

    /// Discards every change (dropping the transaction does the same).
    pub fn abort(mut self) {
        if let Some(p) = self.pages.take() {
            p.abort();
        }
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        if let Some(p) = self.pages.take() {
            p.abort();
        }
    }
}
