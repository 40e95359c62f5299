//! The environment over the real pager: files (`Env::create`, `Env::open`) or any [`Storage`]
//! (`Env::create_with_storage`, `Env::open_with_storage`, for tests and fault injection).

use crate::env::{Backend, Env, EnvOptions, PagerPages};
use crate::error::{Error, PageId, Result};
use crate::storage::{
    Durability, FileStorage, PageSource, Pager, PagerOptions, ReadPages, Storage, WritePages,
};
use crate::txn::{ReadTxn, Snapshot, Writer};
use std::path::Path;
use std::sync::Arc;

#[derive(Debug)]
struct PagerBackend(Arc<Pager>);

impl Snapshot for ReadPages {
    fn root(&self) -> PageId {
        ReadPages::root(self)
    }
    fn source(&self) -> &dyn PageSource {
        self
    }
    fn txn_id(&self) -> u64 {
        ReadPages::txn_id(self)
    }
    fn pager_pages(&self) -> Result<PagerPages> {
        let (free, list) = self.free_pages();
        let m = self.meta();
        let mut meta_pages = vec![0, 1];
        meta_pages.extend(m.copies.iter().filter(|&&c| c != 0));
        meta_pages.extend(list);
        Ok(PagerPages {
            total_pages: m.page_count,
            commit: m.txn_id,
            meta: self.verify_meta()?,
            meta_pages,
            free_pages: free,
        })
    }
}

impl Writer for WritePages {
    fn root(&self) -> PageId {
        WritePages::root(self)
    }
    fn set_root(&mut self, root: PageId) {
        WritePages::set_root(self, root)
    }
    fn source(&self) -> &dyn PageSource {
        self
    }
    fn commit(self: Box<Self>, durability: Durability) -> Result<()> {
        WritePages::commit(*self, durability)
    }
    fn abort(self: Box<Self>) {
        WritePages::abort(*self)
    }
}

impl Backend for PagerBackend {
    fn page_size(&self) -> usize {
        self.0.page_size()
    }
    fn begin_read(&self) -> Result<Box<dyn Snapshot>> {
        Ok(Box::new(self.0.begin_read()?))
    }
    fn begin_write(&self) -> Result<Box<dyn Writer>> {
        Ok(Box::new(self.0.begin_write()?))
    }
    fn pager_pages(&self, snap: &ReadTxn) -> Result<PagerPages> {
        snap.snapshot().pager_pages()
    }
    fn open_notes(&self) -> Vec<String> {
        self.0.open_notes().to_vec()
    }
}

fn pager_options(opts: &EnvOptions, read_only: bool) -> PagerOptions {
    PagerOptions {
        page_size: opts.page_size,
        cache_bytes: opts.cache_bytes,
        read_only,
        recover: opts.recover,
    }
}

impl Env {
    /// Creates a new environment file at `path` (an error if it exists and is not empty).
    pub fn create(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let path = path.as_ref();
        let storage = FileStorage::open(path, true, false)?;
        if !storage.is_empty()? {
            return Err(Error::InvalidArgument(format!(
                "{} already exists",
                path.display()
            )));
        }
        Self::create_with_storage(Box::new(storage), opts)
    }

    /// Opens an existing environment file for reading and writing.
    pub fn open(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        Self::open_with_storage(
            Box::new(FileStorage::open(path.as_ref(), false, false)?),
            opts,
            false,
        )
    }

    /// Opens `path`, creating it when it does not exist or is empty.
    pub fn open_or_create(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let storage = FileStorage::open(path.as_ref(), true, false)?;
        if storage.is_empty()? {
            Self::create_with_storage(Box::new(storage), opts)
        } else {
            Self::open_with_storage(Box::new(storage), opts, false)
        }
    }

    /// Opens an existing environment file read-only (a shared lock: many readers, no writer).
    pub fn open_read_only(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        Self::open_with_storage(
            Box::new(FileStorage::open(path.as_ref(), false, true)?),
            opts,
            true,
        )
    }

    /// Creates a new environment on empty `storage`.
    pub fn create_with_storage(storage: Box<dyn Storage>, opts: &EnvOptions) -> Result<Env> {
        let pager = Pager::create(storage, &pager_options(opts, false))?;
        Ok(Env::from_backend(
            Arc::new(PagerBackend(pager)),
            opts,
            false,
        ))
    }

    /// Opens an existing environment on `storage`.
    pub fn open_with_storage(
        storage: Box<dyn Storage>,
        opts: &EnvOptions,
        read_only: bool,
    ) -> Result<Env> {
        let pager = Pager::open(storage, &pager_options(opts, read_only))?;
        Ok(Env::from_backend(
            Arc::new(PagerBackend(pager)),
            opts,
            read_only,
        ))
    }
}
