//! The reader table: readers in other processes, registered where the writer can see them
//! (LMDB's lock file, built from plain files and `flock`, without shared memory or `unsafe`).
//!
//! Beside the data file `F` lives a directory `F-readers/`:
//!
//! ```text
//! F-readers/writer   the writer's process id, decimal (for the `Locked` message only)
//! F-readers/rN       one slot per read-only environment, N = 0, 1, ...:
//!                      0..8    txn id of the oldest snapshot it holds, u64 LE (u64::MAX: none)
//!                      8..16   the same, bit-inverted (a read racing a write is detected)
//!                      16..24  process id, u64 LE (informational)
//! ```
//!
//! A read-only environment claims a slot by taking an exclusive `flock` on it and holds it for
//! its lifetime. Before it reads the newest commit from the meta pages, it publishes the commit
//! it saw last (a lower bound of what it will read; see `Pager::begin_read_shared`), and when a
//! snapshot ends it publishes its oldest remaining snapshot, or none.
//!
//! The writer, at the start of each write transaction, tries a shared lock on every slot: a slot
//! it can lock has no live holder (a process that died released its lock) and is ignored; the
//! others give the oldest snapshot still read, and pages freed after it are not reused. Slots
//! are never deleted (a reader might be claiming the file being unlinked); there are as many as
//! readers ever were at once.
//!
//! Readers never wait for the writer and the writer never waits for readers: both only try
//! locks. The data file itself is locked by the writer alone (exclusively).
//!
//! Slot files are written by other processes: every read of them is checked.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const SLOT_LEN: usize = 24;
const IDLE: u64 = u64::MAX;

/// The directory of the reader table of data file `path`.
pub fn dir_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-readers");
    PathBuf::from(s)
}

fn encode(txn: u64, pid: u32) -> [u8; SLOT_LEN] {
    let mut b = [0u8; SLOT_LEN];
    for (dst, v) in b.chunks_exact_mut(8).zip([txn, !txn, pid as u64]) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// A read-only environment's slot in the table.
#[derive(Debug)]
pub struct ReaderSlot {
    file: File,
    path: PathBuf,
    published: u64,
    pid: u32,
}

impl ReaderSlot {
    /// Claims a free slot (one whose holder is gone) or makes a new one.
    pub fn claim(path: &Path) -> io::Result<ReaderSlot> {
        let dir = dir_of(path);
        std::fs::create_dir_all(&dir)?;
        // Slots r0, r1, ... in order: the first one free is taken, past the last a new one.
        let mut n: u64 = 0;
        loop {
            let p = dir.join(format!("r{n}"));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&p)?;
            match file.try_lock() {
                Ok(()) => {
                    let mut slot = ReaderSlot {
                        file,
                        path: p,
                        published: 0,
                        pid: std::process::id(),
                    };
                    slot.publish(IDLE)?;
                    return Ok(slot);
                }
                Err(TryLockError::WouldBlock) => n += 1,
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    /// Publishes the oldest snapshot this environment holds (`None`: none).
    pub fn set(&mut self, oldest: Option<u64>) -> io::Result<()> {
        self.publish(oldest.unwrap_or(IDLE))
    }

    fn publish(&mut self, txn: u64) -> io::Result<()> {
        if txn != self.published {
            self.file.write_all_at(&encode(txn, self.pid), 0)?;
            self.published = txn;
        }
        Ok(())
    }

    /// The slot's file (for tests and messages).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The writer's view of the table: the slot files it has opened so far.
#[derive(Debug)]
pub struct ReaderScan {
    dir: PathBuf,
    /// Slots `r0 ..`, opened in order: readers create them in order and never delete them, so
    /// one failed open of the next name says there are no more.
    slots: Vec<File>,
}

impl ReaderScan {
    pub fn new(path: &Path) -> ReaderScan {
        ReaderScan {
            dir: dir_of(path),
            slots: Vec::new(),
        }
    }

    /// The oldest snapshot held by a live reader of the table, if any. A slot created after
    /// this looks is missed, which is safe: its reader publishes before it reads the newest
    /// commit, which is at least the one this writer starts from.
    pub fn oldest(&mut self) -> io::Result<Option<u64>> {
        loop {
            let p = self.dir.join(format!("r{}", self.slots.len()));
            match OpenOptions::new().read(true).open(&p) {
                Ok(f) => self.slots.push(f),
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(e) => return Err(e),
            }
        }
        let mut oldest: Option<u64> = None;
        for f in &self.slots {
            match f.try_lock_shared() {
                // No holder: free, or its process died. Let go at once so a reader can claim it.
                Ok(()) => {
                    f.unlock()?;
                    continue;
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(e),
            }
            let txn = read_slot(f)?;
            if txn != IDLE {
                oldest = Some(oldest.map_or(txn, |o| o.min(txn)));
            }
        }
        Ok(oldest)
    }
}

/// A live slot's published txn; a value caught half-written is read again, and taken as 0
/// (protect everything) if it never reads back whole.
fn read_slot(f: &File) -> io::Result<u64> {
    for _ in 0..100 {
        let mut b = [0u8; SLOT_LEN];
        match f.read_exact_at(&mut b, 0) {
            Ok(()) => {}
            // A slot claimed a moment ago and not yet written.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                std::thread::yield_now();
                continue;
            }
            Err(e) => return Err(e),
        }
        let word = |at: usize| {
            b.get(at..at + 8)
                .and_then(|w| w.try_into().ok())
                .map(u64::from_le_bytes)
        };
        if let (Some(t), Some(c)) = (word(0), word(8)) {
            if t == !c {
                return Ok(t);
            }
        }
        std::thread::yield_now();
    }
    Ok(0)
}

/// Records the writer's process id (best effort: it only improves the `Locked` message).
pub fn note_writer(path: &Path) {
    let dir = dir_of(path);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("writer"), std::process::id().to_string());
    }
}

/// Who holds the writer's lock on `path`, in words.
pub fn writer_holder(path: &Path) -> String {
    let pid = std::fs::read_to_string(dir_of(path).join("writer"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    match pid {
        Some(p) if p == std::process::id() => {
            format!("another handle in this process ({p})")
        }
        Some(p) if Path::new(&format!("/proc/{p}")).exists() || !Path::new("/proc").exists() => {
            format!("process {p}")
        }
        _ => format!(
            "a process that did not record itself (a reader without write access to {}, or \
             an older tersedb)",
            dir_of(path).display()
        ),
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
    fn slots_are_claimed_published_and_freed() {
        let path = std::env::temp_dir().join(format!("tersedb-readers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(dir_of(&path));
        let mut scan = ReaderScan::new(&path);
        assert_eq!(scan.oldest().unwrap(), None);
        let mut a = ReaderSlot::claim(&path).unwrap();
        let mut b = ReaderSlot::claim(&path).unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(scan.oldest().unwrap(), None, "idle slots hold nothing");
        a.set(Some(7)).unwrap();
        b.set(Some(5)).unwrap();
        assert_eq!(scan.oldest().unwrap(), Some(5));
        let b_path = b.path().to_path_buf();
        drop(b); // its lock goes with it, as when a process dies
        assert_eq!(scan.oldest().unwrap(), Some(7), "a stale slot is ignored");
        let c = ReaderSlot::claim(&path).unwrap();
        assert_eq!(c.path(), b_path, "the free slot is reused");
        assert_eq!(scan.oldest().unwrap(), Some(7));
        a.set(None).unwrap();
        assert_eq!(scan.oldest().unwrap(), None);
        drop((a, c));
        let _ = std::fs::remove_dir_all(dir_of(&path));
    }
}
