//! Files stay compact under what users do: random-order loads in batches, erases of most keys,
//! retention (oldest first). Pins: live pages after a random-order load stay close to an
//! ascending load's; erases repack blocks and merge leaves (key bytes close to a fresh load of
//! the survivors); free pages at the end of the file are given back; `compact_file` rewrites a
//! file into the size of an ascending load, keeps every entry, and survives a crash before its
//! rename. Every codec and the uncompressed leaves. `SEED=` re-runs a seed.

mod common;

use common::{clustered, file_len, seed_or, u32_keys, TempDir};
use std::collections::BTreeMap;
use std::path::Path;
use tersedb::{compact_file, CodecId, DbConfig, Env, EnvOptions, KeyType, RecordType};

const CODECS: [Option<CodecId>; 6] = [
    None,
    Some(CodecId::Bp128),
    Some(CodecId::SimdFor),
    Some(CodecId::PforDelta),
    Some(CodecId::VByte),
    Some(CodecId::StreamVByte),
];

fn name(c: Option<CodecId>) -> &'static str {
    c.map_or("none", |c| c.name())
}

fn config(codec: Option<CodecId>) -> DbConfig {
    DbConfig::u32_set().with_codec(codec)
}

/// Loads `keys` in this order, `batch` per commit.
fn load(path: &Path, codec: Option<CodecId>, keys: &[u32], batch: usize) -> Env {
    let env = Env::create(path, &EnvOptions::default()).unwrap();
    for chunk in keys.chunks(batch) {
        let mut w = env.begin_write().unwrap();
        let db = w.open_or_create_db("k", config(codec)).unwrap();
        for &k in chunk {
            w.insert(&db, k, &[]).unwrap();
        }
        w.commit().unwrap();
    }
    env
}

/// (bytes of the tree's pages, bytes its leaves' key lists use)
fn live(env: &Env) -> (u64, u64) {
    let r = env.begin_read().unwrap();
    let db = r.open_db("k").unwrap();
    let s = r.stats(&db).unwrap();
    (s.bytes, s.leaf_key_bytes)
}

