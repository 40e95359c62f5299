//! Pins what reads do with a leaf forged behind a valid checksum (issue 18): a well-formed leaf
//! page of the same database kind, written over a leaf of the tree and sealed again, whose keys
//! run past the separators that lead to it. Cursors check a compressed leaf's decoded blocks
//! once each (inside the leaf's fence, beyond the block before) instead of every key, so the
//! forged keys sit in a later block than the key the cursor enters at: a cursor, forward and
//! backward, and a row query give `Corrupted` and never one of the foreign keys. A lookup that
//! misses in the forged leaf gives `Corrupted` too (the leaf's first or last key lies outside
//! the separators that lead to it); one that hits is right.

mod common;

use tersedb::storage::meta::seal;
use tersedb::storage::MemStorage;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyBuf, KeyType, RecordType};

const PAGE: usize = 1024;
/// Foreign keys in a forged leaf.
const NF: usize = 10;

fn configs() -> Vec<DbConfig> {
    let mut v = Vec::new();
    for codec in [
        CodecId::Bp128,
        CodecId::StreamVByte,
        CodecId::For,
        CodecId::VByte,
        CodecId::PforDelta,
    ] {
        v.push(
            DbConfig::raw(KeyType::U32, RecordType::None)
                .with_codec(Some(codec))
                .with_block_size(16),
        );
    }
    v.push(
        DbConfig::raw(KeyType::U64, RecordType::Fixed(4))
            .with_codec(Some(CodecId::Bp128))
            .with_block_size(16),
    );
    v.push(
        DbConfig::raw(KeyType::U32, RecordType::None)
            .with_auto_codec(true)
            .with_block_size(16),
    );
    // Plain lists: cursors check windows of 64 keys once each, as compressed blocks.
    v.push(DbConfig::raw(KeyType::U32, RecordType::None));
    v.push(DbConfig::raw(KeyType::U64, RecordType::None));
    v
}

fn key(cfg: DbConfig, k: u64) -> KeyBuf {
    match cfg.key_type {
        KeyType::U64 => KeyBuf::U64(k),
        _ => KeyBuf::U32(k as u32),
    }
}

fn record(cfg: DbConfig) -> Vec<u8> {
    match cfg.record_type {
        RecordType::Fixed(n) => vec![7; n as usize],
        _ => Vec::new(),
    }
}

/// A file with database `d` holding `keys`, and its leaves in key order: (page id, keys).
fn file_of(cfg: DbConfig, keys: &[u64]) -> (Vec<u8>, Vec<(u64, Vec<u64>)>) {
    let store = MemStorage::new();
    let opts = EnvOptions::default().page_size(PAGE);
    let env = Env::create_with_storage(Box::new(store.clone()), &opts).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    for &k in keys {
        w.put(&db, &key(cfg, k), &record(cfg)).unwrap();
    }
    w.commit().unwrap();
    let leaves = common::leaves_with_keys(&env, &db);
    drop(env);
    (store.snapshot(), leaves)
}

/// The keys a pass gives before it ends, and whether it ended on `Corrupted`.
fn pass(file: Vec<u8>, back: bool) -> (Vec<u64>, bool) {
    let opts = EnvOptions::default().page_size(PAGE);
    let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(file)), &opts, false).unwrap();
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    let it = r.iter(&db).unwrap();
    let it: Box<dyn Iterator<Item = _>> = if back {
        Box::new(it.rev())
    } else {
        Box::new(it)
    };
    let mut got = Vec::new();
    for item in it {
        match item {
            Ok((k, _)) => got.push(k.as_key().as_u64().unwrap()),
            Err(Error::Corrupted { .. }) => return (got, true),
            Err(e) => panic!("{e}"),
        }
    }
    (got, false)
}

/// Whether lookups in the forged leaf give right answers or `Corrupted`: the keys of leaf m it
/// holds (`own`) are found (a hit is the probe, inside the separators), a key absent between them gives
/// `Corrupted` (the forged leaf's first or last key is outside its fence), and the foreign
/// keys are found in their own leaf, which the separators lead them to.
fn lookups_refuse(file: Vec<u8>, cfg: DbConfig, own: &[u64], foreign: &[u64]) -> bool {
    let opts = EnvOptions::default().page_size(PAGE);
    let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(file)), &opts, false).unwrap();
    let r = env.begin_read().unwrap();
    let db = r.open_db("d").unwrap();
    own.windows(2).all(|w| {
        let absent = w[0] + 1;
        assert!(absent < w[1]);
        matches!(r.get(&db, &key(cfg, w[0])), Ok(Some(_)))
            && r.contains(&db, &key(cfg, w[0])).unwrap()
            && matches!(r.get(&db, &key(cfg, absent)), Err(Error::Corrupted { .. }))
            && matches!(
                r.contains(&db, &key(cfg, absent)),
                Err(Error::Corrupted { .. })
            )
    }) && foreign
        .iter()
        .all(|&k| r.contains(&db, &key(cfg, k)).unwrap())
}

