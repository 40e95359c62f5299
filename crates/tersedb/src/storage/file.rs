//! [`FileStorage`]: the [`Storage`] of a real file, with positional I/O and an advisory lock
//! (exclusive for a writer, shared for read-only handles) so that a second writer, in this
//! process or another, gets [`Error::Locked`] instead of corrupting the file.

use super::Storage;
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A database file.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    path: PathBuf,
}

impl FileStorage {
    /// Opens `path` (creating it when `create`), locked exclusively for writing, or shared when
    /// `read_only`.
    pub fn open(path: &Path, create: bool, read_only: bool) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(create && !read_only)
            .truncate(false)
            .open(path)?;
        let locked = if read_only {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match locked {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::Locked),
            Err(TryLockError::Error(e)) => return Err(Error::Io(e)),
        }
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
        })
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
