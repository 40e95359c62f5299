//! Crash consistency at pager level, through the fault-injecting storage: for EVERY sync point
//! of a multi-transaction workload, a crash that drops the unsynced writes, tears the last
//! write, applies a random subset of them, or keeps them all (process crash) reopens to exactly
//! the last committed state — or, when the crash hit after the in-flight commit's meta page
//! was written, exactly that commit's state. The same for a process crash at every write of a
//! workload that mixes `Durability::None` and `Immediate`. Then failed writes, failed fsyncs
//! and a full disk: a clear error, `PreviousIo` until reopen, committed data intact.

mod storage_common;

use storage_common::{assert_accounting, read_chain, seed, snapshot, write_chain};
use tersedb::storage::{CrashMode, Durability, FaultyStorage, MemStorage, Pager, PagerOptions};
use tersedb::Error;

const PAGE: usize = 512;

fn opts() -> PagerOptions {
    PagerOptions {
        page_size: PAGE,
        cache_bytes: 0,
        read_only: false,
    }
}

/// What a workload run achieved before the storage failed.
#[derive(Debug, Default)]
struct Outcome {
    /// Whether `Pager::create` succeeded.
    created: bool,
    /// The chain after each successful commit (index 0: the empty database).
    committed: Vec<Vec<u64>>,
    /// The commit that failed: its txn id and the state it would have made.
    inflight: Option<(u64, Vec<u64>)>,
    /// The error that stopped the workload.
    error: Option<String>,
}

/// Chain lengths of the workload's transactions (free lists of several 512-byte pages).
const LENGTHS: [usize; 9] = [100, 5, 140, 3, 70, 0, 90, 160, 2];

