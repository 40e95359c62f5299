//! [`FaultyStorage`]: an in-memory disk with a volatile write cache, for crash and fault tests.
//!
//! Every write, `set_len` and sync is recorded in an operation log. A *crash image* is rebuilt from
//! the log: everything before the `k`-th sync is durable; the writes between sync `k` and sync
//! `k + 1` were in the volatile cache and survive as the [`CrashMode`] says; nothing after sync
//! `k + 1` was issued. Crashing "at every sync point" is `k = 0 ..= sync_count()`.
//!
//! Failures are injected by count: the `n`-th write or sync returns an error, or writes beyond a
//! capacity fail with `StorageFull` (a full disk).

use super::mem::{read_from, write_to};
use super::Storage;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// What survives of the writes issued after the last completed sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// None of them.
    DropUnsynced,
    /// All of them, but the last write only half (a torn page).
    TornLast,
    /// A random subset (seeded), in any order.
    RandomSubset(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
    Sync,
}

#[derive(Debug, Default)]
struct State {
    base: Vec<u8>,
    current: Vec<u8>,
    log: Vec<Op>,
    writes: u64,
    syncs: u64,
    fail_write: Option<u64>,
    fail_sync: Option<u64>,
    capacity: Option<u64>,
}

/// A fault-injecting in-memory disk. Clones share state.
#[derive(Clone, Debug, Default)]
pub struct FaultyStorage {
    state: Arc<Mutex<State>>,
}

impl FaultyStorage {
    /// A disk whose durable content starts as `initial`.
    pub fn new(initial: Vec<u8>) -> FaultyStorage {
        let st = State {
            base: initial.clone(),
            current: initial,
            ..State::default()
        };
        FaultyStorage {
            state: Arc::new(Mutex::new(st)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `n`-th write from now (1-based) fails; `None` clears.
    pub fn fail_nth_write(&self, n: Option<u64>) {
        let mut s = self.lock();
        s.fail_write = n.map(|n| s.writes + n);
    }

    /// The `n`-th sync from now (1-based) fails; `None` clears.
    pub fn fail_nth_sync(&self, n: Option<u64>) {
        let mut s = self.lock();
        s.fail_sync = n.map(|n| s.syncs + n);
    }

    /// Writes that would make the file longer than `bytes` fail with `StorageFull`.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.lock().capacity = bytes;
    }

    /// Syncs completed so far.
    pub fn sync_count(&self) -> u64 {
        self.lock().syncs
    }

    /// The bytes as reads see them now (every write applied).
    pub fn current(&self) -> Vec<u8> {
        self.lock().current.clone()
    }

    /// The disk's content after a power loss just before sync `k + 1` completed (see module docs).
    pub fn crash_image(&self, k: u64, mode: CrashMode) -> Vec<u8> {
        let s = self.lock();
        let mut img = s.base.clone();
        let mut seen = 0u64;
        let mut log = s.log.iter().peekable();
        while seen < k {
            match log.next() {
                Some(Op::Write { offset, data }) => {
                    let _ = write_to(&mut img, *offset, data);
                }
                Some(Op::SetLen(n)) => img.resize(*n as usize, 0),
                Some(Op::Sync) => seen += 1,
                None => break,
            }
        }
        let mut volatile = Vec::new();
        while let Some(op) = log.next_if(|op| !matches!(op, Op::Sync)) {
            volatile.push(op.clone());
        }
        let apply = |img: &mut Vec<u8>, op: &Op| match op {
            Op::Write { offset, data } => {
                let _ = write_to(img, *offset, data);
            }
            Op::SetLen(n) => img.resize(*n as usize, 0),
            Op::Sync => {}
        };
        match mode {
            CrashMode::DropUnsynced => {}
            CrashMode::TornLast => {
                let last_write = volatile.iter().rposition(|o| matches!(o, Op::Write { .. }));
                for (j, op) in volatile.iter().enumerate() {
                    match (Some(j) == last_write, op) {
                        (true, Op::Write { offset, data }) => {
                            let half = data.len() / 2;
                            let _ = write_to(&mut img, *offset, data.get(..half).unwrap_or(&[]));
                        }
                        _ => apply(&mut img, op),
                    }
                }
            }
            CrashMode::RandomSubset(seed) => {
                let mut x = seed | 1;
                let mut order: Vec<usize> = (0..volatile.len()).collect();
                // xorshift-driven shuffle and coin flips: deterministic per seed
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for j in (1..order.len()).rev() {
                    order.swap(j, (next() % (j as u64 + 1)) as usize);
                }
                for j in order {
                    if let Some(op) = volatile.get(j).filter(|_| next() & 1 == 1) {
                        apply(&mut img, op);
                    }
                }
            }
        }
        img
    }
}

impl Storage for FaultyStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.lock().current.len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        read_from(&self.lock().current, offset, buf)
    }
    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        s.writes += 1;
        if s.fail_write == Some(s.writes) {
            return Err(io::Error::other("injected write failure"));
        }
        if let Some(cap) = s.capacity {
            if offset + buf.len() as u64 > cap.max(s.current.len() as u64) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected: disk full",
                ));
            }
        }
        write_to(&mut s.current, offset, buf)?;
        s.log.push(Op::Write {
            offset,
            data: buf.to_vec(),
        });
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut s = self.lock();
        if let Some(cap) = s.capacity {
            if len > cap.max(s.current.len() as u64) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected: disk full",
                ));
            }
        }
        s.current.resize(len as usize, 0);
        s.log.push(Op::SetLen(len));
        Ok(())
    }
    fn sync(&self) -> io::Result<()> {
        let mut s = self.lock();
        s.syncs += 1;
        if s.fail_sync == Some(s.syncs) {
            // The writes may or may not have reached the disk; record no sync point.
            s.syncs -= 1;
            s.fail_sync = None;
            return Err(io::Error::other("injected fsync failure"));
        }
        s.log.push(Op::Sync);
        Ok(())
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
    fn crash_images_follow_sync_points() {
        let d = FaultyStorage::new(vec![]);
        d.write_at(0, &[1, 1]).unwrap();
        d.sync().unwrap();
        d.write_at(2, &[2, 2, 2, 2]).unwrap();
        d.write_at(0, &[3]).unwrap();
        d.sync().unwrap();
        d.write_at(1, &[4]).unwrap();
        assert_eq!(d.sync_count(), 2);
        assert_eq!(d.crash_image(0, CrashMode::DropUnsynced), Vec::<u8>::new());
        assert_eq!(d.crash_image(1, CrashMode::DropUnsynced), vec![1, 1]);
        assert_eq!(
            d.crash_image(1, CrashMode::TornLast),
            vec![1, 1, 2, 2, 2, 2]
        );
        assert_eq!(
            d.crash_image(2, CrashMode::DropUnsynced),
            vec![3, 1, 2, 2, 2, 2]
        );
        assert_eq!(
            d.crash_image(2, CrashMode::TornLast),
            vec![3, 1, 2, 2, 2, 2]
        );
        assert_eq!(d.current(), vec![3, 4, 2, 2, 2, 2]);
    }

    #[test]
    fn injected_failures() {
        let d = FaultyStorage::new(vec![]);
        d.fail_nth_write(Some(2));
        d.write_at(0, &[1]).unwrap();
        assert!(d.write_at(1, &[1]).is_err());
        d.write_at(1, &[1]).unwrap();
        d.fail_nth_sync(Some(1));
        assert!(d.sync().is_err());
        d.sync().unwrap();
        d.set_capacity(Some(4));
        assert_eq!(
            d.write_at(3, &[0, 0]).unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
        d.write_at(2, &[0, 0]).unwrap();
    }
}
