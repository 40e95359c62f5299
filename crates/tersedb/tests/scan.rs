//! The public block scan ([`tersedb::ReadTxn::scan_leaves`], [`tersedb::scan`]) against a
//! `BTreeMap`: for random u32 and u64 keys, plain and compressed, with plain and compressed
//! records, and random sorted interval lists, the keys read block by block (skipping blocks by
//! their zone map entry) and their records are exactly the model's keys in the intervals, in
//! order (reversed with `rev`); every leaf is given only intervals that overlap it; stopping
//! the walk stops it. Bad interval lists and byte-string keys are refused with an error.

mod common;

use std::collections::BTreeMap;
use tersedb::scan::{Blocks, KeyBuffer};
use tersedb::{CodecId, DbConfig, KeyType, RecordType, ValueType};

fn config(rng: &mut fastrand::Rng) -> DbConfig {
    let key = if rng.bool() {
        KeyType::U32
    } else {
        KeyType::U64
    };
    let codec = [None, Some(CodecId::Bp128), Some(CodecId::For)][rng.usize(..3)];
    DbConfig::raw(key, RecordType::Fixed(8))
        .with_value_type(ValueType::U64)
        .with_codec(codec)
        .with_compressed_records(rng.bool())
}

/// Sorted, disjoint intervals within `0..span`.
fn intervals(rng: &mut fastrand::Rng, span: u64) -> Vec<(u64, u64)> {
    let mut cuts: Vec<u64> = (0..rng.usize(1..8) * 2).map(|_| rng.u64(..span)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.chunks_exact(2)
        .map(|c| (c[0], c[1]))
        .enumerate()
        // Chunks of a deduplicated sorted list are disjoint; keep some one-key intervals.
        .map(|(i, (a, b))| if i % 3 == 2 { (a, a) } else { (a, b) })
        .collect()
}

#[test]
fn block_scan_matches_model() {
    let mut rng = fastrand::Rng::with_seed(common::seed());
    for round in 0..24 {
        let cfg = config(&mut rng);
        let (env, _store) = common::mem_env(1024);
        let base = if cfg.key_type == KeyType::U64 {
            1u64 << 40
        } else {
            0
        };
        let span = 20_000u64;
        let mut model = BTreeMap::new();
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("t", cfg).unwrap();
        for _ in 0..rng.usize(0..4000) {
            let k = rng.u64(..span);
            let v = rng.u64(..1000);
            if cfg.key_type == KeyType::U32 {
                w.put(&db, k as u32, &v.to_le_bytes()).unwrap();
            } else {
                w.put(&db, base + k, &v.to_le_bytes()).unwrap();
            }
            model.insert(base + k, v);
        }
        w.commit().unwrap();
        let r = env.begin_read().unwrap();
        let ivs: Vec<(u64, u64)> = intervals(&mut rng, span)
            .into_iter()
            .map(|(a, b)| (base + a, base + b))
            .collect();
        for rev in [false, true] {
            let mut want: Vec<(u64, u64)> = ivs
                .iter()
                .flat_map(|&(a, b)| model.range(a..=b).map(|(&k, &v)| (k, v)))
                .collect();
            let mut got = Vec::new();
            let (mut blocks, mut buf) = (Blocks::default(), KeyBuffer::default());
            r.scan_leaves(&db, &ivs, rev, &mut |leaf, livs| {
                assert!(!livs.is_empty() && livs.iter().all(|iv| ivs.contains(iv)));
                let mut rows = Vec::new();
                leaf.blocks(&mut blocks, livs[0].0, livs[livs.len() - 1].1)?;
                for b in blocks.iter() {
                    assert!(b.first() <= b.last() && b.len() == b.slots().len());
                    let k = leaf.keys(&b, &mut buf)?;
                    assert_eq!(k.len(), b.len());
                    assert_eq!(
                        (k.get(0), k.get(k.len() - 1)),
                        (Some(b.first()), Some(b.last()))
                    );
                    for &(lo, hi) in livs {
                        for i in k.lower_bound(lo)..k.upper_bound(hi) {
                            let rec = leaf.record(b.slots().start + i)?;
                            let v = u64::from_le_bytes(rec[..].try_into().unwrap());
                            rows.push((k.get(i).unwrap(), v));
                        }
                    }
                }
                assert!(leaf.record(leaf.len()).is_err(), "a slot past the end");
                if rev {
                    rows.reverse();
                }
                got.extend(rows);
                Ok(true)
            })
            .unwrap();
            if rev {
                want.reverse();
            }
            assert_eq!(got, want, "round {round}, {cfg:?}, rev {rev}, {ivs:?}");
        }
        // Stopping after the first leaf reads one leaf.
        let mut leaves = 0;
        r.scan_leaves(&db, &[(0, u64::MAX)], false, &mut |_, _| {
            leaves += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!(leaves, usize::from(!model.is_empty()));
    }
}

#[test]
fn bad_intervals_and_key_types_are_refused() {
    let (env, _store) = common::mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let ints = w.create_db("ints", DbConfig::u32_set()).unwrap();
    let strs = w
        .create_db("strs", DbConfig::raw(KeyType::VarBinary, RecordType::None))
        .unwrap();
    w.put(&ints, 5u32, b"").unwrap();
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let mut never = |_: &tersedb::scan::Leaf<'_, '_>, _: &[(u64, u64)]| -> tersedb::Result<bool> {
        panic!("no leaf is visited")
    };
    for bad in [
        &[(5u64, 4u64)][..],
        &[(0, 10), (10, 20)],
        &[(20, 30), (0, 10)],
    ] {
        let e = r.scan_leaves(&ints, bad, false, &mut never).unwrap_err();
        assert!(e.to_string().contains("sorted, disjoint"), "{e}");
    }
    let e = r
        .scan_leaves(&strs, &[(0, 1)], false, &mut never)
        .unwrap_err();
    assert!(e.to_string().contains("integer keys"), "{e}");
    // No interval: nothing visited.
    r.scan_leaves(&ints, &[], false, &mut never).unwrap();
}
