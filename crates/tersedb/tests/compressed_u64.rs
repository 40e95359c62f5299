//! Compressed u64 keys (a wide packed list: 32-bit offsets from a 64-bit base per block) for
//! every codec, as users with timestamps and 64-bit ids use them: random-order loads in batches,
//! records, erases of most keys and retention (oldest first), reopen, lookups, cursors both
//! ways, folds of random ranges, `check` after each phase; and the size bound of the time-series
//! issue: a u64 key set costs within 5% of the same deltas as u32 keys.

mod common;

use common::{assert_clean, contents, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{CodecId, DbConfig, KeyType, RecordType};

/// COUNT, MIN, MAX and SUM of the keys in `[a, b]` as the model has them.
fn assert_fold<V>(
    r: &tersedb::ReadTxn,
    db: &tersedb::Db,
    model: &BTreeMap<u64, V>,
    a: u64,
    b: u64,
    what: &str,
) {
    let sel: Vec<u64> = model.range(a..=b).map(|(&k, _)| k).collect();
    let f = r.fold_keys(db, a, b, true).unwrap();
    assert_eq!(f.count, sel.len() as u64, "{what} [{a}, {b}]");
    assert_eq!(f.min, sel.first().copied());
    assert_eq!(f.max, sel.last().copied());
    assert_eq!(f.sum, sel.iter().map(|&k| k as u128).sum::<u128>());
}

/// Keys users keep: nanosecond timestamps of events (jittered, ~1 ms apart, so blocks span more
/// than 2^32 ns and are cut), microsecond timestamps, 64-bit random ids and keys at the top of
/// the range.
fn mixed_keys(n: usize, rng: &mut fastrand::Rng) -> Vec<u64> {
    let mut keys = Vec::with_capacity(n);
    let (mut ns, mut us) = (1_764_000_000_000_000_000u64, 1_764_000_000_000_000u64);
    for i in 0..n {
        keys.push(match i % 4 {
            0 => {
                ns += rng.u64(1..2_000_000);
                ns
            }
            1 => {
                us += rng.u64(1..100);
                us
            }
            2 => rng.u64(..),
            _ => u64::MAX - rng.u64(0..1_000_000),
        });
    }
    keys.sort_unstable();
    keys.dedup();
    rng.shuffle(&mut keys);
    keys
}

#[test]
fn u64_keys_match_a_model_for_every_codec() {
    let mut rng = fastrand::Rng::with_seed(seed());
    // Every codec, and `auto` (a codec chosen per block) last.
    for codec in CodecId::ALL.into_iter().map(Some).chain([None]) {
        let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
            .with_codec(codec)
            .with_auto_codec(codec.is_none())
            .with_block_size([0u16, 9][rng.usize(0..2)]);
        let (env, store) = mem_env(4096);
        let keys = mixed_keys(12_000, &mut rng);
        let mut model = BTreeMap::new();
        // Random order in batches of 3,000 per transaction.
        for batch in keys.chunks(3000) {
            let mut w = env.begin_write().unwrap();
            let db = match w.open_db("t") {
                Ok(db) => db,
                Err(_) => w.create_db("t", cfg).unwrap(),
            };
            for &k in batch {
                let v = k.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes();
                w.insert(&db, k, &v).unwrap();
                model.insert(k, v.to_vec());
            }
            w.commit().unwrap();
        }
        assert_clean(&env);
        let want: Vec<(u64, Vec<u8>)> = model.clone().into_iter().collect();
        assert_eq!(contents(&env, "t"), want, "{codec:?}");
        {
            let r = env.begin_read().unwrap();
            let db = r.open_db("t").unwrap();
            assert_eq!(r.open_db("t").unwrap().config().key_codec, codec);
            assert_eq!(r.open_db("t").unwrap().config().auto_codec, codec.is_none());
            for _ in 0..3000 {
                let p = if rng.bool() {
                    keys[rng.usize(0..keys.len())]
                } else {
                    rng.u64(..)
                };
                assert_eq!(
                    r.get(&db, p).unwrap(),
                    model.get(&p).cloned(),
                    "{codec:?} {p}"
                );
            }
            // Backwards over every key.
            let mut c = r.cursor(&db).unwrap();
            assert!(c.last().unwrap());
            let mut back = vec![c.key().unwrap().as_u64().unwrap()];
            while c.prev().unwrap() {
                back.push(c.key().unwrap().as_u64().unwrap());
            }
            back.reverse();
            assert_eq!(back, model.keys().copied().collect::<Vec<_>>());
            // Lower bounds land on the model's successor.
            for _ in 0..500 {
                let p = rng.u64(..);
                let succ = model.range(p..).next().map(|(&k, _)| k);
                assert_eq!(c.lower_bound(p).unwrap(), succ.is_some());
                if let Some(s) = succ {
                    assert_eq!(c.key().unwrap().as_u64(), Some(s));
                }
            }
            // Folds of random ranges (block sums widened by each block's base).
            let all: Vec<u64> = model.keys().copied().collect();
            for i in 0..200 {
                let (mut a, mut b) = (all[rng.usize(0..all.len())], rng.u64(..));
                if i == 0 {
                    (a, b) = (0, u64::MAX);
                }
                if a > b {
                    std::mem::swap(&mut a, &mut b);
                }
                assert_fold(&r, &db, &model, a, b, &format!("{codec:?}"));
            }
        }
        // Retention: the oldest half of the timestamps first, then most of the rest at random.
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("t").unwrap();
        let old: Vec<u64> = model.keys().copied().take(model.len() / 2).collect();
        for k in old {
            assert!(w.erase(&db, k).unwrap());
            model.remove(&k);
        }
        let mut rest: Vec<u64> = model.keys().copied().collect();
        rng.shuffle(&mut rest);
        for &k in rest.iter().take(rest.len() * 4 / 5) {
            assert!(w.erase(&db, k).unwrap());
            model.remove(&k);
        }
        assert!(!w.erase(&db, 12345u64).unwrap() || model.contains_key(&12345));
        w.commit().unwrap();
        assert_clean(&env);
        drop(env);
        let env = reopen_mem(&store, 4096);
        assert_clean(&env);
        let want: Vec<(u64, Vec<u8>)> = model.into_iter().collect();
        assert_eq!(
            contents(&env, "t"),
            want,
            "{codec:?} after erases and reopen"
        );
    }
}

/// Leaf key bytes of `keys` (ascending) loaded into a fresh key-only database of `kt` keys
/// with `codec` (`None`: auto), in one transaction.
fn leaf_key_bytes(kt: KeyType, codec: Option<CodecId>, keys: &[u64]) -> f64 {
    let (env, _store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db(
            "k",
            DbConfig::raw(kt, RecordType::None)
                .with_codec(codec)
                .with_auto_codec(codec.is_none()),
        )
        .unwrap();
    for &k in keys {
        if kt == KeyType::U32 {
            w.insert(&db, k as u32, &[]).unwrap();
        } else {
            w.insert(&db, k, &[]).unwrap();
        }
    }
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let st = r.stats(&db).unwrap();
    assert_eq!(st.key_count, keys.len() as u64);
    st.leaf_key_bytes as f64
}

/// The time-series issue's size bound: the same deltas as u64 keys far above 2^32 take within
/// 5% of the leaf key bytes they take as u32 keys, for every codec and `auto`. Two key sets:
/// gaps of 1..40, and second timestamps 1..=10 s apart (series c of `tersedb bench
/// timeseries`: about 0.6 key bytes per key with BP128, where the 4 bytes a 16-byte wide
/// descriptor adds per block were 5.3%; leaves in the based form have the u32 descriptors).
#[test]
fn u64_keys_cost_what_the_same_deltas_cost_as_u32() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let mut ids = 0u64;
    let mut secs = 1_764_000_000u64;
    let sets: [(&str, Vec<u64>, u64); 2] = [
        (
            "gaps 1..40",
            (0..300_000)
                .map(|_| {
                    ids += rng.u64(1..40);
                    ids
                })
                .collect(),
            1_764_000_000_000,
        ),
        (
            "seconds 1..=10 apart",
            (0..300_000)
                .map(|_| {
                    secs += rng.u64(1..=10);
                    secs
                })
                .collect(),
            1 << 40,
        ),
    ];
    for (what, keys, off) in &sets {
        let far: Vec<u64> = keys.iter().map(|&k| k + off).collect();
        for codec in CodecId::ALL.into_iter().map(Some).chain([None]) {
            let narrow = leaf_key_bytes(KeyType::U32, codec, keys);
            let wide = leaf_key_bytes(KeyType::U64, codec, &far);
            let ratio = wide / narrow;
            assert!(
                ratio <= 1.05,
                "{what}, {codec:?}: u64 keys take {ratio:.3}x the same deltas as u32 keys"
            );
            // And far less than 8 raw bytes per key.
            assert!(wide / (keys.len() as f64) < 2.5, "{codec:?}");
        }
    }
}

/// Keys in clusters 3 * 2^30 apart (a leaf may hold two neighbouring clusters within one
/// 32-bit frame, never three), with random 64-bit ids between them and keys at both ends of
/// the range: leaves in the based form re-base for keys below their base and turn wide for
/// keys beyond their frame; splits, merges, packing at commit and repacks choose the form
/// again. Random-order loads in batches, then a descending run (every insert below its
/// leaf's base), lookups, cursors, folds, erases of most keys and retention, reopen, and
/// `check` after each phase, for every codec and `auto`.
#[test]
fn u64_leaves_across_32_bit_frames_match_a_model() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for codec in CodecId::ALL.into_iter().map(Some).chain([None]) {
        let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(4))
            .with_codec(codec)
            .with_auto_codec(codec.is_none());
        let page = [1024usize, 4096][rng.usize(0..2)];
        let (env, store) = mem_env(page);
        let mut keys: Vec<u64> = Vec::new();
        for c in 0..6u64 {
            let mut k = (1u64 << 44) + c * (3 << 30) - rng.u64(0..1 << 20);
            for _ in 0..1200 {
                let gap = [4, 3000, 1 << 22][rng.usize(0..3)];
                k += rng.u64(1..gap);
                keys.push(k);
            }
        }
        keys.extend((0..600).map(|_| rng.u64(..)));
        keys.extend((0..300).map(|i| i * 5));
        keys.extend((0..300).map(|i| u64::MAX - i * 5));
        keys.sort_unstable();
        keys.dedup();
        // The last cluster is loaded descending after the others, in random order.
        let split = keys.len() - 900;
        let (first, tail) = keys.split_at(split);
        let mut order = first.to_vec();
        rng.shuffle(&mut order);
        order.extend(tail.iter().rev());
        let mut model = BTreeMap::new();
        for batch in order.chunks(2500) {
            let mut w = env.begin_write().unwrap();
            let db = match w.open_db("t") {
                Ok(db) => db,
                Err(_) => w.create_db("t", cfg).unwrap(),
            };
            for &k in batch {
                let v = (k as u32 ^ 0x5A5A_5A5A).to_le_bytes();
                w.insert(&db, k, &v).unwrap();
                model.insert(k, v.to_vec());
            }
            w.commit().unwrap();
            assert_clean(&env);
        }
        // Both forms are in the tree: leaves of clustered keys based, leaves of ids wide (on
        // 1 KiB pages a leaf may hold a single block of 257 keys, which stays wide).
        let dump: Vec<String> = (0..env.space().unwrap().pages)
            .filter_map(|id| env.describe_page(id).ok())
            .collect();
        let count = |what: &str| dump.iter().filter(|d| d.contains(what)).count();
        assert!(
            page < 4096 || count("(u64, based at") > 0,
            "{codec:?}: no based leaf"
        );
        assert!(count("(u64, wide)") > 0, "{codec:?}: no wide leaf");
        let check_reads =
            |env: &tersedb::Env, model: &BTreeMap<u64, Vec<u8>>, rng: &mut fastrand::Rng| {
                let want: Vec<(u64, Vec<u8>)> = model.clone().into_iter().collect();
                assert_eq!(contents(env, "t"), want, "{codec:?}");
                let r = env.begin_read().unwrap();
                let db = r.open_db("t").unwrap();
                let all: Vec<u64> = model.keys().copied().collect();
                for _ in 0..2000 {
                    let p = match rng.u8(0..3) {
                        0 if !all.is_empty() => all[rng.usize(0..all.len())],
                        1 if !all.is_empty() => all[rng.usize(0..all.len())].wrapping_add(1),
                        _ => rng.u64(..),
                    };
                    assert_eq!(
                        r.get(&db, p).unwrap(),
                        model.get(&p).cloned(),
                        "{codec:?} {p}"
                    );
                }
                let mut c = r.cursor(&db).unwrap();
                let mut back = Vec::new();
                if c.last().unwrap() {
                    back.push(c.key().unwrap().as_u64().unwrap());
                    while c.prev().unwrap() {
                        back.push(c.key().unwrap().as_u64().unwrap());
                    }
                }
                back.reverse();
                assert_eq!(back, all, "{codec:?} backwards");
                for i in 0..100 {
                    let (mut a, mut b) = (rng.u64(..), rng.u64(..));
                    if i == 0 {
                        (a, b) = (0, u64::MAX);
                    }
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    assert_fold(&r, &db, model, a, b, &format!("{codec:?}"));
                }
            };
        check_reads(&env, &model, &mut rng);
        // Erase most keys at random, then retention: the oldest first.
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("t").unwrap();
        let mut all: Vec<u64> = model.keys().copied().collect();
        rng.shuffle(&mut all);
        for &k in all.iter().take(all.len() * 3 / 5) {
            assert!(w.erase(&db, k).unwrap());
            model.remove(&k);
        }
        w.commit().unwrap();
        assert_clean(&env);
        check_reads(&env, &model, &mut rng);
        let mut w = env.begin_write().unwrap();
        let db = w.open_db("t").unwrap();
        let old: Vec<u64> = model.keys().copied().take(model.len() * 3 / 4).collect();
        for k in old {
            assert!(w.erase(&db, k).unwrap());
            model.remove(&k);
        }
        w.commit().unwrap();
        assert_clean(&env);
        drop(env);
        let env = reopen_mem(&store, page);
        assert_clean(&env);
        check_reads(&env, &model, &mut rng);
    }
}
