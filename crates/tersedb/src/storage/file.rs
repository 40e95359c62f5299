//! [`FileStorage`]: the [`Storage`] of a real file, with positional I/O and the writer's
//! advisory lock: a second writer, in this process or another, gets [`Error::Locked`] naming
//! the holder instead of corrupting the file. Read-only handles do not lock the data file; they
//! register in the reader table (`storage::readers`) and read beside the writer.

use super::{readers, Storage};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A database file.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    path: PathBuf,
}

impl FileStorage {
    /// Opens `path` (creating it when `create`), locked exclusively for writing, or unlocked
    /// when `read_only`. The writer waits up to `wait` for another writer to close the file.
    pub fn open(path: &Path, create: bool, read_only: bool) -> Result<FileStorage> {
        Self::open_wait(path, create, read_only, Duration::ZERO)
    }

    /// [`FileStorage::open`], waiting up to `wait` for the writer's lock.
    pub fn open_wait(
        path: &Path,
        create: bool,
        read_only: bool,
        wait: Duration,
    ) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(create && !read_only)
            .truncate(false)
            .open(path)?;
        let fs = FileStorage {
            file,
            path: path.to_path_buf(),
        };
        if !read_only {
            // A legacy reader (`lock_shared`) may hold the lock for an instant; retry briefly
            // even without a wait.
            let deadline = Instant::now() + wait.max(Duration::from_millis(20));
            loop {
                match fs.file.try_lock() {
                    Ok(()) => break,
                    Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Err(TryLockError::WouldBlock) => {
                        return Err(Error::Locked {
                            holder: readers::writer_holder(path),
                        })
                    }
                    Err(TryLockError::Error(e)) => return Err(Error::Io(e)),
                }
            }
            readers::note_writer(path);
        }
        Ok(fs)
    }

    /// A read-only handle that cannot register in the reader table (no write access beside the
    /// file) locks the data file shared instead, keeping writers out while it is open.
    pub fn lock_shared(&self) -> Result<()> {
        match self.file.try_lock_shared() {
            Ok(()) => Ok(()),
            Err(TryLockError::WouldBlock) => Err(Error::Locked {
                holder: readers::writer_holder(&self.path),
            }),
            Err(TryLockError::Error(e)) => Err(Error::Io(e)),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Storage for FileStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        // sync_all: the file may have grown, and its length must be durable too.
        self.file.sync_all()
    }
}
