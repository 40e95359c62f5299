//! Compressed u64 keys (a wide packed list: 32-bit offsets from a 64-bit base per block) for
//! every codec, as users with timestamps and 64-bit ids use them: random-order loads in batches,
//! records, erases of most keys and retention (oldest first), reopen, lookups, cursors both
//! ways, folds of random ranges, `check` after each phase; and the size bound of the time-series
//! issue: a u64 key set costs within 5% of the same deltas as u32 keys.

mod common;

use common::{assert_clean, contents, mem_env, reopen_mem, seed};
use std::collections::BTreeMap;
use tersedb::{CodecId, DbConfig, KeyType, RecordType};

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
                let sel: Vec<u64> = model.range(a..=b).map(|(&k, _)| k).collect();
                let f = r.fold_keys(&db, a, b, true).unwrap();
                assert_eq!(f.count, sel.len() as u64, "{codec:?} [{a}, {b}]");
                assert_eq!(f.min, sel.first().copied());
                assert_eq!(f.max, sel.last().copied());
                assert_eq!(f.sum, sel.iter().map(|&k| k as u128).sum::<u128>());
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

/// The time-series issue's size bound: the same deltas as u64 keys far above 2^32 take within
/// 5% of the leaf key bytes they take as u32 keys (a wide descriptor is 4 bytes longer).
#[test]
fn u64_keys_cost_what_the_same_deltas_cost_as_u32() {
    let mut rng = fastrand::Rng::with_seed(seed());
    // Ascending keys with small, varied gaps (event ids, timestamps in ms).
    let mut k = 0u32;
    let deltas: Vec<u32> = (0..300_000)
        .map(|_| {
            k += rng.u32(1..40);
            k
        })
        .collect();
    for codec in CodecId::ALL {
        let size = |kt: KeyType, off: u64| {
            let (env, _store) = mem_env(4096);
            let mut w = env.begin_write().unwrap();
            let db = w
                .create_db(
                    "k",
                    DbConfig::raw(kt, RecordType::None).with_codec(Some(codec)),
                )
                .unwrap();
            for &d in &deltas {
                if kt == KeyType::U32 {
                    w.insert(&db, d, &[]).unwrap();
                } else {
                    w.insert(&db, off + d as u64, &[]).unwrap();
                }
            }
            w.commit().unwrap();
            let r = env.begin_read().unwrap();
            let st = r.stats(&db).unwrap();
            assert_eq!(st.key_count, deltas.len() as u64);
            st.leaf_key_bytes as f64
        };
        let narrow = size(KeyType::U32, 0);
        let wide = size(KeyType::U64, 1_764_000_000_000);
        let ratio = wide / narrow;
        assert!(
            ratio <= 1.05,
            "{codec:?}: u64 keys take {ratio:.3}x the same deltas as u32 keys"
        );
        // And far less than 8 raw bytes per key.
        assert!(wide / (deltas.len() as f64) < 2.5, "{codec:?}");
    }
}
