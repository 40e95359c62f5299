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
        // Before opening: a read-only open of a FIFO would wait for a writer forever.
        if let Ok(m) = std::fs::metadata(path) {
            if !m.is_file() {
                return Err(not_a_file(path, m.is_dir()));
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(create && !read_only)
            .truncate(false)
            .open(path)
            .map_err(|e| open_error(path, read_only, e))?;
        let m = file.metadata()?;
        if !m.is_file() {
            return Err(not_a_file(path, m.is_dir()));
        }
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

/// A path that names a directory, a FIFO, a socket or a device: never a tersedb file.
fn not_a_file(path: &Path, dir: bool) -> Error {
    let what = if dir {
        "a directory"
    } else {
        "not a regular file"
    };
    Error::BadFormat(format!("{} is {what}, not a tersedb file", path.display()))
}

/// An error opening the file, naming it (an `io::Error` alone says "Permission denied" without
/// saying of what); its kind stays, so callers can still match on it.
fn open_error(path: &Path, read_only: bool, e: io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::IsADirectory => not_a_file(path, true),
        io::ErrorKind::StorageFull => Error::DiskFull,
        kind => {
            let hint = if kind == io::ErrorKind::PermissionDenied && !read_only {
                " for writing (open it read-only to read it)"
            } else {
                ""
            };
            Error::Io(io::Error::new(
                kind,
                format!("cannot open {}{hint}: {e}", path.display()),
            ))
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
        // sync_all: the file may have grown, and its length must be durable too.
        self.file.sync_all()
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_name_the_path_and_keep_their_kind() {
        let p = Path::new("/data/x.tdb");
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        match open_error(p, false, denied()) {
            Error::Io(e) => {
                assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
                let text = e.to_string();
                assert!(
                    text.contains("/data/x.tdb") && text.contains("read-only"),
                    "{text}"
                );
            }
            e => panic!("{e:?}"),
        }
        match open_error(p, true, denied()) {
            Error::Io(e) => assert!(!e.to_string().contains("read-only to"), "{e}"),
            e => panic!("{e:?}"),
        }
        let missing = open_error(p, true, io::Error::from(io::ErrorKind::NotFound));
        assert!(matches!(&missing, Error::Io(e) if e.kind() == io::ErrorKind::NotFound));
        assert!(missing.to_string().contains("cannot open /data/x.tdb"));
        let dir = open_error(p, false, io::Error::from(io::ErrorKind::IsADirectory));
        assert!(matches!(&dir, Error::BadFormat(w) if w.contains("is a directory")));
    }
}
