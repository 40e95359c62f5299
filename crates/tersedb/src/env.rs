//! The environment: one file holding many named databases, opened over a pager.
//!
//! `Env` is `Send + Sync`: share it (e.g. in an `Arc`) between threads. Read transactions are
//! snapshots and never block; one write transaction at a time (`Error::WriteTxnActive`).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::check::{self, CheckFault, CheckReport, Owners, PagerPages};
use crate::error::{Error, PageId, Result};
use crate::storage::{Durability, DEFAULT_PAGE_SIZE};
use crate::txn::{ReadTxn, Snapshot, WriteTxn, Writer};
use std::sync::Arc;

/// Options for creating or opening an environment.
///
/// ```
/// use tersedb::{Durability, Env, EnvOptions};
///
/// // 4 KiB pages, a 64 MiB page cache, commits that do not wait for the disk.
/// let opts = EnvOptions::default()
///     .page_size(4096)
///     .cache_bytes(64 << 20)
///     .durability(Durability::None);
/// let env = Env::in_memory(&opts)?;
/// assert_eq!(env.page_size(), 4096);
/// # Ok::<(), tersedb::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvOptions {
    /// Page size for a new file (a power of two, 512 B ..= 64 KiB); an existing file keeps its own.
    pub page_size: usize,
    /// Page cache budget in bytes.
    pub cache_bytes: usize,
    /// Default durability of commits (a write transaction may change its own).
    pub durability: Durability,
    /// Opening a file whose newest meta page is damaged, when its copy cannot tell which commit
    /// it held, rolls back to the older commit instead of failing with `Error::Corrupted`
    /// (and, unless read-only, rewrites the damaged page so that later opens agree). The newest
    /// commit may be lost: set this only to recover a damaged file (`tersedb recover`).
    pub recover: bool,
    /// How long opening a file for writing waits for another writer (another process, or
    /// another handle in this one) to close it before failing with `Error::Locked`.
    pub lock_wait: std::time::Duration,
    /// When the last handle of an environment that committed a write closes, and at least a
    /// third of its file is free pages (random-order loads leave the previous commit's tree
    /// behind, erases free leaves) or the file grew since it was opened, move the pages at the
    /// end of the file into the free ones and shorten the file ([`Env::shrink`]), if that
    /// gives back at least an eighth of the file (or what it grew by, if less). On by default;
    /// a close after no commit costs nothing.
    pub shrink_on_close: bool,
}

impl Default for EnvOptions {
    fn default() -> Self {
        EnvOptions {
            page_size: DEFAULT_PAGE_SIZE,
            cache_bytes: 256 << 20,
            durability: Durability::Immediate,
            recover: false,
            lock_wait: std::time::Duration::ZERO,
            shrink_on_close: true,
        }
    }
}

impl EnvOptions {
    /// Sets [`EnvOptions::page_size`].
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n;
        self
    }
    /// Sets [`EnvOptions::cache_bytes`].
    pub fn cache_bytes(mut self, n: usize) -> Self {
        self.cache_bytes = n;
        self
    }
    /// Sets [`EnvOptions::durability`].
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
    /// Sets [`EnvOptions::recover`].
    pub fn recover(mut self, on: bool) -> Self {
        self.recover = on;
        self
    }
    /// Sets [`EnvOptions::lock_wait`].
    pub fn lock_wait(mut self, d: std::time::Duration) -> Self {
        self.lock_wait = d;
        self
    }
    /// Sets [`EnvOptions::shrink_on_close`].
    pub fn shrink_on_close(mut self, on: bool) -> Self {
        self.shrink_on_close = on;
        self
    }
}

/// Leaked pages listed one by one in a check report; the rest are counted.
const MAX_LISTED_LEAKS: u64 = 1000;

fn check_page_size(n: usize) -> Result<()> {
    use crate::storage::{MAX_PAGE_SIZE, MIN_PAGE_SIZE};
    if !n.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&n) {
        return Err(Error::InvalidArgument(format!(
            "page size {n} must be a power of two in {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}"
        )));
    }
    Ok(())
}

