//! What a new database gets without asking: `DbConfig::new` compresses integer keys with a codec
//! chosen per block and fixed-size records chunk by chunk, on every page size (pages too small
//! for a key block keep the keys plain); `DbConfig::raw` compresses nothing. Both are checked
//! against a `BTreeMap` through random-order inserts, upserts, erases of most keys, reopen and
//! `check`, and by the space they take.

mod common;

use common::{assert_clean, contents, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{CodecId, DbConfig, Error, KeyScheme, KeyType, RecordType, ValueType};

#[test]
fn new_compresses_integer_keys_and_numeric_records() {
    let c = DbConfig::new(KeyType::U64, RecordType::Fixed(8));
    assert!(c.auto_codec && c.key_codec.is_none() && c.compress_records);
    let c = DbConfig::new(KeyType::U32, RecordType::Variable);
    assert!(c.auto_codec && !c.compress_records);
    let c = DbConfig::new(KeyType::VarBinary, RecordType::Fixed(4));
    assert!(!c.auto_codec && c.compress_records);
    assert_eq!(c.key_scheme, KeyScheme::HeadTail);
    let c = DbConfig::new(KeyType::Binary(16), RecordType::Fixed(16));
    assert!(!c.auto_codec && !c.compress_records);
    let r = DbConfig::raw(KeyType::U64, RecordType::Fixed(8));
    assert!(!r.auto_codec && r.key_codec.is_none() && !r.compress_records);
    assert_eq!(
        DbConfig::u32_set(),
        DbConfig::new(KeyType::U32, RecordType::None)
    );
    // Naming a codec, or none, turns the automatic choice off: `with_codec(None)` on the
    // defaults gives uncompressed keys.
    let c = DbConfig::u32_set().with_codec(None);
    assert!(!c.auto_codec && c.key_codec.is_none());
    let c = DbConfig::u32_set().with_codec(Some(CodecId::Bp128));
    assert!(!c.auto_codec && c.key_codec == Some(CodecId::Bp128));
    let c = DbConfig::u32_set().with_codec(None).with_auto_codec(true);
    assert!(c.auto_codec);
}

/// The stored configuration is what `new` asked for where it fits the page: on 512-byte pages
/// the keys stay plain (no block fits), and opening with the same `new` matches either way; a
/// named codec on such pages is refused, as before.
#[test]
fn defaults_fit_every_page_size() {
    for ps in [512usize, 1024, 4096, 16384, 65536] {
        let (env, store) = mem_env(ps);
        let want =
            DbConfig::new(KeyType::U32, RecordType::Fixed(4)).with_value_type(ValueType::U32);
        let mut w = env.begin_write().unwrap();
        w.create_db("d", want).unwrap();
        w.commit().unwrap();
        drop(env);
        let env = reopen_mem(&store, ps);
        let r = env.begin_read().unwrap();
        let got = r.open_db("d").unwrap().config();
        assert_eq!(got.auto_codec, ps >= 1024, "page {ps}");
        assert!(got.compress_records, "page {ps}");
        r.open_db_with("d", want).unwrap();
        assert!(matches!(
            r.open_db_with(
                "d",
                DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_value_type(ValueType::U32)
            ),
            Err(Error::ConfigMismatch { .. })
        ));
        drop(r);
        let mut w = env.begin_write().unwrap();
        let named = w.create_db(
            "e",
            DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::Bp128)),
        );
        assert_eq!(named.is_err(), ps < 1024, "page {ps}");
    }
}

/// u64 millisecond timestamps in random order with i64 and f64 values: the defaults hold what
/// a `BTreeMap` holds through inserts, upserts, erases of 80% and reopen, and take far less
/// room than `raw`.
#[test]
fn defaults_match_a_model_and_save_space() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for vt in [ValueType::I64, ValueType::F64, ValueType::U64] {
        let mut sizes = Vec::new();
        for new in [true, false] {
            let cfg = if new {
                DbConfig::new(KeyType::U64, RecordType::Fixed(8))
            } else {
                DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
            }
            .with_value_type(vt);
            let (env, store) = mem_env(4096);
            let mut model = BTreeMap::new();
            let t0 = 1_790_000_000_000u64;
            let mut keys: Vec<u64> = (0..30_000u64)
                .map(|i| t0 + i * 1000 + rng.u64(0..900))
                .collect();
            rng.shuffle(&mut keys);
            for batch in keys.chunks(5_000) {
                let mut w = env.begin_write().unwrap();
                let db = w.open_or_create_db("ts", cfg).unwrap();
                for &k in batch {
                    let v = match vt {
                        ValueType::F64 => ((2000 + rng.i64(0..800)) as f64 / 100.0).to_le_bytes(),
                        ValueType::I64 => rng.i64(-500..500).to_le_bytes(),
                        _ => (k / 1000).to_le_bytes(),
                    };
                    w.put(&db, k, &v).unwrap();
                    model.insert(k, v.to_vec());
                }
                w.commit().unwrap();
            }
            let r = env.begin_read().unwrap();
            let full = r.stats(&r.open_db("ts").unwrap()).unwrap();
            drop(r);
            sizes.push(full.leaf_key_bytes + full.leaf_record_bytes);
            // Upsert a tenth, erase 80% (oldest first, as retention does), reopen.
            let mut w = env.begin_write().unwrap();
            let db = w.open_db("ts").unwrap();
            for &k in keys.iter().step_by(10) {
                let v = 7u64.to_le_bytes().to_vec();
                w.put(&db, k, &v).unwrap();
                model.insert(k, v);
            }
            let old: Vec<u64> = model.keys().copied().take(model.len() * 8 / 10).collect();
            for k in old {
                assert!(w.erase(&db, k).unwrap());
                model.remove(&k);
            }
            w.commit().unwrap();
            drop(env);
            let env = reopen_mem(&store, 4096);
            assert_clean(&env);
            let got = contents(&env, "ts");
            let want: Vec<(u64, Vec<u8>)> = model.into_iter().collect();
            assert_eq!(got, want, "{vt:?} new={new}");
        }
        // Keys with 1 s gaps and small values: the defaults must at least halve the raw leaves.
        assert!(
            sizes[0] * 2 < sizes[1],
            "{vt:?}: default leaves {} bytes, raw {}",
            sizes[0],
            sizes[1]
        );
    }
}
