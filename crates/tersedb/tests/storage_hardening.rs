//! Pins pager behaviour on the edges the main pager tests do not reach:
//! * a damaged field in the newest meta page (format version, page size, any other) neither
//!   rejects the file as `BadFormat` nor falls back to the older commit: the meta's copy
//!   restores the newest commit;
//! * freeing a page that is already free (a tree referencing a free page) is
//!   `Error::Corrupted`, never a panic or a free list with a page listed twice;
//! * a free list that lists a page twice (checksum intact) is `Corrupted` at open;
//! * a commit while the layer above still holds a dirty page's bytes neither panics nor writes
//!   the wrong bytes;
//! * for EVERY write and EVERY sync of a multi-commit workload: a process crash at that write
//!   (`Durability::None` commits included) reopens to exactly the last commit, and a failed
//!   write / failed sync gives an error, `PreviousIo` until reopen, and no committed data lost.

use std::sync::Arc;
use tersedb::storage::meta;
use tersedb::storage::{
    Durability, FaultyStorage, MemStorage, PageKind, PageSink, PageSource, Pager, PagerOptions,
    WritePages, PAGE_KIND_OFFSET,
};
use tersedb::Error;

const PS: usize = 512;

fn opts() -> PagerOptions {
    PagerOptions {
        page_size: PS,
        cache_bytes: 16 * PS,
        read_only: false,
        recover: false,
    }
}

/// Replaces the root chain with `values.len()` leaf pages (value at 24, repeated byte at 32..),
/// freeing the old chain.
fn write_chain(w: &mut WritePages, values: &[u64]) {
    let mut old = w.root();
    while old != 0 {
        let p = w.page(old).unwrap();
        let next = u64::from_le_bytes(p[16..24].try_into().unwrap());
        w.free(old).unwrap();
        old = next;
    }
    let mut next = 0u64;
    for &v in values.iter().rev() {
        let id = w.alloc().unwrap();
        let p = w.page_mut(id).unwrap();
        p[PAGE_KIND_OFFSET] = PageKind::Leaf as u8;
        p[16..24].copy_from_slice(&next.to_le_bytes());
        p[24..32].copy_from_slice(&v.to_le_bytes());
        p[32..].fill(v as u8);
        next = id;
    }
    w.set_root(next);
}

fn read_chain(src: &dyn PageSource, root: u64) -> tersedb::Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut id = root;
    while id != 0 {
        let p = src.page(id)?;
        let v = u64::from_le_bytes(p[24..32].try_into().unwrap());
        assert!(p[32..].iter().all(|&b| b == v as u8), "page {id} content");
        out.push(v);
        id = u64::from_le_bytes(p[16..24].try_into().unwrap());
        assert!(out.len() < 10_000, "cycle");
    }
    Ok(out)
}

fn state(pager: &Arc<Pager>) -> Vec<u64> {
    let r = pager.begin_read().unwrap();
    read_chain(&r, r.root()).unwrap()
}

fn commit_chain(pager: &Arc<Pager>, values: &[u64]) {
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, values);
    w.commit(Durability::Immediate).unwrap();
}

#[test]
fn damaged_version_field_opens_the_newest_commit_from_the_copy() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    commit_chain(&pager, &[1, 2]);
    commit_chain(&pager, &[3, 4, 5]);
    drop(pager);
    let good = disk.snapshot();
    // Meta 0 holds txn 2 (the newest), meta 1 txn 1. Damage each field of meta 0 in turn.
    for at in 8..88 {
        for mask in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[at] ^= mask;
            let pager = Pager::open(Box::new(MemStorage::from_bytes(bad)), &opts())
                .unwrap_or_else(|e| panic!("byte {at} ^ {mask:#x}: {e}"));
            assert_eq!(state(&pager), vec![3, 4, 5], "byte {at} ^ {mask:#x}");
        }
    }
}

#[test]
fn freeing_a_free_page_is_corruption_not_a_panic() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    commit_chain(&pager, &[1, 2, 3]);
    let old_root = pager.meta().root;
    commit_chain(&pager, &[4]); // frees the old chain
    commit_chain(&pager, &[5]);
    let before = disk.snapshot();
    for reader in [false, true] {
        // With a reader the freed page is still pending; without one it is reusable.
        let r = reader.then(|| pager.begin_read().unwrap());
        let mut w = pager.begin_write().unwrap();
        let e = w
            .free(old_root)
            .and_then(|()| w.commit(Durability::Immediate));
        assert!(matches!(e, Err(Error::Corrupted { .. })), "{e:?}");
        drop(r);
        assert_eq!(disk.snapshot(), before, "nothing written");
        assert!(!pager.is_poisoned());
        assert_eq!(state(&pager), vec![5]);
    }
    // The pager still works, and the file is intact after reopen.
    commit_chain(&pager, &[6, 7]);
    drop(pager);
    let pager = Pager::open(Box::new(disk), &opts()).unwrap();
    assert_eq!(state(&pager), vec![6, 7]);
}

#[test]
fn a_free_list_listing_a_page_twice_is_corrupted_at_open() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    commit_chain(&pager, &[1, 2, 3, 4]);
    commit_chain(&pager, &[5]);
    commit_chain(&pager, &[6]);
    let m = pager.meta();
    drop(pager);
    assert_ne!(m.free_list, 0);
    let mut bytes = disk.snapshot();
    let at = m.free_list as usize * PS;
    let page = &mut bytes[at..at + PS];
    let n = u32::from_le_bytes(page[24..28].try_into().unwrap()) as usize;
    assert!(n >= 2, "{n}");
    // Entry 1 := entry 0 (same page id), checksum repaired: only the structure is wrong.
    let (e0, rest) = page[32..].split_at_mut(16);
    rest[..16].copy_from_slice(e0);
    meta::seal(m.free_list, page);
    match Pager::open(Box::new(MemStorage::from_bytes(bytes)), &opts()) {
        Err(Error::Corrupted { .. }) => {}
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("opened a free list that lists a page twice"),
    }
}