/// How an environment's pages are used ([`Env::space`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpaceUsage {
    /// The file's page size.
    pub page_size: usize,
    /// Pages of the committed state (the file may be longer after a crash before it shrank).
    pub pages: u64,
    /// Pages on the free list: reusable by the next writes, or once older readers finish.
    pub free_pages: u64,
    /// The two meta pages and the pages holding the free list.
    pub pager_pages: u64,
    /// Bytes of the pages that hold data: the catalog and every database's tree.
    pub live_bytes: u64,
    /// Bytes of the free pages.
    pub free_bytes: u64,
    /// Bytes of the meta and free-list pages.
    pub pager_bytes: u64,
}

/// The pager as the environment uses it.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    fn page_size(&self) -> usize;
    fn begin_read(&self) -> Result<Box<dyn Snapshot>>;
    fn begin_write(&self) -> Result<Box<dyn Writer>>;
    /// `begin_write`, waiting up to `timeout` for another thread's write transaction to end.
    fn begin_write_wait(&self, timeout: std::time::Duration) -> Result<Box<dyn Writer>> {
        let _ = timeout;
        self.begin_write()
    }
    /// The pager's own pages and free pages, as of `snap`.
    fn pager_pages(&self, snap: &ReadTxn) -> Result<PagerPages>;
    /// What open found wrong with the meta pages and did about it.
    fn open_notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// An environment: one file, many named databases.
#[derive(Debug, Clone)]
pub struct Env {
    backend: Arc<dyn Backend>,
    durability: Durability,
    read_only: bool,
    /// The commit and the page count the file was at when opened, for
    /// [`EnvOptions::shrink_on_close`] (`None`: no shrink at close).
    shrink_from: Option<(u64, u64)>,
}

impl Env {
    pub(crate) fn from_backend(
        backend: Arc<dyn Backend>,
        opts: &EnvOptions,
        read_only: bool,
    ) -> Env {
        let shrink_from = if opts.shrink_on_close && !read_only {
            backend
                .begin_read()
                .ok()
                .map(|s| (s.txn_id(), s.page_count()))
        } else {
            None
        };
        Env {
            backend,
            durability: opts.durability,
            read_only,
            shrink_from,
        }
    }

    /// The commit and page count of the file when this environment opened it, when it is to
    /// be shrunk at close, and whether this is its last handle.
    pub(crate) fn close_state(&self) -> (Option<(u64, u64)>, bool) {
        (self.shrink_from, Arc::strong_count(&self.backend) == 1)
    }

    /// An environment that lives in memory only (nothing is written anywhere); for tests and
    /// caches. Same API and guarantees as a file, minus durability.
    pub fn in_memory(opts: &EnvOptions) -> Result<Env> {
        check_page_size(opts.page_size)?;
        Env::create_with_storage(Box::new(crate::storage::MemStorage::new()), opts)
    }

    /// Page size of the file.
    pub fn page_size(&self) -> usize {
        self.backend.page_size()
    }

    /// What opening found wrong with the meta pages and did about it: a damaged meta page
    /// restored from its copy, or rolled back by recovery ([`EnvOptions::recover`]). Empty
    /// when the meta pages were intact.
    pub fn open_notes(&self) -> Vec<String> {
        self.backend.open_notes()
    }

    /// Whether the environment was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A snapshot of the last committed state.
    pub fn begin_read(&self) -> Result<ReadTxn> {
        Ok(ReadTxn::new(self.backend.begin_read()?))
    }

