//! The pager: page cache, copy-on-write page allocation, the free list, and the commit protocol.
//!
//! Commit (`WritePages::commit`):
//! 1. the free list is rewritten into fresh pages (taken from reusable free pages or the file's
//!    end), every dirty page and free-list page is sealed with its checksum and written;
//! 2. sync (Durability::Immediate);
//! 3. the new meta is written into slot `txn id % 2`, the slot the current meta is *not* in;
//! 4. sync (Durability::Immediate).
//!
//! No page of the last committed state is ever overwritten, so a crash at any point leaves that
//! state or the new one. A failed write or sync poisons the pager: further writes return
//! `Error::PreviousIo` until the file is reopened.
//!
//! Free list page (little-endian):
//! ```text
//!   0..8    checksum
//!   8       kind = 2 (FreeList)
//!   9..16   zero
//!   16..24  next free-list page id (0 = last)
//!   24..28  entry count n
//!   28..32  zero
//!   32..    n entries of 16 bytes: page id u64, id of the txn that freed it u64
//! ```
//! A page freed by txn `T` was part of the snapshots before `T`; it is reused only when every
//! live reader's snapshot is at least `T`, and only when `T` is older than the last commit (so
//! the two states the meta pages describe never depend on a reused page), or `T` is the last
//! commit and this process synced its meta (Durability::Immediate): then a crash can only fall
//! back to that commit, whose pages stay intact, so the file holds two trees, not three, under
//! writes that rewrite most pages. Free pages at the end of the file that no state needs are
//! dropped at commit and the file is shortened after the meta is written.
//!
//! Pages read from the file are untrusted: every access to their bytes is checked.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::meta::{self, Meta};
use super::readers::{ReaderScan, ReaderSlot};
use super::{
    Durability, Page, PageBuf, PageKind, PageRef, PageSink, PageSource, Storage, PAGE_KIND_OFFSET,
};
use crate::error::{Error, PageId, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// How the pager is opened.
#[derive(Clone, Debug)]
pub struct PagerOptions {
    /// Page size of a new file (an existing file keeps its own).
    pub page_size: usize,
    /// Budget of the clean-page cache in bytes.
    pub cache_bytes: usize,
    /// Refuse write transactions.
    pub read_only: bool,
    /// When the newest meta page is damaged and its copy cannot tell which commit it held, roll
    /// back to the other meta page (and, unless read-only, rewrite the damaged one) instead of
    /// failing with `Corrupted`. The newest commit may be lost: only on request.
    pub recover: bool,
}

impl Default for PagerOptions {
    fn default() -> Self {
        PagerOptions {
            page_size: super::DEFAULT_PAGE_SIZE,
            cache_bytes: 256 << 20,
            read_only: false,
            recover: false,
        }
    }
}

/// The pages of a write transaction as a shrink plans them: the file's page count, the free
/// pages the transaction may reuse (ascending), and the pages the pager keeps in place (the
/// meta copies), which a shrink cannot move.
#[derive(Clone, Debug, Default)]
pub struct FreeView {
    pub page_count: u64,
    pub reusable: Vec<PageId>,
    pub fixed: Vec<PageId>,
}

/// A free page and the txn that freed it (0: never part of a committed state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeEntry {
    pub page: PageId,
    pub freed_by: u64,
}

/// Hasher for page ids: one multiply and a fold of the high half (Fibonacci hashing). Page ids
/// are our own dense integers, never attacker-chosen keys, so SipHash's flooding resistance buys
/// nothing here; it measured about 5% of an in-memory lookup or insert (three map lookups per
/// level: cache, dirty pages, freed pages).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 32)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).rotate_left(5);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

type IdBuild = std::hash::BuildHasherDefault<IdHasher>;
type IdMap<V> = HashMap<PageId, V, IdBuild>;
type IdSet = HashSet<PageId, IdBuild>;

const FREE_HEADER: usize = 32;
const FREE_ENTRY: usize = 16;

#[derive(Clone, Debug)]
struct Committed {
    meta: Meta,
    free: Arc<Vec<FreeEntry>>,
    free_pages: Arc<Vec<PageId>>,
    /// Whether this state's meta page was synced by this process (Durability::Immediate).
    /// Only then may the next txn reuse the pages this state freed: the state before it is
    /// no longer what open falls back to after a crash.
    synced: bool,
    /// Whether `free` and `free_pages` were loaded (a reader of another process's commits
    /// loads them only for `check`).
    free_loaded: bool,
}

/// How a pager shares its file with other processes (see `storage::readers`).
#[derive(Debug, Default)]
pub enum Sharing {
    /// Nobody else (memory, tests, or a reader holding a shared lock on the data file).
    #[default]
    Alone,
    /// The writer: consults the reader table before reusing pages.
    Writer(ReaderScan),
    /// A read-only environment beside a possible writer: publishes its oldest snapshot in its
    /// slot and reads the newest commit from the meta pages at each `begin_read`.
    Reader(ReaderSlot),
}

/// Clean pages as they are on disk, within a byte budget.
#[derive(Debug)]
struct Cache {
    map: Mutex<IdMap<Page>>,
    max_pages: usize,
}

