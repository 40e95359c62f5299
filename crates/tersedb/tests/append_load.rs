//! The append path of compressed leaves (issue 21): ascending keys appended in one write
//! transaction, for every codec and `auto`, u32 and u64 keys (u64 gaps past 2^32 turn leaves
//! wide), across block and leaf boundaries, then reopened and compared with the model; appends
//! after random inserts and after erasing the last keys (leaves whose earlier blocks are not full,
//! or whose last block is a gap, take the general insert); appends alternating between two
//! databases of one transaction (the state of the database used last is found by its handle);
//! an append below the last key is refused and leaves the transaction usable.

mod common;

use common::{assert_clean, mem_env, reopen_mem, seed};
use std::collections::BTreeSet;
use tersedb::{CodecId, DbConfig, Error, Key, KeyType, RecordType};

/// Every key compression: none, each codec, `auto`.
fn configs(kt: KeyType) -> Vec<(String, DbConfig)> {
    let raw = DbConfig::raw(kt, RecordType::None);
    let mut out = vec![("none".to_string(), raw)];
    for c in CodecId::ALL {
        out.push((c.name().to_string(), raw.with_codec(Some(c))));
    }
    out.push(("auto".to_string(), raw.with_auto_codec(true)));
    out
}

/// Ascending keys: dense runs, small gaps and, with `wide`, a few jumps past 2^32.
fn ascending(n: usize, wide: bool, rng: &mut fastrand::Rng) -> Vec<u64> {
    let mut keys = Vec::with_capacity(n);
    let mut k = rng.u64(..1000);
    while keys.len() < n {
        for _ in 0..rng.usize(1..300).min(n - keys.len()) {
            keys.push(k);
            k += rng.u64(1..4);
        }
        k += match rng.u32(..40) {
            0 if wide => 1 << 33,
            0..=3 => rng.u64(1..1 << 20),
            _ => rng.u64(1..64),
        };
    }
    if !wide {
        assert!(*keys.last().unwrap() <= u32::MAX as u64);
    }
    keys
}

fn all_keys(env: &tersedb::Env, db: &tersedb::Db) -> Vec<u64> {
    let r = env.begin_read().unwrap();
    r.iter(db)
        .unwrap()
        .map(|x| {
            let k = x.unwrap().0;
            let k = k.as_key();
            k.as_u64().or(k.as_u32().map(u64::from)).unwrap()
        })
        .collect()
}

#[test]
fn appends_across_blocks_and_leaves_match_the_model_after_reopen() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for (kt, wide) in [
        (KeyType::U32, false),
        (KeyType::U64, false),
        (KeyType::U64, true),
    ] {
        let keys = ascending(30_000, wide, &mut rng);
        for (name, cfg) in configs(kt) {
            let (env, store) = mem_env(4096);
            let mut w = env.begin_write().unwrap();
            let db = w.create_db("k", cfg).unwrap();
            // A third in one transaction, the rest in a second (the hint starts over).
            let cut = keys.len() / 3;
            let key = |k: u64| match kt {
                KeyType::U32 => Key::U32(k as u32),
                _ => Key::U64(k),
            };
            for &k in &keys[..cut] {
                w.append(&db, key(k), &[]).unwrap();
            }
            w.commit().unwrap();
            let mut w = env.begin_write().unwrap();
            for &k in &keys[cut..] {
                w.append(&db, key(k), &[]).unwrap();
            }
            assert_eq!(w.len(&db).unwrap(), keys.len() as u64, "{name}");
            w.commit().unwrap();
            assert_clean(&env);
            drop(env);
            let env = reopen_mem(&store, 4096);
            let r = env.begin_read().unwrap();
            let db = r.open_db_with("k", cfg).unwrap();
            assert!(r.stats(&db).unwrap().height >= 2, "{name} {kt:?}");
            drop(r);
            assert_eq!(all_keys(&env, &db), keys, "{name} {kt:?} wide {wide}");
        }
    }
}

#[test]
fn appends_after_random_inserts_and_erases_match_the_model() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let keys = ascending(20_000, false, &mut rng);
    for (name, cfg) in configs(KeyType::U32) {
        let (env, store) = mem_env(4096);
        let mut model = BTreeSet::new();
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("k", cfg).unwrap();
        // Random inserts leave blocks partly full; the appends then fill the rightmost leaf.
        let (first, rest) = keys.split_at(keys.len() / 2);
        let mut shuffled = first.to_vec();
        rng.shuffle(&mut shuffled);
        for &k in &shuffled {
            w.insert(&db, k as u32, &[]).unwrap();
            model.insert(k);
        }
        let (mid, tail) = rest.split_at(rest.len() / 2);
        for &k in mid {
            w.append(&db, k as u32, &[]).unwrap();
            model.insert(k);
        }
        // Erasing the largest keys leaves gaps at the end of the last blocks.
        for &k in mid.iter().rev().take(300) {
            assert!(w.erase(&db, k as u32).unwrap());
            model.remove(&k);
        }
        for &k in tail {
            w.append(&db, k as u32, &[]).unwrap();
            model.insert(k);
        }
        w.commit().unwrap();
        assert_clean(&env);
        drop(env);
        let env = reopen_mem(&store, 4096);
        let want: Vec<u64> = model.iter().copied().collect();
        assert_eq!(all_keys(&env, &db), want, "{name}");
    }
}

#[test]
fn appends_alternating_between_databases_and_refused_appends() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let a_keys = ascending(12_000, false, &mut rng);
    let b_keys = ascending(12_000, false, &mut rng);
    let (env, store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w
        .create_db(
            "a",
            DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::PforDelta)),
        )
        .unwrap();
    let b = w
        .create_db(
            "b",
            DbConfig::raw(KeyType::U32, RecordType::None).with_auto_codec(true),
        )
        .unwrap();
    // A second handle of "a" (its own name allocation) used between the first one's calls.
    let a2 = w.open_db("a").unwrap();
    for (i, (&x, &y)) in a_keys.iter().zip(&b_keys).enumerate() {
        let ah = if i % 3 == 0 { &a2 } else { &a };
        w.append(ah, x as u32, &[]).unwrap();
        w.append(&b, y as u32, &[]).unwrap();
    }
    // Not above the last key: refused, nothing changed, the transaction goes on.
    let last = *a_keys.last().unwrap() as u32;
    assert!(matches!(w.append(&a, last, &[]), Err(Error::InvalidKey(_))));
    assert!(matches!(w.append(&b, 0u32, &[]), Err(Error::InvalidKey(_))));
    w.append(&a, last + 1, &[]).unwrap();
    assert_eq!(w.len(&a2).unwrap(), a_keys.len() as u64 + 1);
    // Dropping and renaming: handles of the old names stop working, new ones work.
    w.rename_db("b", "c").unwrap();
    assert!(w.append(&b, u32::MAX, &[]).is_err());
    let c = w.open_db("c").unwrap();
    w.append(&c, u32::MAX, &[]).unwrap();
    w.commit().unwrap();
    assert_clean(&env);
    drop(env);
    let env = reopen_mem(&store, 4096);
    let mut want_a = a_keys.clone();
    want_a.push(last as u64 + 1);
    assert_eq!(all_keys(&env, &a), want_a);
    let r = env.begin_read().unwrap();
    let c = r.open_db("c").unwrap();
    drop(r);
    let mut want_c = b_keys.clone();
    want_c.push(u32::MAX as u64);
    assert_eq!(all_keys(&env, &c), want_c);
}
