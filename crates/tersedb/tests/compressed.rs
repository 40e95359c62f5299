//! Compressed leaves at scale, for every codec: bulk loads in ascending and random order that
//! build multi-level trees, lookups, cursors both ways across blocks and leaves, erases that make
//! packed blocks grow (and leaves split on erase), `check` after each phase, sizes, the stored
//! configuration, and damaged block bytes behind a valid page checksum.

mod common;

use common::{assert_clean, mem_env, reopen_mem, seed};
use std::collections::BTreeSet;
use tersedb::storage::meta::seal;
use tersedb::storage::MemStorage;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyType, RecordType};

fn cfg(codec: CodecId) -> DbConfig {
    DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(codec))
}

/// ClusterData-like keys: runs of dense keys separated by gaps of varying width.
fn clustered(n: usize, rng: &mut fastrand::Rng) -> Vec<u32> {
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u32;
    while keys.len() < n {
        let run = rng.usize(1..200);
        for _ in 0..run.min(n - keys.len()) {
            keys.push(k);
            k += rng.u32(1..3);
        }
        let w = rng.u32(1..20);
        k += rng.u32(1..1 << w);
    }
    keys
}

#[test]
fn ascending_load_lookups_cursors_and_erases_for_every_codec() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let keys = clustered(40_000, &mut rng);
    for codec in CodecId::ALL {
        let (env, store) = mem_env(4096);
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("k", cfg(codec)).unwrap();
        for &k in &keys {
            w.insert(&db, k, &[]).unwrap();
        }
        w.commit().unwrap();
        assert_clean(&env);
        let r = env.begin_read().unwrap();
        let st = r.stats(&db).unwrap();
        assert!(st.height >= 2, "{codec:?}: height {}", st.height);
        assert_eq!(st.key_count, keys.len() as u64);
        // Compressed: well under the 4 bytes of a plain u32 key.
        let bpk = st.bytes as f64 / keys.len() as f64;
        assert!(bpk < 3.0, "{codec:?}: {bpk} bytes per key");
        // Every key, some absent ones, forward and backward scans.
        for &k in keys.iter().step_by(7) {
            assert_eq!(r.get(&db, k).unwrap(), Some(vec![]), "{codec:?} {k}");
        }
        let set: BTreeSet<u32> = keys.iter().copied().collect();
        for _ in 0..2000 {
            let p = rng.u32(0..keys[keys.len() - 1] + 10);
            assert_eq!(r.get(&db, p).unwrap().is_some(), set.contains(&p));
        }
        let fwd: Vec<u32> = r
            .iter(&db)
            .unwrap()
            .map(|x| x.unwrap().0.as_key().as_u32().unwrap())
            .collect();
        assert_eq!(fwd, keys);
        let mut c = r.cursor(&db).unwrap();
        assert!(c.last().unwrap());
        let mut back = vec![c.key().unwrap().as_u32().unwrap()];
        while c.prev().unwrap() {
            back.push(c.key().unwrap().as_u32().unwrap());
        }
        back.reverse();
        assert_eq!(back, keys);
        // Zig-zag around block boundaries.
        let mut c = r.cursor(&db).unwrap();
        for _ in 0..200 {
            let i = rng.usize(1..keys.len() - 1);
            assert!(c.lower_bound(keys[i]).unwrap());
            assert!(c.prev().unwrap());
            assert_eq!(c.key().unwrap().as_u32(), Some(keys[i - 1]));
            assert!(c.next().unwrap() && c.next().unwrap());
            assert_eq!(c.key().unwrap().as_u32(), Some(keys[i + 1]));
        }
        drop(r);
        // Erase every third key (merged deltas widen packed blocks), then all.
        let mut model = set.clone();
        let mut w = env.begin_write().unwrap();
        for &k in keys.iter().step_by(3) {
            assert!(w.erase(&db, k).unwrap());
            model.remove(&k);
        }
        w.commit().unwrap();
        assert_clean(&env);
        let env = {
            drop(env);
            reopen_mem(&store, 4096)
        };
        let r = env.begin_read().unwrap();
        let db = r.open_db_with("k", cfg(codec)).unwrap();
        let got: Vec<u32> = r
            .iter(&db)
            .unwrap()
            .map(|x| x.unwrap().0.as_key().as_u32().unwrap())
            .collect();
        assert_eq!(got, model.iter().copied().collect::<Vec<_>>());
        drop(r);
        let mut w = env.begin_write().unwrap();
        for &k in &model {
            assert!(w.erase(&db, k).unwrap());
        }
        assert_eq!(w.len(&db).unwrap(), 0);
        w.commit().unwrap();
        assert_clean(&env);
    }
}