#[test]
fn random_loads_erases_and_compaction_stay_compact() {
    let s = seed_or(11);
    let n = 60_000;
    for codec in CODECS {
        let mut rng = fastrand::Rng::with_seed(s);
        let keys = clustered(n, &mut rng);
        let dir = TempDir::new(name(codec));
        let asc = load(&dir.file("asc"), codec, &keys, 10_000);
        let (asc_pages, _) = live(&asc);
        drop(asc);

        let mut order = keys.clone();
        rng.shuffle(&mut order);
        let path = dir.file("rnd");
        let env = load(&path, codec, &order, 10_000);
        let (rnd_pages, _) = live(&env);
        let ratio = rnd_pages as f64 / asc_pages as f64;
        println!(
            "{}: random load live pages {ratio:.2}x ascending",
            name(codec)
        );
        // Issue 15: live pages within 1.5x of the ascending load, key bytes after erasing 90%
        // within 1.3x of a fresh load of the survivors.
        assert!(ratio <= 1.5, "{}: live pages {ratio:.2}x", name(codec));

        // Erase 90% at random, in batches: the file never grows, key bytes repack.
        let erased = n * 9 / 10;
        let loaded_file = file_len(&path);
        let mut file_before = loaded_file;
        let mut grew = 0u64;
        for chunk in order[..erased].chunks(10_000) {
            let mut w = env.begin_write().unwrap();
            let db = w.open_db("k").unwrap();
            for &k in chunk {
                assert!(w.erase(&db, k).unwrap());
            }
            w.commit().unwrap();
            let now = file_len(&path);
            grew = grew.max(now.saturating_sub(file_before));
            file_before = now;
        }
        assert!(
            file_len(&path) <= loaded_file,
            "{}: erasing grew the file",
            name(codec)
        );
        let rep = env.check().unwrap();
        assert!(rep.is_clean(), "{}: {:?}", name(codec), rep.faults);
        let mut survivors = order[erased..].to_vec();
        survivors.sort_unstable();
        assert_eq!(u32_keys(&env, "k"), survivors);
        let fresh = load(&dir.file("fresh"), codec, &survivors, 10_000);
        let (_, fresh_keys) = live(&fresh);
        drop(fresh);
        let (_, erased_keys) = live(&env);
        let kr = erased_keys as f64 / fresh_keys as f64;
        println!(
            "{}: after erasing 90%, key bytes {kr:.2}x a fresh load; largest growth of the file in one erase batch {grew} bytes",
            name(codec)
        );
        assert!(kr <= 1.3, "{}: key bytes {kr:.2}x", name(codec));
        // Empty commits make the pages freed by the erases reusable; the free tail goes back
        // (down to the page count of the commit before, so it takes a commit more).
        for _ in 0..3 {
            env.begin_write().unwrap().commit().unwrap();
        }
        let shrunk = file_len(&path);
        let fresh_file = file_len(&dir.file("fresh"));
        println!(
            "{}: after erasing 90% and three commits the file is {shrunk} bytes, a fresh load of the survivors {fresh_file}",
            name(codec)
        );
        assert!(
            shrunk <= 3 * fresh_file + 8 * 16384,
            "{}: file {shrunk} bytes after erasing 90% (fresh load: {fresh_file})",
            name(codec)
        );
        let dbs_before = env.begin_read().unwrap().list_dbs().unwrap();
        drop(env);

        // Compaction: the ascending size, the same keys, a clean file.
        let rep = compact_file(&path, &EnvOptions::default()).unwrap();
        assert_eq!(rep.entries, survivors.len() as u64);
        assert_eq!(rep.after_bytes, file_len(&path));
        let cr = rep.after_bytes as f64 / fresh_file as f64;
        println!(
            "{}: compacted file {cr:.3}x a fresh ascending load",
            name(codec)
        );
        assert!(cr <= 1.05, "{}: compacted {cr:.3}x", name(codec));
        let env = Env::open(&path, &EnvOptions::default()).unwrap();
        assert!(env.check().unwrap().is_clean());
        assert_eq!(u32_keys(&env, "k"), survivors);
        assert_eq!(env.begin_read().unwrap().list_dbs().unwrap(), dbs_before);
    }
}

#[test]
fn retention_oldest_first_keeps_the_file_bounded() {
    // A time series: append new keys, erase the oldest, many rounds. The file must level off.
    let dir = TempDir::new("retention");
    let path = dir.file("ts");
    let env = Env::create(&path, &EnvOptions::default()).unwrap();
    let mut next = 0u32;
    let mut sizes = Vec::new();
    for round in 0..40u32 {
        let mut w = env.begin_write().unwrap();
        let db = w
            .open_or_create_db("k", config(Some(CodecId::Bp128)))
            .unwrap();
        for _ in 0..5_000 {
            w.append(&db, next * 3, &[]).unwrap();
            next += 1;
        }
        if round >= 4 {
            let lo = (round - 4) * 5_000;
            for k in lo..lo + 5_000 {
                assert!(w.erase(&db, k * 3).unwrap());
            }
        }
        w.commit().unwrap();
        sizes.push(file_len(&path));
    }
    let r = env.begin_read().unwrap();
    let db = r.open_db("k").unwrap();
    assert_eq!(r.len(&db).unwrap(), 20_000);
    assert!(env.check().unwrap().is_clean());
    let late = sizes[20..].iter().max().unwrap();
    let early = sizes[4..10].iter().max().unwrap();
    assert!(
        *late <= early + 8 * 16384,
        "file keeps growing under retention: {sizes:?}"
    );
}

