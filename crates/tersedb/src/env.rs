//! The environment: one file holding many named databases, opened over a pager.
//!
//! `Env` is `Send + Sync`: share it (e.g. in an `Arc`) between threads. Read transactions are
//! snapshots and never block; one write transaction at a time (`Error::WriteTxnActive`).

use crate::check::{self, CheckFault, CheckReport, Owners};
use crate::error::{Error, PageId, Result};
use crate::storage::{Durability, DEFAULT_PAGE_SIZE};
use crate::txn::{ReadTxn, Snapshot, WriteTxn, Writer};
use std::sync::Arc;

/// Options for creating or opening an environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvOptions {
    /// Page size for a new file (a power of two, 512 B ..= 64 KiB); an existing file keeps its own.
    pub page_size: usize,
    /// Page cache budget in bytes.
    pub cache_bytes: usize,
    /// Default durability of commits (a write transaction may change its own).
    pub durability: Durability,
}

impl Default for EnvOptions {
    fn default() -> Self {
        EnvOptions {
            page_size: DEFAULT_PAGE_SIZE,
            cache_bytes: 256 << 20,
            durability: Durability::Immediate,
        }
    }
}

impl EnvOptions {
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n;
        self
    }
    pub fn cache_bytes(mut self, n: usize) -> Self {
        self.cache_bytes = n;
        self
    }
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }
}

fn check_page_size(n: usize) -> Result<()> {
    use crate::storage::{MAX_PAGE_SIZE, MIN_PAGE_SIZE};
    if !n.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&n) {
        return Err(Error::InvalidArgument(format!(
            "page size {n} must be a power of two in {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE}"
        )));
    }
    Ok(())
}

/// What the pager tells `check` about its own pages.
#[derive(Clone, Debug, Default)]
pub(crate) struct PagerPages {
    /// Pages in the file.
    pub total_pages: u64,
    /// Meta pages and pages holding the free list.
    pub meta_pages: Vec<PageId>,
    /// Free pages (reusable now or once old readers finish).
    pub free_pages: Vec<PageId>,
}

/// The pager as the environment uses it.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    fn page_size(&self) -> usize;
    fn begin_read(&self) -> Result<Box<dyn Snapshot>>;
    fn begin_write(&self) -> Result<Box<dyn Writer>>;
    /// The pager's own pages and free pages, as of `snap`.
    fn pager_pages(&self, snap: &ReadTxn) -> Result<PagerPages>;
}

/// An environment: one file, many named databases.
#[derive(Debug, Clone)]
pub struct Env {
    backend: Arc<dyn Backend>,
    durability: Durability,
    read_only: bool,
}

impl Env {
    pub(crate) fn from_backend(
        backend: Arc<dyn Backend>,
        opts: &EnvOptions,
        read_only: bool,
    ) -> Env {
        Env {
            backend,
            durability: opts.durability,
            read_only,
        }
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
        report.meta_pages = pp.meta_pages.len() as u64;
        report.free_pages = pp.free_pages.len() as u64;
        for &id in &pp.meta_pages {
            owners.claim(id, "the pager", &mut report.faults);
        }
        for &id in &pp.free_pages {
            owners.claim(id, "the free list", &mut report.faults);
        }
        check::check_trees(snap.pages(), snap.catalog_root(), &mut owners, &mut report);
        if pp.total_pages > 0 {
            // Leaked pages are the gaps between owned ones. A damaged meta page may claim
            // billions of pages: walk the gaps, not every id, and list at most `LIST` pages of
            // a gap, then the rest of it as one fault.
            const LIST: u64 = 64;
            let mut owned: Vec<PageId> = owners.pages();
            owned.retain(|&id| id < pp.total_pages);
            owned.sort_unstable();
            let mut next: PageId = 0;
            for end in owned.into_iter().chain(std::iter::once(pp.total_pages)) {
                for id in next..end.min(next.saturating_add(LIST)) {
                    report.faults.push(CheckFault {
                        page: Some(id),
                        what: "page is neither in a tree nor on the free list (leaked)".into(),
                    });
                }
                if end > next.saturating_add(LIST) {
                    report.faults.push(CheckFault {
                        page: Some(next + LIST),
                        what: format!(
                            "{} more pages up to {} are neither in a tree nor on the free list \
                             (leaked)",
                            end - next - LIST,
                            end - 1
                        ),
                    });
                }
                next = next.max(end.saturating_add(1));
            }
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

    /// One page decoded, for debugging (`tersedb dump`). Tree nodes are decoded with the format
    /// of the database that owns them.
    pub fn describe_page(&self, id: PageId) -> Result<String> {
        let snap = self.begin_read()?;
        match check::describe_page(snap.pages(), snap.catalog_root(), id)? {
            Some(s) => Ok(s),
            None => {
                let page = snap.pages().page(id)?;
                Ok(format!(
                    "page {id}: pager page of kind {} ({:?})",
                    page[crate::storage::PAGE_KIND_OFFSET],
                    crate::storage::PageKind::from_u8(page[crate::storage::PAGE_KIND_OFFSET])
                ))
            }
        }
    }
}
