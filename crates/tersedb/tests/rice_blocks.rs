//! Pins Rice leaves whose blocks hold up to 511 keys (issue 21: twice the other codecs' 257, all
//! that a descriptor's 9-bit count holds) against a `BTreeMap`: an ascending load of clustered
//! keys fills blocks to 511 (asserted, so the test reaches the new size), then random inserts
//! (splitting and refilling full blocks), erases of most keys, and a reopen; after each step
//! every entry, lookups of present and absent keys, cursors both ways, range folds and `check`
//! agree with the model. Random, seeded: re-run with `SEED=<n>`.

mod common;

use common::{assert_clean, clustered, contents, mem_env, reopen_mem, seed};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use tersedb::query::Value;
use tersedb::{CodecId, DbConfig, Env, KeyType, RecordType, ValueType};

type Model = BTreeMap<u32, Vec<u8>>;

/// The largest key count of any block of `db`'s leaves, and how many blocks hold 511. The
/// database's statistics count the same blocks, all of them Rice's.
fn block_counts(env: &Env) -> (usize, usize) {
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    let mut blocks = tersedb::scan::Blocks::default();
    let (mut most, mut full, mut all) = (0, 0, 0u64);
    r.scan_leaves(&db, &[(0, u64::MAX)], false, &mut |leaf, _| {
        leaf.blocks(&mut blocks, 0, u64::MAX)?;
        for b in blocks.iter().filter(|b| !b.is_empty()) {
            most = most.max(b.len());
            full += usize::from(b.len() == 511);
            all += 1;
        }
        Ok(true)
    })
    .unwrap();
    assert_eq!(r.stats(&db).unwrap().codec_mix(), [(CodecId::Rice, all)]);
    (most, full)
}

/// Every read against the model.
fn agree(env: &Env, model: &Model, rng: &mut fastrand::Rng, what: &str) {
    assert_clean(env);
    let want: Vec<(u64, Vec<u8>)> = model.iter().map(|(&k, v)| (k as u64, v.clone())).collect();
    assert_eq!(contents(env, "d"), want, "{what}");
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    let keys: Vec<u32> = model.keys().copied().collect();
    let top = keys.last().copied().unwrap_or(0);
    for _ in 0..3000 {
        let p = if !keys.is_empty() && rng.bool() {
            keys[rng.usize(..keys.len())].wrapping_add(rng.u32(0..3))
        } else {
            rng.u32(0..top.saturating_add(100))
        };
        assert_eq!(
            r.get(&db, p).unwrap().as_ref(),
            model.get(&p),
            "{what}: get {p}"
        );
    }
    let back: Vec<u64> = r
        .iter(&db)
        .unwrap()
        .rev()
        .map(|x| x.unwrap().0.as_key().as_u64().unwrap())
        .collect();
    assert!(
        back.iter()
            .rev()
            .map(|&k| k as u32)
            .eq(keys.iter().copied()),
        "{what}: back"
    );
    for _ in 0..200 {
        let a = rng.u32(0..top.saturating_add(10));
        let width = rng.u32(1..24);
        let z = a.saturating_add(rng.u32(0..1 << width));
        let inside: Vec<u64> = model.range(a..=z).map(|(&k, _)| k as u64).collect();
        let f = r.fold_keys(&db, a as u64, z as u64, true).unwrap();
        assert_eq!(f.count, inside.len() as u64, "{what}: count {a}..={z}");
        assert_eq!(
            f.sum,
            inside.iter().map(|&k| k as u128).sum::<u128>(),
            "{what}"
        );
        assert_eq!(
            (f.min, f.max),
            (inside.first().copied(), inside.last().copied())
        );
    }
    // Row queries over numeric records (compressed in chunks of 255, which a 511-key block
    // spans): the rows whose record passes, in key order.
    if db.config().value_type == ValueType::U32 {
        for _ in 0..20 {
            let a = rng.u32(0..top.saturating_add(10));
            let c = rng.u32(..);
            let q = format!("SELECT key FROM d WHERE key >= {a} AND record < {c}");
            let got = r.query_str(&q).unwrap();
            let want: Vec<Vec<Value>> = model
                .range(a..)
                .filter(|(_, v)| u32::from_le_bytes(v[..4].try_into().unwrap()) < c)
                .map(|(&k, _)| vec![Value::Int(k as i128)])
                .collect();
            assert!(
                got.rows == want,
                "{what}: {q}: {} rows, want {}",
                got.rows.len(),
                want.len()
            );
        }
    }
}