#[test]
fn records_survive_compaction_and_crash_before_rename_keeps_the_old_file() {
    let dir = TempDir::new("records");
    let path = dir.file("r");
    let mut model = BTreeMap::new();
    {
        let env = Env::create(&path, &EnvOptions::default()).unwrap();
        let mut w = env.begin_write().unwrap();
        let a = w
            .create_db("vals", DbConfig::raw(KeyType::U64, RecordType::Variable))
            .unwrap();
        let b = w.create_db("set", config(Some(CodecId::Bp128))).unwrap();
        let mut rng = fastrand::Rng::with_seed(seed_or(11));
        for _ in 0..5_000 {
            let k = rng.u64(..1 << 40);
            let len = if rng.u8(..10) == 0 {
                5000
            } else {
                rng.usize(0..40)
            };
            let v: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            w.upsert(&a, k, &v).unwrap();
            model.insert(k, v);
            w.upsert(&b, rng.u32(..), &[]).unwrap();
        }
        w.commit().unwrap();
        // Erase half, so the copy differs from the file.
        let mut w = env.begin_write().unwrap();
        let a = w.open_db("vals").unwrap();
        let ks: Vec<u64> = model.keys().copied().step_by(2).collect();
        for k in ks {
            w.erase(&a, k).unwrap();
            model.remove(&k);
        }
        w.commit().unwrap();

        // A crash after the copy but before the rename: the temp file exists, the file is
        // untouched; the next compaction removes the stale copy.
        env.copy_compact(tersedb::compact::compact_temp_path(&path))
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let env = Env::open(&path, &EnvOptions::default()).unwrap();
    assert!(env.check().unwrap().is_clean());
    drop(env);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let rep = compact_file(&path, &EnvOptions::default()).unwrap();
    assert_eq!(rep.dbs, 2);
    assert!(rep.after_bytes <= rep.before_bytes);
    assert!(!tersedb::compact::compact_temp_path(&path).exists());
    let env = Env::open(&path, &EnvOptions::default()).unwrap();
    assert!(env.check().unwrap().is_clean());
    let r = env.begin_read().unwrap();
    let a = r.open_db("vals").unwrap();
    let got: BTreeMap<u64, Vec<u8>> = r
        .iter(&a)
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.as_key().as_u64().unwrap(), v)
        })
        .collect();
    assert_eq!(got, model);
}

#[test]
fn compaction_refuses_a_file_in_use() {
    let dir = TempDir::new("locked");
    let path = dir.file("l");
    let env = Env::create(&path, &EnvOptions::default()).unwrap();
    let err = compact_file(&path, &EnvOptions::default()).unwrap_err();
    assert!(matches!(err, tersedb::Error::Locked { .. }), "{err}");
    drop(env);
    assert!(!tersedb::compact::compact_temp_path(&path).exists());
}

