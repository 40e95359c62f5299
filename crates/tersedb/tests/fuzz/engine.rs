//! Fuzz harness `engine`: the store as a whole against a `BTreeMap` model, on a disk that fails.
//!
//! The input is a program: a database configuration (u64 keys with variable records and overflow
//! values, u32 keys under each codec, byte-string keys under each scheme), then operations:
//! upsert, insert, erase, ascending runs, erase at a cursor, commit (durable or not), abort,
//! reopen, crash (reopen a crash image at the last sync point: unsynced writes dropped, torn or a
//! random subset), a held read snapshot, cursor walks, ranges, lookups, queries and `check`; and
//! injected faults on a [`FaultyStorage`]: the n-th write or fsync fails, or the disk fills up.
//!
//! What must hold: every read matches the model (the transaction's own changes inside a write
//! transaction, the last commit outside it, the commit it started on for a held snapshot); a
//! failed operation or commit leaves the environment refusing writes or usable, never wrong;
//! after a failed commit the file (as the process left it, and every crash image of it) opens
//! with the previous commit or the new one, nothing else, and `check` is clean; reopening after
//! a successful commit gives exactly that commit.
//!
//! Shared by the cargo-fuzz target `engine` (crates/tersedb/fuzz) and tests/fuzz_replay.rs.

use std::collections::BTreeMap;
use tersedb::storage::{CrashMode, FaultyStorage};
use tersedb::{
    CodecId, Db, DbConfig, Durability, Env, EnvOptions, Error, Key, KeyBuf, KeyScheme, KeyType,
    ReadTxn, RecordType, WriteTxn,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const PAGE: usize = 1024;
const NAME: &str = "e";
/// Configurations: u64, 9 codecs, 8 schemes.
const CONFIGS: u8 = 1 + 9 + 8;

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.u8()?, self.u8()?]))
    }
}

fn config(c: u8) -> DbConfig {
    match c % CONFIGS {
        0 => DbConfig::raw(KeyType::U64, RecordType::Variable),
        c @ 1..=9 => DbConfig::raw(KeyType::U32, RecordType::Fixed(4))
            .with_codec(Some(CodecId::ALL[usize::from(c - 1)]))
            .with_block_size(if c % 2 == 0 { 0 } else { 16 })
            // Compressed records on every third codec.
            .with_compressed_records(c % 3 == 0),
        c => DbConfig::raw(KeyType::VarBinary, RecordType::Variable)
            .with_key_scheme(KeyScheme::ALL[usize::from(c - 10)]),
    }
}

/// Key `n` of the domain: the model's bytes (ordered like the database orders keys) and the key.
fn key(kt: KeyType, n: u16) -> (Vec<u8>, KeyBuf) {
    let v = u32::from(n) * 37;
    match kt {
        KeyType::U32 => (v.to_be_bytes().to_vec(), KeyBuf::U32(v)),
        KeyType::U64 => {
            let v = u64::from(v) << 24 | u64::from(n);
            (v.to_be_bytes().to_vec(), KeyBuf::U64(v))
        }
        _ => {
            let b =
                format!("k/{:02}/{v:08}{}", n % 13, "t".repeat(usize::from(n % 5))).into_bytes();
            (b.clone(), KeyBuf::Bytes(b))
        }
    }
}

fn model_key(k: &KeyBuf) -> Vec<u8> {
    key_bytes(k.as_key())
}

fn key_bytes(k: Key<'_>) -> Vec<u8> {
    match k {
        Key::U32(v) => v.to_be_bytes().to_vec(),
        Key::U64(v) => v.to_be_bytes().to_vec(),
        Key::Bytes(b) => b.to_vec(),
    }
}