#[test]
fn rice_leaves_of_511_key_blocks_match_a_btreemap() {
    let s = seed();
    let mut rng = fastrand::Rng::with_seed(s);
    for (page, rec, packed) in [
        (4096, RecordType::None, false),
        (4096, RecordType::Fixed(4), false),
        (4096, RecordType::Fixed(4), true),
        (16384, RecordType::None, false),
    ] {
        let what = format!("page {page}, {rec:?}, compressed records {packed}");
        let mut cfg = DbConfig::raw(KeyType::U32, rec).with_codec(Some(CodecId::Rice));
        if packed {
            cfg = cfg
                .with_compressed_records(true)
                .with_value_type(ValueType::U32);
        }
        let val = |k: u32| match rec {
            RecordType::Fixed(_) => k.rotate_left(7).to_le_bytes().to_vec(),
            _ => Vec::new(),
        };
        let (env, store) = mem_env(page);
        let mut model = Model::new();
        // Ascending load: clustered keys fill blocks to the limit.
        let keys = clustered(60_000, &mut rng);
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("d", cfg).unwrap();
        for &k in &keys {
            w.insert(&db, k, &val(k)).unwrap();
            model.insert(k, val(k));
        }
        w.commit().unwrap();
        let (most, full) = block_counts(&env);
        assert_eq!(most, 511, "{what}: no block reached 511 keys");
        assert!(full * 511 * 2 > keys.len(), "{what}: {full} full blocks");
        agree(&env, &model, &mut rng, &format!("{what}, load"));
        // Random inserts, near the clusters (into full blocks) and anywhere.
        let top = keys[keys.len() - 1];
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("d").unwrap();
        for i in 0..20_000 {
            let k = if i % 4 == 0 {
                rng.u32(..)
            } else {
                keys[rng.usize(..keys.len())].wrapping_add(rng.u32(1..4))
            };
            let fresh = w.insert(&db, k, &val(k));
            match model.entry(k) {
                Entry::Vacant(e) => {
                    fresh.unwrap();
                    e.insert(val(k));
                }
                Entry::Occupied(_) => assert!(fresh.is_err()),
            }
        }
        w.commit().unwrap();
        agree(&env, &model, &mut rng, &format!("{what}, inserts"));
        // Erase most keys, in random order.
        let mut all: Vec<u32> = model.keys().copied().collect();
        rng.shuffle(&mut all);
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("d").unwrap();
        for &k in &all[..all.len() * 9 / 10] {
            assert!(w.erase(&db, k).unwrap(), "{what}: erase {k}");
            model.remove(&k);
        }
        for _ in 0..500 {
            let k = rng.u32(0..top);
            assert_eq!(w.erase(&db, k).unwrap(), model.remove(&k).is_some());
        }
        w.commit().unwrap();
        agree(&env, &model, &mut rng, &format!("{what}, erases"));
        // Reopen, refill one cluster's range ascending, and read again.
        drop(env);
        let env = reopen_mem(&store, page);
        agree(&env, &model, &mut rng, &format!("{what}, reopened"));
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("d").unwrap();
        let from = keys[keys.len() / 2];
        for k in from..from + 3000 {
            if let Entry::Vacant(e) = model.entry(k) {
                w.insert(&db, k, &val(k)).unwrap();
                e.insert(val(k));
            }
        }
        w.commit().unwrap();
        agree(&env, &model, &mut rng, &format!("{what}, refilled"));
        let most = block_counts(&env).0;
        assert!(
            most > 257,
            "{what}: refilled range in blocks of at most {most} keys"
        );
    }
}