impl Cache {
    fn lock(&self) -> MutexGuard<'_, IdMap<Page>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn get(&self, id: PageId) -> Option<Page> {
        self.lock().get(&id).cloned()
    }
    fn clear(&self) {
        self.lock().clear();
    }
    fn put(&self, id: PageId, page: Page) {
        let mut m = self.lock();
        if m.len() >= self.max_pages {
            // Evict about an eighth, arbitrary entries: amortised O(1) per insert.
            let mut drop = m.len() / 8 + 1;
            m.retain(|_, _| {
                if drop > 0 {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
        if self.max_pages > 0 {
            m.insert(id, page);
        }
    }
}

/// Shared state of one open file. Readers and the writer hold it through `Arc`.
#[derive(Debug)]
pub struct Pager {
    storage: Box<dyn Storage>,
    page_size: usize,
    read_only: bool,
    committed: Mutex<Committed>,
    /// Live read snapshots: txn id -> count.
    readers: Mutex<BTreeMap<u64, usize>>,
    writer_active: AtomicBool,
    /// Signalled when the write transaction ends (for `begin_write_wait`).
    writer_done: (Mutex<()>, Condvar),
    poisoned: AtomicBool,
    cache: Cache,
    /// What open found wrong with the meta pages and did about it.
    open_notes: Vec<String>,
    recover: bool,
    sharing: Mutex<Sharing>,
    /// `sharing` is `Reader` (read without taking the mutex on the read path).
    shared_reader: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn io_read_err(id: PageId, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::Corrupted {
            page: id,
            what: "page lies beyond the end of the file".into(),
        }
    } else {
        Error::Io(e)
    }
}

impl Pager {
    /// Creates a new file on `storage`, which must be empty.
    pub fn create(storage: Box<dyn Storage>, opts: &PagerOptions) -> Result<Arc<Pager>> {
        if opts.read_only {
            return Err(Error::ReadOnly);
        }
        if !meta::valid_page_size(opts.page_size) {
            return Err(Error::InvalidArgument(format!(
                "page size {} is not a power of two in {}..={}",
                opts.page_size,
                super::MIN_PAGE_SIZE,
                super::MAX_PAGE_SIZE
            )));
        }
        if !storage.is_empty()? {
            return Err(Error::InvalidArgument(
                "cannot create: the file is not empty".into(),
            ));
        }
        // Pages 2 and 3 hold the copies of the meta pages.
        let m = Meta {
            page_size: opts.page_size as u32,
            page_count: 4,
            copies: [2, 3],
            ..Meta::default()
        };
        let ps = opts.page_size as u64;
        storage.write_at(0, &m.to_page(0))?;
        storage.write_at(ps, &m.to_page(1))?;
        storage.write_at(2 * ps, &m.to_copy_page(2))?;
        storage.write_at(3 * ps, &m.to_copy_page(3))?;
        storage.sync()?;
        Ok(Self::new(
            storage,
            opts,
            m,
            Vec::new(),
            Vec::new(),
            Vec::new(),
        ))
    }

    /// Opens an existing file: picks the newest commit from the meta pages and their copies
    /// (`meta::choose`), repairs damaged meta pages unless read-only, and loads the free list.
    pub fn open(storage: Box<dyn Storage>, opts: &PagerOptions) -> Result<Arc<Pager>> {
        // A read-only open may catch a meta page while a writer of another process writes it:
        // damage is believed only when it stays.
        let mut tries = if opts.read_only { 100 } else { 1 };
        let chosen = loop {
            match Self::choose_meta(storage.as_ref(), opts) {
                Err(Error::Corrupted { .. }) if tries > 1 => {
                    tries -= 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                r => break r?,
            }
        };
        let m = chosen.meta;
        let mut notes = chosen.notes;
        // Read before any repair is written: an open refused on a damaged free list (or a file
        // cut short) leaves the file as it was, recovery included.
        let free_list = if opts.read_only {
            None
        } else {
            Some(load_free_list(storage.as_ref(), &m)?)
        };
        if !opts.read_only && !chosen.repairs.is_empty() {
            // Each repair writes a page no committed state reads (a damaged meta page, or a
            // copy): a crash half-way leaves the same choice for the next open.
            for r in &chosen.repairs {
                storage.write_at(r.page * m.page_size as u64, &r.bytes)?;
            }
            storage.sync()?;
            let pages: Vec<String> = chosen.repairs.iter().map(|r| r.page.to_string()).collect();
            notes.push(format!("rewrote page(s) {}", pages.join(", ")));
        }
        let opts = PagerOptions {
            page_size: m.page_size as usize,
            ..opts.clone()
        };
        let Some((free, free_pages)) = free_list else {
            // Loaded by `check` only (a writer of another process may reuse these pages
            // before this handle registers a snapshot).
            let p = Self::new(storage, &opts, m, Vec::new(), Vec::new(), notes);
            lock(&p.committed).free_loaded = false;
            return Ok(p);
        };
        Ok(Self::new(storage, &opts, m, free, free_pages, notes))
    }

    /// The commit to open: `meta::choose` at the page size meta 0 names, then at every other.
    fn choose_meta(storage: &dyn Storage, opts: &PagerOptions) -> Result<meta::Chosen> {
        let len = storage.len()?;
        if len == 0 {
            return Err(Error::BadFormat("the file is empty".into()));
        }
        let mut head = vec![0u8; (len as usize).min(super::MIN_PAGE_SIZE)];
        storage.read_at(0, &mut head)?;
        // Try the page size meta 0 names first, then every other one: meta 0's header may be
        // the damaged part (a flipped version or page-size byte) while meta 1 is intact, and
        // meta 1's offset depends on the page size. A version mismatch counts only on a page
        // whose checksum holds (`Meta::from_page` verifies before it parses).
        let mut sizes: Vec<usize> = (9..=16).map(|s| 1usize << s).collect();
        if let Ok(ps) = Meta::peek_page_size(&head) {
            sizes.retain(|&s| s != ps);
            sizes.insert(0, ps);
        }
        let mut version_err = None;
        for ps in sizes {
            match meta::choose(storage, ps, len, opts.recover, !opts.read_only) {
                meta::Choice::Chosen(c) => return Ok(c),
                meta::Choice::Refused(e) => return Err(e),
                meta::Choice::Invalid(errs) => {
                    for e in errs {
                        if let Error::BadFormat(w) = e {
                            version_err.get_or_insert(Error::BadFormat(w));
                        }
                    }
                }
            }
        }
        Err(match version_err {
            Some(e) => e,
            None if head.get(16..24) != Some(&meta::MAGIC[..]) => {
                Error::BadFormat("not a tersedb file (no valid meta page)".into())
            }
            None => Error::Corrupted {
                page: 0,
                what: "both meta pages are invalid".into(),
            },
        })
    }

    fn new(
        storage: Box<dyn Storage>,
        opts: &PagerOptions,
        m: Meta,
        free: Vec<FreeEntry>,
        free_pages: Vec<PageId>,
        open_notes: Vec<String>,
    ) -> Arc<Pager> {
        Arc::new(Pager {
            storage,
            page_size: m.page_size as usize,
            read_only: opts.read_only,
            committed: Mutex::new(Committed {
                meta: m,
                free: Arc::new(free),
                free_pages: Arc::new(free_pages),
                synced: false,
                free_loaded: true,
            }),
            readers: Mutex::new(BTreeMap::new()),
            writer_active: AtomicBool::new(false),
            writer_done: (Mutex::new(()), Condvar::new()),
            poisoned: AtomicBool::new(false),
            cache: Cache {
                map: Mutex::new(IdMap::default()),
                max_pages: opts.cache_bytes / m.page_size as usize,
            },
            open_notes,
            recover: opts.recover,
            sharing: Mutex::new(Sharing::Alone),
            shared_reader: AtomicBool::new(false),
        })
    }

    /// Says how the file is shared with other processes (set once, right after open).
    pub fn set_sharing(&self, s: Sharing) {
        let reader = matches!(s, Sharing::Reader(_));
        *lock(&self.sharing) = s;
        self.shared_reader.store(reader, Ordering::Release);
    }

    fn release_writer(&self) {
        self.writer_active.store(false, Ordering::Release);
        drop(lock(&self.writer_done.0));
        self.writer_done.1.notify_all();
    }

    /// Publishes the oldest live snapshot in the reader slot (a reader of another process's
    /// commits).
    fn publish_oldest(&self) -> Result<()> {
        let mut sh = lock(&self.sharing);
        // Read under the slot's mutex: publications happen in the order of the map's states.
        let oldest = lock(&self.readers).keys().next().copied();
        if let Sharing::Reader(slot) = &mut *sh {
            slot.set(oldest)?;
        }
        Ok(())
    }

    /// The newest commit on disk, for a reader beside a writer of another process. A meta page
    /// caught while it is written fails its checksum: the choice is then made from its copy
    /// only when a second look agrees (the copy may be rewritten by a later commit meanwhile),
    /// and a refusal is retried for a while before it is believed.
    fn newest_on_disk(&self) -> Result<Meta> {
        let st = self.storage.as_ref();
        let ps = self.page_size;
        // Fast path: the txn fields alone say nothing newer was written. The meta page of the
        // last commit seen still names it and the other one an older commit: a newer commit
        // would have written the other page, and one caught mid-write is not complete yet. (A
        // damaged newer meta page read this way keeps the reader on the last commit it saw,
        // whose pages its snapshot protects, until the next commit.)
        let seen = lock(&self.committed).meta;
        let mut txn = [0u64; 2];
        for (slot, t) in txn.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            st.read_at(slot as u64 * ps as u64 + 32, &mut b)?;
            *t = u64::from_le_bytes(b);
        }
        let [t0, t1] = txn;
        let (mine, other) = if seen.txn_id % 2 == 0 {
            (t0, t1)
        } else {
            (t1, t0)
        };
        if mine == seen.txn_id && other < seen.txn_id {
            return Ok(seen);
        }
        for _ in 0..200 {
            let len = st.len()?;
            match meta::choose(st, ps, len, self.recover, false) {
                meta::Choice::Chosen(c) if c.from < 2 => return Ok(c.meta),
                meta::Choice::Chosen(c) => {
                    if let meta::Choice::Chosen(d) = meta::choose(st, ps, len, self.recover, false)
                    {
                        if d.meta == c.meta {
                            return Ok(c.meta);
                        }
                    }
                }
                meta::Choice::Refused(_) | meta::Choice::Invalid(_) => {}
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        match meta::choose(st, ps, st.len()?, self.recover, false) {
            meta::Choice::Chosen(c) => Ok(c.meta),
            meta::Choice::Refused(e) => Err(e),
            meta::Choice::Invalid([e, _]) => Err(e),
        }
    }

    /// `begin_read` of a reader beside a writer of another process. The commit last seen, `t0`,
    /// is published (as a pending snapshot) *before* the newest commit `T >= t0` is read: a
    /// writer that scanned the table before the publication started from a commit `B <= T`
    /// and reuses only pages freed by txns `< B`, which `T` no longer reads; every later writer
    /// sees `t0 <= T`. (LMDB publishes `T` and checks the meta again; publishing a lower bound
    /// first needs one meta read instead of two.)
    fn begin_read_shared(self: &Arc<Self>) -> Result<ReadPages> {
        let t0 = lock(&self.committed).meta.txn_id;
        *lock(&self.readers).entry(t0).or_insert(0) += 1;
        let unpend = || {
            let mut r = lock(&self.readers);
            if let Some(n) = r.get_mut(&t0) {
                *n -= 1;
                if *n == 0 {
                    r.remove(&t0);
                }
            }
        };
        let m = match self.publish_oldest().and_then(|_| self.newest_on_disk()) {
            Ok(m) => m,
            Err(e) => {
                unpend();
                let _ = self.publish_oldest();
                return Err(e);
            }
        };
        let c = {
            let mut committed = lock(&self.committed);
            if m.txn_id > committed.meta.txn_id {
                // Pages freed since may have been rewritten: forget every cached page.
                self.cache.clear();
                *committed = Committed {
                    meta: m,
                    free: Arc::new(Vec::new()),
                    free_pages: Arc::new(Vec::new()),
                    synced: false,
                    free_loaded: false,
                };
            }
            let c = committed.clone();
            *lock(&self.readers).entry(c.meta.txn_id).or_insert(0) += 1;
            c
        };
        // The published value stays at most t0 until this or another snapshot ends.
        unpend();
        Ok(ReadPages {
            pager: self.clone(),
            committed: c,
            pins: Pins::default(),
        })
    }

    /// What open found wrong with the meta pages and did about it (empty when all was well).
    pub fn open_notes(&self) -> &[String] {
        &self.open_notes
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The last committed meta.
    pub fn meta(&self) -> Meta {
        lock(&self.committed).meta
    }

    /// Whether the environment refuses writes after an I/O error.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// A snapshot of the last committed state (for a reader beside a writer of another
    /// process: the newest commit on disk).
    pub fn begin_read(self: &Arc<Self>) -> Result<ReadPages> {
        if self.shared_reader.load(Ordering::Acquire) {
            return self.begin_read_shared();
        }
        // Register under the committed lock, so no commit slips in between.
        let committed = lock(&self.committed);
        let c = committed.clone();
        *lock(&self.readers).entry(c.meta.txn_id).or_insert(0) += 1;
        drop(committed);
        Ok(ReadPages {
            pager: self.clone(),
            committed: c,
            pins: Pins::default(),
        })
    }

    /// The write transaction; `Error::WriteTxnActive` if one is live.
    pub fn begin_write(self: &Arc<Self>) -> Result<WritePages> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.is_poisoned() {
            return Err(Error::PreviousIo);
        }
        if self
            .writer_active
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::WriteTxnActive);
        }
        let c = lock(&self.committed).clone();
        let mut oldest_reader = lock(&self.readers)
            .keys()
            .next()
            .copied()
            .unwrap_or(u64::MAX);
        if let Sharing::Writer(scan) = &mut *lock(&self.sharing) {
            // Readers in other processes: read after the in-process ones, so a snapshot taken
            // meanwhile is at the newest commit (whose pages this txn does not reuse).
            match scan.oldest() {
                Ok(o) => oldest_reader = oldest_reader.min(o.unwrap_or(u64::MAX)),
                Err(e) => {
                    self.release_writer();
                    return Err(e.into());
                }
            }
        }
        let (mut reusable, pending): (Vec<FreeEntry>, Vec<FreeEntry>) =
            c.free.iter().partition(|e| {
                e.freed_by <= oldest_reader
                    && (e.freed_by < c.meta.txn_id || (c.synced && e.freed_by == c.meta.txn_id))
            });
        // Pop the lowest page ids first: keeps the file compact.
        reusable.sort_unstable_by_key(|e| std::cmp::Reverse(e.page));
        Ok(WritePages {
            pager: self.clone(),
            base: c.meta,
            old_free_pages: c.free_pages.clone(),
            root: c.meta.root,
            page_count: c.meta.page_count,
            dirty: IdMap::default(),
            reusable,
            pending,
            freed_now: IdSet::default(),
            finished: false,
        })
    }

    /// `begin_write`, waiting up to `timeout` for the write transaction of another thread to
    /// end instead of failing with `Error::WriteTxnActive`.
    pub fn begin_write_wait(self: &Arc<Self>, timeout: Duration) -> Result<WritePages> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.begin_write() {
                Err(Error::WriteTxnActive) => {}
                r => return r,
            }
            let g = lock(&self.writer_done.0);
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::WriteTxnActive);
            }
            if self.writer_active.load(Ordering::Acquire) {
                let _ = self
                    .writer_done
                    .1
                    .wait_timeout(g, deadline - now)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
    }

    /// Reads, verifies and caches committed page `id`.
    fn read_page(&self, id: PageId, page_count: u64) -> Result<Page> {
        if id < 2 || id >= page_count {
            return Err(Error::Corrupted {
                page: id,
                what: format!("page id outside the file's {page_count} pages"),
            });
        }
        if let Some(p) = self.cache.get(id) {
            return Ok(p);
        }
        let mut buf = vec![0u8; self.page_size];
        self.storage
            .read_at(id * self.page_size as u64, &mut buf)
            .map_err(|e| io_read_err(id, e))?;
        meta::verify(id, &buf)?;
        let page: Page = Page::new(buf.into());
        self.cache.put(id, page.clone());
        Ok(page)
    }
}

fn load_free_list(storage: &dyn Storage, m: &Meta) -> Result<(Vec<FreeEntry>, Vec<PageId>)> {
    let ps = m.page_size as usize;
    let mut free = Vec::new();
    let mut pages = Vec::new();
    let mut seen = HashSet::new();
    let mut next = m.free_list;
    while next != 0 {
        let id = next;
        if id < 2 || id >= m.page_count || !seen.insert(id) {
            return Err(Error::Corrupted {
                page: id,
                what: "bad free-list link".into(),
            });
        }
        let mut p = vec![0u8; ps];
        storage
            .read_at(id * ps as u64, &mut p)
            .map_err(|e| io_read_err(id, e))?;
        meta::verify(id, &p)?;
        let bad = |what: &str| Error::Corrupted {
            page: id,
            what: what.into(),
        };
        if p.get(PAGE_KIND_OFFSET) != Some(&(PageKind::FreeList as u8)) {
            return Err(bad("free-list link to a page of another kind"));
        }
        next = meta::u64_at(&p, 16).ok_or_else(|| bad("short free-list page"))?;
        let n = meta::u32_at(&p, 24).ok_or_else(|| bad("short free-list page"))? as usize;
        if n > ps.saturating_sub(FREE_HEADER) / FREE_ENTRY {
            return Err(bad("free-list entry count exceeds the page"));
        }
        let listed = p
            .get(FREE_HEADER..FREE_HEADER + n * FREE_ENTRY)
            .ok_or_else(|| bad("free-list entry count exceeds the page"))?;
        for e in listed.chunks_exact(FREE_ENTRY) {
            let (Some(page), Some(freed_by)) = (meta::u64_at(e, 0), meta::u64_at(e, 8)) else {
                return Err(bad("short free-list entry"));
            };
            if page < 2 || page >= m.page_count || freed_by > m.txn_id {
                return Err(bad("free-list entry out of range"));
            }
            free.push(FreeEntry { page, freed_by });
        }
        pages.push(id);
    }
    // Every page is listed at most once and is not also a page of the list: a page handed
    // out twice would end up in two trees.
    let mut ids: Vec<PageId> = free.iter().map(|e| e.page).collect();
    ids.sort_unstable();
    if let Some(page) = first_repeat(&ids) {
        return Err(Error::Corrupted {
            page,
            what: "the free list lists this page twice".into(),
        });
    }
    if let Some(&p) = ids.iter().find(|p| seen.contains(p)) {
        return Err(Error::Corrupted {
            page: p,
            what: "a free-list page is also listed as free".into(),
        });
    }
    // Pages past the end of the file were allocated and freed before they were ever written:
    // each is on the free list. A page count beyond that is a damaged meta page (`check` would
    // account for, and writes allocate, pages no file holds).
    let file_pages = storage.len()? / ps as u64;
    if m.page_count > file_pages
        && ids.iter().filter(|&&p| p >= file_pages).count() as u64 != m.page_count - file_pages
    {
        return Err(Error::Corrupted {
            page: m.txn_id % 2,
            what: format!(
                "page count {} beyond the file's {file_pages} pages",
                m.page_count
            ),
        });
    }
    if free.len() as u64 != m.free_count {
        return Err(Error::Corrupted {
            page: m.free_list,
            what: format!(
                "the free list holds {} entries, the meta page says {}",
                free.len(),
                m.free_count
            ),
        });
    }
    Ok((free, pages))
}

/// The first page id that appears twice in `entries` (sorted by page) or in both `entries`
/// and `out` (sorted by id).
fn first_overlap(entries: &[FreeEntry], out: &[(PageId, Page)]) -> Option<PageId> {
    let pages: Vec<PageId> = entries.iter().map(|e| e.page).collect();
    if let Some(page) = first_repeat(&pages) {
        return Some(page);
    }
    let mut written = out.iter().map(|(id, _)| *id).peekable();
    for page in pages {
        while written.next_if(|&id| id < page).is_some() {}
        if written.peek() == Some(&page) {
            return Some(page);
        }
    }
    None
}

/// The first id of sorted `ids` that appears twice.
fn first_repeat(ids: &[PageId]) -> Option<PageId> {
    ids.windows(2).find_map(|w| match w {
        [a, b] if a == b => Some(*a),
        _ => None,
    })
}

/// A read snapshot. Holding it keeps the pages it can see from being reused.
#[derive(Debug)]
pub struct ReadPages {
    pager: Arc<Pager>,
    committed: Committed,
    /// The pages this snapshot's short reads met, lent without a lock (see [`Pins`]).
    pins: Pins,
}

/// Slots of [`Pins`]: 3 KB of slots, at most 128 pages held (2 MB of 16 KB pages).
const PINS: usize = 128;

/// Page reads of a snapshot through the cache before it allocates its [`Pins`]: a transaction
/// of a lookup or a few does not pay for the slots (allocating and dropping them took ~2,400
/// instructions, more than its lookup).
const PIN_AFTER: u32 = 16;

/// The pages a snapshot's lookups met, for [`PageSource::page_ref`], in slots by page id
/// (direct-mapped, `id % PINS`). A slot is filled once and never changes while the snapshot
/// lives, and the pages a snapshot sees never change, so a page found in its slot is lent as
/// `&PageBuf` for the snapshot's lifetime: a few plain loads, where the cache costs a lock, a
/// hash probe and a reference count (four atomic read-modify-writes per page). The first page
/// to meet a slot keeps it (the root and upper branches, read by every lookup, come first); a
/// page whose slot is taken is shared from the cache as before. The slots are allocated after
/// [`PIN_AFTER`] page reads; without a page cache (`cache_bytes(0)`) nothing is pinned.
#[derive(Debug, Default)]
struct Pins {
    slots: OnceLock<Box<[PinSlot]>>,
    /// Page reads before the slots exist (a plain load and store, not a read-modify-write:
    /// threads racing on it only pin a little later).
    reads: AtomicU32,
}

/// One slot of [`Pins`]: a page and its id, once.
type PinSlot = OnceLock<(PageId, Page)>;

impl ReadPages {
    /// The catalog root of this snapshot (0 = none).
    pub fn root(&self) -> PageId {
        self.committed.meta.root
    }
    /// The txn id of the commit this snapshot shows.
    pub fn txn_id(&self) -> u64 {
        self.committed.meta.txn_id
    }
    /// The meta of this snapshot.
    pub fn meta(&self) -> Meta {
        self.committed.meta
    }
    /// Pages in the free list, and the pages holding the free list, as of this snapshot.
    pub fn free_pages(&self) -> Result<(Vec<PageId>, Vec<PageId>)> {
        if !self.committed.free_loaded {
            // A commit of another process: its free list is protected by this snapshot.
            let (free, pages) = load_free_list(self.pager.storage.as_ref(), &self.committed.meta)?;
            return Ok((free.iter().map(|e| e.page).collect(), pages));
        }
        Ok((
            self.committed.free.iter().map(|e| e.page).collect(),
            self.committed.free_pages.to_vec(),
        ))
    }
}

/// What `check` finds in the meta pages, their copies and the file length (see
/// [`ReadPages::verify_meta`]).
#[derive(Clone, Debug, Default)]
pub struct MetaCheck {
    /// Whole pages in the file.
    pub file_pages: u64,
    /// Damage: (page, what).
    pub faults: Vec<(Option<PageId>, String)>,
    /// Harmless findings (and what open found and repaired).
    pub notes: Vec<String>,
}

impl ReadPages {
    /// Re-reads both meta pages, their copies and the file length, and compares them with this
    /// snapshot. Bounded: four page reads, whatever the metas claim.
    pub fn verify_meta(&self) -> Result<MetaCheck> {
        let pager = &self.pager;
        let st = pager.storage.as_ref();
        let ps = pager.page_size;
        let m = self.committed.meta;
        let t = m.txn_id;
        let len = st.len()?;
        let mut out = MetaCheck {
            file_pages: len / ps as u64,
            notes: pager.open_notes.clone(),
            ..MetaCheck::default()
        };
        if m.page_count > out.file_pages && m.copies != [0, 0] {
            out.faults.push((
                None,
                format!(
                    "commit {t} needs {} pages, the file holds {}",
                    m.page_count, out.file_pages
                ),
            ));
        } else if out.file_pages > m.page_count {
            out.notes.push(format!(
                "the file runs {} pages past commit {t}'s {} pages (written by a commit that \
                 did not complete, or by a newer one); later commits reuse them",
                out.file_pages - m.page_count,
                m.page_count
            ));
        }
        if m.copies == [0, 0] {
            out.notes.push(
                "no meta copies (a file of an older version; the next commit adds them)".into(),
            );
        }
        for x in 0..2u64 {
            let cp = m.copy(x as usize);
            let copy = (cp != 0).then(|| meta::read_copy(st, cp, ps, u64::MAX));
            // A copy newer than the snapshot: a commit is being written, or one did not complete.
            let newer_copy = matches!(&copy, Some(Ok(c)) if c.txn_id > t);
            let copy = copy.map(|c| c.and_then(|c| meta::check_len(cp, &c, len).map(|()| c)));
            match meta::read_slot(st, x, ps, len) {
                // The meta page is being written (step 3 of a commit, after its data pages).
                Err(e) if matches!(&copy, Some(Ok(c)) if c.txn_id > t) => out.notes.push(format!(
                    "meta page {x} does not read back ({e}) while a commit newer than {t} is \
                     written"
                )),
                Err(e) => out.faults.push((
                    Some(x),
                    format!(
                        "meta page {x} is damaged ({e}); {}",
                        match &copy {
                            Some(Ok(c)) => format!(
                                "its copy in page {cp} holds commit {}: opening the file for \
                                 writing rewrites it",
                                c.txn_id
                            ),
                            _ => "its copy cannot replace it: `tersedb recover` rolls back to \
                                  the other meta page"
                                .into(),
                        }
                    ),
                )),
                Ok(p) => match copy {
                    _ if newer_copy => {}
                    Some(Ok(c)) if c == p => {}
                    Some(c) if p.txn_id == t && x == t % 2 => out.faults.push((
                        Some(cp),
                        format!(
                            "the copy of meta page {x} (commit {t}) {}: opening the file for \
                             writing rewrites it",
                            match c {
                                Ok(c) => format!("holds commit {} instead", c.txn_id),
                                Err(e) => format!("is damaged ({e})"),
                            }
                        ),
                    )),
                    Some(_) => out.notes.push(format!(
                        "the copy of meta page {x} in page {cp} is not commit {} (left by a \
                         commit that did not complete; the next commit to that slot rewrites it)",
                        p.txn_id
                    )),
                    None => {}
                },
            }
        }
        Ok(out)
    }
}

impl Drop for ReadPages {
    fn drop(&mut self) {
        let mut r = lock(&self.pager.readers);
        let t = self.committed.meta.txn_id;
        if let Some(n) = r.get_mut(&t) {
            *n -= 1;
            if *n == 0 {
                r.remove(&t);
            }
        }
        drop(r);
        if self.pager.shared_reader.load(Ordering::Acquire) {
            // A failed update leaves an older txn published: pages are kept longer, never
            // reused too early.
            let _ = self.pager.publish_oldest();
        }
    }
}

impl PageSource for ReadPages {
    fn page_size(&self) -> usize {
        self.pager.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        self.pager.read_page(id, self.committed.meta.page_count)
    }
    #[inline]
    fn page_ref(&self, id: PageId) -> Result<PageRef<'_>> {
        let slot = self
            .pins
            .slots
            .get()
            .and_then(|s| s.get(id as usize % PINS));
        if let Some((pid, page)) = slot.and_then(|s| s.get()) {
            if *pid == id {
                return Ok(PageRef::Pinned(page));
            }
            return self.page(id).map(PageRef::Shared);
        }
        self.pin(id)
    }
}

