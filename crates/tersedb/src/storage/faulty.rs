//! [`FaultyStorage`]: an in-memory [`Storage`] that models a disk with a volatile write cache
//! and injects faults, for crash and I/O-error tests.
//!
//! It keeps the *durable image* (what survives power loss) and the ordered list of writes since
//! the last successful `sync` (the volatile cache). Reads see every write. A test can
//!
//! * crash: [`FaultyStorage::image`] builds the bytes a reboot would find — unsynced writes
//!   dropped, all applied (a process crash: the OS keeps them), the last one torn, or a random
//!   subset applied (some torn);
//! * kill the "machine" at the Nth sync or Nth write ([`FaultyStorage::crash_at_sync`],
//!   [`FaultyStorage::crash_at_write`]): that call and every later one fail, so the state is
//!   frozen exactly at that point;
//! * fail the Nth write or Nth sync once with an `io::Error` ([`FaultyStorage::fail_write_at`],
//!   [`FaultyStorage::fail_sync_at`]);
//! * simulate a full disk ([`FaultyStorage::set_capacity`]): growing the file beyond the
//!   capacity fails with `io::ErrorKind::StorageFull`.
//!
//! Counters ([`FaultyStorage::syncs`], [`FaultyStorage::writes`]) are 1-based call numbers, so a
//! test runs a workload once to count its sync points and then crashes at each of them.

use super::mem::{read_from, write_into};
use super::Storage;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

/// Size of the unit a torn write is split into (a disk sector).
pub const SECTOR: usize = 512;

/// Which unsynced writes a crash image keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Power loss with nothing of the volatile cache reaching the disk.
    DropUnsynced,
    /// Process crash: the OS keeps every completed write.
    ApplyAll,
    /// Every unsynced write but the last reaches the disk; the last is torn: a random part of
    /// its sectors (and for a write of one sector or less, a random prefix) is applied.
    TearLast { seed: u64 },
    /// Each unsynced write (and length change) reaches the disk with probability 1/2, and one
    /// that does is torn with probability 1/4.
    RandomSubset { seed: u64 },
}

#[derive(Clone, Debug)]
enum Op {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct State {
    durable: Vec<u8>,
    current: Vec<u8>,
    unsynced: Vec<Op>,
    writes: u64,
    syncs: u64,
    fail_write_at: Option<u64>,
    fail_sync_at: Option<u64>,
    crash_write_at: Option<u64>,
    crash_sync_at: Option<u64>,
    capacity: Option<u64>,
    dead: bool,
}

/// Fault-injecting storage; clones share the same state (keep one, give one to the pager).
#[derive(Clone, Debug, Default)]
pub struct FaultyStorage {
    state: Arc<Mutex<State>>,
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

impl FaultyStorage {
    pub fn new() -> FaultyStorage {
        FaultyStorage::default()
    }

    /// Storage whose durable (and current) content is `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> FaultyStorage {
        let s = FaultyStorage::default();
        {
            let mut st = s.lock();
            st.durable = bytes.clone();
            st.current = bytes;
        }
        s
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of `sync` calls so far (including failed ones).
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Number of `write_at` calls so far (including failed ones).
    pub fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// Whether a crash point was reached.
    pub fn is_dead(&self) -> bool {
        self.lock().dead
    }

    /// The `n`th sync call (1-based, counting all calls so far) fails once; the writes before
    /// it stay in the volatile cache.
    pub fn fail_sync_at(&self, n: u64) {
        self.lock().fail_sync_at = Some(n);
    }

    /// The `n`th write call fails once and writes nothing.
    pub fn fail_write_at(&self, n: u64) {
        self.lock().fail_write_at = Some(n);
    }

    /// At the `n`th sync call the machine dies: that call and every later one fail.
    pub fn crash_at_sync(&self, n: u64) {
        self.lock().crash_sync_at = Some(n);
    }

    /// At the `n`th write call (which does not happen) the machine dies.
    pub fn crash_at_write(&self, n: u64) {
        self.lock().crash_write_at = Some(n);
    }

    /// Writes or length changes that would make the file longer than `bytes` fail with
    /// `StorageFull` (and change nothing).
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.lock().capacity = bytes;
    }

    /// The current bytes (what reads see).
    pub fn current(&self) -> Vec<u8> {
        self.lock().current.clone()
    }

    /// The bytes a restart would find after a crash now, per `mode`.
    pub fn image(&self, mode: CrashMode) -> Vec<u8> {
        let st = self.lock();
        let mut img = st.durable.clone();
        let n = st.unsynced.len();
        match mode {
            CrashMode::DropUnsynced => {}
            CrashMode::ApplyAll => img = st.current.clone(),
            CrashMode::TearLast { seed } => {
                let last_write = st
                    .unsynced
                    .iter()
                    .rposition(|op| matches!(op, Op::Write { .. }));
                let mut rng = fastrand_lite(seed);
                for (i, op) in st.unsynced.iter().enumerate() {
                    if Some(i) == last_write {
                        apply_torn(&mut img, op, &mut rng, true);
                    } else {
                        apply(&mut img, op);
                    }
                }
            }
            CrashMode::RandomSubset { seed } => {
                let mut rng = fastrand_lite(seed);
                for op in st.unsynced.iter().take(n) {
                    if rng.next() % 2 == 0 {
                        continue;
                    }
                    if rng.next() % 4 == 0 {
                        apply_torn(&mut img, op, &mut rng, false);
                    } else {
                        apply(&mut img, op);
                    }
                }
            }
        }
        img
    }

