//! In-memory page stores for unit tests: [`MemSink`], a tiny page sink for the tree's tests, and
//! [`MemPager`], a stand-in for the pager under the transaction layer: committed pages are
//! shared immutable `Arc`s, a writer works on its own copy of the page map and publishes it
//! atomically at commit. A snapshot holds its own map, so reusing a freed page id in a later
//! transaction can never change what an older reader sees. (`Env::in_memory` runs the real
//! pager over `storage::MemStorage`.)

use crate::error::{Error, PageId, Result};
use crate::storage::{Page, PageSink, PageSource};
use std::collections::{BTreeSet, HashMap};

#[derive(Debug)]
pub struct MemSink {
    pub page_size: usize,
    pub clean: HashMap<PageId, Page>,
    pub dirty: HashMap<PageId, Vec<u8>>,
    pub freed: BTreeSet<PageId>,
    pub next: PageId,
}

impl MemSink {
    pub fn new(page_size: usize) -> Self {
        MemSink {
            page_size,
            clean: HashMap::new(),
            dirty: HashMap::new(),
            freed: BTreeSet::new(),
            next: 2,
        }
    }

    /// Makes every dirty page clean (a "commit"); freed pages stay free for reuse.
    pub fn commit(&mut self) {
        for (id, p) in self.dirty.drain() {
            self.clean.insert(id, Page::new(p.into()));
        }
    }

    /// Pages allocated and not freed.
    #[cfg(test)]
    pub fn live(&self) -> BTreeSet<PageId> {
        self.clean
            .keys()
            .chain(self.dirty.keys())
            .copied()
            .collect()
    }
}

impl PageSource for MemSink {
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        if let Some(p) = self.dirty.get(&id) {
            return Ok(Page::new(p.as_slice().into()));
        }
        self.clean
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::Corrupted {
                page: id,
                what: "no such page".into(),
            })
    }
}

impl PageSink for MemSink {
    fn alloc(&mut self) -> Result<PageId> {
        let id = match self.freed.pop_first() {
            Some(id) => id,
            None => {
                self.next += 1;
                self.next - 1
            }
        };
        self.dirty.insert(id, vec![0; self.page_size]);
        Ok(id)
    }
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]> {
        self.dirty
            .get_mut(&id)
            .map(|v| v.as_mut_slice())
            .ok_or_else(|| Error::InvalidArgument(format!("page {id} is not dirty")))
    }
    fn is_dirty(&self, id: PageId) -> bool {
        self.dirty.contains_key(&id)
    }
    fn cow(&mut self, id: PageId) -> Result<PageId> {
        if self.dirty.contains_key(&id) {
            return Ok(id);
        }
        let src = self.page(id)?;
        let n = self.alloc()?;
        self.page_mut(n)?.copy_from_slice(&src);
        self.free(id)?;
        Ok(n)
    }
    fn free(&mut self, id: PageId) -> Result<()> {
        let was = self.dirty.remove(&id).is_some() | self.clean.remove(&id).is_some();
        if !was || !self.freed.insert(id) {
            return Err(Error::InvalidArgument(format!("double free of page {id}")));
        }
        Ok(())
    }
}

/// An in-memory stand-in for the pager, for unit tests of the transaction layer: a committed
/// state swapped atomically at commit; a writer works on a copy of the page map.
#[derive(Debug, Default)]
pub struct MemPager {
    pub state: std::sync::Mutex<std::sync::Arc<Committed>>,
    page_size: usize,
    writer: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default, Clone)]
pub struct Committed {
    pub pages: HashMap<PageId, Page>,
    pub freed: BTreeSet<PageId>,
    pub next: PageId,
    pub root: PageId,
}

#[derive(Debug)]
pub struct MemSnapshot {
    state: std::sync::Arc<Committed>,
    page_size: usize,
}

#[derive(Debug)]
pub struct MemWriter {
    sink: MemSink,
    root: PageId,
    pager: std::sync::Arc<MemPager>,
    locked: bool,
}