impl ReadPages {
    /// [`PageSource::page_ref`] of a page whose slot is empty, or before the slots exist:
    /// reads it and fills the slot (only pages that passed `read_page`'s checks are pinned).
    #[cold]
    #[inline(never)]
    fn pin(&self, id: PageId) -> Result<PageRef<'_>> {
        let page = self.page(id)?;
        if self.pager.cache.max_pages == 0 {
            return Ok(PageRef::Shared(page));
        }
        let reads = self.pins.reads.load(Ordering::Relaxed);
        if reads < PIN_AFTER && self.pins.slots.get().is_none() {
            self.pins.reads.store(reads + 1, Ordering::Relaxed);
            return Ok(PageRef::Shared(page));
        }
        let slots = self
            .pins
            .slots
            .get_or_init(|| (0..PINS).map(|_| OnceLock::new()).collect());
        let Some(slot) = slots.get(id as usize % PINS) else {
            return Ok(PageRef::Shared(page));
        };
        // Another thread may fill the slot first: its page is kept, this one shared.
        let _ = slot.set((id, page.clone()));
        Ok(match slot.get() {
            Some((pid, p)) if *pid == id => PageRef::Pinned(p),
            _ => PageRef::Shared(page),
        })
    }
}

/// The write transaction's view: copy-on-write pages over the last committed state.
#[derive(Debug)]
pub struct WritePages {
    pager: Arc<Pager>,
    base: Meta,
    old_free_pages: Arc<Vec<PageId>>,
    root: PageId,
    page_count: u64,
    dirty: IdMap<Page>,
    /// Free pages this txn may use, lowest id last.
    reusable: Vec<FreeEntry>,
    /// Free pages a live reader may still see.
    pending: Vec<FreeEntry>,
    /// Committed pages freed by this txn.
    freed_now: IdSet,
    finished: bool,
}

