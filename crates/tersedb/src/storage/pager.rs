//! The pager: snapshots for readers, copy-on-write pages for the one writer, and the commit
//! protocol.
//!
//! ```text
//! file:  [meta 0][meta 1][page 2][page 3] ...            page id = byte offset / page size
//! commit t (t = previous txn id + 1):
//!   1. write every dirty page (checksums stamped here), extend the file to the page count
//!   2. sync                                  (Durability::Immediate only)
//!   3. write meta t into slot t % 2         (the other slot keeps meta t - 1)
//!   4. sync                                  (Durability::Immediate only)
//! ```
//!
//! A crash before step 3 is durable leaves meta t - 1 the newest valid meta, and its pages are
//! intact because a transaction only writes pages that commit t - 1 does not use (allocated
//! from its free list or past its end). A torn meta t fails its checksum. No recovery pass.
//!
//! After any failed write or sync the pager is *poisoned*: the state on disk is unknown (Linux
//! may drop dirty pages after a failed fsync), so every later write transaction gets
//! [`Error::PreviousIo`] until the file is reopened. Readers keep working on the last commit.

use super::cache::{IdMap, IdSet, PageCache};
use super::freelist::{self, FreeSpace, SpaceInfo};
use super::meta::{self, Meta};
use super::{
    checksum, Durability, Page, PageSink, PageSource, Storage, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
};
use crate::error::{Error, PageId, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Default page-cache budget.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;
/// Consecutive dirty pages are written with one call of up to this many bytes.
const WRITE_RUN_BYTES: usize = 1 << 20;

/// How to create or open a pager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagerOptions {
    /// Page size for `create`; `open` reads it from the file.
    pub page_size: usize,
    /// Budget of the clean-page cache in bytes.
    pub cache_bytes: usize,
    /// Refuse write transactions.
    pub read_only: bool,
}

impl Default for PagerOptions {
    fn default() -> Self {
        PagerOptions {
            page_size: DEFAULT_PAGE_SIZE,
            cache_bytes: DEFAULT_CACHE_BYTES,
            read_only: false,
        }
    }
}

/// Shared state behind the pager's mutex.
#[derive(Debug)]
struct State {
    /// The newest commit; new snapshots start from it.
    meta: Meta,
    /// Live read snapshots: txn id -> number of readers.
    readers: BTreeMap<u64, usize>,
    /// Whether a write transaction is live.
    writer: bool,
    /// Free space (empty for read-only pagers, which never allocate).
    space: FreeSpace,
}

/// The pager of one file. `Send + Sync`; shared as `Arc<Pager>`.
#[derive(Debug)]
pub struct Pager {
    storage: Box<dyn Storage>,
    page_size: usize,
    read_only: bool,
    cache: PageCache,
    state: Mutex<State>,
    poisoned: AtomicBool,
}

/// A zero-filled page, allocated once.
fn zeroed(page_size: usize) -> Page {
    std::iter::repeat_n(0u8, page_size).collect()
}

impl Pager {
    /// Writes a new, empty database (both meta pages, txn id 0) into empty `storage`.
    pub fn create(storage: Box<dyn Storage>, opts: &PagerOptions) -> Result<Arc<Pager>> {
        if opts.read_only {
            return Err(Error::ReadOnly);
        }
        if !meta::valid_page_size(opts.page_size) {
            return Err(Error::InvalidArgument(format!(
                "page size {} is not a power of two between 512 and {MAX_PAGE_SIZE}",
                opts.page_size
            )));
        }
        if !storage.is_empty()? {
            return Err(Error::InvalidArgument(
                "cannot create a database in a non-empty file".into(),
            ));
        }
        let m = Meta::empty(opts.page_size);
        let mut page = vec![0u8; opts.page_size];
        for slot in 0..2 {
            m.encode(slot, &mut page);
            storage.write_at(slot * opts.page_size as u64, &page)?;
        }
        storage.sync()?;
        Ok(Pager::new(storage, m, FreeSpace::default(), opts))
    }