impl Drop for MemWriter {
    fn drop(&mut self) {
        if self.locked {
            self.pager
                .writer
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }
}

impl MemPager {
    pub fn new(page_size: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(MemPager {
            state: std::sync::Mutex::new(std::sync::Arc::new(Committed {
                next: 2,
                ..Committed::default()
            })),
            page_size,
            writer: std::sync::atomic::AtomicBool::new(false),
        })
    }
    pub fn read(&self) -> MemSnapshot {
        MemSnapshot {
            state: match self.state.lock() {
                Ok(g) => g.clone(),
                Err(p) => p.into_inner().clone(),
            },
            page_size: self.page_size,
        }
    }
    /// The writer; `Error::WriteTxnActive` while another one lives.
    pub fn try_write(self: &std::sync::Arc<Self>) -> Result<MemWriter> {
        use std::sync::atomic::Ordering;
        if self
            .writer
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::WriteTxnActive);
        }
        Ok(self.write_unlocked())
    }

    /// A writer without the lock (tests that drive the pager directly).
    #[cfg(test)]
    pub fn write(self: &std::sync::Arc<Self>) -> MemWriter {
        let mut w = self.write_unlocked();
        w.locked = false;
        w
    }

    fn write_unlocked(self: &std::sync::Arc<Self>) -> MemWriter {
        let st = match self.state.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let mut sink = MemSink::new(self.page_size);
        sink.clean = st.pages.clone();
        sink.freed = st.freed.clone();
        sink.next = st.next;
        MemWriter {
            sink,
            root: st.root,
            pager: self.clone(),
            locked: true,
        }
    }
}

impl PageSource for MemSnapshot {
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        self.state
            .pages
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::Corrupted {
                page: id,
                what: "no such page".into(),
            })
    }
}

impl crate::txn::Snapshot for MemSnapshot {
    fn root(&self) -> PageId {
        self.state.root
    }
    fn source(&self) -> &dyn PageSource {
        self
    }
}

impl PageSource for MemWriter {
    fn page_size(&self) -> usize {
        self.sink.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        self.sink.page(id)
    }
}

impl PageSink for MemWriter {
    fn alloc(&mut self) -> Result<PageId> {
        self.sink.alloc()
    }
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]> {
        self.sink.page_mut(id)
    }
    fn is_dirty(&self, id: PageId) -> bool {
        self.sink.is_dirty(id)
    }
    fn cow(&mut self, id: PageId) -> Result<PageId> {
        self.sink.cow(id)
    }
    fn free(&mut self, id: PageId) -> Result<()> {
        self.sink.free(id)
    }
}

impl crate::txn::Writer for MemWriter {
    fn root(&self) -> PageId {
        self.root
    }
    fn set_root(&mut self, root: PageId) {
        self.root = root;
    }
    fn source(&self) -> &dyn PageSource {
        self
    }
    fn commit(mut self: Box<Self>, _d: crate::storage::Durability) -> Result<()> {
        self.sink.commit();
        let st = Committed {
            pages: std::mem::take(&mut self.sink.clean),
            freed: std::mem::take(&mut self.sink.freed),
            next: self.sink.next,
            root: self.root,
        };
        if let Ok(mut g) = self.pager.state.lock() {
            *g = std::sync::Arc::new(st);
        }
        Ok(())
    }
    fn abort(self: Box<Self>) {}
}

/// The in-memory pager as an `Env` backend.
#[derive(Debug)]
pub struct MemBackend(pub std::sync::Arc<MemPager>);

impl crate::env::Backend for MemBackend {
    fn page_size(&self) -> usize {
        self.0.page_size
    }
    fn begin_read(&self) -> Result<Box<dyn crate::txn::Snapshot>> {
        Ok(Box::new(self.0.read()))
    }
    fn begin_write(&self) -> Result<Box<dyn crate::txn::Writer>> {
        Ok(Box::new(self.0.try_write()?))
    }
    fn pager_pages(&self, _snap: &crate::txn::ReadTxn) -> Result<crate::check::PagerPages> {
        let st = self.0.read().state;
        Ok(crate::check::PagerPages {
            total_pages: st.next,
            meta_pages: vec![0, 1],
            free_pages: st.freed.iter().copied().collect(),
            meta: crate::storage::MetaCheck {
                file_pages: st.next,
                ..Default::default()
            },
            ..Default::default()
        })
    }
}

/// An `Env` over the in-memory pager (tests reach into the pager).
#[cfg(test)]
pub fn mem_env(page_size: usize) -> (crate::Env, std::sync::Arc<MemPager>) {
    let p = MemPager::new(page_size);
    let env = crate::Env::from_backend(
        std::sync::Arc::new(MemBackend(p.clone())),
        &crate::EnvOptions::default(),
        false,
    );
    (env, p)
}
