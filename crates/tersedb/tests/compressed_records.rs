//! Compressed numeric records (`DbConfig::with_compressed_records`), as users of time series use
//! them: sensor readings (decimal f64), counters (u64), signed deltas (i64), status codes (few
//! distinct u32, and one of them nine times in ten: PDICT chunks), behind plain and compressed u32/u64 keys, on small and large pages. Random-order
//! loads in batches, upserts that change a record's chunk layout, erases of most keys and
//! retention (oldest first), reopen, point reads, cursors, record aggregates and `check`,
//! against a `BTreeMap`; and the sizes the time-series issue asks for.

mod common;

use common::{assert_clean, contents, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{CodecId, DbConfig, KeyType, RecordType, ValueType};

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
    /// Status codes, 200 nine times in ten (u32): patched dictionaries (PDICT chunks).
    Status,
    /// Arbitrary 2-byte words (opaque records).
    Words,
}

impl Data {
    fn config(self, key_type: KeyType) -> DbConfig {
        let (rt, vt) = match self {
            Data::Readings => (RecordType::Fixed(8), ValueType::F64),
            Data::Counter => (RecordType::Fixed(8), ValueType::U64),
            Data::Deltas => (RecordType::Fixed(8), ValueType::I64),
            Data::Codes | Data::Status => (RecordType::Fixed(4), ValueType::U32),
            Data::Words => (RecordType::Fixed(2), ValueType::Bytes),
        };
        DbConfig::raw(key_type, rt)
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
            Data::Status => match rng.u32(0..100) {
                0..90 => 200u32,
                90..93 => 404,
                93..96 => 204,
                96..98 => 301,
                98 => 500,
                _ => 503,
            }
            .to_le_bytes()
            .to_vec(),
            Data::Words => rng.u16(..).to_le_bytes().to_vec(),
        }
    }
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
    // Skewed codes are coded as patched dictionaries, and the checks above read them.
    if let Data::Status = data {
        let r = env.begin_read().unwrap();
        let s = r.stats(&r.open_db("t").unwrap()).unwrap();
        let mix = s.record_mix();
        assert!(mix.iter().any(|m| m.0 == "pdict"), "{what}: {mix:?}");
    }
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
        Data::Status,
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
        let cfg = DbConfig::raw(KeyType::U32, rt).with_compressed_records(true);
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
        (Data::Status, 4.0, 0.3),
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
            if compressed && matches!(data, Data::Status) {
                // Appended in order: every chunk a patched dictionary but the last, maybe.
                let mix = s.record_mix();
                assert_eq!(mix.first().map(|m| m.0), Some("pdict"), "{mix:?}");
            }
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
        let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::Fixed(8))
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

/// Random upserts of small f64 halves (many repeats, -0.0, NaN) into leaves of tiny codec blocks
/// on 1 KiB pages: a leaf split rebuilt nodes that did not fit their page ("rebuilt node does
/// not fit its page"), found by the query model test once it compressed records.
#[test]
fn small_blocks_and_repetitive_records_split_cleanly() {
    let base = seed();
    for (round, codec) in [
        CodecId::SimdFor,
        CodecId::Bp128,
        CodecId::VByte,
        CodecId::For,
    ]
    .into_iter()
    .enumerate()
    {
        for bs in [2u16, 3, 7] {
            let mut rng = fastrand::Rng::with_seed(base ^ (round as u64 * 31 + bs as u64));
            let (env, _store) = mem_env(1024);
            let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(8))
                .with_value_type(ValueType::F64)
                .with_codec(Some(codec))
                .with_block_size(bs)
                .with_compressed_records(true);
            let mut w = env.begin_write().unwrap();
            let db = w.create_db("t", cfg).unwrap();
            let mut model = BTreeMap::new();
            for _ in 0..2500 {
                let k = match rng.u32(0..21) {
                    0 => [u32::MAX, u32::MAX - 1, 0][rng.usize(0..3)],
                    _ => rng.u32(0..3000),
                };
                let bits = rng.u64(..);
                let v = match bits % 16 {
                    0 => -0.0,
                    1 if bits % 7 == 0 => f64::NAN,
                    _ => ((bits >> 8) % 50) as f64 / 2.0 - 12.5,
                };
                w.upsert(&db, k, &v.to_le_bytes())
                    .unwrap_or_else(|e| panic!("{codec:?} block size {bs}: upsert {k}: {e}"));
                model.insert(k as u64, v.to_le_bytes().to_vec());
            }
            w.commit().unwrap();
            assert_clean(&env);
            assert_eq!(
                contents(&env, "t"),
                model.into_iter().collect::<Vec<_>>(),
                "{codec:?} block size {bs}"
            );
        }
    }
}