fn row_query_fails(file: Vec<u8>) -> bool {
    let opts = EnvOptions::default().page_size(PAGE);
    let env = Env::open_with_storage(Box::new(MemStorage::from_bytes(file)), &opts, false).unwrap();
    let r = env.begin_read().unwrap();
    matches!(
        r.query_str("SELECT key FROM d"),
        Err(Error::Corrupted { .. })
    )
}

#[test]
fn reads_refuse_a_forged_leaf_whose_keys_leave_its_fence() {
    for cfg in configs() {
        let base = if cfg.key_type == KeyType::U64 {
            1 << 40
        } else {
            0
        };
        // Gaps of about a thousand, so that no codec packs the keys into a single leaf.
        let keys: Vec<u64> = (0..6000u64)
            .map(|i| base + i * 1000 + i * 7919 % 997)
            .collect();
        let (good, leaves) = file_of(cfg, &keys);
        assert!(leaves.len() >= 5, "{cfg:?}: {} leaves", leaves.len());
        let m = leaves.len() / 2;
        let own = &leaves[m].1;
        let half = (own.len() / 2).min(60);
        assert!(half >= 24, "{cfg:?}: {} keys in leaf {m}", own.len());
        let (before, after) = (&leaves[m - 1].1, &leaves[m + 1].1);
        // Leaf m's first keys then keys of the next leaf (read forward), and keys of the leaf
        // before then leaf m's last keys (read backward).
        let forged: [(bool, Vec<u64>, &[u64]); 2] = [
            (
                false,
                own[..half].iter().chain(&after[..NF]).copied().collect(),
                &after[..NF],
            ),
            (
                true,
                before[before.len() - NF..]
                    .iter()
                    .chain(&own[own.len() - half..])
                    .copied()
                    .collect(),
                &before[before.len() - NF..],
            ),
        ];
        for (back, fkeys, foreign) in forged {
            // Leaf m's keys that the forged leaf holds.
            let kept: Vec<u64> = fkeys.iter().copied().filter(|k| own.contains(k)).collect();
            let (donor, dleaves) = file_of(cfg, &fkeys);
            assert_eq!(dleaves.len(), 1, "{cfg:?}: the forged keys fill one leaf");
            let (from, to) = (dleaves[0].0 as usize * PAGE, leaves[m].0 as usize * PAGE);
            let mut bad = good.clone();
            bad[to..to + PAGE].copy_from_slice(&donor[from..from + PAGE]);
            seal(leaves[m].0, &mut bad[to..to + PAGE]);
            for dir in [back, !back] {
                let (got, corrupted) = pass(bad.clone(), dir);
                let what = format!("{cfg:?}, forged {}, read back {dir}", fkeys.len());
                assert!(corrupted, "{what}: no error after {} keys", got.len());
                // Keys in order and none twice: the foreign keys are also in their own
                // leaf, which a pass entering leaf m from that side has given already.
                let ordered = got
                    .windows(2)
                    .all(|w| if dir { w[0] > w[1] } else { w[0] < w[1] });
                assert!(ordered, "{what}: keys out of order");
                if dir == back {
                    // Entered at one of leaf m's own keys: the error came from a later block,
                    // before any foreign key (a plain leaf's first window may hold some).
                    let plain = cfg.key_codec.is_none() && !cfg.auto_codec;
                    assert!(plain || got.iter().any(|k| own.contains(k)), "{what}");
                    assert!(
                        !got.iter().any(|k| foreign.contains(k)),
                        "{what}: a foreign key given"
                    );
                }
            }
            assert!(
                lookups_refuse(bad.clone(), cfg, &kept, foreign),
                "{cfg:?}: a lookup in a forged leaf answered"
            );
            assert!(
                row_query_fails(bad),
                "{cfg:?}: row query over a forged leaf"
            );
        }
    }
}