impl WritePages {
    /// The catalog root as this transaction sees it.
    pub fn root(&self) -> PageId {
        self.root
    }
    /// Sets the catalog root written at commit.
    pub fn set_root(&mut self, root: PageId) {
        self.root = root;
    }
    /// The txn id this transaction commits as.
    pub fn txn_id(&self) -> u64 {
        self.base.txn_id + 1
    }

    fn take_page(&mut self) -> PageId {
        match self.reusable.pop() {
            Some(e) => e.page,
            None => {
                self.page_count += 1;
                self.page_count - 1
            }
        }
    }

    /// What a shrink plans with ([`FreeView`]).
    pub fn free_view(&self) -> FreeView {
        let mut reusable: Vec<PageId> = self.reusable.iter().map(|e| e.page).collect();
        reusable.sort_unstable();
        FreeView {
            page_count: self.page_count,
            reusable,
            fixed: self
                .base
                .copies
                .iter()
                .copied()
                .filter(|&c| c != 0)
                .collect(),
        }
    }

    /// Drops the free pages at the end of the file from the free list and the page count, so
    /// commit can shorten the file. Only `reusable` pages qualify: no committed state that open
    /// may pick (this txn's or the one before) and no live reader can see them.
    fn give_back_tail(&mut self) {
        // Highest id first.
        self.reusable
            .sort_unstable_by_key(|e| std::cmp::Reverse(e.page));
        let mut k = 0;
        while self.page_count > 2
            && self
                .reusable
                .get(k)
                .is_some_and(|e| e.page + 1 == self.page_count)
        {
            self.page_count -= 1;
            k += 1;
        }
        self.reusable.drain(..k);
        // Still highest first: `take_page` pops the lowest id.
    }

