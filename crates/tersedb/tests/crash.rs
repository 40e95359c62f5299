//! Pins crash consistency of the whole engine: a multi-transaction workload runs on a disk that
//! records every write and sync; for EVERY sync point and several crash modes (unsynced writes
//! dropped, last write torn, a random subset applied) the reopened environment equals exactly the
//! last committed state (or, when the in-flight commit's meta reached the disk, the next one),
//! `check` is clean, and the environment takes new writes. Also: failed writes and fsyncs and a
//! full disk give clear errors, poison the environment until reopen, and lose nothing committed.

use std::collections::BTreeMap;
use tersedb::storage::{CrashMode, FaultyStorage, MemStorage};
use tersedb::{
    CodecId, DbConfig, Durability, Env, EnvOptions, Error, Key, KeyScheme, KeyType, RecordType,
};

type Model = BTreeMap<u64, Vec<u8>>;

/// Byte-string keys share a long prefix, then the number big-endian, then a tail of varying
/// length (so head prefixes, prefix deltas and partial keys all have work to do).
const STR_PREFIX: &[u8] = b"/tenants/acme/events/";

fn str_key(k: u64) -> Vec<u8> {
    let mut b = STR_PREFIX.to_vec();
    b.extend_from_slice(&k.to_be_bytes());
    b.extend(std::iter::repeat_n(0x80u8, (k % 5) as usize));
    b
}

fn str_key_number(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[STR_PREFIX.len()..STR_PREFIX.len() + 8]);
    u64::from_be_bytes(a)
}

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(512)
}

fn config() -> DbConfig {
    DbConfig::raw(KeyType::U64, RecordType::Variable)
}

/// Applies commit number `c` of the workload to the env and the model.
fn commit_step(env: &Env, model: &mut Model, c: u64) -> tersedb::Result<()> {
    commit_step_with(env, model, c, config())
}

/// `commit_step` for a database of configuration `cfg` (u64 or u32 keys).
fn commit_step_with(env: &Env, model: &mut Model, c: u64, cfg: DbConfig) -> tersedb::Result<()> {
    let mut w = env.begin_write()?;
    let db = w.open_or_create_db("t", cfg)?;
    let mut rng = fastrand::Rng::with_seed(c);
    let u32_keys = cfg.key_type == KeyType::U32;
    for _ in 0..rng.usize(20..120) {
        // u32 keys spread wide, so compressed blocks see wide and narrow deltas.
        let k = rng.u64(..400) * if u32_keys { 7919 } else { 1 };
        let sk = str_key(k);
        let key = match cfg.key_type {
            KeyType::U32 => Key::U32(k as u32),
            KeyType::VarBinary => Key::Bytes(&sk),
            _ => Key::U64(k),
        };
        if rng.u8(..4) == 0 {
            w.erase(&db, key)?;
            model.remove(&k);
        } else {
            let max = if rng.bool() { 40 } else { 900 };
            let v = vec![c as u8; rng.usize(0..max)];
            w.upsert(&db, key, &v)?;
            model.insert(k, v);
        }
    }
    w.commit()
}

fn contents(env: &Env) -> Model {
    let r = env.begin_read().unwrap();
    let Ok(db) = r.open_db("t") else {
        return Model::new();
    };
    let mut out = Model::new();
    for item in r.iter(&db).unwrap() {
        let (k, v) = item.unwrap();
        let k = k.as_key();
        out.insert(
            k.as_u64()
                .unwrap_or_else(|| str_key_number(k.as_bytes().unwrap())),
            v,
        );
    }
    out
}

#[test]
fn crash_at_every_sync_point() {
    crash_at_every_sync_point_with(opts(), config());
}

/// The same for compressed leaves, every codec (1 KiB pages: the smallest they allow).
#[test]
fn crash_at_every_sync_point_compressed() {
    for codec in CodecId::ALL {
        let cfg = DbConfig::raw(KeyType::U32, RecordType::Variable)
            .with_codec(Some(codec))
            .with_block_size(9);
        crash_at_every_sync_point_with(EnvOptions::default().page_size(1024), cfg);
    }
}

/// The same for every byte-string key compression scheme (512-byte pages: deep trees).
#[test]
fn crash_at_every_sync_point_string_schemes() {
    for scheme in KeyScheme::ALL {
        let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::Variable).with_key_scheme(scheme);
        crash_at_every_sync_point_with(opts(), cfg);
    }
}

fn crash_at_every_sync_point_with(opts: EnvOptions, cfg: DbConfig) {
    let opts = || opts.clone();
    let commit_step = |env: &Env, model: &mut Model, c: u64| commit_step_with(env, model, c, cfg);
    let disk = FaultyStorage::new(Vec::new());
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let mut model = Model::new();
    // (syncs completed when the commit returned, state after it)
    let mut states: Vec<(u64, Model)> = vec![(disk.sync_count(), Model::new())];
    for c in 1..=8 {
        commit_step(&env, &mut model, c).unwrap();
        states.push((disk.sync_count(), model.clone()));
    }
    drop(env);
    let total = disk.sync_count();
    assert!(total >= 17, "create + two syncs per commit: {total}");
    each_crash(&disk, 1..=total, &opts(), commit_step, |k, mode, got| {
        let done = &states.iter().rev().find(|(s, _)| *s <= k).unwrap().1;
        let next = states.iter().find(|(s, _)| *s > k).map(|s| &s.1);
        if mode == CrashMode::DropUnsynced {
            assert!(
                got == done,
                "sync point {k} {mode:?}: not the last committed state"
            );
        } else {
            assert!(
                got == done || Some(got) == next,
                "sync point {k} {mode:?}: unknown state"
            );
        }
    });
}