    /// The write transaction (`Error::WriteTxnActive` while another is open).
    pub fn begin_write(&self) -> Result<WriteTxn> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(WriteTxn::new(self.backend.begin_write()?, self.durability))
    }

    /// The write transaction, waiting up to `timeout` for the write transaction of another
    /// thread to end (`Error::WriteTxnActive` if it does not). Another process's writer holds
    /// the file for as long as it has it open: see [`EnvOptions::lock_wait`].
    pub fn begin_write_wait(&self, timeout: std::time::Duration) -> Result<WriteTxn> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        Ok(WriteTxn::new(
            self.backend.begin_write_wait(timeout)?,
            self.durability,
        ))
    }

    /// Verifies every page of the last committed state: checksums, node structure, key order,
    /// fences, leaf depth, overflow chains, key counts, and that every page of the file is
    /// reachable exactly once (from a tree, the meta pages or the free list). Faults are listed
    /// in the report (see [`CheckReport::into_result`] for an `Error::Corrupted`); an I/O error
    /// is returned as such.
    pub fn check(&self) -> Result<CheckReport> {
        let snap = self.begin_read()?;
        let mut report = CheckReport {
            page_size: self.page_size(),
            ..CheckReport::default()
        };
        let mut owners = Owners::default();
        let pp = match self.backend.pager_pages(&snap) {
            Ok(pp) => pp,
            Err(Error::Corrupted { page, what }) => {
                report.faults.push(CheckFault {
                    page: Some(page),
                    what,
                });
                PagerPages::default()
            }
            Err(e) => return Err(e),
        };
        report.total_pages = pp.total_pages;
        report.commit = pp.commit;
        report.meta_pages = pp.meta_pages.len() as u64;
        report.free_pages = pp.free_pages.len() as u64;
        report.notes = pp.meta.notes;
        for (page, what) in pp.meta.faults {
            report.faults.push(CheckFault { page, what });
        }
        for &id in &pp.meta_pages {
            owners.claim(id, "the pager", &mut report.faults);
        }
        for &id in &pp.free_pages {
            owners.claim(id, "the free list", &mut report.faults);
        }
        check::check_trees(snap.pages(), snap.catalog_root(), &mut owners, &mut report);
        // Bounded by the file, not by the page count the meta claims (a forged count would
        // make this loop, and the faults it lists, as large as the count).
        let pages = pp.total_pages.min(pp.meta.file_pages);
        let mut leaked = 0u64;
        for id in 0..pages {
            if !owners.contains(id) {
                leaked += 1;
                if leaked <= MAX_LISTED_LEAKS {
                    report.faults.push(CheckFault {
                        page: Some(id),
                        what: "page is neither in a tree nor on the free list (leaked)".into(),
                    });
                }
            }
        }
        if leaked > MAX_LISTED_LEAKS {
            report.faults.push(CheckFault {
                page: None,
                what: format!("{} more leaked pages", leaked - MAX_LISTED_LEAKS),
            });
        }
        if pp.total_pages > 0 {
            for id in owners.pages() {
                if id >= pp.total_pages {
                    report.faults.push(CheckFault {
                        page: Some(id),
                        what: format!(
                            "page is beyond the end of the file ({} pages)",
                            pp.total_pages
                        ),
                    });
                }
            }
        }
        Ok(report)
    }

    /// How the file's pages are used, from the last committed state's meta page and free list
    /// (cheap: no tree is walked). `live` pages hold the catalog and the databases.
    pub fn space(&self) -> Result<SpaceUsage> {
        let snap = self.begin_read()?;
        let pp = self.backend.pager_pages(&snap)?;
        let page = self.page_size() as u64;
        let (free, pager) = (pp.free_pages.len() as u64, pp.meta_pages.len() as u64);
        Ok(SpaceUsage {
            page_size: self.page_size(),
            pages: pp.total_pages,
            free_pages: free,
            pager_pages: pager,
            live_bytes: pp.total_pages.saturating_sub(free + pager) * page,
            free_bytes: free * page,
            pager_bytes: pager * page,
        })
    }

    /// One page decoded, for debugging (`tersedb dump`). Tree nodes are decoded with the format
    /// of the database that owns them.
    pub fn describe_page(&self, id: PageId) -> Result<String> {
        let snap = self.begin_read()?;
        match check::describe_page(snap.pages(), snap.catalog_root(), id)? {
            Some(s) => Ok(s),
            None => {
                let page = snap.pages().page(id)?;
                let kind = page
                    .get(crate::storage::PAGE_KIND_OFFSET)
                    .copied()
                    .unwrap_or(0);
                Ok(format!(
                    "page {id}: pager page of kind {kind} ({:?})",
                    crate::storage::PageKind::from_u8(kind)
                ))
            }
        }
    }
}
