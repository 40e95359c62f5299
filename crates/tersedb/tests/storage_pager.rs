//! Pins the pager's guarantees below the B+-tree: commits are atomic and durable, aborts leave
//! nothing, snapshots keep their pages until dropped, the free list survives reopen and keeps the
//! file bounded, a crash at every sync point recovers exactly a committed state, I/O failures
//! poison the pager without losing committed data, and damaged bytes give errors, never panics.

use tersedb::storage::{
    CrashMode, Durability, FaultyStorage, MemStorage, PageKind, PageSink, PageSource, Pager,
    PagerOptions, Storage, WritePages, PAGE_KIND_OFFSET,
};
use tersedb::Error;

const PS: usize = 512;

fn opts() -> PagerOptions {
    PagerOptions {
        page_size: PS,
        cache_bytes: 64 * PS,
        read_only: false,
        recover: false,
    }
}

/// The test's "database": the root page lists data pages; data page i is filled with
/// (version, i). Each commit rewrites some data pages copy-on-write and a new root.
fn write_version(w: &mut WritePages, version: u64, pages: usize) {
    let old_root = w.root();
    let mut old_children = Vec::new();
    if old_root != 0 {
        let r = w.page(old_root).unwrap();
        let n = u64::from_le_bytes(r[16..24].try_into().unwrap()) as usize;
        for i in 0..n {
            let at = 24 + 8 * i;
            old_children.push(u64::from_le_bytes(r[at..at + 8].try_into().unwrap()));
        }
        w.free(old_root).unwrap();
    }
    let mut children = Vec::new();
    for i in 0..pages {
        let id = match old_children.get(i) {
            // rewrite every other existing page, keep the rest (they stay shared)
            Some(&c) if (version + i as u64) % 2 == 1 => {
                children.push(c);
                continue;
            }
            Some(&c) => w.cow(c).unwrap(),
            None => w.alloc().unwrap(),
        };
        let p = w.page_mut(id).unwrap();
        p[PAGE_KIND_OFFSET] = PageKind::Leaf as u8;
        p[16..24].copy_from_slice(&version.to_le_bytes());
        p[24..32].copy_from_slice(&(i as u64).to_le_bytes());
        children.push(id);
    }
    for &c in old_children.iter().skip(pages) {
        w.free(c).unwrap();
    }
    let root = w.alloc().unwrap();
    let p = w.page_mut(root).unwrap();
    p[PAGE_KIND_OFFSET] = PageKind::Branch as u8;
    p[16..24].copy_from_slice(&(children.len() as u64).to_le_bytes());
    for (i, c) in children.iter().enumerate() {
        p[24 + 8 * i..32 + 8 * i].copy_from_slice(&c.to_le_bytes());
    }
    p[8 + 400..8 + 408].copy_from_slice(&version.to_le_bytes());
    w.set_root(root);
}

/// Reads the state back: (version of the root, number of data pages), checking every page.
fn read_state(src: &dyn PageSource, root: u64) -> Result<Option<(u64, usize)>, Error> {
    if root == 0 {
        return Ok(None);
    }
    let r = src.page(root)?;
    let version = u64::from_le_bytes(r[408..416].try_into().unwrap());
    let n = u64::from_le_bytes(r[16..24].try_into().unwrap()) as usize;
    for i in 0..n {
        let at = 24 + 8 * i;
        let c = u64::from_le_bytes(r[at..at + 8].try_into().unwrap());
        let p = src.page(c)?;
        let v = u64::from_le_bytes(p[16..24].try_into().unwrap());
        let idx = u64::from_le_bytes(p[24..32].try_into().unwrap());
        assert_eq!(idx, i as u64, "data page {c} holds the wrong slot");
        assert!(v <= version, "data page newer than its root");
    }
    Ok(Some((version, n)))
}

fn state_of(pager: &std::sync::Arc<Pager>) -> Option<(u64, usize)> {
    let r = pager.begin_read().unwrap();
    read_state(&r, r.root()).unwrap()
}

#[test]
fn commit_reopen_abort() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    assert_eq!(state_of(&pager), None);
    for v in 1..=5 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 10);
        w.commit(Durability::Immediate).unwrap();
    }
    let mut w = pager.begin_write().unwrap();
    write_version(&mut w, 99, 3);
    w.abort();
    {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, 98, 3);
        // dropped: same as abort
    }
    assert_eq!(state_of(&pager), Some((5, 10)));
    drop(pager);
    let pager = Pager::open(Box::new(disk.clone()), &opts()).unwrap();
    assert_eq!(state_of(&pager), Some((5, 10)));
}

