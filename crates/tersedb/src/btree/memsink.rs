//! A tiny in-memory page store for the tree's unit tests: committed pages are shared, dirty
//! pages private, `cow` copies and frees, freed pages are remembered for accounting checks.

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
            self.clean.insert(id, Page::from(p));
        }
    }

    /// Pages allocated and not freed.
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
            return Ok(Page::from(p.as_slice()));
        }
        self.clean.get(&id).cloned().ok_or(Error::Corrupted {
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
            .ok_or(Error::InvalidArgument(format!("page {id} is not dirty")))
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
}

impl MemPager {
    pub fn new(page_size: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(MemPager {
            state: std::sync::Mutex::new(std::sync::Arc::new(Committed {
                next: 2,
                ..Committed::default()
            })),
            page_size,
        })
    }
    pub fn read(&self) -> MemSnapshot {
        MemSnapshot {
            state: self.state.lock().unwrap().clone(),
            page_size: self.page_size,
        }
    }
    pub fn write(self: &std::sync::Arc<Self>) -> MemWriter {
        let st = self.state.lock().unwrap().clone();
        let mut sink = MemSink::new(self.page_size);
        sink.clean = st.pages.clone();
        sink.freed = st.freed.clone();
        sink.next = st.next;
        MemWriter {
            sink,
            root: st.root,
            pager: self.clone(),
        }
    }
}

impl PageSource for MemSnapshot {
    fn page_size(&self) -> usize {
        self.page_size
    }
    fn page(&self, id: PageId) -> Result<Page> {
        self.state.pages.get(&id).cloned().ok_or(Error::Corrupted {
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
        *self.pager.state.lock().unwrap() = std::sync::Arc::new(st);
        Ok(())
    }
    fn abort(self: Box<Self>) {}
}

/// The stand-in pager as an `Env` backend (no write lock: tests use one writer).
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
        Ok(Box::new(self.0.write()))
    }
    fn pager_pages(&self, _snap: &crate::txn::ReadTxn) -> Result<crate::env::PagerPages> {
        let st = self.0.state.lock().unwrap().clone();
        Ok(crate::env::PagerPages {
            total_pages: st.next,
            meta_pages: vec![0, 1],
            free_pages: st.freed.iter().copied().collect(),
        })
    }
}

/// An `Env` over the stand-in pager.
pub fn mem_env(page_size: usize) -> (crate::Env, std::sync::Arc<MemPager>) {
    let p = MemPager::new(page_size);
    let env = crate::Env::from_backend(
        std::sync::Arc::new(MemBackend(p.clone())),
        &crate::EnvOptions::default(),
        false,
    );
    (env, p)
}
