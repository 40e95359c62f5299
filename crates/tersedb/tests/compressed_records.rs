//! Compressed numeric records (`DbConfig::with_compressed_records`), as users of time series use
//! them: sensor readings (decimal f64), counters (u64), signed deltas (i64), status codes (few
//! distinct u32), behind plain and compressed u32/u64 keys, on small and large pages. Random-order
//! loads in batches, upserts that change a record's chunk layout, erases of most keys and
//! retention (oldest first), reopen, point reads, cursors, record aggregates and `check`,
//! against a `BTreeMap`; and the sizes the time-series issue asks for.

mod common;

use common::{assert_clean, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{CodecId, DbConfig, Env, KeyType, RecordType, ValueType};

#[derive(Clone, Copy, Debug)]
enum Data {
    /// Temperatures with two decimals (f64).
    Readings,
    /// A counter that mostly grows (u64).
    Counter,
    /// Signed changes around zero, with rare extremes (i64).
    Deltas,
    /// A handful of status codes (u32).
    Codes,
    /// Arbitrary 2-byte words (opaque records).
    Words,
}

impl Data {
    fn config(self, key_type: KeyType) -> DbConfig {
        let (rt, vt) = match self {
            Data::Readings => (RecordType::Fixed(8), ValueType::F64),
            Data::Counter => (RecordType::Fixed(8), ValueType::U64),
            Data::Deltas => (RecordType::Fixed(8), ValueType::I64),
            Data::Codes => (RecordType::Fixed(4), ValueType::U32),
            Data::Words => (RecordType::Fixed(2), ValueType::Bytes),
        };
        DbConfig::new(key_type, rt)
            .with_value_type(vt)
            .with_compressed_records(true)
    }

    fn value(self, i: u64, rng: &mut fastrand::Rng) -> Vec<u8> {
        match self {
            Data::Readings => {
                let v = match rng.u32(0..50) {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => rng.f64() * 1e9,
                    _ => (1500 + rng.i64(0..1500)) as f64 / 100.0,
                };
                v.to_le_bytes().to_vec()
            }
            Data::Counter => (1_000_000 + i * 3 + rng.u64(0..3)).to_le_bytes().to_vec(),
            Data::Deltas => {
                let v = match rng.u32(0..100) {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    _ => rng.i64(-300..300),
                };
                v.to_le_bytes().to_vec()
            }
            Data::Codes => [200u32, 404, 500, 301][rng.usize(0..4)]
                .to_le_bytes()
                .to_vec(),
            Data::Words => rng.u16(..).to_le_bytes().to_vec(),
        }
    }
}

fn contents(env: &Env, name: &str) -> Vec<(u64, Vec<u8>)> {
    let r = env.begin_read().unwrap();
    let db = r.open_db(name).unwrap();
    r.iter(&db)
        .unwrap()
        .map(|x| {
            let (k, v) = x.unwrap();
            (k.as_key().as_u64().unwrap(), v)
        })
        .collect()
}

fn key_of(kt: KeyType, k: u64) -> tersedb::Key<'static> {
    match kt {
        KeyType::U32 => tersedb::Key::U32(k as u32),
        _ => tersedb::Key::U64(k),
    }
}