#[test]
fn one_writer_at_a_time_and_read_only() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let w = pager.begin_write().unwrap();
    assert!(matches!(pager.begin_write(), Err(Error::WriteTxnActive)));
    drop(w);
    pager
        .begin_write()
        .unwrap()
        .commit(Durability::None)
        .unwrap();
    drop(pager);
    let ro = Pager::open(
        Box::new(disk),
        &PagerOptions {
            read_only: true,
            ..opts()
        },
    )
    .unwrap();
    assert!(matches!(ro.begin_write(), Err(Error::ReadOnly)));
}

#[test]
fn snapshots_keep_their_pages() {
    let pager = Pager::create(Box::new(MemStorage::new()), &opts()).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_version(&mut w, 1, 20);
    w.commit(Durability::None).unwrap();
    let old = pager.begin_read().unwrap();
    // Many commits while the old reader lives: its pages must not be reused.
    for v in 2..40 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 20);
        w.commit(Durability::None).unwrap();
        assert_eq!(read_state(&old, old.root()).unwrap(), Some((1, 20)));
    }
    let grown = pager.meta().page_count;
    drop(old);
    // Once it is gone, churn reuses pages: the file stops growing.
    for v in 40..400 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 20);
        w.commit(Durability::None).unwrap();
    }
    assert_eq!(state_of(&pager), Some((399, 20)));
    assert!(
        pager.meta().page_count <= grown + 8,
        "{} vs {}",
        pager.meta().page_count,
        grown
    );
}

#[test]
fn free_list_survives_reopen_and_accounts_for_every_page() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    for v in 1..60 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, if v % 7 == 0 { 45 } else { 5 });
        w.commit(Durability::Immediate).unwrap();
    }
    let count_before = pager.meta().page_count;
    drop(pager);
    let pager = Pager::open(Box::new(disk.clone()), &opts()).unwrap();
    // Every page is a meta page, in use by the state, free, or a free-list page: exactly once.
    let r = pager.begin_read().unwrap();
    let mut owner = vec![0u8; r.meta().page_count as usize];
    owner[0] = 1;
    owner[1] = 1;
    for c in r.meta().copies {
        owner[c as usize] += 1;
    }
    let root = r.page(r.root()).unwrap();
    owner[r.root() as usize] += 1;
    let n = u64::from_le_bytes(root[16..24].try_into().unwrap()) as usize;
    for i in 0..n {
        let c = u64::from_le_bytes(root[24 + 8 * i..32 + 8 * i].try_into().unwrap());
        owner[c as usize] += 1;
    }
    let (free, list) = r.free_pages().unwrap();
    for p in free.iter().chain(&list) {
        owner[*p as usize] += 1;
    }
    assert!(owner.iter().all(|&o| o == 1), "page accounting: {owner:?}");
    drop(r);
    // Reopened pager reuses the persisted free pages instead of growing the file.
    for v in 60..80 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 5);
        w.commit(Durability::Immediate).unwrap();
    }
    assert!(pager.meta().page_count <= count_before);
}

/// Runs a multi-commit workload on a fault-recording disk; returns it, and for each commit the
/// number of syncs completed when it returned.
/// (version, data pages) of the test's state.
type State = (u64, usize);

fn recorded_workload() -> (FaultyStorage, Vec<(u64, State)>) {
    let disk = FaultyStorage::new(Vec::new());
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let mut commits = Vec::new();
    for v in 1..=12u64 {
        let mut w = pager.begin_write().unwrap();
        let pages = [3usize, 30, 1, 12][v as usize % 4];
        write_version(&mut w, v, pages);
        w.commit(Durability::Immediate).unwrap();
        commits.push((disk.sync_count(), (v, pages)));
    }
    (disk, commits)
}

