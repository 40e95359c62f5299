//! Pins "detect, don't lose" (issue 18): damage to a meta page never makes open fall back to an
//! older commit without a word.
//! * every byte of both meta pages and of both meta copies, flipped: open (read-write and
//!   read-only) shows exactly the newest commit, never a panic, and a read-write open repairs
//!   the page so that `check` is clean;
//! * a meta page and its copy both damaged, where the damaged page may hold the newest commit:
//!   `Corrupted` naming that meta page; recovery rolls back to the older commit on request and
//!   later opens agree;
//! * the same damage on the older meta's side is refused the same way (it cannot be told apart);
//! * a torn write of the newest meta (the commit's data pages synced, the meta page half
//!   written) opens the torn commit from its copy;
//! * a page count forged beyond the file (checksum re-sealed) is damage, never a walk of
//!   non-existent pages.

use std::collections::BTreeMap;
use tersedb::storage::{meta, CrashMode, FaultyStorage, MemStorage};
use tersedb::{DbConfig, Env, EnvOptions, Error, KeyType, RecordType};

const PS: usize = 512;

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PS)
}

type Model = BTreeMap<u32, Vec<u8>>;

/// Commit `c` of the workload: inserts, overwrites and erases.
fn commit(env: &Env, model: &mut Model, c: u32) {
    let mut w = env.begin_write().unwrap();
    let db = w
        .open_or_create_db("d", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    for k in 0..40u32 {
        let key = k * 3 + c;
        if k % 5 == 0 {
            w.erase(&db, key / 2).ok();
            model.remove(&(key / 2));
        } else {
            let v = vec![c as u8; (k as usize * 3) % 20];
            w.upsert(&db, key, &v).unwrap();
            model.insert(key, v);
        }
    }
    w.commit().unwrap();
}

fn contents(env: &Env) -> Model {
    let r = env.begin_read().unwrap();
    let Ok(db) = r.open_db("d") else {
        return Model::new();
    };
    r.iter(&db)
        .unwrap()
        .map(|i| {
            let (k, v) = i.unwrap();
            (k.as_key().as_u64().unwrap() as u32, v)
        })
        .collect()
}

/// A file with three commits; returns its bytes and the model after each commit (index = txn).
fn build() -> (Vec<u8>, Vec<Model>) {
    let disk = MemStorage::new();
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let mut model = Model::new();
    let mut states = vec![Model::new()];
    for c in 1..=3 {
        commit(&env, &mut model, c);
        states.push(model.clone());
    }
    drop(env);
    (disk.snapshot(), states)
}

fn open(bytes: Vec<u8>, read_only: bool, o: &EnvOptions) -> (MemStorage, tersedb::Result<Env>) {
    let disk = MemStorage::from_bytes(bytes);
    let env = Env::open_with_storage(Box::new(disk.clone()), o, read_only);
    (disk, env)
}

fn meta_at(bytes: &[u8], id: u64, copy: bool) -> meta::Meta {
    let p = &bytes[id as usize * PS..(id as usize + 1) * PS];
    if copy {
        meta::Meta::from_copy_page(id, p).unwrap()
    } else {
        meta::Meta::from_page(id, p).unwrap()
    }
}

#[test]
fn every_flipped_byte_of_the_meta_pages_and_copies_opens_the_newest_commit() {
    let (good, states) = build();
    let newest = states.last().unwrap();
    let m = meta_at(&good, 1, false); // commit 3 is in slot 1
    assert_eq!(m.txn_id, 3);
    let pages = [0, 1, m.copies[0], m.copies[1]];
    let mut flips = 0;
    for &page in &pages {
        for i in 0..PS {
            for mask in [0x01u8, 0xff] {
                let mut bad = good.clone();
                bad[page as usize * PS + i] ^= mask;
                let what = format!("page {page} byte {i} ^ {mask:#x}");
                // Read-only: no repair, but never an older commit.
                let (_, env) = open(bad.clone(), true, &opts());
                let env = env.unwrap_or_else(|e| panic!("{what}: read-only open: {e}"));
                assert_eq!(&contents(&env), newest, "{what}: read-only");
                let report = env.check().unwrap();
                assert_eq!(report.commit, 3, "{what}");
                drop(env);
                // Read-write: repaired, check clean, and the repair sticks.
                let (disk, env) = open(bad, false, &opts());
                let env = env.unwrap_or_else(|e| panic!("{what}: open: {e}"));
                assert_eq!(&contents(&env), newest, "{what}");
                let report = env.check().unwrap();
                assert!(report.is_clean(), "{what}: {:?}", report.faults);
                drop(env);
                let (_, env) = open(disk.snapshot(), false, &opts());
                let env = env.unwrap();
                assert!(
                    env.open_notes().is_empty(),
                    "{what}: {:?}",
                    env.open_notes()
                );
                assert_eq!(&contents(&env), newest, "{what}: after repair");
                flips += 1;
            }
        }
    }
    assert_eq!(flips, 4 * PS * 2);
}

#[test]
fn damaged_newest_meta_and_copy_is_corrupted_and_recovery_rolls_back() {
    let (good, states) = build();
    let m = meta_at(&good, 1, false);
    for (slot, older) in [(1u64, false), (0, true)] {
        let mut bad = good.clone();
        bad[slot as usize * PS + 40] ^= 0x10;
        let cp = m.copies[slot as usize] as usize;
        bad[cp * PS + 40] ^= 0x10;
        for read_only in [true, false] {
            match open(bad.clone(), read_only, &opts()).1 {
                Err(Error::Corrupted { page, what }) => {
                    assert_eq!(page, slot, "{what}");
                    assert!(what.contains("recover"), "{what}");
                }
                Err(e) => panic!("slot {slot}: {e}"),
                Ok(_) => panic!("slot {slot}: opened although the meta may be lost"),
            }
        }
        // Recovery: read-only looks at the other commit without writing anything.
        let (disk, env) = open(bad.clone(), true, &opts().recover(true));
        let want = if older { &states[3] } else { &states[2] };
        assert_eq!(&contents(&env.unwrap()), want);
        assert_eq!(disk.snapshot(), bad);
        // Read-write recovery rewrites the damaged pages: later opens agree, writes work.
        let (disk, env) = open(bad, false, &opts().recover(true));
        let env = env.unwrap();
        let notes = env.open_notes();
        assert!(notes.iter().any(|n| n.contains("rolled back")), "{notes:?}");
        assert_eq!(&contents(&env), want);
        assert!(env.check().unwrap().is_clean());
        drop(env);
        let (disk2, env) = open(disk.snapshot(), false, &opts());
        let env = env.unwrap();
        assert_eq!(&contents(&env), want);
        let mut model = want.clone();
        commit(&env, &mut model, 9);
        drop(env);
        let (_, env) = open(disk2.snapshot(), false, &opts());
        let env = env.unwrap();
        assert_eq!(contents(&env), model);
        assert!(env.check().unwrap().is_clean());
    }
}

#[test]
fn torn_newest_meta_opens_the_commit_from_its_copy() {
    let disk = FaultyStorage::new(Vec::new());
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let mut model = Model::new();
    commit(&env, &mut model, 1);
    commit(&env, &mut model, 2);
    let before = model.clone();
    let synced = disk.sync_count();
    commit(&env, &mut model, 3);
    drop(env);
    // Commit 3 synced its data pages (sync `synced + 1`); its meta write is in flight.
    let pre = disk.crash_image(synced + 1, CrashMode::DropUnsynced);
    let post = disk.crash_image(synced + 2, CrashMode::DropUnsynced);
    let slot = PS; // commit 3 writes meta 1
    for cut in [9, 20, 36, 44, 60, 80, 100] {
        let mut torn = pre.clone();
        torn[slot..slot + cut].copy_from_slice(&post[slot..slot + cut]);
        let (_, env) = open(torn.clone(), false, &opts());
        let env = env.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let got = contents(&env);
        assert_eq!(got, model, "cut {cut}");
        assert_ne!(got, before);
        assert!(env.check().unwrap().is_clean(), "cut {cut}");
    }
}

#[test]
fn forged_page_count_is_damage_not_a_walk() {
    let (good, states) = build();
    let m = meta_at(&good, 1, false);
    let mut forged = m;
    forged.page_count = 1 << 40;
    // The newest meta alone forged: its copy restores it.
    let mut bad = good.clone();
    bad[PS..2 * PS].copy_from_slice(&forged.to_page(1));
    let (_, env) = open(bad.clone(), true, &opts());
    assert_eq!(&contents(&env.unwrap()), states.last().unwrap());
    // Meta and copy forged: refused, naming the meta page; recovery rolls back.
    let cp = m.copies[1] as usize;
    bad[cp * PS..(cp + 1) * PS].copy_from_slice(&forged.to_copy_page(cp as u64));
    match open(bad.clone(), true, &opts()).1 {
        Err(Error::Corrupted { page: 1, what }) => assert!(what.contains("pages"), "{what}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let (_, env) = open(bad, true, &opts().recover(true));
    let env = env.unwrap();
    assert_eq!(&contents(&env), &states[2]);
    let report = env.check().unwrap();
    assert_eq!(report.commit, 2);
    assert!(!report.is_clean(), "the damaged meta page is reported");
}

#[test]
fn check_reports_the_commit_and_a_short_file() {
    let (good, _) = build();
    let (_, env) = open(good.clone(), true, &opts());
    let r = env.unwrap().check().unwrap();
    assert!(r.is_clean(), "{:?}", r.faults);
    assert_eq!(r.commit, 3);
    // Pages past the page count (a commit that did not complete) are a note, not a fault.
    let mut long = good.clone();
    long.extend(std::iter::repeat_n(0xab, 3 * PS));
    let (_, env) = open(long, true, &opts());
    let r = env.unwrap().check().unwrap();
    assert!(r.is_clean(), "{:?}", r.faults);
    assert!(
        r.notes.iter().any(|n| n.contains("3 pages past")),
        "{:?}",
        r.notes
    );
    // A file cut short: both metas name pages the file no longer holds.
    let short = good[..good.len() - PS].to_vec();
    assert!(matches!(
        open(short, true, &opts()).1,
        Err(Error::Corrupted { .. })
    ));
}

/// A file written before meta copies (`tests/data/no_meta_copies.tdb`: 1,000 u32 keys imported
/// in two commits, the even ones erased in a third, 512-byte pages): it opens and checks clean;
/// a damaged newest meta cannot be told from a torn one there, so open refuses and recovery rolls
/// back; the next commit adds the copies, and once the other meta page is rewritten too (the
/// commit after: the older meta of the upgrading commit knows no copies) the same damage is
/// restored from them.
#[test]
fn a_file_without_meta_copies_opens_and_gets_them_at_its_next_commit() {
    let old = include_bytes!("data/no_meta_copies.tdb").to_vec();
    let odd: Vec<u32> = (1..1000).step_by(2).collect();
    let keys = |env: &Env| -> Vec<u32> {
        let r = env.begin_read().unwrap();
        let db = r.open_db("d").unwrap();
        r.iter(&db)
            .unwrap()
            .map(|i| i.unwrap().0.as_key().as_u64().unwrap() as u32)
            .collect()
    };
    let (_, env) = open(old.clone(), true, &opts());
    let env = env.unwrap();
    assert_eq!(keys(&env), odd);
    let report = env.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.faults);
    assert!(
        report.notes.iter().any(|n| n.contains("no meta copies")),
        "{:?}",
        report.notes
    );
    drop(env);
    // Its newest meta damaged: refused, recovery rolls back to the second commit (all keys).
    let newest = if meta_at(&old, 1, false).txn_id > meta_at(&old, 0, false).txn_id {
        1
    } else {
        0
    };
    let mut bad = old.clone();
    bad[newest * PS + 200] ^= 1;
    assert!(matches!(
        open(bad.clone(), true, &opts()).1,
        Err(Error::Corrupted { .. })
    ));
    let (_, env) = open(bad, true, &opts().recover(true));
    assert_eq!(keys(&env.unwrap()), (0..1000).collect::<Vec<u32>>());
    // Two commits: the first adds the copies, the second rewrites the other meta page.
    let (disk, env) = open(old, false, &opts());
    let env = env.unwrap();
    for k in [2000u32, 2001] {
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("d").unwrap();
        w.insert(&db, k, &[]).unwrap();
        w.commit().unwrap();
        assert!(env.check().unwrap().is_clean());
    }
    drop(env);
    let mut bytes = disk.snapshot();
    let (m0, m1) = (meta_at(&bytes, 0, false), meta_at(&bytes, 1, false));
    let m = if m1.txn_id > m0.txn_id { m1 } else { m0 };
    assert_ne!(m.copies, [0, 0]);
    let newest = (m.txn_id % 2) as usize;
    bytes[newest * PS + 200] ^= 1;
    let (_, env) = open(bytes, false, &opts());
    let env = env.unwrap();
    let mut want = odd.clone();
    want.extend([2000, 2001]);
    assert_eq!(keys(&env), want);
    assert!(env.check().unwrap().is_clean());
}