fn value(cfg: &DbConfig, n: u16, sel: u8) -> Vec<u8> {
    match cfg.record_type {
        // PFOR-DELTA's compressed records (config 9): one value nine times in ten (PDICT
        // chunks).
        RecordType::Fixed(w)
            if cfg.compress_records && cfg.key_codec == Some(CodecId::PforDelta) && n % 10 != 3 =>
        {
            let mut v = 200u32.to_le_bytes().to_vec();
            v.resize(w as usize, 0);
            v
        }
        RecordType::Fixed(w) => {
            let mut v = (u32::from(n) ^ u32::from(sel) << 16).to_le_bytes().to_vec();
            v.resize(w as usize, 0);
            v
        }
        _ if sel % 16 == 0 => vec![sel; 700 + usize::from(sel) * 3], // overflow pages
        _ => vec![sel; usize::from(sel % 24)],
    }
}

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PAGE)
}

/// Everything in the database as the model holds it.
fn read_model(r: &ReadTxn) -> tersedb::Result<Model> {
    let db = match r.open_db(NAME) {
        Ok(db) => db,
        Err(Error::DbNotFound(_)) => return Ok(Model::new()),
        Err(e) => return Err(e),
    };
    r.iter(&db)?
        .map(|i| i.map(|(k, v)| (model_key(&k), v)))
        .collect()
}

struct World {
    cfg: DbConfig,
    disk: FaultyStorage,
    env: Env,
    committed: Model,
    /// The states a power loss may leave: the last commit that synced, then the commits made
    /// since without a sync (`Durability::None`).
    since_sync: Vec<Model>,
    /// The open write transaction, its database handle and what it holds.
    txn: Option<(WriteTxn, Db, Model)>,
    /// A read snapshot held across commits, with the state it must keep seeing.
    held: Option<(ReadTxn, Model)>,
}

impl World {
    fn open(bytes: Vec<u8>, cfg: DbConfig, allowed: &[&Model]) -> (FaultyStorage, Env, Model) {
        let disk = FaultyStorage::new(bytes);
        let env = Env::open_with_storage(Box::new(disk.clone()), &opts(), false)
            .unwrap_or_else(|e| panic!("reopen failed: {e}"));
        let report = env.check().unwrap_or_else(|e| panic!("check failed: {e}"));
        assert!(report.is_clean(), "check after reopen: {:?}", report.faults);
        let got = read_model(&env.begin_read().unwrap()).expect("read after reopen");
        assert!(
            allowed.iter().any(|m| **m == got),
            "reopened with {} keys, none of the allowed states ({:?} keys)",
            got.len(),
            allowed.iter().map(|m| m.len()).collect::<Vec<_>>()
        );
        if let Ok(r) = env.begin_read() {
            if let Ok(db) = r.open_db(NAME) {
                assert_eq!(r.open_db_with(NAME, cfg).map(drop).ok(), Some(()), "{db:?}");
            }
        }
        (disk, env, got)
    }

    /// Reopens the file as the process left it (faults cleared); it must hold one of `allowed`.
    fn reopen(&mut self, allowed: &[&Model]) {
        self.txn = None;
        self.held = None;
        let bytes = self.disk.current();
        let (disk, env, got) = World::open(bytes, self.cfg, allowed);
        self.disk = disk;
        self.env = env;
        self.since_sync = vec![got.clone()];
        self.committed = got;
    }

    /// Every crash image at the last sync point opens with one of `allowed` (or, after commits
    /// without a sync, one of the states since the last sync; then only the unsynced writes
    /// dropped is checked: a power loss after a `Durability::None` commit may leave anything).
    fn crash_images(&self, new: Option<&Model>, seed: u8) {
        let k = self.disk.sync_count();
        let mut allowed: Vec<&Model> = self.since_sync.iter().collect();
        allowed.extend(new);
        let modes: &[CrashMode] = if self.since_sync.len() == 1 {
            &[
                CrashMode::DropUnsynced,
                CrashMode::TornLast,
                CrashMode::RandomSubset(u64::from(seed) + 1),
            ]
        } else {
            &[CrashMode::DropUnsynced]
        };
        for &mode in modes {
            let img = self.disk.crash_image(k, mode);
            if img.is_empty() {
                continue; // crashed before the file was created
            }
            World::open(img, self.cfg, &allowed);
        }
    }