/// One run: `n` keys in random order in batches, upserts, reads, erases, retention, reopen.
fn run(
    data: Data,
    kt: KeyType,
    codec: Option<CodecId>,
    auto: bool,
    page: usize,
    n: usize,
    rng: &mut fastrand::Rng,
) {
    let what = format!("{data:?} {kt:?} {codec:?} auto={auto} page={page}");
    let cfg = data.config(kt).with_codec(codec).with_auto_codec(auto);
    let (env, store) = mem_env(page);
    let base = if kt == KeyType::U64 {
        1_764_000_000_000_000
    } else {
        0
    };
    let mut keys: Vec<u64> = (0..n as u64)
        .map(|i| base + i * 7 + rng.u64(0..7))
        .collect();
    rng.shuffle(&mut keys);
    let mut model = BTreeMap::new();
    for batch in keys.chunks(n / 3 + 1) {
        let mut w = env.begin_write().unwrap();
        let db = match w.open_db("t") {
            Ok(db) => db,
            Err(_) => w.create_db("t", cfg).unwrap(),
        };
        for &k in batch {
            let v = data.value(k - base, rng);
            w.insert(&db, key_of(kt, k), &v).unwrap();
            model.insert(k, v);
        }
        w.commit().unwrap();
    }
    assert_clean(&env);
    assert_eq!(
        contents(&env, "t"),
        model.clone().into_iter().collect::<Vec<_>>(),
        "{what}"
    );
    // Upserts: a third of the keys get other values (a chunk may change layout or split).
    {
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("t").unwrap();
        for _ in 0..n / 3 {
            let k = keys[rng.usize(0..keys.len())];
            let v = if rng.u32(0..10) == 0 {
                // A value far outside the chunk's frame.
                let mut v = data.value(k, rng);
                v.iter_mut().for_each(|b| *b ^= 0xa5);
                v
            } else {
                data.value(k - base, rng)
            };
            assert!(!w.upsert(&db, key_of(kt, k), &v).unwrap(), "{what}");
            model.insert(k, v);
        }
        w.commit().unwrap();
    }
    assert_clean(&env);
    {
        let r = env.begin_read().unwrap();
        let db = r.open_db("t").unwrap();
        for _ in 0..2000 {
            let k = if rng.bool() {
                keys[rng.usize(0..keys.len())]
            } else {
                base + rng.u64(0..n as u64 * 8)
            };
            assert_eq!(
                r.get(&db, key_of(kt, k)).unwrap(),
                model.get(&k).cloned(),
                "{what} {k}"
            );
        }
        // Backwards with a cursor.
        let mut c = r.cursor(&db).unwrap();
        assert!(c.last().unwrap());
        let mut back = vec![(
            c.key().unwrap().as_u64().unwrap(),
            c.value().unwrap().unwrap(),
        )];
        while c.prev().unwrap() {
            back.push((
                c.key().unwrap().as_u64().unwrap(),
                c.value().unwrap().unwrap(),
            ));
        }
        back.reverse();
        assert_eq!(
            back,
            model.clone().into_iter().collect::<Vec<_>>(),
            "{what}"
        );
    }
    // Record aggregates read the compressed records (numbers only).
    if !matches!(data, Data::Words) {
        let r = env.begin_read().unwrap();
        let res = r
            .query_str("SELECT COUNT(*), MIN(record), MAX(record) FROM t")
            .unwrap();
        let text = res.to_csv();
        assert!(text.contains(&model.len().to_string()), "{what}: {text}");
    }
    // Retention: the oldest half first, then most of the rest at random.
    {
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("t").unwrap();
        let old: Vec<u64> = model.keys().copied().take(model.len() / 2).collect();
        for k in old {
            assert!(w.erase(&db, key_of(kt, k)).unwrap());
            model.remove(&k);
        }
        let mut rest: Vec<u64> = model.keys().copied().collect();
        rng.shuffle(&mut rest);
        for &k in rest.iter().take(rest.len() * 4 / 5) {
            assert!(w.erase(&db, key_of(kt, k)).unwrap());
            model.remove(&k);
        }
        w.commit().unwrap();
    }
    assert_clean(&env);
    drop(env);
    let env = reopen_mem(&store, page);
    assert_clean(&env);
    assert_eq!(
        contents(&env, "t"),
        model.into_iter().collect::<Vec<_>>(),
        "{what} after erases and reopen"
    );
}

#[test]
fn compressed_records_match_a_model() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let datas = [
        Data::Readings,
        Data::Counter,
        Data::Deltas,
        Data::Codes,
        Data::Words,
    ];
    for (k, data) in datas.into_iter().enumerate() {
        // Plain and compressed keys of both widths, on small and large pages.
        let setups = [
            (KeyType::U32, None, false, 1024),
            (KeyType::U64, None, false, 4096),
            (KeyType::U32, Some(CodecId::Bp128), false, 4096),
            (KeyType::U64, None, true, 16384),
            (KeyType::U64, Some(CodecId::PforDelta), false, 1024),
        ];
        for (j, (kt, codec, auto, page)) in setups.into_iter().enumerate() {
            // Every data kind on every setup is too slow for a debug build: a rotating half.
            if (j + k) % 2 == 1 && j != 0 {
                continue;
            }
            run(data, kt, codec, auto, page, 6000, &mut rng);
        }
    }
}