    /// Opens a database: picks the newest valid meta page and, unless read-only, loads and
    /// verifies the free list.
    pub fn open(storage: Box<dyn Storage>, opts: &PagerOptions) -> Result<Arc<Pager>> {
        let len = storage.len()?;
        let head_len = len.min(2 * MAX_PAGE_SIZE as u64) as usize;
        let mut head = vec![0u8; head_len];
        storage.read_at(0, &mut head)?;
        let m = meta::choose(&head, len)?;
        let pager = Pager::new(storage, m, FreeSpace::default(), opts);
        if !opts.read_only {
            let info = pager.read_space(&m)?;
            pager.lock().space = FreeSpace::from_info(&info);
        }
        Ok(pager)
    }

    fn new(storage: Box<dyn Storage>, m: Meta, space: FreeSpace, opts: &PagerOptions) -> Arc<Self> {
        let page_size = m.page_size as usize;
        Arc::new(Pager {
            storage,
            page_size,
            read_only: opts.read_only,
            cache: PageCache::new(opts.cache_bytes, page_size),
            state: Mutex::new(State {
                meta: m,
                readers: BTreeMap::new(),
                writer: false,
                space,
            }),
            poisoned: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock half-way through an update.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether an earlier I/O error disabled writes (see [`Error::PreviousIo`]).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// The newest commit's meta data.
    pub fn meta(&self) -> Meta {
        self.lock().meta
    }

    /// Pages and capacity of the page cache.
    pub fn cache_stats(&self) -> super::cache::CacheStats {
        self.cache.stats()
    }

    /// Number of live read snapshots.
    pub fn reader_count(&self) -> usize {
        self.lock().readers.values().sum()
    }

    /// A read snapshot of the newest commit. Cheap; deregisters when dropped.
    pub fn begin_read(self: &Arc<Self>) -> Result<ReadPages> {
        let mut st = self.lock();
        let m = st.meta;
        *st.readers.entry(m.txn_id).or_insert(0) += 1;
        Ok(ReadPages {
            pager: self.clone(),
            meta: m,
        })
    }

    /// Starts the write transaction. Errors: [`Error::ReadOnly`], [`Error::PreviousIo`],
    /// [`Error::WriteTxnActive`].
    pub fn begin_write(self: &Arc<Self>) -> Result<WritePages> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.is_poisoned() {
            return Err(Error::PreviousIo);
        }
        let mut st = self.lock();
        if st.writer {
            return Err(Error::WriteTxnActive);
        }
        st.writer = true;
        let oldest = st.readers.keys().next().copied();
        let mut free = std::mem::take(&mut st.space.free);
        st.space.release(oldest, &mut free);
        let base = st.meta;
        drop(st);
        Ok(WritePages {
            pager: self.clone(),
            base,
            root: base.root,
            page_count: base.page_count,
            dirty: IdMap::default(),
            freed: IdSet::default(),
            free,
            taken: Vec::new(),
            spare: Vec::new(),
            done: false,
        })
    }

    /// Reads page `id` of a snapshot with `page_count` pages: from the cache, or from the file
    /// with its checksum verified (then cached).
    fn read_page(&self, id: PageId, page_count: u64) -> Result<Page> {
        if id < 2 || id >= page_count {
            return Err(Error::Corrupted {
                page: id,
                what: format!("page id out of range 2..{page_count}"),
            });
        }
        if let Some(p) = self.cache.get(id) {
            return Ok(p);
        }
        let mut page = zeroed(self.page_size);
        let buf = Arc::get_mut(&mut page).expect("a new Arc is unique");
        match self.storage.read_at(id * self.page_size as u64, buf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(Error::Corrupted {
                    page: id,
                    what: "page lies beyond the end of the file".into(),
                })
            }
            Err(e) => return Err(Error::Io(e)),
        }
        if !checksum::verify(id, buf) {
            return Err(Error::Corrupted {
                page: id,
                what: "checksum mismatch".into(),
            });
        }
        self.cache.insert(id, page.clone());
        Ok(page)
    }

    /// Reads and verifies the free list of commit `m`.
    fn read_space(&self, m: &Meta) -> Result<SpaceInfo> {
        freelist::read_chain(
            &|id| self.read_page(id, m.page_count),
            m.freelist_head,
            m.page_count,
            m.free_pages,
            m.freelist_pages,
        )
    }

    fn poison<T>(&self, e: Error) -> Result<T> {
        self.poisoned.store(true, Ordering::Release);
        Err(e)
    }

    /// Steps 1-4 of the commit protocol. Pages in `dirty` are stamped in place.
    fn write_commit(
        &self,
        dirty: &mut IdMap<Page>,
        m: &Meta,
        durability: Durability,
    ) -> Result<()> {
        let ps = self.page_size;
        let mut ids: Vec<PageId> = dirty.keys().copied().collect();
        ids.sort_unstable();
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0;
        for &id in &ids {
            let page = dirty.get_mut(&id).expect("id from the map");
            if Arc::strong_count(page) != 1 {
                // The layer above still holds a copy: stamp a private one.
                *page = Arc::from(&page[..]);
            }
            let buf = Arc::get_mut(page).expect("unique after the copy above");
            checksum::stamp(id, buf);
            let contiguous = !run.is_empty() && run_start + (run.len() / ps) as u64 == id;
            if !contiguous || run.len() + ps > WRITE_RUN_BYTES {
                if !run.is_empty() {
                    self.storage.write_at(run_start * ps as u64, &run)?;
                    run.clear();
                }
                run_start = id;
            }
            run.extend_from_slice(buf);
        }
        if !run.is_empty() {
            self.storage.write_at(run_start * ps as u64, &run)?;
        }
        let end = m.page_count * ps as u64;
        if self.storage.len()? < end {
            self.storage.set_len(end)?;
        }
        if durability == Durability::Immediate {
            self.storage.sync()?;
        }
        let mut page = vec![0u8; ps];
        m.encode(m.slot(), &mut page);
        self.storage.write_at(m.slot() * ps as u64, &page)?;
        if durability == Durability::Immediate {
            self.storage.sync()?;
        }
        Ok(())
    }
}

/// A read snapshot: the pages of one commit, as long as it lives. `Send + Sync`.
#[derive(Debug)]
pub struct ReadPages {
    pager: Arc<Pager>,
    meta: Meta,
}

impl ReadPages {
    /// The catalog root of this snapshot (0 = none).
    pub fn root(&self) -> PageId {
        self.meta.root
    }

