//! The environment over the real pager: files (`Env::create`, `Env::open`) or any [`Storage`]
//! (`Env::create_with_storage`, `Env::open_with_storage`, for tests and fault injection).

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::check::PagerPages;
use crate::env::{Backend, Env, EnvOptions};
use crate::error::{Error, PageId, Result};
use crate::storage::readers::{ReaderScan, ReaderSlot};
use crate::storage::Sharing;
use crate::storage::{
    Durability, FileStorage, FreeView, PageSource, Pager, PagerOptions, ReadPages, Storage,
    WritePages,
};
use crate::txn::{ReadTxn, Snapshot, Writer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

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
    fn page_count(&self) -> u64 {
        self.meta().page_count
    }
    fn pager_pages(&self) -> Result<PagerPages> {
        let (free, list) = self.free_pages()?;
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
    fn free_view(&self) -> FreeView {
        WritePages::free_view(self)
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
    fn begin_write_wait(&self, timeout: Duration) -> Result<Box<dyn Writer>> {
        Ok(Box::new(self.0.begin_write_wait(timeout)?))
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

/// The writer's lock on `path`, waiting as the options say.
fn open_writer(path: &Path, create: bool, opts: &EnvOptions) -> Result<FileStorage> {
    FileStorage::open_wait(path, create, false, opts.lock_wait)
}

fn env_of(pager: Arc<Pager>, opts: &EnvOptions, read_only: bool) -> Env {
    Env::from_backend(Arc::new(PagerBackend(pager)), opts, read_only)
}

/// The environment over a file opened for writing: it consults the reader table.
fn writer_env(pager: Result<Arc<Pager>>, path: &Path, opts: &EnvOptions) -> Result<Env> {
    let pager = pager?;
    pager.set_sharing(Sharing::Writer(ReaderScan::new(path)));
    Ok(env_of(pager, opts, false))
}

impl Env {
    /// Creates a new environment file at `path` (an error if it exists and is not empty).
    pub fn create(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let path = path.as_ref();
        let storage = open_writer(path, true, opts)?;
        if !storage.is_empty()? {
            return Err(Error::InvalidArgument(format!(
                "{} already exists",
                path.display()
            )));
        }
        writer_env(
            Pager::create(Box::new(storage), &pager_options(opts, false)),
            path,
            opts,
        )
    }

    /// Opens an existing environment file for reading and writing (`Error::Locked` naming the
    /// holder while another handle writes it; [`EnvOptions::lock_wait`] waits for it).
    pub fn open(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let path = path.as_ref();
        let storage = open_writer(path, false, opts)?;
        writer_env(
            Pager::open(Box::new(storage), &pager_options(opts, false)),
            path,
            opts,
        )
    }

    /// Opens `path`, creating it when it does not exist or is empty.
    ///
    /// ```
    /// use tersedb::{Env, EnvOptions, Table};
    ///
    /// let path = std::env::temp_dir().join(format!("doc-open-{}.tdb", std::process::id()));
    /// # let _ = std::fs::remove_file(&path);
    /// {
    ///     let env = Env::open_or_create(&path, &EnvOptions::default())?;
    ///     let mut w = env.begin_write()?;
    ///     w.open_table(Table::<u32, u64>::def("t"))?.put(&mut w, 1, 10)?;
    ///     w.commit()?; // durable: synced before commit returns (`EnvOptions::durability`)
    /// } // dropping the last handle closes the file
    /// let env = Env::open_or_create(&path, &EnvOptions::default())?;
    /// let r = env.begin_read()?;
    /// assert_eq!(r.open_table(Table::<u32, u64>::def("t"))?.get(&r, 1)?, Some(10));
    /// # drop((r, env));
    /// # let _ = std::fs::remove_file(&path);
    /// # let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&path));
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn open_or_create(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let path = path.as_ref();
        let storage = open_writer(path, true, opts)?;
        let pager = if storage.is_empty()? {
            Pager::create(Box::new(storage), &pager_options(opts, false))
        } else {
            Pager::open(Box::new(storage), &pager_options(opts, false))
        };
        writer_env(pager, path, opts)
    }

    /// Opens an existing environment file read-only, beside the writer (in this process or
    /// another): it registers in the reader table next to the file (`FILE-readers/`), and each
    /// read transaction shows the newest commit. Without write access there, it locks the file
    /// shared instead and keeps writers out while open.
    pub fn open_read_only(path: impl AsRef<Path>, opts: &EnvOptions) -> Result<Env> {
        let path = path.as_ref();
        let storage = FileStorage::open(path, false, true)?;
        let slot = match ReaderSlot::claim(path) {
            Ok(s) => Some(s),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                storage.lock_shared()?;
                None
            }
            Err(e) => return Err(e.into()),
        };
        let pager = Pager::open(Box::new(storage), &pager_options(opts, true))?;
        if let Some(s) = slot {
            pager.set_sharing(Sharing::Reader(s));
        }
        Ok(env_of(pager, opts, true))
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
