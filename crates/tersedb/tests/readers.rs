//! Pins readers beside the writer (issue 18, LMDB's model) within one process; the CLI's
//! `readers` test does the same across processes:
//! * a read-only environment opens while a writer has the file, sees each new commit at its
//!   next read transaction, and a snapshot it holds keeps showing exactly its commit while the
//!   writer churns (the writer does not reuse its pages);
//! * once the snapshot ends, pages are reused again: the file stays bounded;
//! * a reader that goes away without a word (its slot's lock released) does not hold pages;
//! * a second writer gets `Locked` naming the holder; `lock_wait` and `begin_write_wait` wait.

use std::collections::BTreeMap;
use std::time::Duration;
use tersedb::{DbConfig, Env, EnvOptions, Error, KeyType, RecordType};

fn temp(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tersedb-readers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&p));
    p
}

fn cleanup(p: &std::path::Path) {
    let _ = std::fs::remove_file(p);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(p));
}

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(512)
}

type Model = BTreeMap<u32, Vec<u8>>;

/// Commit `c`: rewrites a rotating third of the keys (pages are freed every commit).
fn churn(env: &Env, model: &mut Model, c: u32) {
    let mut w = env.begin_write().unwrap();
    let db = w
        .open_or_create_db("d", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    for k in (c % 3..600).step_by(3) {
        let v = vec![c as u8; 20 + (k as usize % 7)];
        w.upsert(&db, k, &v).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
}

fn contents(r: &tersedb::ReadTxn) -> Model {
    let db = r.open_db("d").unwrap();
    r.iter(&db)
        .unwrap()
        .map(|i| {
            let (k, v) = i.unwrap();
            (k.as_key().as_u64().unwrap() as u32, v)
        })
        .collect()
}

#[test]
fn a_reader_beside_the_writer_keeps_its_snapshot_and_sees_new_commits() {
    let path = temp("snap");
    let w = Env::create(&path, &opts()).unwrap();
    let mut model = Model::new();
    churn(&w, &mut model, 1);
    let ro = Env::open_read_only(&path, &opts()).unwrap();
    let held = ro.begin_read().unwrap();
    let at_held = model.clone();
    assert_eq!(contents(&held), at_held);
    for c in 2..40 {
        churn(&w, &mut model, c);
        // A new read transaction of the reader sees the newest commit.
        let r = ro.begin_read().unwrap();
        assert_eq!(r.txn_id(), w.begin_read().unwrap().txn_id());
        assert_eq!(contents(&r), model, "commit {c}");
    }
    // The held snapshot still shows its commit: none of its pages were reused.
    assert_eq!(contents(&held), at_held);
    let grown = std::fs::metadata(&path).unwrap().len();
    drop(held);
    // Without the old snapshot, pages are reused: the file stops growing.
    for c in 40..120 {
        churn(&w, &mut model, c);
        let r = ro.begin_read().unwrap();
        assert_eq!(contents(&r), model, "commit {c}");
    }
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(after <= grown + 8 * 512, "{grown} -> {after}");
    assert!(w.check().unwrap().is_clean());
    let report = ro.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.faults);
    drop((ro, w));
    cleanup(&path);
}

#[test]
fn a_reader_that_went_away_holds_nothing() {
    use tersedb::storage::readers::ReaderSlot;
    let path = temp("gone");
    let w = Env::create(&path, &opts()).unwrap();
    let mut model = Model::new();
    for c in 1..=3 {
        churn(&w, &mut model, c); // every key exists from here on
    }
    // A live reader of commit 3 holds its pages: the file grows with every commit.
    let mut slot = ReaderSlot::claim(&path).unwrap();
    slot.set(Some(3)).unwrap();
    let size = || std::fs::metadata(&path).unwrap().len();
    let before = size();
    for c in 4..20 {
        churn(&w, &mut model, c);
    }
    let held = size();
    // (without the reader: 55,808 -> 91,136 bytes; with it: -> 627,712)
    assert!(held > 4 * before, "{before} -> {held}");
    // Its process dies: the lock goes, the slot file still says commit 3. Pages are reused.
    drop(slot);
    for c in 20..100 {
        churn(&w, &mut model, c);
    }
    let after = size();
    assert!(after <= held + 12 * 512, "{held} -> {after}");
    drop(w);
    cleanup(&path);
}

#[test]
fn second_writer_is_locked_and_waits_on_request() {
    let path = temp("lock");
    let w = Env::create(&path, &opts()).unwrap();
    let e = Env::open(&path, &opts()).map(|_| ()).unwrap_err();
    match &e {
        Error::Locked { holder } => assert!(holder.contains("this process"), "{holder}"),
        e => panic!("{e}"),
    }
    assert!(e.to_string().contains("open for writing"), "{e}");
    // A reader does not keep a writer out.
    let ro = Env::open_read_only(&path, &opts()).unwrap();
    let _r = ro.begin_read().unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(w);
    });
    let w2 = Env::open(&path, &opts().lock_wait(Duration::from_secs(10))).unwrap();
    closer.join().unwrap();

    // begin_write_wait: waits for another thread's write transaction.
    let w2 = std::sync::Arc::new(w2);
    let txn = w2.begin_write().unwrap();
    assert!(matches!(
        w2.begin_write_wait(Duration::from_millis(20)),
        Err(Error::WriteTxnActive)
    ));
    let w3 = w2.clone();
    let waiter = std::thread::spawn(move || {
        let t = w3.begin_write_wait(Duration::from_secs(10)).unwrap();
        t.abort();
    });
    std::thread::sleep(Duration::from_millis(50));
    txn.commit().unwrap();
    waiter.join().unwrap();
    drop((w2, ro));
    cleanup(&path);
}