/// Leaves packed at commit (`tree::pack_dirty`) keep every entry and its record, on every kind
/// of list the packing rebuilds: u64 keys with compressed f64 records, byte keys under a
/// non-head string scheme with variable records (some in overflow pages), u32 BP128 keys with
/// variable records; and a head-compressed scheme, which packing skips. Random-order inserts
/// and then erases of 85%, 1,500 per commit, on 4 KiB pages (many leaves), against a
/// `BTreeMap`, with `check` after each phase. After the erases the tree's pages are within 1.35x
/// of a fresh load of the survivors (before packing at commit: up to 1.7x).
#[test]
fn packing_at_commit_keeps_every_entry() {
    let s = seed_or(11);
    let configs: [(&str, DbConfig); 4] = [
        (
            "u64-f64",
            DbConfig::new(KeyType::U64, RecordType::Fixed(8))
                .with_value_type(tersedb::ValueType::F64)
                .with_compressed_records(true)
                .with_codec(Some(CodecId::Bp128)),
        ),
        (
            "bytes-pkb",
            DbConfig::raw(KeyType::VarBinary, RecordType::Variable)
                .with_key_scheme(tersedb::KeyScheme::Pkb),
        ),
        (
            "u32-bp128-var",
            DbConfig::raw(KeyType::U32, RecordType::Variable).with_codec(Some(CodecId::Bp128)),
        ),
        (
            "bytes-head",
            DbConfig::raw(KeyType::VarBinary, RecordType::Variable)
                .with_key_scheme(tersedb::KeyScheme::Head),
        ),
    ];
    let opts = EnvOptions::default().page_size(4096);
    for (tag, cfg) in configs {
        let mut rng = fastrand::Rng::with_seed(s);
        let n = 24_000u64;
        let key = |i: u64| -> Vec<u8> {
            match tag {
                "u64-f64" => (i * 1_000_003 + (1 << 40)).to_be_bytes().to_vec(),
                "u32-bp128-var" => ((i * 7) as u32).to_be_bytes().to_vec(),
                _ => format!("sensor/{:03}/reading/{i:08}", i % 97).into_bytes(),
            }
        };
        let value = |i: u64, rng: &mut fastrand::Rng| -> Vec<u8> {
            match tag {
                "u64-f64" => (f64::from(rng.u32(..10_000)) / 100.0)
                    .to_le_bytes()
                    .to_vec(),
                // One record in 500 goes to overflow pages.
                _ if i % 500 == 0 => vec![(i % 251) as u8; 5000],
                _ => vec![(i % 251) as u8; rng.usize(0..24)],
            }
        };
        fn as_key<'k>(tag: &str, k: &'k [u8]) -> tersedb::Key<'k> {
            match tag {
                "u64-f64" => tersedb::Key::U64(u64::from_be_bytes(k.try_into().unwrap())),
                "u32-bp128-var" => tersedb::Key::U32(u32::from_be_bytes(k.try_into().unwrap())),
                _ => tersedb::Key::Bytes(k),
            }
        }
        let dir = TempDir::new(tag);
        let env = Env::create(dir.file("p"), &opts).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut order: Vec<u64> = (0..n).collect();
        rng.shuffle(&mut order);
        let compare = |env: &Env, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str| {
            let r = env.begin_read().unwrap();
            let db = r.open_db("t").unwrap();
            let got: Vec<(Vec<u8>, Vec<u8>)> = r
                .iter(&db)
                .unwrap()
                .map(|e| {
                    let (k, v) = e.unwrap();
                    let k = match k.as_key() {
                        tersedb::Key::U64(x) => x.to_be_bytes().to_vec(),
                        tersedb::Key::U32(x) => x.to_be_bytes().to_vec(),
                        k => k.as_bytes().unwrap().to_vec(),
                    };
                    (k, v)
                })
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got.len(), want.len(), "{tag} {when}: entry count");
            assert!(got == want, "{tag} {when}: entries differ from the model");
            let rep = env.check().unwrap();
            assert!(rep.is_clean(), "{tag} {when}: {:?}", rep.faults);
        };
        for (b, chunk) in order.chunks(1_500).enumerate() {
            let mut w = env.begin_write().unwrap();
            let db = w.open_or_create_db("t", cfg).unwrap();
            for &i in chunk {
                let (k, v) = (key(i), value(i, &mut rng));
                w.insert(&db, as_key(tag, &k), &v).unwrap();
                model.insert(k, v);
            }
            w.commit().unwrap();
            if b % 4 == 3 {
                compare(&env, &model, "loading");
            }
        }
        compare(&env, &model, "loaded");
        let erased = n as usize * 85 / 100;
        for chunk in order[..erased].chunks(1_500) {
            let mut w = env.begin_write().unwrap();
            let db = w.open_db("t").unwrap();
            for &i in chunk {
                let k = key(i);
                assert!(w.erase(&db, as_key(tag, &k)).unwrap(), "{tag}: erase");
                model.remove(&k);
            }
            w.commit().unwrap();
        }
        compare(&env, &model, "erased");
        let pages = |env: &Env| {
            let r = env.begin_read().unwrap();
            r.stats(&r.open_db("t").unwrap()).unwrap().bytes
        };
        let erased_pages = pages(&env);
        drop(env);
        // A fresh load of the survivors, ascending, in one commit.
        let fresh = Env::create(dir.file("f"), &opts).unwrap();
        let mut w = fresh.begin_write().unwrap();
        let db = w.open_or_create_db("t", cfg).unwrap();
        for (k, v) in &model {
            w.insert(&db, as_key(tag, k), v).unwrap();
        }
        w.commit().unwrap();
        let ratio = erased_pages as f64 / pages(&fresh) as f64;
        println!("{tag}: after erasing 85%, pages {ratio:.2}x a fresh load");
        if tag != "bytes-head" {
            assert!(ratio <= 1.35, "{tag}: pages {ratio:.2}x a fresh load");
        }
    }
}