/// Opens the file as a crash at each sync point of `points` leaves it, in every mode, hands its
/// entries to `expect` (which asserts what that crash may leave), and checks that the file is
/// clean and takes a commit (`step`, the test's commit).
fn each_crash(
    disk: &FaultyStorage,
    points: std::ops::RangeInclusive<u64>,
    opts: &EnvOptions,
    step: impl Fn(&Env, &mut Model, u64) -> tersedb::Result<()>,
    mut expect: impl FnMut(u64, CrashMode, &Model),
) {
    for k in points {
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::TornLast,
            CrashMode::RandomSubset(k),
        ] {
            let img = disk.crash_image(k, mode);
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(img)), opts, false)
                .unwrap_or_else(|e| panic!("sync point {k} {mode:?}: open failed: {e}"));
            let got = contents(&env);
            expect(k, mode, &got);
            let report = env.check().unwrap();
            assert!(
                report.is_clean(),
                "sync point {k} {mode:?}: {:?}",
                report.faults
            );
            let mut m = got.clone();
            step(&env, &mut m, 100).unwrap();
            assert_eq!(
                contents(&env),
                m,
                "sync point {k} {mode:?}: write after recovery"
            );
        }
    }
}

/// A shrink (`Env::shrink`) is a commit that moves the pages at the end of the file, overflow
/// chains included, then empty commits that release them and shorten the file: a crash at any
/// sync point of it, in every mode, leaves exactly the entries before it (it changes none), a
/// clean `check`, and a file that takes new writes.
#[test]
fn crash_during_a_shrink_loses_nothing() {
    let opts = || opts().shrink_on_close(false);
    let disk = FaultyStorage::new(Vec::new());
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let mut model = Model::new();
    for c in 1..=8 {
        commit_step(&env, &mut model, c).unwrap();
    }
    let start = disk.sync_count();
    let rep = env.shrink().unwrap();
    assert!(
        rep.moved > 0 && rep.pages_after < rep.pages_before,
        "the shrink had nothing to do: {rep:?}"
    );
    assert_eq!(contents(&env), model);
    drop(env);
    let total = disk.sync_count();
    println!("{rep:?}, sync points {start}..={total}");
    assert!(total >= start + 6, "a move and two release commits");
    each_crash(
        &disk,
        start..=total,
        &opts(),
        commit_step,
        |k, mode, got| {
            assert!(got == &model, "sync point {k} {mode:?}: entries changed");
        },
    );
}

#[test]
fn io_failures_poison_until_reopen_and_lose_nothing() {
    for (nth_write, nth_sync) in [
        (Some(1), None),
        (Some(4), None),
        (None, Some(1)),
        (None, Some(2)),
    ] {
        let disk = FaultyStorage::new(Vec::new());
        let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
        let mut model = Model::new();
        commit_step(&env, &mut model, 1).unwrap();
        let committed = model.clone();
        disk.fail_nth_write(nth_write);
        disk.fail_nth_sync(nth_sync);
        let e = commit_step(&env, &mut model, 2).unwrap_err();
        assert!(matches!(e, Error::Io(_)), "{e}");
        assert!(matches!(
            env.begin_write().map(|_| ()),
            Err(Error::PreviousIo)
        ));
        assert_eq!(
            contents(&env),
            committed,
            "readers still see the committed state"
        );
        drop(env);
        disk.fail_nth_write(None);
        let env = Env::open_with_storage(Box::new(disk.clone()), &opts(), false).unwrap();
        let got = contents(&env);
        assert!(got == committed || got == model, "after reopen");
        assert!(env.check().unwrap().is_clean());
        let mut m = got;
        commit_step(&env, &mut m, 3).unwrap();
        assert_eq!(contents(&env), m);
    }
}

#[test]
fn full_disk_is_reported_and_loses_nothing() {
    let disk = FaultyStorage::new(Vec::new());
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let mut model = Model::new();
    commit_step(&env, &mut model, 1).unwrap();
    let committed = model.clone();
    disk.set_capacity(Some(disk.current().len() as u64));
    let mut w = env.begin_write().unwrap();
    let db = w.open_db("t").unwrap();
    for k in 1000..3000u64 {
        w.upsert(&db, k, &[7u8; 200]).unwrap();
    }
    assert!(matches!(w.commit(), Err(Error::DiskFull)));
    drop(env);
    disk.set_capacity(None);
    let env = Env::open_with_storage(Box::new(disk), &opts(), false).unwrap();
    assert_eq!(contents(&env), committed);
    assert!(env.check().unwrap().is_clean());
}

#[test]
fn durability_none_is_still_atomic_after_a_process_crash() {
    // A process crash loses nothing the OS accepted: the image with every write applied.
    let disk = FaultyStorage::new(Vec::new());
    let env =
        Env::create_with_storage(Box::new(disk.clone()), &opts().durability(Durability::None))
            .unwrap();
    let mut model = Model::new();
    for c in 1..=5 {
        commit_step(&env, &mut model, c).unwrap();
    }
    // An uncommitted transaction is in flight when the process dies.
    let mut w = env.begin_write().unwrap();
    let db = w.open_db("t").unwrap();
    w.upsert(&db, 5u64, b"never committed").unwrap();
    let img = disk.current();
    drop(w);
    let env2 =
        Env::open_with_storage(Box::new(MemStorage::from_bytes(img)), &opts(), false).unwrap();
    assert_eq!(contents(&env2), model);
    assert!(env2.check().unwrap().is_clean());
}