/// The smallest load the query model test found failing (157 upserts, SIMD FOR blocks of 2 keys,
/// 1 KiB pages, f64 halves with -0.0 and NaN): the 157th upsert failed with "rebuilt node does
/// not fit its page".
#[test]
fn query_model_load_that_failed_to_split() {
    const KEYS: [u32; 157] = [
        853, 8, 2546, 2324, 2255, 1371, 1928, 2574, 433, 2069, 1372, 620, 1567, 24, 1122, 1688,
        2800, 1801, 230, 792, 849, 0, 520, 0, 1151, 304, 2225, 2713, 4294967294, 2177, 2556, 180,
        2581, 2725, 281, 2601, 1188, 1523, 4294967295, 0, 1758, 1860, 2706, 2401, 2276, 1321, 1019,
        1588, 729, 432, 2149, 1818, 2504, 2385, 2820, 1586, 1009, 2908, 2894, 917, 1526, 223, 1797,
        1757, 1235, 4294967294, 1693, 722, 2164, 2230, 752, 1843, 2123, 761, 2841, 514, 1307, 2610,
        539, 1718, 2165, 2625, 2915, 737, 2853, 665, 1364, 1015, 2182, 54, 2101, 2542, 2406, 649,
        1853, 1815, 2057, 1427, 2615, 2524, 2714, 1419, 6, 358, 1315, 654, 675, 4294967295, 2303,
        1987, 1970, 426, 2556, 2654, 2049, 2927, 2167, 2375, 628, 952, 2870, 2123, 2228, 190, 163,
        441, 2676, 2380, 2052, 3, 2699, 790, 1483, 1084, 1306, 2881, 2498, 1063, 515, 1345, 2815,
        0, 2782, 1399, 2530, 2028, 2267, 954, 872, 477, 1019, 1773, 1557, 1093, 2729, 1737, 2697,
    ];
    const VALS: [f64; 157] = [
        -1.5,
        -11.5,
        -5.0,
        10.5,
        5.5,
        -7.0,
        -8.5,
        8.5,
        7.5,
        10.0,
        1.0,
        4.5,
        -8.0,
        -10.0,
        9.0,
        -5.0,
        -11.5,
        8.0,
        -5.0,
        -2.5,
        -3.0,
        -10.0,
        3.5,
        -5.0,
        -4.0,
        12.0,
        -12.0,
        8.0,
        4.0,
        1.0,
        3.5,
        9.0,
        -0.5,
        -0.0,
        3.0,
        -3.0,
        5.0,
        12.0,
        -4.5,
        1.0,
        -5.0,
        -6.0,
        10.5,
        4.0,
        5.5,
        4.0,
        9.5,
        9.5,
        -10.0,
        -2.0,
        11.0,
        -4.5,
        -10.5,
        6.5,
        -9.0,
        -0.0,
        5.5,
        0.0,
        2.5,
        6.0,
        9.5,
        -4.0,
        -4.5,
        10.0,
        -7.0,
        -9.0,
        -5.5,
        5.0,
        11.0,
        -8.5,
        -5.0,
        -5.5,
        -7.5,
        5.5,
        f64::NAN,
        1.0,
        2.5,
        -8.0,
        -7.0,
        3.5,
        3.5,
        -1.0,
        -8.0,
        11.0,
        -5.5,
        -1.5,
        -12.5,
        0.0,
        1.0,
        -11.5,
        -10.0,
        -10.5,
        -10.5,
        -6.0,
        5.0,
        -11.5,
        -3.5,
        1.5,
        11.0,
        10.0,
        -3.5,
        -7.0,
        -4.5,
        -6.0,
        -2.0,
        6.0,
        -11.5,
        -10.0,
        -9.0,
        -0.0,
        -11.0,
        5.5,
        -0.0,
        -1.5,
        -3.5,
        11.0,
        7.0,
        -8.0,
        4.0,
        5.5,
        9.5,
        -5.0,
        7.5,
        -1.0,
        8.0,
        -0.0,
        7.0,
        -11.0,
        -10.0,
        3.0,
        2.0,
        1.0,
        -5.5,
        -5.5,
        -7.5,
        -4.5,
        8.0,
        6.0,
        8.5,
        8.0,
        -3.5,
        1.0,
        -0.0,
        4.5,
        -7.5,
        -0.0,
        -4.0,
        8.0,
        -9.5,
        0.0,
        2.0,
        -3.0,
        -6.0,
        7.5,
        1.5,
        -12.5,
        -0.0,
    ];

    let (env, _store) = mem_env(1024);
    let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(8))
        .with_value_type(ValueType::F64)
        .with_codec(Some(CodecId::SimdFor))
        .with_block_size(2)
        .with_compressed_records(true);
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("t", cfg).unwrap();
    let mut model = BTreeMap::new();
    for (&k, &v) in KEYS.iter().zip(&VALS) {
        w.upsert(&db, k, &v.to_le_bytes())
            .unwrap_or_else(|e| panic!("upsert {k}: {e}"));
        model.insert(k as u64, v.to_le_bytes().to_vec());
    }
    w.commit().unwrap();
    assert_clean(&env);
    assert_eq!(contents(&env, "t"), model.into_iter().collect::<Vec<_>>());
}
