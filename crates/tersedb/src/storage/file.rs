//! [`FileStorage`]: the [`Storage`] trait over a real file, with positional I/O (`pread` /
//! `pwrite`) so several threads read at once without a shared cursor.
//!
//! Locking: a handle opened for writing holds an exclusive advisory lock (`flock`), a read-only
//! handle a shared one, both taken without waiting. A conflicting handle — in another process or
//! in this one — gets [`Error::Locked`]. The lock goes away with the handle.

use super::Storage;
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct FileStorage {
    file: File,
    /// The file length at the last sync (`u64::MAX` before the first one): when the length has
    /// changed since, `sync` uses `sync_all` so the new size is durable too.
    synced_len: AtomicU64,
}

fn lock(file: &File, exclusive: bool) -> Result<()> {
    // `File::try_lock` is std since Rust 1.89 (the workspace's declared rust-version is older).
    #[allow(clippy::incompatible_msrv)]
    let r = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match r {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(Error::Locked),
        Err(TryLockError::Error(e)) => Err(Error::Io(e)),
    }
}

impl FileStorage {
    /// Creates a new, empty file at `path` (an existing file is an error) and locks it for
    /// writing.
    pub fn create(path: impl AsRef<Path>) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        lock(&file, true)?;
        Ok(FileStorage::wrap(file))
    }

    /// Opens an existing file; `read_only` takes a shared lock, otherwise an exclusive one.
    pub fn open(path: impl AsRef<Path>, read_only: bool) -> Result<FileStorage> {
        let file = OpenOptions::new().read(true).write(!read_only).open(path)?;
        lock(&file, !read_only)?;
        Ok(FileStorage::wrap(file))
    }

    /// Opens `path` for writing, creating an empty file when there is none (check
    /// [`Storage::is_empty`] to decide between `Pager::create` and `Pager::open`).
    pub fn open_or_create(path: impl AsRef<Path>) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        lock(&file, true)?;
        Ok(FileStorage::wrap(file))
    }

    fn wrap(file: File) -> FileStorage {
        FileStorage {
            file,
            synced_len: AtomicU64::new(u64::MAX),
        }
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
        let len = self.len()?;
        if self.synced_len.load(Ordering::Acquire) == len {
            self.file.sync_data()
        } else {
            self.file.sync_all()?;
            self.synced_len.store(len, Ordering::Release);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tersedb-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn io_and_locks() {
        let p = temp_path("a.db");
        let s = FileStorage::create(&p).unwrap();
        assert!(s.is_empty().unwrap());
        s.write_at(10, b"hello").unwrap();
        assert_eq!(s.len().unwrap(), 15);
        let mut b = [0u8; 5];
        s.read_at(10, &mut b).unwrap();
        assert_eq!(&b, b"hello");
        assert_eq!(
            s.read_at(12, &mut b).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        s.sync().unwrap();
        s.sync().unwrap();
        assert!(matches!(FileStorage::open(&p, false), Err(Error::Locked)));
        assert!(matches!(FileStorage::open(&p, true), Err(Error::Locked)));
        assert!(matches!(
            FileStorage::open_or_create(&p),
            Err(Error::Locked)
        ));
        drop(s);
        let r1 = FileStorage::open(&p, true).unwrap();
        let r2 = FileStorage::open(&p, true).unwrap();
        assert!(matches!(FileStorage::open(&p, false), Err(Error::Locked)));
        r2.read_at(10, &mut b).unwrap();
        assert_eq!(&b, b"hello");
        drop((r1, r2));
        let w = FileStorage::open(&p, false).unwrap();
        w.set_len(3).unwrap();
        assert_eq!(w.len().unwrap(), 3);
        drop(w);
        assert!(
            FileStorage::create(&p).is_err(),
            "create refuses an existing file"
        );
        std::fs::remove_file(&p).unwrap();
    }
}