    fn writer(&mut self) -> Option<&mut (WriteTxn, Db, Model)> {
        if self.txn.is_none() {
            let w = match self.env.begin_write() {
                Ok(w) => w,
                Err(Error::PreviousIo) => {
                    let committed = self.committed.clone();
                    self.reopen(&[&committed]);
                    self.env.begin_write().expect("begin_write after reopen")
                }
                Err(e) => panic!("begin_write: {e}"),
            };
            let mut w = w;
            let db = match w.open_or_create_db(NAME, self.cfg) {
                Ok(db) => db,
                Err(Error::Io(_) | Error::DiskFull) => return None,
                Err(e) => panic!("open_or_create_db: {e}"),
            };
            self.txn = Some((w, db, self.committed.clone()));
        }
        self.txn.as_mut()
    }

    /// A write-side failure that is not the caller's fault: the transaction is gone.
    fn write_failed(&mut self, e: Error) {
        assert!(
            matches!(e, Error::Io(_) | Error::DiskFull | Error::PreviousIo),
            "unexpected error in a write transaction: {e}"
        );
        self.txn = None;
    }

    fn commit(&mut self, durable: bool, seed: u8) {
        let Some((mut w, _, new)) = self.txn.take() else {
            return;
        };
        if !durable {
            w.set_durability(Durability::None);
        }
        match w.commit() {
            Ok(()) => {
                if durable {
                    self.since_sync = vec![new.clone()];
                } else {
                    self.since_sync.push(new.clone());
                }
                self.committed = new;
                // Readers of this process see it at once.
                let got = read_model(&self.env.begin_read().unwrap()).expect("read after commit");
                assert!(
                    got == self.committed,
                    "read after commit differs from the model"
                );
            }
            Err(e) => {
                assert!(
                    matches!(e, Error::Io(_) | Error::DiskFull | Error::PreviousIo),
                    "commit failed with {e}"
                );
                self.crash_images(Some(&new), seed);
                let old = self.committed.clone();
                self.reopen(&[&old, &new]);
            }
        }
    }

    fn check_reads(&mut self, kt: KeyType, lo: u16, span: u8, steps: u8) {
        let (mut lo_m, mut lo_k) = key(kt, lo);
        let (mut hi_m, mut hi_k) = key(kt, lo.saturating_add(u16::from(span) * 4));
        if hi_m < lo_m {
            // Byte-string keys do not sort like the numbers they are made from.
            std::mem::swap(&mut lo_m, &mut hi_m);
            std::mem::swap(&mut lo_k, &mut hi_k);
        }
        let run = |model: &Model, range: Vec<tersedb::Result<(KeyBuf, Vec<u8>)>>, what: &str| {
            let got: Vec<(Vec<u8>, Vec<u8>)> = range
                .into_iter()
                .map(|i| i.map(|(k, v)| (model_key(&k), v)))
                .collect::<tersedb::Result<_>>()
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let want: Vec<(Vec<u8>, Vec<u8>)> = model
                .range(lo_m.clone()..hi_m.clone())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert!(got == want, "{what}: range differs from the model");
        };
        if let Some((w, db, model)) = self.txn.as_mut() {
            let items: Vec<_> = w
                .range::<&KeyBuf, _>(db, &lo_k..&hi_k)
                .expect("range")
                .collect();
            run(model, items, "write txn");
            let got = w.get(db, &lo_k).expect("get");
            assert_eq!(got.as_ref(), model.get(&lo_m), "write txn get");
            let mut c = w.cursor(db).expect("cursor");
            walk(&mut c, model, &lo_m, &lo_k, steps);
        }
        let r = self.env.begin_read().expect("begin_read");
        if let Ok(db) = r.open_db(NAME) {
            let items: Vec<_> = r
                .range::<&KeyBuf, _>(&db, &lo_k..&hi_k)
                .expect("range")
                .collect();
            run(&self.committed, items, "read txn");
            let got = r.get(&db, &lo_k).expect("get");
            assert_eq!(got.as_ref(), self.committed.get(&lo_m), "read txn get");
            assert_eq!(r.len(&db).expect("len"), self.committed.len() as u64, "len");
            let mut c = r.cursor(&db).expect("cursor");
            walk(&mut c, &self.committed, &lo_m, &lo_k, steps);
            if let KeyType::U32 | KeyType::U64 = kt {
                let (a, b) = match (&lo_k, &hi_k) {
                    (KeyBuf::U32(a), KeyBuf::U32(b)) => (u64::from(*a), u64::from(*b)),
                    (KeyBuf::U64(a), KeyBuf::U64(b)) => (*a, *b),
                    _ => unreachable!(),
                };
                let q = format!("SELECT COUNT(*) FROM {NAME} WHERE key BETWEEN {a} AND {b}");
                let want = self.committed.range(lo_m.clone()..=hi_m.clone()).count();
                let got = r.query_str(&q).expect("query");
                assert_eq!(got.values[0].as_int(), Some(want as i128), "{q}");
            }
        }
        if let Some((h, model)) = &self.held {
            let got = read_model(h).expect("read of a held snapshot");
            assert!(got == *model, "a held snapshot changed");
        }
    }
}