#[test]
fn random_order_inserts_with_records_for_every_codec() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for codec in CodecId::ALL {
        let (env, _store) = mem_env(4096);
        let mut w = env.begin_write().unwrap();
        let db = w
            .create_db(
                "k",
                DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_codec(Some(codec)),
            )
            .unwrap();
        let mut model = std::collections::BTreeMap::new();
        let spread = [1u32 << 16, u32::MAX][rng.usize(0..2)];
        for _ in 0..15_000 {
            let k = rng.u32(0..spread);
            let v = k.wrapping_mul(2654435761).to_le_bytes();
            match w.insert(&db, k, &v) {
                Ok(()) => assert!(model.insert(k, v.to_vec()).is_none()),
                Err(Error::DuplicateKey { .. }) => assert!(model.contains_key(&k)),
                Err(e) => panic!("{codec:?}: {e}"),
            }
        }
        w.commit().unwrap();
        assert_clean(&env);
        let r = env.begin_read().unwrap();
        let got: Vec<(u32, Vec<u8>)> = r
            .iter(&db)
            .unwrap()
            .map(|x| {
                let (k, v) = x.unwrap();
                (k.as_key().as_u32().unwrap(), v)
            })
            .collect();
        assert_eq!(got, model.into_iter().collect::<Vec<_>>(), "{codec:?}");
    }
}