    /// Writes the changes durably (per `durability`) and makes them the committed state.
    pub fn commit(mut self, durability: Durability) -> Result<()> {
        self.finished = true;
        let pager = self.pager.clone();
        let result = self.commit_inner(durability);
        pager.release_writer();
        result
    }

    fn commit_inner(&mut self, durability: Durability) -> Result<()> {
        let pager = self.pager.clone();
        if pager.is_poisoned() {
            return Err(Error::PreviousIo);
        }
        let txn = self.txn_id();
        let ps = pager.page_size;
        // Free list of the new state: everything still free, plus what this txn freed, plus the
        // pages of the old list (they are rewritten below).
        let mut entries: Vec<FreeEntry> = Vec::with_capacity(
            self.reusable.len()
                + self.pending.len()
                + self.freed_now.len()
                + self.old_free_pages.len(),
        );
        entries.extend(self.pending.iter().copied());
        entries.extend(self.freed_now.iter().map(|&page| FreeEntry {
            page,
            freed_by: txn,
        }));
        entries.extend(self.old_free_pages.iter().map(|&page| FreeEntry {
            page,
            freed_by: txn,
        }));
        self.give_back_tail();
        // A file from before meta copies gets its two copy pages now.
        let upgrade = self.base.copies == [0, 0];
        let copies = if upgrade {
            [self.take_page(), self.take_page()]
        } else {
            self.base.copies
        };
        let per_page = (ps - FREE_HEADER) / FREE_ENTRY;
        let mut list_pages: Vec<PageId> = Vec::new();
        loop {
            let need = (entries.len() + self.reusable.len()).div_ceil(per_page);
            if list_pages.len() >= need {
                break;
            }
            let p = self.take_page();
            list_pages.push(p);
        }
        entries.extend(self.reusable.iter().copied());
        entries.sort_unstable_by_key(|e| e.page);

        // Seal and write: dirty pages and free-list pages, in page order.
        let mut out: Vec<(PageId, Page)> = self.dirty.drain().collect();
        // Every taken list page is written and chained, even when the entries fit in fewer
        // (taking pages from the free list shrinks it while we take them): surplus pages stay
        // in the chain with no entries.
        for (i, &id) in list_pages.iter().enumerate() {
            let chunk = entries
                .get(i * per_page..((i + 1) * per_page).min(entries.len()))
                .unwrap_or(&[]);
            let mut p = vec![0u8; ps];
            meta::put(&mut p, PAGE_KIND_OFFSET, &[PageKind::FreeList as u8]);
            let next = list_pages.get(i + 1).copied().unwrap_or(0);
            meta::put(&mut p, 16, &next.to_le_bytes());
            meta::put(&mut p, 24, &(chunk.len() as u32).to_le_bytes());
            for (j, e) in chunk.iter().enumerate() {
                let at = FREE_HEADER + j * FREE_ENTRY;
                meta::put(&mut p, at, &e.page.to_le_bytes());
                meta::put(&mut p, at + 8, &e.freed_by.to_le_bytes());
            }
            out.push((id, Page::new(p.into())));
        }
        out.sort_unstable_by_key(|(id, _)| *id);
        let m = Meta {
            page_size: ps as u32,
            txn_id: txn,
            root: self.root,
            free_list: list_pages.first().copied().unwrap_or(0),
            page_count: self.page_count,
            free_count: entries.len() as u64,
            copies,
        };
        // The meta's copy goes with the data pages, before the first sync: whenever the meta
        // page itself may be on disk (torn or whole), so is its copy.
        let slot = (txn % 2) as usize;
        let mut pager_pages = vec![(m.copy(slot), Page::new(m.to_copy_page(m.copy(slot)).into()))];
        if upgrade {
            let o = m.copy(1 - slot);
            pager_pages.push((o, Page::new(self.base.to_copy_page(o).into())));
        }
        out.extend(pager_pages);
        out.sort_unstable_by_key(|(id, _)| *id);
        // Every page is written once and never also listed as free. A violation means the
        // layer above freed a page twice or freed a page that was already free (a reference
        // to a free page in a damaged tree): refuse before writing anything.
        if let Some(page) = first_overlap(&entries, &out) {
            return Err(Error::Corrupted {
                page,
                what: "page freed twice, or a free page is still referenced".into(),
            });
        }
        let fail = |e: std::io::Error| {
            pager.poisoned.store(true, Ordering::Release);
            Error::from(e)
        };
        for (id, page) in out.iter_mut() {
            // When the layer above still holds these bytes, a private copy is sealed.
            let p = Arc::make_mut(page).bytes_mut();
            meta::seal(*id, p);
            pager.storage.write_at(*id * ps as u64, p).map_err(fail)?;
        }
        // The file covers every page the meta counts, even pages taken from the end and freed
        // again unwritten: open and `check` then treat a shorter file as damage.
        let need = self.page_count * ps as u64;
        if pager.storage.len().map_err(fail)? < need {
            pager.storage.set_len(need).map_err(fail)?;
        }
        if durability == Durability::Immediate {
            pager.storage.sync().map_err(fail)?;
        }
        pager
            .storage
            .write_at((txn % 2) * ps as u64, &m.to_page(txn % 2))
            .map_err(fail)?;
        if durability == Durability::Immediate {
            pager.storage.sync().map_err(fail)?;
        }
        // The tail is free in the new state and in the one before it, and no reader sees it:
        // give it back, down to what the other meta page counts (open treats a file shorter
        // than a meta's page count as damage), so a shrink completes at the next commit. A
        // failure (or a crash before this) only leaves the file longer than its page count,
        // which open accepts; nothing committed depends on the bytes.
        let keep = (self.page_count.max(self.base.page_count)) * ps as u64;
        if pager.storage.len().is_ok_and(|len| keep < len) {
            let _ = pager.storage.set_len(keep);
        }
        // Published: readers from now on see the new state.
        let mut list_set: HashSet<PageId> = list_pages.iter().copied().collect();
        list_set.extend(copies);
        for (id, page) in out {
            if !list_set.contains(&id) {
                pager.cache.put(id, page);
            }
        }
        *lock(&pager.committed) = Committed {
            meta: m,
            free: Arc::new(entries),
            free_pages: Arc::new(list_pages),
            synced: durability == Durability::Immediate,
            free_loaded: true,
        };
        Ok(())
    }