/// Runs the workload on `storage` until an operation fails. Every third transaction is first
/// attempted and aborted; the pager is reopened halfway.
fn workload(storage: &FaultyStorage, durability: impl Fn(usize) -> Durability) -> Outcome {
    let mut out = Outcome::default();
    let mut pager = match Pager::create(Box::new(storage.clone()), &opts()) {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.created = true;
    out.committed.push(Vec::new());
    for (i, &len) in LENGTHS.iter().enumerate() {
        if i == LENGTHS.len() / 2 {
            drop(pager);
            pager = match Pager::open(Box::new(storage.clone()), &opts()) {
                Ok(p) => p,
                Err(e) => {
                    out.error = Some(e.to_string());
                    return out;
                }
            };
        }
        let values: Vec<u64> = (0..len as u64).map(|k| (i as u64) << 32 | k).collect();
        if i % 3 == 0 {
            let mut w = pager.begin_write().unwrap();
            write_chain(&mut w, &[7; 12]);
            w.abort();
        }
        let mut w = match pager.begin_write() {
            Ok(w) => w,
            Err(e) => {
                out.error = Some(e.to_string());
                return out;
            }
        };
        let txn = w.txn_id();
        write_chain(&mut w, &values);
        match w.commit(durability(i)) {
            Ok(()) => out.committed.push(values),
            Err(e) => {
                out.inflight = Some((txn, values));
                out.error = Some(e.to_string());
                return out;
            }
        }
    }
    out
}

/// Opens `image` and checks it holds the state `out` allows: the last commit, or the
/// in-flight one when `image` carries its meta page as written.
fn check_image(image: Vec<u8>, out: &Outcome, current: &[u8], what: &str) {
    let mem = MemStorage::from_bytes(image.clone());
    let opened = Pager::open(Box::new(mem.clone()), &opts());
    if !out.created {
        // The crash hit the creation: no database, or an empty one.
        match opened {
            Err(Error::BadFormat(_)) | Err(Error::Corrupted { .. }) => return,
            Ok(p) => {
                assert!(snapshot(&p).is_empty(), "{what}");
                return;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
    let pager = opened.unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let last = out.committed.last().unwrap();
    let expected = match &out.inflight {
        Some((txn, state)) => {
            let slot = (*txn % 2) as usize * PAGE;
            // The failed commit's meta page was written (its txn id is in its slot) and
            // reached the image intact.
            let written = current
                .get(slot..slot + PAGE)
                .filter(|m| m[24..32] == txn.to_le_bytes());
            if written.is_some() && image.get(slot..slot + PAGE) == written {
                state
            } else {
                last
            }
        }
        None => last,
    };
    assert_eq!(&snapshot(&pager), expected, "{what}");
    assert_accounting(&pager.begin_read().unwrap());
    // The recovered file is fully usable: write, commit, reopen.
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[1, 2, 3]);
    w.commit(Durability::Immediate).unwrap();
    drop(pager);
    let pager = Pager::open(Box::new(mem), &opts()).unwrap();
    assert_eq!(snapshot(&pager), vec![1, 2, 3], "{what}");
    assert_accounting(&pager.begin_read().unwrap());
}

#[test]
fn crash_at_every_sync_point() {
    let base = seed(0x5EED);
    let clean = FaultyStorage::new();
    let full = workload(&clean, |_| Durability::Immediate);
    assert!(full.error.is_none(), "{:?}", full.error);
    assert_eq!(full.committed.len(), LENGTHS.len() + 1);
    let syncs = clean.syncs();
    assert_eq!(syncs, 1 + 2 * LENGTHS.len() as u64);
    let seeds = if storage_common::long() { 64 } else { 6 };
    for k in 1..=syncs {
        let s = FaultyStorage::new();
        s.crash_at_sync(k);
        let out = workload(&s, |_| Durability::Immediate);
        assert!(s.is_dead() && out.error.is_some(), "sync {k}: {out:?}");
        let current = s.current();
        let mut modes = vec![CrashMode::DropUnsynced, CrashMode::ApplyAll];
        for j in 0..seeds {
            modes.push(CrashMode::TearLast { seed: base + j });
            modes.push(CrashMode::RandomSubset { seed: base + j });
        }
        for mode in modes {
            check_image(
                s.image(mode),
                &out,
                &current,
                &format!("sync {k}, {mode:?}"),
            );
        }
    }
}

#[test]
fn process_crash_at_every_write() {
    // Durability::None commits must be atomic against a process crash: every completed write
    // survives, so the crash image is the storage as it is.
    let mixed = |i: usize| {
        if i % 2 == 0 {
            Durability::None
        } else {
            Durability::Immediate
        }
    };
    let clean = FaultyStorage::new();
    assert!(workload(&clean, mixed).error.is_none());
    let writes = clean.writes();
    assert!(writes > 20, "{writes}");
    for k in 1..=writes {
        let s = FaultyStorage::new();
        s.crash_at_write(k);
        let out = workload(&s, mixed);
        assert!(out.error.is_some(), "write {k}");
        let current = s.current();
        check_image(
            s.image(CrashMode::ApplyAll),
            &out,
            &current,
            &format!("write {k}"),
        );
    }
}

/// After a failed write or sync: the commit reports an error, the pager refuses writes with
/// `PreviousIo`, readers still see the last commit, and a reopen finds it (or the failed
/// commit, when its meta page was written before the failure).
fn check_failure(s: &FaultyStorage, what: &str) {
    let mut out = Outcome::default();
    let pager = Pager::create(Box::new(s.clone()), &opts());
    let Ok(pager) = pager else {
        return; // failed during creation: nothing to keep
    };
    out.created = true;
    out.committed.push(Vec::new());
    for (i, &len) in LENGTHS.iter().enumerate() {
        let values: Vec<u64> = (0..len as u64).map(|k| (i as u64) << 32 | k).collect();
        let mut w = pager.begin_write().unwrap();
        let txn = w.txn_id();
        write_chain(&mut w, &values);
        match w.commit(Durability::Immediate) {
            Ok(()) => out.committed.push(values),
            Err(e) => {
                assert!(
                    matches!(e, Error::Io(_) | Error::DiskFull),
                    "{what}: unexpected error {e:?}"
                );
                assert!(pager.is_poisoned());
                out.inflight = Some((txn, values));
                break;
            }
        }
    }
    if out.inflight.is_none() {
        return; // the fault was beyond the workload
    }
    assert!(
        matches!(pager.begin_write(), Err(Error::PreviousIo)),
        "{what}"
    );
    assert!(
        matches!(pager.begin_write(), Err(Error::PreviousIo)),
        "{what}"
    );
    assert_eq!(&snapshot(&pager), out.committed.last().unwrap(), "{what}");
    drop(pager);
    let current = s.current();
    check_image(s.image(CrashMode::ApplyAll), &out, &current, what);
    check_image(s.image(CrashMode::DropUnsynced), &out, &current, what);
}

#[test]
fn failed_writes_and_syncs() {
    let clean = FaultyStorage::new();
    assert!(workload(&clean, |_| Durability::Immediate).error.is_none());
    for k in 1..=clean.writes() {
        let s = FaultyStorage::new();
        s.fail_write_at(k);
        check_failure(&s, &format!("write {k} fails"));
    }
    for k in 1..=clean.syncs() {
        let s = FaultyStorage::new();
        s.fail_sync_at(k);
        check_failure(&s, &format!("sync {k} fails"));
    }
}

#[test]
fn disk_full() {
    let clean = FaultyStorage::new();
    assert!(workload(&clean, |_| Durability::Immediate).error.is_none());
    let end = clean.current().len() as u64;
    let mut saw_full = false;
    for cap in (0..end).step_by(PAGE * 7).chain([end - 1]) {
        let s = FaultyStorage::new();
        s.set_capacity(Some(cap));
        let pager = Pager::create(Box::new(s.clone()), &opts());
        if cap < 2 * PAGE as u64 {
            assert!(matches!(pager, Err(Error::DiskFull)), "cap {cap}");
            continue;
        }
        let pager = pager.unwrap();
        let mut last = Vec::new();
        for (i, &len) in LENGTHS.iter().enumerate() {
            let values: Vec<u64> = (0..len as u64).map(|k| (i as u64) << 32 | k).collect();
            let mut w = pager.begin_write().unwrap();
            write_chain(&mut w, &values);
            match w.commit(Durability::Immediate) {
                Ok(()) => last = values,
                Err(Error::DiskFull) => {
                    saw_full = true;
                    assert!(matches!(pager.begin_write(), Err(Error::PreviousIo)));
                    break;
                }
                Err(e) => panic!("cap {cap}: {e:?}"),
            }
        }
        assert_eq!(snapshot(&pager), last, "cap {cap}");
        drop(pager);
        // Reopen (space still short): the last commit is there, and reads work.
        let pager = Pager::open(Box::new(s.clone()), &opts()).unwrap();
        assert_eq!(snapshot(&pager), last, "cap {cap}");
        assert_accounting(&pager.begin_read().unwrap());
        // Small transactions that fit in the free space still commit.
        let mut w = pager.begin_write().unwrap();
        let _ = read_chain(&w, w.root()).unwrap();
        write_chain(&mut w, &[]);
        w.commit(Durability::Immediate).unwrap();
    }
    assert!(saw_full);
}