/// Cursor from `lower_bound(lo)`: `steps` forward, then back, against the model.
fn walk(c: &mut tersedb::Cursor<'_>, model: &Model, lo_m: &[u8], lo_k: &KeyBuf, steps: u8) {
    let found = c.lower_bound(lo_k).expect("lower_bound");
    let mut want = model.range(lo_m.to_vec()..);
    let Some((first, _)) = want.next() else {
        assert!(!found, "lower_bound found a key past the model's last");
        return;
    };
    assert!(found, "lower_bound missed {first:?}");
    assert_eq!(c.key().map(key_bytes), Some(first.clone()));
    let mut pos = first.clone();
    for _ in 0..steps % 40 {
        let Some((k, v)) = want.next() else {
            assert!(
                !c.next().expect("next"),
                "cursor went past the model's last key"
            );
            break;
        };
        assert!(c.next().expect("next"), "cursor stopped early");
        assert_eq!(c.key().map(key_bytes).as_ref(), Some(k));
        assert_eq!(c.value().expect("value").as_ref(), Some(v));
        pos = k.clone();
    }
    let mut back = model.range(..pos).rev();
    for _ in 0..steps % 7 {
        let Some((k, _)) = back.next() else {
            assert!(!c.prev().expect("prev"), "cursor went before the first key");
            break;
        };
        assert!(c.prev().expect("prev"), "cursor stopped early going back");
        assert_eq!(c.key().map(key_bytes).as_ref(), Some(k));
    }
}