    /// Discards every change.
    pub fn abort(mut self) {
        self.finished = true;
        self.pager.release_writer();
    }
}

impl Drop for WritePages {
    fn drop(&mut self) {
        if !self.finished {
            self.pager.release_writer();
        }
    }
}

impl PageSource for WritePages {
    fn page_size(&self) -> usize {
        self.pager.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        if let Some(p) = self.dirty.get(&id) {
            return Ok(p.clone());
        }
        if self.freed_now.contains(&id) {
            return Err(Error::Corrupted {
                page: id,
                what: "reference to a freed page".into(),
            });
        }
        self.pager.read_page(id, self.base.page_count)
    }
}

impl PageSink for WritePages {
    fn alloc(&mut self) -> Result<PageId> {
        let id = self.take_page();
        self.dirty
            .insert(id, Page::new(vec![0u8; self.pager.page_size].into()));
        Ok(id)
    }
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]> {
        match self.dirty.get_mut(&id) {
            // Copies only if a caller still holds a clone of the page.
            Some(p) => Ok(Arc::make_mut(p).bytes_mut()),
            // The layer above writes only pages it allocated or copied in this transaction:
            // anything else means a damaged tree or free list (e.g. a free-list entry naming a
            // page the tree still uses, which was allocated and then freed again).
            None => Err(Error::Corrupted {
                page: id,
                what: "page written without being copied first (a free page still in use?)".into(),
            }),
        }
    }
    fn is_dirty(&self, id: PageId) -> bool {
        self.dirty.contains_key(&id)
    }
    fn cow(&mut self, id: PageId) -> Result<PageId> {
        if self.dirty.contains_key(&id) {
            return Ok(id);
        }
        let src = self.page(id)?;
        let new = self.take_page();
        self.dirty.insert(new, Page::new(PageBuf::from(&src[..])));
        self.free(id)?;
        Ok(new)
    }
    fn free(&mut self, id: PageId) -> Result<()> {
        if self.dirty.remove(&id).is_some() {
            // Never part of a committed state: reusable at once.
            self.reusable.push(FreeEntry {
                page: id,
                freed_by: 0,
            });
            return Ok(());
        }
        if id < 2 || id >= self.base.page_count || !self.freed_now.insert(id) {
            return Err(Error::Corrupted {
                page: id,
                what: "freeing a page that is not in use".into(),
            });
        }
        Ok(())
    }
}
