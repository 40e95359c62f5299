//! Pager round trips at page level: alloc/write/commit/reopen/read, abort leaves nothing,
//! snapshot isolation (a reader keeps its pages while the writer frees them; reuse only after
//! the reader is gone), the free list survives reopen, churn does not grow the file, file locks.

mod storage_common;

use std::collections::BTreeSet;
use std::sync::Arc;
use storage_common::{assert_accounting, read_chain, snapshot, write_chain};
use tersedb::storage::{
    Durability, FileStorage, MemStorage, PageSink, PageSource, Pager, PagerOptions, Storage,
};
use tersedb::Error;

fn opts(page_size: usize) -> PagerOptions {
    PagerOptions {
        page_size,
        cache_bytes: 1 << 20,
        read_only: false,
    }
}

#[test]
fn round_trip_commit_reopen() {
    for ps in [512, 4096, 65536] {
        let mem = MemStorage::new();
        let pager = Pager::create(Box::new(mem.clone()), &opts(ps)).unwrap();
        assert_eq!(pager.page_size(), ps);
        assert!(snapshot(&pager).is_empty());
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[1, 2, 3, 4, 5]);
        assert_eq!(read_chain(&w, w.root()).unwrap(), vec![1, 2, 3, 4, 5]);
        w.commit(Durability::Immediate).unwrap();
        assert_eq!(snapshot(&pager), vec![1, 2, 3, 4, 5]);
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[9, 8]);
        w.commit(Durability::None).unwrap();
        drop(pager);
        // Reopen: the page size comes from the file, whatever the options say.
        let pager = Pager::open(Box::new(mem.clone()), &opts(1024)).unwrap();
        assert_eq!(pager.page_size(), ps);
        assert_eq!(snapshot(&pager), vec![9, 8]);
        assert_accounting(&pager.begin_read().unwrap());
        let r = Pager::open(
            Box::new(mem.clone()),
            &PagerOptions {
                read_only: true,
                ..opts(ps)
            },
        )
        .unwrap();
        assert_eq!(snapshot(&r), vec![9, 8]);
        assert!(matches!(r.begin_write(), Err(Error::ReadOnly)));
    }
}

#[test]
fn abort_and_drop_leave_nothing() {
    let mem = MemStorage::new();
    let pager = Pager::create(Box::new(mem.clone()), &opts(512)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[1, 2, 3]);
    w.commit(Durability::Immediate).unwrap();
    let before = mem.to_bytes();
    let meta = pager.meta();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[7; 20]);
    w.abort();
    {
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[8; 20]);
        // dropped
    }
    assert_eq!(mem.to_bytes(), before, "nothing written");
    assert_eq!(pager.meta(), meta);
    assert_eq!(snapshot(&pager), vec![1, 2, 3]);
    // The free space is intact: the next transaction reuses the same pages as before.
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[4, 5, 6]);
    w.commit(Durability::Immediate).unwrap();
    assert_eq!(pager.meta().page_count, meta.page_count + 4);
    assert_accounting(&pager.begin_read().unwrap());
}