    /// The commit this snapshot shows.
    pub fn txn_id(&self) -> u64 {
        self.meta.txn_id
    }

    /// Pages in use by this snapshot's commit (its file end).
    pub fn page_count(&self) -> u64 {
        self.meta.page_count
    }

    /// The snapshot's meta data.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// The pager this snapshot reads from.
    pub fn pager(&self) -> &Arc<Pager> {
        &self.pager
    }

    /// Free pages and free-list pages of this snapshot's commit, read from the file and
    /// verified (for `Env::check`: with the pages reachable from the root, they must cover
    /// `2..page_count` exactly once).
    pub fn space(&self) -> Result<SpaceInfo> {
        self.pager.read_space(&self.meta)
    }
}

impl PageSource for ReadPages {
    fn page_size(&self) -> usize {
        self.pager.page_size
    }

    #[inline]
    fn page(&self, id: PageId) -> Result<Page> {
        self.pager.read_page(id, self.meta.page_count)
    }
}

impl Drop for ReadPages {
    fn drop(&mut self) {
        let mut st = self.pager.lock();
        if let Some(n) = st.readers.get_mut(&self.meta.txn_id) {
            *n -= 1;
            if *n == 0 {
                st.readers.remove(&self.meta.txn_id);
            }
        }
    }
}

/// The write transaction: copy-on-write pages over the newest commit. Dropping it aborts.
///
/// Invariants: `dirty`, `freed` and `free` are disjoint; every id in `dirty` is either `>=
/// base.page_count` or was taken from the free list (`taken`); nothing is written to the file
/// before `commit`.
#[derive(Debug)]
pub struct WritePages {
    pager: Arc<Pager>,
    base: Meta,
    root: PageId,
    page_count: u64,
    /// Pages allocated by this transaction.
    dirty: IdMap<Page>,
    /// Pages of older commits freed by this transaction (reusable after commit, once no
    /// reader sees them).
    freed: IdSet,
    /// Reusable pages (lowest first, to keep the file compact).
    free: BTreeSet<PageId>,
    /// Pages taken from the free list, to rebuild it on abort.
    taken: Vec<PageId>,
    /// Buffers of freed dirty pages, recycled by `alloc`.
    spare: Vec<Page>,
    done: bool,
}

impl WritePages {
    /// The catalog root as this transaction has set it.
    pub fn root(&self) -> PageId {
        self.root
    }