/// A plain leaf with two neighbouring keys swapped, sealed again: every key still inside the
/// leaf's fence, so only the order check inside a cursor's window of keys catches it. Cursors
/// (both ways) give `Corrupted` and never a key out of order, for u32 and u64 keys.
#[test]
fn cursors_refuse_a_plain_leaf_with_keys_out_of_order() {
    const LEAF_HEADER: usize = 16;
    for cfg in [
        DbConfig::raw(KeyType::U32, RecordType::None),
        DbConfig::raw(KeyType::U64, RecordType::None),
    ] {
        let w = if cfg.key_type == KeyType::U64 { 8 } else { 4 };
        let keys: Vec<u64> = (0..3000u64).map(|i| i * 3).collect();
        let (good, leaves) = file_of(cfg, &keys);
        let (id, own) = &leaves[leaves.len() / 2];
        for at in [1, own.len() / 2, own.len() - 2] {
            let mut bad = good.clone();
            let page = &mut bad[*id as usize * PAGE..(*id as usize + 1) * PAGE];
            let (a, b) = (LEAF_HEADER + at * w, LEAF_HEADER + (at + 1) * w);
            assert_eq!(
                page[a..a + w],
                own[at].to_le_bytes()[..w],
                "{cfg:?}: layout"
            );
            let (x, y) = page[a..a + 2 * w].split_at_mut(w);
            x.swap_with_slice(y);
            assert_eq!(page[b..b + w], own[at].to_le_bytes()[..w]);
            seal(*id, page);
            for back in [false, true] {
                let (got, corrupted) = pass(bad.clone(), back);
                let what = format!("{cfg:?}, slot {at} swapped, read back {back}");
                assert!(corrupted, "{what}: no error after {} keys", got.len());
                let ordered = got
                    .windows(2)
                    .all(|p| if back { p[0] > p[1] } else { p[0] < p[1] });
                assert!(ordered, "{what}: keys out of order");
            }
        }
    }
}

/// Plain integer lists are proven in order when a page is first read (branch separators, plain
/// leaves): with two separators of the root swapped or two keys of a plain leaf swapped, and
/// the page sealed again, every lookup, cursor and fold that reads the page gives `Corrupted`,
/// hits too; none returns a wrong answer.
#[test]
fn reads_refuse_plain_lists_out_of_order_hits_too() {
    const BRANCH_KIND: u8 = 3;
    const BRANCH_HEADER: usize = 24;
    const LEAF_HEADER: usize = 16;
    for cfg in [
        DbConfig::raw(KeyType::U32, RecordType::None),
        DbConfig::raw(KeyType::U64, RecordType::None),
    ] {
        let (w, list_id) = if cfg.key_type == KeyType::U64 {
            (8, 2)
        } else {
            (4, 1)
        };
        let keys: Vec<u64> = (0..3000u64).map(|i| i * 3).collect();
        let (good, leaves) = file_of(cfg, &keys);
        let (leaf, own) = &leaves[leaves.len() / 2];
        // The data tree's branch pages: kind and key list id in the node header.
        let branches: Vec<usize> = (2..good.len() / PAGE)
            .filter(|&id| good[id * PAGE + 8] == BRANCH_KIND && good[id * PAGE + 9] == list_id)
            .collect();
        assert_eq!(branches.len(), 1, "{cfg:?}: one branch (the root) expected");
        for (id, at) in [
            (branches[0], BRANCH_HEADER + w),
            (*leaf as usize, LEAF_HEADER + own.len() / 2 * w),
        ] {
            let mut bad = good.clone();
            let page = &mut bad[id * PAGE..(id + 1) * PAGE];
            let (x, y) = page[at..at + 2 * w].split_at_mut(w);
            x.swap_with_slice(y);
            seal(id as u64, page);
            let what = format!("{cfg:?}, page {id}");
            let opts = EnvOptions::default().page_size(PAGE);
            let env =
                Env::open_with_storage(Box::new(MemStorage::from_bytes(bad.clone())), &opts, false)
                    .unwrap();
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            // Through the root every lookup reads the page; of the leaf, its own keys.
            let probes: Vec<u64> = if id == *leaf as usize {
                own.clone()
            } else {
                keys.iter().copied().step_by(97).collect()
            };
            for &k in &probes {
                for got in [
                    r.get(&db, &key(cfg, k)).map(|v| v.is_some()),
                    r.contains(&db, &key(cfg, k)),
                ] {
                    assert!(
                        matches!(got, Err(Error::Corrupted { .. })),
                        "{what}: lookup {k}: {got:?}"
                    );
                }
            }
            for sum in [false, true] {
                let f = r.fold_keys(&db, own[0], own[own.len() - 1], sum);
                assert!(
                    matches!(f, Err(Error::Corrupted { .. })),
                    "{what}: fold: {f:?}"
                );
            }
            drop(r);
            drop(env);
            for back in [false, true] {
                let (got, corrupted) = pass(bad.clone(), back);
                assert!(
                    corrupted,
                    "{what}: a pass gave {} keys and no error",
                    got.len()
                );
            }
        }
    }
}