    fn check_dead(st: &State) -> io::Result<()> {
        if st.dead {
            Err(injected("the machine crashed"))
        } else {
            Ok(())
        }
    }

    fn check_capacity(st: &State, new_len: u64) -> io::Result<()> {
        match st.capacity {
            Some(cap) if new_len > cap && new_len > st.current.len() as u64 => Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "injected fault: disk full",
            )),
            _ => Ok(()),
        }
    }
}

/// A tiny deterministic generator (splitmix64), so crash images depend only on the seed.
struct Rng(u64);
fn fastrand_lite(seed: u64) -> Rng {
    Rng(seed)
}
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn apply(img: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write { offset, data } => {
            write_into(img, *offset, data).expect("offsets were checked when written")
        }
        Op::SetLen(len) => img.resize(*len as usize, 0),
    }
}

/// Applies part of `op`. With `strict`, a write of several sectors keeps at least one sector
/// old and one new, and a write of one sector applies a proper prefix.
fn apply_torn(img: &mut Vec<u8>, op: &Op, rng: &mut Rng, strict: bool) {
    let Op::Write { offset, data } = op else {
        return apply(img, op);
    };
    let sectors = data.len().div_ceil(SECTOR);
    if sectors <= 1 {
        let keep = rng.below(data.len() as u64) as usize;
        write_into(img, *offset, &data[..keep]).expect("checked");
        return;
    }
    let mut mask: Vec<bool> = (0..sectors).map(|_| rng.next() % 2 == 0).collect();
    if strict {
        let a = rng.below(sectors as u64) as usize;
        let b = (a + 1 + rng.below(sectors as u64 - 1) as usize) % sectors;
        mask[a] = true;
        mask[b] = false;
    }
    // The file grows to the write's end even if only early sectors land (as a sparse tail).
    let end = *offset as usize + data.len();
    if img.len() < end && mask.iter().any(|&m| m) {
        img.resize(end, 0);
    }
    for (i, &m) in mask.iter().enumerate() {
        if m {
            let lo = i * SECTOR;
            let hi = (lo + SECTOR).min(data.len());
            write_into(img, *offset + lo as u64, &data[lo..hi]).expect("checked");
        }
    }
}

impl Storage for FaultyStorage {
    fn len(&self) -> io::Result<u64> {
        let st = self.lock();
        Self::check_dead(&st)?;
        Ok(st.current.len() as u64)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let st = self.lock();
        Self::check_dead(&st)?;
        read_from(&st.current, offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut st = self.lock();
        Self::check_dead(&st)?;
        st.writes += 1;
        let n = st.writes;
        if st.crash_write_at == Some(n) {
            st.dead = true;
            return Err(injected("the machine crashed"));
        }
        if st.fail_write_at == Some(n) {
            return Err(injected("write failed"));
        }
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= isize::MAX as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
        Self::check_capacity(&st, end)?;
        write_into(&mut st.current, offset, buf)?;
        st.unsynced.push(Op::Write {
            offset,
            data: buf.to_vec(),
        });
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.lock();
        Self::check_dead(&st)?;
        if len > isize::MAX as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "length too large",
            ));
        }
        Self::check_capacity(&st, len)?;
        st.current.resize(len as usize, 0);
        st.unsynced.push(Op::SetLen(len));
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut st = self.lock();
        Self::check_dead(&st)?;
        st.syncs += 1;
        let n = st.syncs;
        if st.crash_sync_at == Some(n) {
            st.dead = true;
            return Err(injected("the machine crashed"));
        }
        if st.fail_sync_at == Some(n) {
            return Err(injected("fsync failed"));
        }
        st.durable = st.current.clone();
        st.unsynced.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_cache_and_images() {
        let s = FaultyStorage::new();
        s.write_at(0, &[1; 1024]).unwrap();
        s.sync().unwrap();
        s.write_at(0, &[2; 1024]).unwrap();
        s.write_at(1024, &[3; 1024]).unwrap();
        assert_eq!(s.image(CrashMode::DropUnsynced), vec![1; 1024]);
        let all = s.image(CrashMode::ApplyAll);
        assert_eq!(all, s.current());
        assert_eq!(all.len(), 2048);
        for seed in 0..20 {
            let t = s.image(CrashMode::TearLast { seed });
            assert_eq!(&t[..1024], &[2; 1024][..], "earlier writes applied");
            let tail = &t[1024..];
            assert!(tail.contains(&3) && tail.contains(&0), "last write torn");
            let r = s.image(CrashMode::RandomSubset { seed });
            assert!(r.len() == 1024 || r.len() == 2048);
        }
    }

    #[test]
    fn injected_faults() {
        let s = FaultyStorage::new();
        s.fail_write_at(2);
        s.write_at(0, b"a").unwrap();
        assert!(s.write_at(1, b"b").is_err());
        s.write_at(1, b"c").unwrap();
        assert_eq!(s.current(), b"ac");
        s.fail_sync_at(1);
        assert!(s.sync().is_err());
        assert_eq!(s.image(CrashMode::DropUnsynced), b"");
        s.sync().unwrap();
        assert_eq!(s.image(CrashMode::DropUnsynced), b"ac");
        s.set_capacity(Some(4));
        s.write_at(2, b"xy").unwrap();
        let e = s.write_at(4, b"z").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        s.write_at(0, b"q").unwrap();
        s.crash_at_sync(3);
        assert!(s.sync().is_err());
        assert!(s.is_dead());
        assert!(s.write_at(0, b"w").is_err());
        assert_eq!(s.image(CrashMode::ApplyAll), b"qcxy");
        assert_eq!(s.image(CrashMode::DropUnsynced), b"ac");
    }
}