/// Record-type validation: compressed records need fixed-size records of 1..=8 bytes.
#[test]
fn compressed_records_need_small_fixed_records() {
    let (env, _store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    for rt in [RecordType::Variable, RecordType::None, RecordType::Fixed(9)] {
        let cfg = DbConfig::new(KeyType::U32, rt).with_compressed_records(true);
        let e = w.create_db("x", cfg).unwrap_err();
        assert!(e.to_string().contains("compressed records"), "{e}");
    }
}

/// The time-series issue's sizes: readings with two decimals, a counter and status codes cost
/// far fewer than their raw bytes per record, in the same run as the raw layout.
#[test]
fn compressed_records_are_small() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let n = 50_000u64;
    for (data, raw, most) in [
        (Data::Readings, 8.0, 2.5),
        (Data::Counter, 8.0, 2.0),
        (Data::Codes, 4.0, 0.5),
    ] {
        let size = |compressed: bool, rng: &mut fastrand::Rng| {
            let (env, _store) = mem_env(4096);
            let mut w = env.begin_write().unwrap();
            let cfg = data
                .config(KeyType::U64)
                .with_compressed_records(compressed);
            let db = w.create_db("t", cfg).unwrap();
            for i in 0..n {
                let mut v = data.value(i, rng);
                if let Data::Readings = data {
                    // Only decimals here: the model test covers NaN and full-precision values.
                    v = ((1500 + rng.i64(0..1500)) as f64 / 100.0)
                        .to_le_bytes()
                        .to_vec();
                }
                w.append(&db, 1_764_000_000_000_000u64 + i * 1000, &v)
                    .unwrap();
            }
            let s = w.stats(&db).unwrap();
            w.commit().unwrap();
            s.leaf_record_bytes as f64 / n as f64
        };
        let plain = size(false, &mut rng);
        let packed = size(true, &mut rng);
        eprintln!("{data:?}: {plain:.3} raw, {packed:.3} compressed bytes per record");
        assert!(
            (plain - raw).abs() < 0.01,
            "{data:?} raw records take {plain}"
        );
        assert!(packed < most, "{data:?} compressed records take {packed}");
    }
}

/// Byte-string keys (every key scheme) with compressed f64 records: the leaf is split by
/// rebuilding when a record chunk finds no room, whatever the key list.
#[test]
fn compressed_records_behind_string_keys() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for scheme in tersedb::KeyScheme::ALL {
        let cfg = DbConfig::new(KeyType::VarBinary, RecordType::Fixed(8))
            .with_key_scheme(scheme)
            .with_value_type(ValueType::F64)
            .with_compressed_records(true);
        let (env, store) = mem_env(4096);
        let mut model = BTreeMap::new();
        for round in 0..3 {
            let mut w = env.begin_write().unwrap();
            let db = match w.open_db("s") {
                Ok(db) => db,
                Err(_) => w.create_db("s", cfg).unwrap(),
            };
            for _ in 0..3000 {
                let k = format!("sensor/{:03}/{:08}", rng.u32(0..40), rng.u32(0..1_000_000));
                let v = Data::Readings.value(0, &mut rng);
                if round == 2 && rng.bool() {
                    let gone = model.remove(k.as_bytes()).is_some();
                    assert_eq!(w.erase(&db, k.as_bytes()).unwrap(), gone, "{scheme:?}");
                } else {
                    w.upsert(&db, k.as_bytes(), &v).unwrap();
                    model.insert(k.into_bytes(), v);
                }
            }
            w.commit().unwrap();
            assert_clean(&env);
        }
        drop(env);
        let env = reopen_mem(&store, 4096);
        assert_clean(&env);
        let r = env.begin_read().unwrap();
        let db = r.open_db("s").unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = r
            .iter(&db)
            .unwrap()
            .map(|x| {
                let (k, v) = x.unwrap();
                (k.as_key().as_bytes().unwrap().to_vec(), v)
            })
            .collect();
        assert_eq!(got, model.into_iter().collect::<Vec<_>>(), "{scheme:?}");
    }
}