    /// Sets the catalog root (0 = none) that the commit will record.
    pub fn set_root(&mut self, root: PageId) {
        self.root = root;
    }

    /// The id the commit will get.
    pub fn txn_id(&self) -> u64 {
        self.base.txn_id + 1
    }

    /// Pages in use (the file end) including this transaction's allocations.
    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    /// Number of dirty pages.
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Takes a page id: the lowest reusable one, else the file's end.
    fn take_id(&mut self, may_release: bool) -> Result<PageId> {
        if self.free.is_empty() && may_release {
            // Readers may have finished since the transaction began.
            let mut st = self.pager.lock();
            let oldest = st.readers.keys().next().copied();
            st.space.release(oldest, &mut self.free);
        }
        if let Some(id) = self.free.pop_first() {
            self.taken.push(id);
            return Ok(id);
        }
        let id = self.page_count;
        if id
            .checked_add(1)
            .and_then(|n| n.checked_mul(self.pager.page_size as u64))
            .is_none()
        {
            return Err(Error::DiskFull);
        }
        self.page_count += 1;
        Ok(id)
    }

    fn new_page(&mut self) -> Page {
        match self.spare.pop() {
            Some(mut p) => {
                Arc::get_mut(&mut p).expect("spares are unique").fill(0);
                p
            }
            None => zeroed(self.pager.page_size),
        }
    }

    /// Commits: writes the dirty pages and the free list, then the meta page (see the module
    /// docs). On error nothing of this transaction is visible, and after an I/O error the
    /// pager refuses further writes ([`Error::PreviousIo`]).
    pub fn commit(mut self, durability: Durability) -> Result<()> {
        if self.pager.is_poisoned() {
            return Err(Error::PreviousIo);
        }
        if self.dirty.is_empty()
            && self.freed.is_empty()
            && self.taken.is_empty()
            && self.root == self.base.root
        {
            // Nothing changed: the newest commit already says it all.
            self.abort_in_place();
            return Ok(());
        }
        let pager = self.pager.clone();
        let (pending, old_chain) = {
            let st = pager.lock();
            (
                st.space.pending_ids().collect::<Vec<_>>(),
                st.space.chain.clone(),
            )
        };
        // Size the chain: every page it takes from `free` shortens the list by one.
        let cap = freelist::capacity(pager.page_size);
        let others = pending.len() + self.freed.len() + old_chain.len();
        let mut chain: Vec<PageId> = Vec::new();
        while chain.len() < (self.free.len() + others).div_ceil(cap) {
            chain.push(self.take_id(false)?);
        }
        let mut ids: Vec<PageId> = Vec::with_capacity(self.free.len() + others);
        ids.extend(self.free.iter().copied());
        ids.extend(pending.iter().copied());
        ids.extend(self.freed.iter().copied());
        ids.extend(old_chain.iter().copied());
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            // A page freed twice: the layer above followed a reference to a free page.
            return Err(Error::Corrupted {
                page: w[0],
                what: "page freed twice (referenced twice, or a free page is referenced)".into(),
            });
        }
        for (i, &id) in chain.iter().enumerate() {
            let next = chain.get(i + 1).copied().unwrap_or(0);
            let lo = (i * cap).min(ids.len());
            let hi = ((i + 1) * cap).min(ids.len());
            let mut page = self.new_page();
            freelist::encode(
                Arc::get_mut(&mut page).expect("new pages are unique"),
                next,
                &ids[lo..hi],
            );
            self.dirty.insert(id, page);
        }
        let m = Meta {
            page_size: pager.page_size as u32,
            txn_id: self.base.txn_id + 1,
            root: self.root,
            freelist_head: chain.first().copied().unwrap_or(0),
            page_count: self.page_count,
            free_pages: ids.len() as u64,
            freelist_pages: chain.len() as u64,
        };
        if let Err(e) = pager.write_commit(&mut self.dirty, &m, durability) {
            return pager.poison(e);
        }
        // Publish.
        let dirty = std::mem::take(&mut self.dirty);
        for (id, page) in dirty {
            pager.cache.insert(id, page);
        }
        let mut released: Vec<PageId> = self.freed.drain().collect();
        released.extend(old_chain);
        let mut st = pager.lock();
        st.meta = m;
        st.space.free = std::mem::take(&mut self.free);
        st.space.add_pending(m.txn_id, released);
        st.space.chain = chain;
        st.writer = false;
        self.done = true;
        Ok(())
    }