#[test]
fn crash_at_every_sync_point_recovers_a_committed_state() {
    let (disk, commits) = recorded_workload();
    let total = disk.sync_count();
    for k in 0..=total {
        // The last commit whose final sync completed by sync k, and the one in flight.
        let done = commits.iter().rev().find(|(s, _)| *s <= k).map(|c| c.1);
        let next = commits.iter().find(|(s, _)| *s > k).map(|c| c.1);
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::TornLast,
            CrashMode::RandomSubset(k * 31 + 7),
            CrashMode::RandomSubset(k * 17 + 3),
        ] {
            let img = disk.crash_image(k, mode);
            let pager = match Pager::open(Box::new(MemStorage::from_bytes(img)), &opts()) {
                Ok(p) => p,
                Err(e) => {
                    assert!(k == 0, "k={k} {mode:?}: open failed: {e}");
                    continue;
                }
            };
            let got = state_of(&pager);
            if mode == CrashMode::DropUnsynced {
                assert_eq!(got, done, "k={k} {mode:?}");
            } else {
                assert!(
                    got == done || got == next,
                    "k={k} {mode:?}: {got:?} not {done:?} or {next:?}"
                );
            }
            // The recovered file takes new commits.
            let mut w = pager.begin_write().unwrap();
            write_version(&mut w, 1000, 4);
            w.commit(Durability::Immediate).unwrap();
            assert_eq!(state_of(&pager), Some((1000, 4)));
        }
    }
}

#[test]
fn failed_writes_and_syncs_poison_until_reopen() {
    for (fail_write, fail_sync) in [
        (Some(1), None),
        (Some(3), None),
        (None, Some(1)),
        (None, Some(2)),
    ] {
        let disk = FaultyStorage::new(Vec::new());
        let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, 1, 6);
        w.commit(Durability::Immediate).unwrap();
        disk.fail_nth_write(fail_write);
        disk.fail_nth_sync(fail_sync);
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, 2, 6);
        assert!(w.commit(Durability::Immediate).is_err());
        assert!(matches!(pager.begin_write(), Err(Error::PreviousIo)));
        // Readers still work and see the last committed state.
        assert_eq!(state_of(&pager), Some((1, 6)));
        drop(pager);
        disk.fail_nth_write(None);
        let pager = Pager::open(Box::new(disk.clone()), &opts()).unwrap();
        let s = state_of(&pager);
        assert!(s == Some((1, 6)) || s == Some((2, 6)), "{s:?}");
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, 3, 6);
        w.commit(Durability::Immediate).unwrap();
        assert_eq!(state_of(&pager), Some((3, 6)));
    }
}

#[test]
fn full_disk_is_a_clear_error_and_loses_nothing() {
    let disk = FaultyStorage::new(Vec::new());
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_version(&mut w, 1, 4);
    w.commit(Durability::Immediate).unwrap();
    disk.set_capacity(Some(disk.len().unwrap() + 2 * PS as u64));
    let mut w = pager.begin_write().unwrap();
    write_version(&mut w, 2, 45);
    assert!(matches!(
        w.commit(Durability::Immediate),
        Err(Error::DiskFull)
    ));
    drop(pager);
    disk.set_capacity(None);
    let pager = Pager::open(Box::new(disk), &opts()).unwrap();
    assert_eq!(state_of(&pager), Some((1, 4)));
}

#[test]
fn flipped_bytes_give_errors_or_correct_data() {
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    for v in 1..=3 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 4);
        w.commit(Durability::Immediate).unwrap();
    }
    drop(pager);
    let good = disk.snapshot();
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x5a;
        let Ok(pager) = Pager::open(Box::new(MemStorage::from_bytes(bad)), &opts()) else {
            continue;
        };
        let r = pager.begin_read().unwrap();
        match read_state(&r, r.root()) {
            Ok(s) => assert!(s == Some((3, 4)) || s == Some((2, 4)), "byte {i}: {s:?}"),
            Err(Error::Corrupted { .. }) => {}
            Err(e) => panic!("byte {i}: unexpected error {e}"),
        }
    }
}

#[test]
fn garbage_files_are_rejected_clearly() {
    for bytes in [
        vec![],
        vec![0u8; 10],
        vec![0xffu8; 4096],
        b"hello world".repeat(100),
    ] {
        let e = Pager::open(Box::new(MemStorage::from_bytes(bytes)), &opts()).unwrap_err();
        assert!(matches!(e, Error::BadFormat(_)), "{e}");
    }
    let e = Pager::create(
        Box::new(MemStorage::new()),
        &PagerOptions {
            page_size: 1000,
            ..opts()
        },
    );
    assert!(matches!(e, Err(Error::InvalidArgument(_))));
}

