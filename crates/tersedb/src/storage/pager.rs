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
//! live reader's snapshot is at least `T`, and only when `T` is older than the last commit (so two
//! committed states never depend on a reused page).

use super::meta::{self, Meta};
use super::{Durability, Page, PageKind, PageSink, PageSource, Storage, PAGE_KIND_OFFSET};
use crate::error::{Error, PageId, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// How the pager is opened.
#[derive(Clone, Debug)]
pub struct PagerOptions {
    /// Page size of a new file (an existing file keeps its own).
    pub page_size: usize,
    /// Budget of the clean-page cache in bytes.
    pub cache_bytes: usize,
    /// Refuse write transactions.
    pub read_only: bool,
}

impl Default for PagerOptions {
    fn default() -> Self {
        PagerOptions {
            page_size: super::DEFAULT_PAGE_SIZE,
            cache_bytes: 256 << 20,
            read_only: false,
        }
    }
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
    poisoned: AtomicBool,
    cache: Cache,
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
        let m = Meta {
            page_size: opts.page_size as u32,
            page_count: 2,
            ..Meta::default()
        };
        storage.write_at(0, &m.to_page(0))?;
        storage.write_at(opts.page_size as u64, &m.to_page(1))?;
        storage.sync()?;
        Ok(Self::new(storage, opts, m, Vec::new(), Vec::new()))
    }

    /// Opens an existing file: picks the valid meta page with the highest txn id and loads the
    /// free list.
    pub fn open(storage: Box<dyn Storage>, opts: &PagerOptions) -> Result<Arc<Pager>> {
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
        let mut best: Option<Meta> = None;
        let mut version_err = None;
        for ps in sizes {
            for id in 0..2u64 {
                let mut p = vec![0u8; ps];
                if storage.read_at(id * ps as u64, &mut p).is_err() {
                    continue;
                }
                match Meta::from_page(id, &p) {
                    Ok(m) if best.is_none_or(|b| m.txn_id > b.txn_id) => best = Some(m),
                    Ok(_) => {}
                    Err(Error::BadFormat(w)) => {
                        version_err.get_or_insert(Error::BadFormat(w));
                    }
                    Err(_) => {}
                }
            }
            if best.is_some() {
                break;
            }
        }
        let m = match best {
            Some(m) => m,
            None => {
                return Err(match version_err {
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
        };
        let (free, free_pages) = load_free_list(storage.as_ref(), &m)?;
        let opts = PagerOptions {
            page_size: m.page_size as usize,
            ..opts.clone()
        };
        Ok(Self::new(storage, &opts, m, free, free_pages))
    }

    fn new(
        storage: Box<dyn Storage>,
        opts: &PagerOptions,
        m: Meta,
        free: Vec<FreeEntry>,
        free_pages: Vec<PageId>,
    ) -> Arc<Pager> {
        Arc::new(Pager {
            storage,
            page_size: m.page_size as usize,
            read_only: opts.read_only,
            committed: Mutex::new(Committed {
                meta: m,
                free: Arc::new(free),
                free_pages: Arc::new(free_pages),
            }),
            readers: Mutex::new(BTreeMap::new()),
            writer_active: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            cache: Cache {
                map: Mutex::new(IdMap::default()),
                max_pages: opts.cache_bytes / m.page_size as usize,
            },
        })
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

    /// A snapshot of the last committed state.
    pub fn begin_read(self: &Arc<Self>) -> Result<ReadPages> {
        // Register under the committed lock, so no commit slips in between.
        let committed = lock(&self.committed);
        let c = committed.clone();
        *lock(&self.readers).entry(c.meta.txn_id).or_insert(0) += 1;
        drop(committed);
        Ok(ReadPages {
            pager: self.clone(),
            committed: c,
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
        let oldest_reader = lock(&self.readers)
            .keys()
            .next()
            .copied()
            .unwrap_or(u64::MAX);
        let (mut reusable, pending): (Vec<FreeEntry>, Vec<FreeEntry>) = c
            .free
            .iter()
            .partition(|e| e.freed_by <= oldest_reader && e.freed_by < c.meta.txn_id);
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
        let page: Page = buf.into();
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
        if p[PAGE_KIND_OFFSET] != PageKind::FreeList as u8 {
            return Err(bad("free-list link to a page of another kind"));
        }
        next = u64::from_le_bytes(p[16..24].try_into().expect("8 bytes"));
        let n = u32::from_le_bytes(p[24..28].try_into().expect("4 bytes")) as usize;
        if n > (ps - FREE_HEADER) / FREE_ENTRY {
            return Err(bad("free-list entry count exceeds the page"));
        }
        for e in p[FREE_HEADER..FREE_HEADER + n * FREE_ENTRY].chunks_exact(FREE_ENTRY) {
            let page = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
            let freed_by = u64::from_le_bytes(e[8..].try_into().expect("8 bytes"));
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
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::Corrupted {
            page: w[0],
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
    if let Some(w) = entries.windows(2).find(|w| w[0].page == w[1].page) {
        return Some(w[0].page);
    }
    let (mut i, mut j) = (0, 0);
    while i < entries.len() && j < out.len() {
        match entries[i].page.cmp(&out[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Some(out[j].0),
        }
    }
    None
}

/// A read snapshot. Holding it keeps the pages it can see from being reused.
#[derive(Debug)]
pub struct ReadPages {
    pager: Arc<Pager>,
    committed: Committed,
}

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
    pub fn free_pages(&self) -> (Vec<PageId>, Vec<PageId>) {
        (
            self.committed.free.iter().map(|e| e.page).collect(),
            self.committed.free_pages.to_vec(),
        )
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
    }
}

impl PageSource for ReadPages {
    fn page_size(&self) -> usize {
        self.pager.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        self.pager.read_page(id, self.committed.meta.page_count)
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

    /// Writes the changes durably (per `durability`) and makes them the committed state.
    pub fn commit(mut self, durability: Durability) -> Result<()> {
        self.finished = true;
        let pager = self.pager.clone();
        let result = self.commit_inner(durability);
        pager.writer_active.store(false, Ordering::Release);
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
            p[PAGE_KIND_OFFSET] = PageKind::FreeList as u8;
            let next = list_pages.get(i + 1).copied().unwrap_or(0);
            p[16..24].copy_from_slice(&next.to_le_bytes());
            p[24..28].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            for (j, e) in chunk.iter().enumerate() {
                let at = FREE_HEADER + j * FREE_ENTRY;
                p[at..at + 8].copy_from_slice(&e.page.to_le_bytes());
                p[at + 8..at + 16].copy_from_slice(&e.freed_by.to_le_bytes());
            }
            out.push((id, p.into()));
        }
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
            if Arc::get_mut(page).is_none() {
                // The layer above still holds these bytes: seal a private copy.
                *page = Page::from(&page[..]);
            }
            let p = Arc::get_mut(page).expect("a fresh copy is unique");
            meta::seal(*id, p);
            pager.storage.write_at(*id * ps as u64, p).map_err(fail)?;
        }
        if durability == Durability::Immediate {
            pager.storage.sync().map_err(fail)?;
        }
        let m = Meta {
            page_size: ps as u32,
            txn_id: txn,
            root: self.root,
            free_list: list_pages.first().copied().unwrap_or(0),
            page_count: self.page_count,
            free_count: entries.len() as u64,
        };
        pager
            .storage
            .write_at((txn % 2) * ps as u64, &m.to_page(txn % 2))
            .map_err(fail)?;
        if durability == Durability::Immediate {
            pager.storage.sync().map_err(fail)?;
        }
        // Published: readers from now on see the new state.
        let list_set: HashSet<PageId> = list_pages.iter().copied().collect();
        for (id, page) in out {
            if !list_set.contains(&id) {
                pager.cache.put(id, page);
            }
        }
        *lock(&pager.committed) = Committed {
            meta: m,
            free: Arc::new(entries),
            free_pages: Arc::new(list_pages),
        };
        Ok(())
    }

    /// Discards every change.
    pub fn abort(mut self) {
        self.finished = true;
        self.pager.writer_active.store(false, Ordering::Release);
    }
}

impl Drop for WritePages {
    fn drop(&mut self) {
        if !self.finished {
            self.pager.writer_active.store(false, Ordering::Release);
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
            .insert(id, vec![0u8; self.pager.page_size].into());
        Ok(id)
    }
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]> {
        match self.dirty.get_mut(&id) {
            // Copies only if a caller still holds a clone of the page.
            Some(p) => Ok(Arc::make_mut(p)),
            None => Err(Error::InvalidArgument(format!(
                "page {id} is not writable in this transaction"
            ))),
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
        self.dirty.insert(new, Page::from(&src[..]));
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