#[test]
fn commit_while_a_dirty_page_is_still_held() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[9, 8]);
    let held = w.page(w.root()).unwrap();
    w.commit(Durability::Immediate).unwrap();
    assert_eq!(held[24], 9);
    drop(pager);
    let pager = Pager::open(Box::new(disk), &opts()).unwrap();
    assert_eq!(state(&pager), vec![9, 8]);
}

/// Chain lengths of the workload's commits (free lists of several 512-byte pages).
const LENGTHS: [usize; 8] = [100, 5, 140, 3, 70, 0, 90, 2];

fn values(i: usize) -> Vec<u64> {
    (0..LENGTHS[i] as u64)
        .map(|k| (i as u64) << 32 | k)
        .collect()
}

/// Runs the workload until an operation fails; returns the states committed so far (index 0:
/// empty) and the error, if any. Every third transaction is first aborted; the pager is
/// reopened halfway.
fn workload(
    disk: &FaultyStorage,
    durability: fn(usize) -> Durability,
) -> (Vec<Vec<u64>>, Option<Error>) {
    let mut done = Vec::new();
    let mut pager = match Pager::create(Box::new(disk.clone()), &opts()) {
        Ok(p) => p,
        Err(e) => return (done, Some(e)),
    };
    done.push(Vec::new());
    for i in 0..LENGTHS.len() {
        if i == LENGTHS.len() / 2 {
            drop(pager);
            pager = match Pager::open(Box::new(disk.clone()), &opts()) {
                Ok(p) => p,
                Err(e) => return (done, Some(e)),
            };
        }
        if i % 3 == 0 {
            let mut w = pager.begin_write().unwrap();
            write_chain(&mut w, &[7; 12]);
            w.abort();
        }
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &values(i));
        if let Err(e) = w.commit(durability(i)) {
            assert!(pager.is_poisoned());
            assert!(matches!(pager.begin_write(), Err(Error::PreviousIo)));
            // Readers still see the last commit.
            assert_eq!(&state(&pager), done.last().unwrap());
            return (done, Some(e));
        }
        done.push(values(i));
    }
    (done, None)
}

fn mixed(i: usize) -> Durability {
    if i % 2 == 0 {
        Durability::None
    } else {
        Durability::Immediate
    }
}

/// Reopens `bytes`, expects one of `allowed`, and checks the file takes a new commit.
fn reopen_expect(bytes: Vec<u8>, allowed: &[&Vec<u64>], what: &str) {
    let disk = MemStorage::from_bytes(bytes);
    let pager =
        Pager::open(Box::new(disk.clone()), &opts()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = state(&pager);
    assert!(allowed.contains(&&got), "{what}: {got:?}");
    commit_chain(&pager, &[11, 12, 13]);
    drop(pager);
    let pager = Pager::open(Box::new(disk), &opts()).unwrap();
    assert_eq!(state(&pager), vec![11, 12, 13], "{what}");
}

#[test]
fn process_crash_at_every_write() {
    let clean = FaultyStorage::new(Vec::new());
    let (all, err) = workload(&clean, mixed);
    assert!(err.is_none() && all.len() == LENGTHS.len() + 1);
    // Count the workload's writes: the first failing write index beyond them passes.
    let mut writes = 0u64;
    loop {
        writes += 1;
        let disk = FaultyStorage::new(Vec::new());
        disk.fail_nth_write(Some(writes));
        let (done, err) = workload(&disk, mixed);
        let Some(err) = err else { break };
        assert!(matches!(err, Error::Io(_)), "write {writes}: {err:?}");
        if done.is_empty() {
            continue; // creation failed: nothing to recover
        }
        // The process dies at the failed write: every earlier write is in the OS's cache.
        // A write that failed inside a commit never reached its meta page, so the last
        // successful commit is exactly what reopens.
        reopen_expect(
            disk.current(),
            &[done.last().unwrap()],
            &format!("write {writes}"),
        );
    }
    assert!(writes > 20, "{writes}");
}

#[test]
fn failed_sync_at_every_sync_point() {
    let clean = FaultyStorage::new(Vec::new());
    let (_, err) = workload(&clean, |_| Durability::Immediate);
    assert!(err.is_none());
    let syncs = clean.sync_count();
    for k in 1..=syncs {
        let disk = FaultyStorage::new(Vec::new());
        disk.fail_nth_sync(Some(k));
        let (done, err) = workload(&disk, |_| Durability::Immediate);
        let err = err.unwrap_or_else(|| panic!("sync {k} did not fail"));
        assert!(matches!(err, Error::Io(_)), "sync {k}: {err:?}");
        if done.is_empty() {
            continue;
        }
        let i = done.len() - 1; // index of the failed commit in LENGTHS
        let inflight = values(i);
        // The data may or may not be on disk: either the last commit or the failed one (when
        // its meta page was written before the failed sync).
        reopen_expect(
            disk.current(),
            &[done.last().unwrap(), &inflight],
            &format!("sync {k}"),
        );
    }
}
