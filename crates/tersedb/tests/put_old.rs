//! `WriteTxn::put` returns the value it overwrote, read in the leaf in the same descent: against
//! a `BTreeMap`'s `insert` on every list kind (plain and compressed keys, plain, compressed and
//! overflow records, key-only sets, byte-string keys), with upserts of existing keys, values
//! that move between inline and overflow, reopen, `len` and `check`.

mod common;

use common::{assert_clean, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{DbConfig, KeyType, RecordType, TableDef, ValueType};

fn value(rng: &mut fastrand::Rng, rt: RecordType) -> Vec<u8> {
    match rt {
        RecordType::None => Vec::new(),
        RecordType::Fixed(n) => (0..n).map(|_| rng.u8(0..4)).collect(),
        // Mostly small, sometimes larger than a page (an overflow chain).
        RecordType::Variable => {
            let len = if rng.u32(0..10) == 0 {
                rng.usize(3000..20_000)
            } else {
                rng.usize(0..40)
            };
            vec![rng.u8(..); len]
        }
    }
}

#[test]
fn put_returns_what_a_btreemap_returns() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let configs = [
        DbConfig::raw(KeyType::U32, RecordType::Variable),
        DbConfig::raw(KeyType::U64, RecordType::Fixed(8)),
        DbConfig::new(KeyType::U64, RecordType::Fixed(8)).with_value_type(ValueType::I64),
        DbConfig::new(KeyType::U32, RecordType::Fixed(3)),
        DbConfig::new(KeyType::U32, RecordType::Variable),
        DbConfig::new(KeyType::U32, RecordType::None),
        DbConfig::new(KeyType::VarBinary, RecordType::Variable),
    ];
    for cfg in configs {
        let (env, store) = mem_env(4096);
        let mut model: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for round in 0..4 {
            let mut w = env.begin_write().unwrap();
            let db = w.open_or_create_db("d", cfg).unwrap();
            for _ in 0..3000 {
                // A small key space: most puts after the first round overwrite.
                let k = rng.u64(0..2000);
                let v = value(&mut rng, cfg.record_type);
                let got = if cfg.key_type == KeyType::VarBinary {
                    w.put(&db, format!("key{k:05}").as_bytes(), &v)
                } else if cfg.key_type == KeyType::U32 {
                    w.put(&db, k as u32, &v)
                } else {
                    w.put(&db, k, &v)
                }
                .unwrap();
                assert_eq!(got, model.insert(k, v), "{cfg:?} round {round} key {k}");
            }
            assert_eq!(w.len(&db).unwrap(), model.len() as u64, "{cfg:?}");
            w.commit().unwrap();
        }
        drop(env);
        let env = reopen_mem(&store, 4096);
        assert_clean(&env);
        let r = env.begin_read().unwrap();
        let db = r.open_db("d").unwrap();
        let got: Vec<(u64, Vec<u8>)> = r
            .iter(&db)
            .unwrap()
            .map(|x| {
                let (k, v) = x.unwrap();
                let k = match k.as_key().as_u64() {
                    Some(k) => k,
                    None => {
                        let s = k.as_key().as_bytes().unwrap().to_vec();
                        String::from_utf8(s).unwrap()[3..].parse().unwrap()
                    }
                };
                (k, v)
            })
            .collect();
        let want: Vec<(u64, Vec<u8>)> = model.into_iter().collect();
        assert_eq!(got, want, "{cfg:?}");
    }
}

/// Typed tables decode the overwritten value (`Table::put` goes through the same descent).
#[test]
fn typed_put_returns_the_old_value() {
    const T: TableDef<u64, f64> = TableDef::new("t");
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let t = w.open_table(T).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = fastrand::Rng::with_seed(seed());
    for _ in 0..5000 {
        let k = rng.u64(0..500);
        let v = rng.i64(-5000..5000) as f64 / 100.0;
        assert_eq!(t.put(&mut w, k, v).unwrap(), model.insert(k, v));
    }
    assert_eq!(t.len(&w).unwrap(), model.len() as u64);
}