#[test]
fn configuration_is_stored_and_checked() {
    let (env, store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    w.create_db("a", cfg(CodecId::Bp128)).unwrap();
    w.create_db("b", cfg(CodecId::VByte).with_block_size(16))
        .unwrap();
    // Codecs need integer keys, a supported block size and pages of 1 KiB or more.
    for bad in [
        DbConfig::raw(KeyType::VarBinary, RecordType::None).with_codec(Some(CodecId::VByte)),
        DbConfig::raw(KeyType::Binary(8), RecordType::None).with_codec(Some(CodecId::Bp128)),
        cfg(CodecId::Bp128).with_block_size(130),
        cfg(CodecId::VByte).with_block_size(1),
        DbConfig::raw(KeyType::U32, RecordType::None).with_block_size(8),
    ] {
        assert!(
            matches!(w.create_db("bad", bad), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
    w.commit().unwrap();
    drop(env);
    let env = reopen_mem(&store, 4096);
    let r = env.begin_read().unwrap();
    let a = r.open_db("a").unwrap();
    assert_eq!(a.config().key_codec, Some(CodecId::Bp128));
    assert_eq!(a.config().block_size, 129);
    // The default block size and the explicit maximum are the same configuration.
    r.open_db_with("a", cfg(CodecId::Bp128)).unwrap();
    r.open_db_with("a", cfg(CodecId::Bp128).with_block_size(129))
        .unwrap();
    assert!(matches!(
        r.open_db_with("a", cfg(CodecId::SimdFor)),
        Err(Error::ConfigMismatch { .. })
    ));
    assert_eq!(r.open_db("b").unwrap().config().block_size, 16);
    let (small, _) = mem_env(512);
    let mut w = small.begin_write().unwrap();
    assert!(matches!(
        w.create_db("s", cfg(CodecId::VByte)),
        Err(Error::InvalidArgument(_))
    ));
}

/// Bytes of compressed leaves damaged behind a valid checksum: nothing panics, `check` reports
/// almost every flip, and where it reports none the tree is consistent (lookups agree with the
/// cursor) and differs from what was written in one block at most.
#[test]
fn damaged_blocks_are_errors_not_panics() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for codec in CodecId::ALL {
        let store = MemStorage::new();
        let opts = EnvOptions::default().page_size(4096);
        let env = Env::create_with_storage(Box::new(store.clone()), &opts).unwrap();
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("k", cfg(codec).with_block_size(32)).unwrap();
        let keys = clustered(20_000, &mut rng);
        for &k in &keys {
            w.insert(&db, k, &[]).unwrap();
        }
        w.commit().unwrap();
        drop(env);
        let good = store.snapshot();
        let leaves: Vec<usize> = (0..good.len() / 4096)
            .filter(|&p| good[p * 4096 + 8] == 4 && good[p * 4096 + 9] >= 16)
            .collect();
        assert!(leaves.len() > 2, "{codec:?}");
        let set: BTreeSet<u32> = keys.iter().copied().collect();
        let mut flagged = 0;
        for round in 0..150 {
            let mut bad = good.clone();
            let p = leaves[rng.usize(0..leaves.len())];
            let page = &mut bad[p * 4096..(p + 1) * 4096];
            let used = 16
                + 4
                + 12 * u16::from_le_bytes([page[16], page[17]]) as usize
                + u16::from_le_bytes([page[18], page[19]]) as usize;
            let at = rng.usize(16..used.min(4096));
            page[at] ^= 1 << rng.u32(0..8);
            seal(p as u64, page);
            let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts, false)
                .unwrap();
            // `check` either reports the damage or fails on it with an error.
            let damaged = match env.check() {
                Ok(rep) => !rep.is_clean(),
                Err(_) => true,
            };
            flagged += usize::from(damaged);
            let r = env.begin_read().unwrap();
            let db = r.open_db("k").unwrap();
            // Damage: reads may fail or see moved keys, but nothing panics and the cursor never
            // goes back (reads check the order they rely on: an error instead).
            let mut seen = BTreeSet::new();
            let mut prev = None;
            let mut whole = true;
            match r.iter(&db) {
                Ok(it) => {
                    for x in it.take(2 * keys.len()) {
                        let Ok((k, _)) = x else {
                            whole = false;
                            break;
                        };
                        let k = k.as_key().as_u32().unwrap();
                        assert!(
                            prev < Some(k),
                            "{codec:?} round {round}: cursor went from {prev:?} to {k} (damaged: {damaged})"
                        );
                        prev = Some(k);
                        seen.insert(k);
                    }
                }
                Err(_) => whole = false,
            }
            let probes: Vec<u32> = (0..50)
                .map(|_| {
                    if rng.bool() {
                        keys[rng.usize(0..keys.len())]
                    } else {
                        rng.u32(..)
                    }
                })
                .collect();
            if damaged {
                for &k in &probes {
                    let _ = r.get(&db, k);
                }
                continue;
            }
            // A clean check vouches for a consistent tree, not for the written keys: a flip
            // behind a re-sealed checksum that moves one key between its neighbours is a valid
            // page (as it would be in an uncompressed leaf). So with a clean check: the whole
            // cursor reads, lookups agree with it, and at most the keys of the one damaged block
            // differ from what was written.
            assert!(
                whole,
                "{codec:?} round {round}: cursor failed with a clean check"
            );
            for &k in &probes {
                let v = r.get(&db, k);
                assert!(
                    matches!(v, Ok(ref v) if v.is_some() == seen.contains(&k)),
                    "{codec:?} round {round}: lookup of {k} gave {v:?}, the cursor {} it, with a clean check",
                    if seen.contains(&k) { "has" } else { "has not" }
                );
            }
            let moved = seen.symmetric_difference(&set).count();
            assert!(
                moved <= 2 * 32,
                "{codec:?} round {round}: {moved} keys differ from those written, with a clean check"
            );
        }
        assert!(
            flagged > 100,
            "{codec:?}: check flagged only {flagged} of 150"
        );
    }
}

/// In-tree COUNT/SUM/MIN/MAX over random ranges against a sorted Vec: every codec, plain u32
/// and u64 leaves (u64 keys spread past 2^32, so compressed lists take the wide form), with
/// and without SUM (then whole blocks come from the index); then again after erasing most
/// keys at random (blocks with gaps, runs of whole blocks broken by emptied ones).
#[test]
fn fold_keys_matches_a_model() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let mut cfgs: Vec<DbConfig> = CodecId::ALL
        .iter()
        .map(|&c| cfg(c).with_block_size([0u16, 7][rng.usize(0..2)]))
        .collect();
    cfgs.push(DbConfig::raw(KeyType::U32, RecordType::None));
    cfgs.push(DbConfig::raw(KeyType::U32, RecordType::None).with_auto_codec(true));
    cfgs.push(DbConfig::raw(KeyType::U64, RecordType::Fixed(2)));
    cfgs.push(DbConfig::raw(KeyType::U64, RecordType::Fixed(2)).with_auto_codec(true));
    cfgs.push(DbConfig::raw(KeyType::U64, RecordType::None).with_codec(Some(CodecId::Bp128)));
    for c in cfgs {
        let (env, _store) = mem_env(4096);
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("k", c).unwrap();
        let wide = c.key_type == KeyType::U64;
        let mut keys: Vec<u64> = clustered(rng.usize(0..30_000), &mut rng)
            .into_iter()
            .map(|k| if wide { (k as u64) << 20 } else { k as u64 })
            .collect();
        let rec = vec![
            0u8;
            if c.record_type == RecordType::Fixed(2) {
                2
            } else {
                0
            }
        ];
        let key = |k: u64| {
            if wide {
                tersedb::KeyBuf::U64(k)
            } else {
                tersedb::KeyBuf::U32(k as u32)
            }
        };
        for &k in &keys {
            w.insert(&db, key(k).as_key(), &rec).unwrap();
        }
        w.commit().unwrap();
        for erased in [false, true] {
            if erased {
                let mut w = env.begin_write().unwrap();
                keys.retain(|&k| {
                    let keep = rng.u8(0..10) < 4;
                    if !keep {
                        assert!(w.erase(&db, key(k).as_key()).unwrap());
                    }
                    keep
                });
                w.commit().unwrap();
            }
            let r = env.begin_read().unwrap();
            let top = keys.last().copied().unwrap_or(0);
            for i in 0..300 {
                let (a, b) = match i {
                    0 => (0, u64::MAX),
                    1 => (top + 1, u64::MAX),
                    2 => (top, top),
                    _ => {
                        let a = rng.u64(0..top + 2);
                        (a, a + rng.u64(0..top / 4 + 2))
                    }
                };
                let sel: Vec<u64> = keys.iter().copied().filter(|&k| k >= a && k <= b).collect();
                for sum in [true, false] {
                    let f = r.fold_keys(&db, a, b, sum).unwrap();
                    let what = format!("{c:?} erased {erased} [{a}, {b}]");
                    assert_eq!(f.count, sel.len() as u64, "{what}");
                    assert_eq!(f.min, sel.first().copied(), "{what}");
                    assert_eq!(f.max, sel.last().copied(), "{what}");
                    if sum {
                        assert_eq!(
                            f.sum,
                            sel.iter().map(|&k| k as u128).sum::<u128>(),
                            "{what}"
                        );
                    }
                }
            }
        }
    }
}

/// Dense blocks (as many keys as values in their range) answer lookups from the descriptor;
/// the answers must be those of the keys themselves: dense runs with holes punched by erases
/// (which make blocks non-dense again), lookups of every value in and around the runs, with
/// records (slots must be right) and without.
#[test]
fn dense_blocks_answer_lookups_exactly() {
    for codec in CodecId::ALL {
        for rt in [RecordType::None, RecordType::Fixed(4)] {
            let (env, _store) = mem_env(1024);
            let mut w = env.begin_write().unwrap();
            let db = w
                .create_db("d", DbConfig::raw(KeyType::U32, rt).with_codec(Some(codec)))
                .unwrap();
            let mut model = std::collections::BTreeMap::new();
            for k in (1000..6000u32)
                .chain(9000..9300)
                .chain(u32::MAX - 600..=u32::MAX)
            {
                let v = if rt == RecordType::None {
                    vec![]
                } else {
                    k.to_le_bytes().to_vec()
                };
                w.insert(&db, k, &v).unwrap();
                model.insert(k, v);
            }
            for k in (1000..6000u32).step_by(97) {
                w.erase(&db, k).unwrap();
                model.remove(&k);
            }
            w.commit().unwrap();
            let r = env.begin_read().unwrap();
            for k in (900..6100u32)
                .chain(8990..9310)
                .chain(u32::MAX - 700..=u32::MAX)
            {
                assert_eq!(
                    r.get(&db, k).unwrap(),
                    model.get(&k).cloned(),
                    "{codec:?} {k}"
                );
            }
            assert_clean(&env);
        }
    }
}