    /// Drops every change.
    pub fn abort(self) {}

    fn abort_in_place(&mut self) {
        let base_count = self.base.page_count;
        let mut free = std::mem::take(&mut self.free);
        free.extend(self.taken.drain(..));
        free.retain(|&id| id < base_count);
        let mut st = self.pager.lock();
        st.space.free = free;
        st.writer = false;
        self.done = true;
    }
}

impl Drop for WritePages {
    fn drop(&mut self) {
        if !self.done {
            self.abort_in_place();
        }
    }
}

impl PageSource for WritePages {
    fn page_size(&self) -> usize {
        self.pager.page_size
    }

    #[inline]
    fn page(&self, id: PageId) -> Result<Page> {
        if let Some(p) = self.dirty.get(&id) {
            return Ok(p.clone());
        }
        self.pager.read_page(id, self.page_count)
    }
}

impl PageSink for WritePages {
    fn alloc(&mut self) -> Result<PageId> {
        let id = self.take_id(true)?;
        let page = self.new_page();
        self.dirty.insert(id, page);
        Ok(id)
    }

    #[inline]
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]> {
        let Some(page) = self.dirty.get_mut(&id) else {
            return Err(Error::InvalidArgument(format!(
                "page {id} is not writable in this transaction (copy it with cow first)"
            )));
        };
        if Arc::strong_count(page) != 1 {
            // A reader of this transaction still holds the old bytes: keep them for it.
            *page = Arc::from(&page[..]);
        }
        Ok(Arc::get_mut(page).expect("unique after the copy above"))
    }

    fn is_dirty(&self, id: PageId) -> bool {
        self.dirty.contains_key(&id)
    }

    fn cow(&mut self, id: PageId) -> Result<PageId> {
        if self.dirty.contains_key(&id) {
            return Ok(id);
        }
        let src = self.page(id)?;
        self.free(id)?;
        let new = self.take_id(true)?;
        self.dirty.insert(new, Arc::from(&src[..]));
        Ok(new)
    }

    fn free(&mut self, id: PageId) -> Result<()> {
        if id < 2 || id >= self.page_count {
            return Err(Error::Corrupted {
                page: id,
                what: format!("free of a page out of range 2..{}", self.page_count),
            });
        }
        if let Some(page) = self.dirty.remove(&id) {
            if Arc::strong_count(&page) == 1 && self.spare.len() < 64 {
                self.spare.push(page);
            }
            self.free.insert(id);
            return Ok(());
        }
        if self.free.contains(&id) || !self.freed.insert(id) {
            return Err(Error::Corrupted {
                page: id,
                what: "page freed twice".into(),
            });
        }
        Ok(())
    }
}