#[test]
fn file_lock_refuses_a_second_writer_but_not_readers() {
    let path = std::env::temp_dir().join(format!("tersedb-lock-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let a = tersedb::storage::FileStorage::open(&path, true, false).unwrap();
    match tersedb::storage::FileStorage::open(&path, true, false) {
        Err(Error::Locked { holder }) => assert!(
            holder.contains(&std::process::id().to_string()),
            "names the holder: {holder}"
        ),
        other => panic!("{other:?}"),
    }
    // Read-only handles do not lock the data file: they open beside the writer.
    let r1 = tersedb::storage::FileStorage::open(&path, false, true).unwrap();
    drop(a);
    let _w = tersedb::storage::FileStorage::open(&path, false, false).unwrap();
    drop(r1);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&path));
}

/// Regression: when free-list pages are taken from the free list itself, the list can end up
/// needing fewer pages than were taken; every taken page must still be written and chained.
#[test]
fn reopen_after_every_commit_with_varying_churn() {
    for seed in 0..40u64 {
        let disk = MemStorage::new();
        let mut pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
        let mut rng = fastrand::Rng::with_seed(seed);
        for v in 1..=30u64 {
            let mut w = pager.begin_write().unwrap();
            let pages = rng.usize(1..46);
            write_version(&mut w, v, pages);
            w.commit(Durability::Immediate).unwrap();
            drop(pager);
            pager = Pager::open(Box::new(disk.clone()), &opts())
                .unwrap_or_else(|e| panic!("seed {seed} version {v}: reopen failed: {e}"));
            assert_eq!(
                state_of(&pager),
                Some((v, pages)),
                "seed {seed} version {v}"
            );
        }
    }
}

/// A snapshot lends the pages its lookups meet (`PageSource::page_ref`) from slots filled once:
/// the bytes are the snapshot's own (a later commit rewriting the pages does not reach them),
/// the same as `page` gives, pinned for the snapshot's life; an id outside the file is refused
/// before any slot is read; and without a page cache nothing is pinned.
#[test]
fn pinned_pages_are_the_snapshots_own() {
    use tersedb::storage::PageRef;
    let disk = MemStorage::new();
    let pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_version(&mut w, 1, 40);
    w.commit(Durability::None).unwrap();
    let old = pager.begin_read().unwrap();
    let ids: Vec<u64> = (2..old.meta().page_count).collect();
    let bytes = |r: &dyn PageSource, id| -> Vec<u8> { r.page(id).unwrap().to_vec() };
    let before: Vec<Vec<u8>> = ids.iter().map(|&id| bytes(&old, id)).collect();
    // The first reads go through the cache; the slots exist after 16 of them.
    for (n, id) in (0..16).zip(ids.iter().cycle()) {
        let p = old.page_ref(*id).unwrap();
        assert!(matches!(p, PageRef::Shared(_)), "read {n} pinned");
    }
    for _ in 0..2 {
        for (id, want) in ids.iter().zip(&before) {
            let p = old.page_ref(*id).unwrap();
            assert_eq!(&p[..], &want[..], "page {id}");
            assert!(matches!(p, PageRef::Pinned(_)), "page {id} not pinned");
        }
    }
    assert!(old.page_ref(old.meta().page_count).is_err());
    assert!(old.page_ref(1).is_err());
    for v in 2..=4 {
        let mut w = pager.begin_write().unwrap();
        write_version(&mut w, v, 40);
        w.commit(Durability::None).unwrap();
    }
    assert_eq!(read_state(&old, old.root()).unwrap(), Some((1, 40)));
    for (id, want) in ids.iter().zip(&before) {
        assert_eq!(&old.page_ref(*id).unwrap()[..], &want[..], "page {id}");
    }
    let new = pager.begin_read().unwrap();
    assert_eq!(read_state(&new, new.root()).unwrap(), Some((4, 40)));
    for _ in 0..16 {
        new.page_ref(new.root()).unwrap();
    }
    let root = new.page_ref(new.root()).unwrap();
    assert!(matches!(root, PageRef::Pinned(_)));
    assert_eq!(&root[..], &new.page(new.root()).unwrap()[..]);
    drop(root);
    drop(new);
    drop(old);
    drop(pager);
    let uncached = Pager::open(
        Box::new(disk),
        &PagerOptions {
            cache_bytes: 0,
            ..opts()
        },
    )
    .unwrap();
    let r = uncached.begin_read().unwrap();
    for _ in 0..20 {
        assert!(matches!(r.page_ref(r.root()).unwrap(), PageRef::Shared(_)));
    }
}
