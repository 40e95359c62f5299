//! `WriteTxn::put` returns the value it overwrote and `WriteTxn::remove` the value it removed,
//! each read in the leaf by the descent that changes it: against a `BTreeMap`'s `insert` and
//! `remove` on every list kind (plain and compressed keys, plain, compressed and overflow
//! records, key-only sets, byte-string keys), with upserts of existing keys, values that move
//! between inline and overflow, removes of absent keys, reopen, `len` and `check`.

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

fn key_text(k: u64) -> String {
    format!("key{k:05}")
}

/// Puts and removes mixed, each checked against the model's answer, then the contents after
/// reopen: a remove that returned the right value must also have removed it (and freed an
/// overflow chain, which `check` would report as leaked).
#[test]
fn remove_returns_what_a_btreemap_removes() {
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
                let k = rng.u64(0..1500);
                // Removes outnumber puts in the last round, which empties most leaves.
                let removing = rng.u32(0..4) < if round == 3 { 3 } else { 1 };
                if removing {
                    let got = if cfg.key_type == KeyType::VarBinary {
                        w.remove(&db, key_text(k).as_bytes())
                    } else if cfg.key_type == KeyType::U32 {
                        w.remove(&db, k as u32)
                    } else {
                        w.remove(&db, k)
                    }
                    .unwrap();
                    assert_eq!(got, model.remove(&k), "{cfg:?} round {round} remove {k}");
                } else {
                    let v = value(&mut rng, cfg.record_type);
                    if cfg.key_type == KeyType::VarBinary {
                        w.upsert(&db, key_text(k).as_bytes(), &v)
                    } else if cfg.key_type == KeyType::U32 {
                        w.upsert(&db, k as u32, &v)
                    } else {
                        w.upsert(&db, k, &v)
                    }
                    .unwrap();
                    model.insert(k, v);
                }
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

/// Removing the last key empties the database (it owns no pages), and an absent key
/// changes nothing, not even the transaction's pages.
#[test]
fn remove_to_empty_and_of_absent_keys() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("d", DbConfig::new(KeyType::U32, RecordType::Variable))
        .unwrap();
    let big = vec![7u8; 10_000];
    w.put(&db, 1u32, &big).unwrap();
    w.put(&db, 2u32, b"two").unwrap();
    w.commit().unwrap();
    let before = env.space().unwrap();

    let mut w = env.begin_write().unwrap();
    let db = w.open_db("d").unwrap();
    assert_eq!(w.remove(&db, 3u32).unwrap(), None);
    w.commit().unwrap();
    assert_eq!(env.space().unwrap(), before, "a miss wrote pages");

    let mut w = env.begin_write().unwrap();
    let db = w.open_db("d").unwrap();
    assert_eq!(w.remove(&db, 1u32).unwrap(), Some(big));
    assert_eq!(w.remove(&db, 2u32).unwrap().as_deref(), Some(&b"two"[..]));
    assert!(w.is_empty(&db).unwrap());
    assert_eq!(w.remove(&db, 2u32).unwrap(), None);
    w.commit().unwrap();
    assert_clean(&env);
}

/// `Table::remove` decodes the removed value, the same as `Table::put` decodes the old one.
#[test]
fn typed_remove_returns_the_old_value() {
    const T: TableDef<u64, f64> = TableDef::new("t");
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let t = w.open_table(T).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = fastrand::Rng::with_seed(seed());
    for _ in 0..5000 {
        let k = rng.u64(0..500);
        if rng.bool() {
            assert_eq!(t.remove(&mut w, k).unwrap(), model.remove(&k), "remove {k}");
        } else {
            let v = rng.i64(-5000..5000) as f64 / 100.0;
            assert_eq!(t.put(&mut w, k, v).unwrap(), model.insert(k, v));
        }
    }
    assert_eq!(t.len(&w).unwrap(), model.len() as u64);
}