#[test]
fn one_writer_at_a_time_and_api_errors() {
    let pager = Pager::create(Box::new(MemStorage::new()), &opts(512)).unwrap();
    let mut w = pager.begin_write().unwrap();
    assert!(matches!(pager.begin_write(), Err(Error::WriteTxnActive)));
    let a = w.alloc().unwrap();
    assert!(w.is_dirty(a));
    assert!(!w.is_dirty(a + 1));
    assert!(matches!(w.page_mut(a + 1), Err(Error::InvalidArgument(_))));
    assert!(matches!(w.free(0), Err(Error::Corrupted { page: 0, .. })));
    assert!(matches!(w.free(a + 100), Err(Error::Corrupted { .. })));
    assert!(matches!(w.page(a + 100), Err(Error::Corrupted { .. })));
    assert!(matches!(w.page(1), Err(Error::Corrupted { page: 1, .. })));
    w.page_mut(a).unwrap()[100] = 42;
    // A page handed out before page_mut keeps its bytes (copy on write inside the txn).
    let held = w.page(a).unwrap();
    w.page_mut(a).unwrap()[100] = 43;
    assert_eq!(held[100], 42);
    assert_eq!(w.page(a).unwrap()[100], 43);
    assert_eq!(w.cow(a).unwrap(), a, "dirty pages are their own copy");
    w.set_root(a);
    w.commit(Durability::Immediate).unwrap();
    let mut w = pager.begin_write().unwrap();
    let b = w.cow(a).unwrap();
    assert_ne!(a, b);
    assert_eq!(w.page(b).unwrap()[100], 43);
    assert!(
        matches!(w.free(a), Err(Error::Corrupted { .. })),
        "double free"
    );
    drop(w);
    assert!(matches!(
        Pager::create(Box::new(MemStorage::from_bytes(vec![1])), &opts(512)),
        Err(Error::InvalidArgument(_))
    ));
    for bad in [0, 256, 1000, 128 * 1024] {
        assert!(matches!(
            Pager::create(Box::new(MemStorage::new()), &opts(bad)),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn readers_keep_their_snapshot_and_block_reuse() {
    let pager = Pager::create(Box::new(MemStorage::new()), &opts(512)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[1, 2, 3]);
    w.commit(Durability::None).unwrap();
    let r1 = pager.begin_read().unwrap();
    let r1_pages: BTreeSet<u64> = {
        let mut s = BTreeSet::new();
        let mut id = r1.root();
        while id != 0 {
            s.insert(id);
            id = u64::from_le_bytes(r1.page(id).unwrap()[16..24].try_into().unwrap());
        }
        s
    };
    // Several commits replace the chain; none may reuse r1's pages.
    for round in 0..5u64 {
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[10 + round, 20 + round]);
        let mut id = w.root();
        while id != 0 {
            assert!(!r1_pages.contains(&id), "page {id} reused under a reader");
            id = u64::from_le_bytes(w.page(id).unwrap()[16..24].try_into().unwrap());
        }
        w.commit(Durability::None).unwrap();
        assert_eq!(read_chain(&r1, r1.root()).unwrap(), vec![1, 2, 3]);
        assert_accounting(&r1);
    }
    assert_eq!(snapshot(&pager), vec![14, 24]);
    let count = pager.meta().page_count;
    drop(r1);
    // Now the old pages are reused: the file stops growing.
    for round in 0..20u64 {
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[round, round + 1]);
        w.commit(Durability::None).unwrap();
    }
    assert!(
        pager.meta().page_count <= count,
        "{} > {count}",
        pager.meta().page_count
    );
    assert_accounting(&pager.begin_read().unwrap());
}

#[test]
fn readers_in_threads_see_stable_snapshots() {
    let pager = Pager::create(Box::new(MemStorage::new()), &opts(1024)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[1; 8]);
    w.commit(Durability::None).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let pager = pager.clone();
            let stop = stop.clone();
            let reads = reads.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = pager.begin_read().unwrap();
                    let first = read_chain(&r, r.root()).unwrap();
                    assert_eq!(first.len(), 8);
                    assert!(first.iter().all(|&v| v == r.txn_id()), "{first:?}");
                    std::thread::yield_now();
                    assert_eq!(read_chain(&r, r.root()).unwrap(), first);
                    n += 1;
                    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                n
            })
        })
        .collect();
    let mut t = 2u64;
    while t < 200 || reads.load(std::sync::atomic::Ordering::Relaxed) < 200 {
        let mut w = pager.begin_write().unwrap();
        write_chain(&mut w, &[t; 8]);
        w.commit(Durability::None).unwrap();
        t += 1;
        if t % 16 == 0 {
            std::thread::yield_now();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(pager.reader_count(), 0);
}

#[test]
fn free_list_persists_and_churn_is_bounded() {
    let mem = MemStorage::new();
    let mut pager = Pager::create(Box::new(mem.clone()), &opts(512)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[5; 300]); // more ids than one free-list page holds once freed
    w.commit(Durability::Immediate).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[6; 3]);
    w.commit(Durability::Immediate).unwrap();
    let m = pager.meta();
    assert!(m.free_pages >= 290, "{m:?}");
    assert!(m.freelist_pages >= 5, "{m:?}");
    // The workload is periodic (250 rounds): after one period the file must stop growing.
    // Replacing a chain of a pages by b needs a + b pages (the old ones are not reusable within
    // the transaction), so the file settles near 2 * 250 pages plus the free list.
    let mut peak = 0;
    for round in 0..600u64 {
        if round % 50 == 0 {
            drop(pager);
            pager = Pager::open(Box::new(mem.clone()), &opts(512)).unwrap();
            assert_accounting(&pager.begin_read().unwrap());
        }
        let mut w = pager.begin_write().unwrap();
        let n = 1 + (round * 7 % 250) as usize;
        write_chain(&mut w, &vec![round; n]);
        w.commit(Durability::Immediate).unwrap();
        let count = pager.meta().page_count;
        if round < 300 {
            peak = peak.max(count);
        } else {
            assert!(count <= peak, "grew at round {round}: {count} > {peak}");
        }
    }
    assert!(peak < 2 * 250 + 30, "{peak}");
    assert_eq!(mem.len().unwrap(), peak * 512);
}

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tersedb-storage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn file_round_trip_and_lock() {
    let path = temp_path("pager.db");
    let pager = Pager::create(Box::new(FileStorage::create(&path).unwrap()), &opts(4096)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &[3, 1, 4, 1, 5]);
    w.commit(Durability::Immediate).unwrap();
    assert!(matches!(
        FileStorage::open(&path, false),
        Err(Error::Locked)
    ));
    assert!(matches!(FileStorage::open(&path, true), Err(Error::Locked)));
    drop(pager);
    let ro = PagerOptions {
        read_only: true,
        ..opts(4096)
    };
    let r = Pager::open(Box::new(FileStorage::open(&path, true).unwrap()), &ro).unwrap();
    assert_eq!(snapshot(&r), vec![3, 1, 4, 1, 5]);
    assert!(matches!(
        FileStorage::open(&path, false),
        Err(Error::Locked)
    ));
    drop(r);
    let pager = Pager::open(
        Box::new(FileStorage::open(&path, false).unwrap()),
        &opts(512),
    )
    .unwrap();
    assert_eq!(pager.page_size(), 4096);
    assert_eq!(snapshot(&pager), vec![3, 1, 4, 1, 5]);
    drop(pager);
    std::fs::remove_file(&path).unwrap();
}