pub fn run(data: &[u8]) {
    let mut input = Bytes(data);
    let Some(c) = input.u8() else { return };
    let cfg = config(c);
    let kt = cfg.key_type;
    let disk = FaultyStorage::new(Vec::new());
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).expect("create");
    let mut world = World {
        cfg,
        disk,
        env,
        committed: Model::new(),
        since_sync: vec![Model::new()],
        txn: None,
        held: None,
    };
    let mut ops = 0;
    while let Some(op) = input.u8() {
        ops += 1;
        if ops > 400 {
            break;
        }
        match op % 16 {
            // upsert / insert / erase of one key
            0..=2 => {
                let (Some(n), Some(sel)) = (input.u16(), input.u8()) else {
                    break;
                };
                let (mk, k) = key(kt, n);
                let v = value(&cfg, n, sel);
                let Some((w, db, model)) = world.writer() else {
                    continue;
                };
                let r = match op % 16 {
                    0 => w.upsert(db, &k, &v).map(|new| {
                        assert_eq!(
                            new,
                            !model.contains_key(&mk),
                            "upsert: whether the key is new"
                        );
                        model.insert(mk, v);
                    }),
                    1 => match w.insert(db, &k, &v) {
                        Err(Error::DuplicateKey { .. }) => {
                            assert!(model.contains_key(&mk), "KeyExists for a missing key");
                            Ok(())
                        }
                        r => r.map(|()| {
                            assert!(model.insert(mk, v).is_none(), "insert over a key");
                        }),
                    },
                    _ => w.erase(db, &k).map(|erased| {
                        assert_eq!(erased, model.remove(&mk).is_some(), "erase's answer");
                    }),
                };
                if let Err(e) = r {
                    world.write_failed(e);
                }
            }
            // a run of keys upserted in ascending order
            3 => {
                let (Some(n), Some(len)) = (input.u16(), input.u8()) else {
                    break;
                };
                let Some((w, db, model)) = world.writer() else {
                    continue;
                };
                let mut failed = None;
                for i in 0..u16::from(len) {
                    let n = n.wrapping_add(i);
                    let (mk, k) = key(kt, n);
                    let v = value(&cfg, n, len);
                    match w.upsert(db, &k, &v) {
                        Ok(_) => {
                            model.insert(mk, v);
                        }
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                if let Some(e) = failed {
                    world.write_failed(e);
                }
            }
            // erase through a write cursor: every `step`-th key from a start
            4 => {
                let (Some(n), Some(step)) = (input.u16(), input.u8()) else {
                    break;
                };
                let (mk, _) = key(kt, n);
                let Some((w, db, model)) = world.writer() else {
                    continue;
                };
                let want: Vec<Vec<u8>> = model
                    .range(mk..)
                    .step_by(usize::from(step % 8) + 1)
                    .take(20)
                    .map(|(k, _)| k.clone())
                    .collect();
                let r = (|| -> tersedb::Result<()> {
                    for mk in &want {
                        let mut c = w.cursor_mut(db)?;
                        let k = match kt {
                            KeyType::U32 => {
                                KeyBuf::U32(u32::from_be_bytes(mk[..].try_into().unwrap()))
                            }
                            KeyType::U64 => {
                                KeyBuf::U64(u64::from_be_bytes(mk[..].try_into().unwrap()))
                            }
                            _ => KeyBuf::Bytes(mk.clone()),
                        };
                        assert!(c.seek(&k)?, "seek missed a model key");
                        let on_next = c.erase()?;
                        model.remove(mk);
                        // The cursor sits on the next key, or is unpositioned after the last.
                        let next = model.range(mk.clone()..).next().map(|(k, _)| k.clone());
                        assert_eq!(on_next, next.is_some(), "cursor erase: positioned");
                        assert_eq!(c.key().map(key_bytes), next, "cursor erase: next key");
                    }
                    Ok(())
                })();
                if let Err(e) = r {
                    world.write_failed(e);
                }
            }
            5 => {
                let Some(sel) = input.u8() else { break };
                world.commit(sel % 4 != 0, sel);
            }
            6 => world.txn = None, // abort
            7 => {
                world.txn = None;
                let committed = world.committed.clone();
                world.reopen(&[&committed]);
            }
            8 => {
                let Some(seed) = input.u8() else { break };
                world.txn = None;
                world.held = None;
                world.crash_images(None, seed);
            }
            // injected faults
            9 => {
                let Some(f) = input.u8() else { break };
                match f % 4 {
                    0 => world.disk.fail_nth_write(Some(u64::from(f / 4) % 24 + 1)),
                    1 => world.disk.fail_nth_sync(Some(u64::from(f / 4) % 3 + 1)),
                    2 => {
                        let len = world.disk.current().len() as u64;
                        world
                            .disk
                            .set_capacity(Some(len + u64::from(f / 4) % 16 * PAGE as u64));
                    }
                    _ => {
                        world.disk.fail_nth_write(None);
                        world.disk.fail_nth_sync(None);
                        world.disk.set_capacity(None);
                    }
                }
            }
            10 => {
                world.held = None;
                let r = world.env.begin_read().expect("begin_read");
                let m = world.committed.clone();
                world.held = Some((r, m));
            }
            11 => world.held = None,
            12 => {
                let report = world.env.check().expect("check");
                assert!(report.is_clean(), "check: {:?}", report.faults);
            }
            _ => {
                let (Some(lo), Some(span), Some(steps)) = (input.u16(), input.u8(), input.u8())
                else {
                    break;
                };
                world.check_reads(kt, lo, span, steps);
            }
        }
    }
    // The end: commit what is pending (faults off), reopen, compare.
    world.disk.fail_nth_write(None);
    world.disk.fail_nth_sync(None);
    world.disk.set_capacity(None);
    world.commit(true, 0);
    let committed = world.committed.clone();
    world.reopen(&[&committed]);
}
