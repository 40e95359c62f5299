//! Model-based test of the whole engine API: random sequences of insert / upsert / append /
//! erase / get / cursor walks / range scans / commit / abort / reopen, checked against a
//! `BTreeMap`, for every key type and record type, on 512-byte pages (deep trees) and default
//! pages. A read snapshot taken before each commit must keep seeing the old state.
//!
//! Seeded: prints the proptest seed; re-run with `SEED=n`. More cases with `TERSEDB_LONG=1`.

mod common;

use common::{mem_env, reopen_mem};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::collections::BTreeMap;
use std::ops::Bound;
use tersedb::{CodecId, DbConfig, Error, KeyBuf, KeyScheme, KeyType, RecordType};

thread_local! {
    /// How `key` makes variable-length byte-string keys (see `str_key`).
    static KEY_STYLE: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Order-preserving byte-string keys of three kinds: 0 decimal digits padded with 'x' (some at
/// the length limit); 1 a long shared prefix, then two bytes of the number (0x00 and bytes >=
/// 0x80 included), then a short tail; 2 two bytes of the number followed by pseudo-random
/// bytes of wildly varying length (0 to the limit), with key 0 the empty key.
fn str_key(style: u8, k: u64, max_key: usize) -> Vec<u8> {
    let be = ((k * 9) as u16).to_be_bytes();
    match style {
        1 => {
            let shared = b"/srv/tersedb/tenants/acme-corporation/events/2026/11/23/shard-07/";
            let plen = shared.len().min(max_key.saturating_sub(6));
            let mut b = shared[..plen].to_vec();
            b.extend_from_slice(&be);
            b.extend(std::iter::repeat_n(
                [0xffu8, 0x00, 0x80][k as usize % 3],
                (k % 4) as usize,
            ));
            b
        }
        2 => {
            if k == 0 {
                return Vec::new();
            }
            let mut b = be.to_vec();
            let mut h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let len = match k % 5 {
                0 => 0,
                1 => max_key - 2,
                2 => (h % 8) as usize,
                _ => (h % (max_key as u64 - 1)) as usize,
            };
            for _ in 0..len {
                h ^= h >> 29;
                h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                b.push((h >> 56) as u8);
            }
            b
        }
        _ => {
            // Lengths vary with the key, some at the limit.
            let mut b = format!("{k:05}").into_bytes();
            let extra = if k % 17 == 0 {
                max_key - b.len()
            } else {
                (k % 7) as usize
            };
            b.extend(std::iter::repeat_n(b'x', extra));
            b
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, usize),
    Upsert(u64, usize),
    Append(u64, usize),
    Erase(u64),
    /// Upserts `n` keys from `start` with a stride (grows deep trees quickly).
    Bulk(u64, u64, u64),
    /// Erases `n` keys from `start` with a stride (drives merges).
    EraseMany(u64, u64, u64),
    Get(u64),
    /// Seek lower bound to the key, then move: true = next, false = prev.
    Walk(u64, Vec<bool>),
    Range(u64, u64, bool),
    Commit,
    Abort,
    Reopen,
    /// Drop the database and create it again (empty).
    Recreate,
    /// Rename away and back; the handle works again afterwards.
    RenameRoundTrip,
    /// Insert into a second database, which must stay unaffected by everything else.
    Side(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u64..3000;
    let v = 0usize..1000;
    prop_oneof![
        30 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::Insert(k, v)),
        10 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::Upsert(k, v)),
        6 => (1u64..20, v).prop_map(|(k, v)| Op::Append(k, v)),
        20 => k.clone().prop_map(Op::Erase),
        2 => (k.clone(), 1u64..400, 1u64..4).prop_map(|(a, n, s)| Op::Bulk(a, n, s)),
        2 => (k.clone(), 1u64..400, 1u64..4).prop_map(|(a, n, s)| Op::EraseMany(a, n, s)),
        8 => k.clone().prop_map(Op::Get),
        4 => (k.clone(), prop::collection::vec(any::<bool>(), 0..40)).prop_map(|(k, m)| Op::Walk(k, m)),
        4 => (k.clone(), k.clone(), any::<bool>()).prop_map(|(a, b, i)| Op::Range(a, b, i)),
        3 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
        1 => Just(Op::Recreate),
        1 => Just(Op::RenameRoundTrip),
        3 => k.prop_map(Op::Side),
    ]
}

/// Maps a small integer onto a key of the type, preserving order.
fn key(kt: KeyType, k: u64, max_key: usize) -> KeyBuf {
    match kt {
        // Mostly small gaps, with a jump every 50 keys that grows with the key (up to ~21
        // bits): compressed blocks see both narrow and wide deltas.
        KeyType::U32 => KeyBuf::U32((k * 3 + (k / 50) * (k / 50) * 7919) as u32),
        KeyType::U64 => KeyBuf::U64(k * 0x1_0000_0007),
        KeyType::Binary(w) => {
            let mut b = vec![0xabu8; w as usize];
            b[..2].copy_from_slice(&(k as u16).to_be_bytes());
            KeyBuf::Bytes(b)
        }
        KeyType::VarBinary => KeyBuf::Bytes(str_key(KEY_STYLE.get(), k, max_key)),
    }
}

fn value(rt: RecordType, seed: usize, page_size: usize) -> Vec<u8> {
    let len = match rt {
        RecordType::None => 0,
        RecordType::Fixed(n) => n as usize,
        RecordType::Variable => match seed % 10 {
            0 => page_size * 2 + seed, // overflow chain
            1 => page_size / 16,       // around the inline limit
            _ => seed % 40,
        },
    };
    (0..len).map(|i| (i * 31 + seed) as u8).collect()
}

fn run(page_size: usize, cfg: DbConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let (mut env, storage) = mem_env(page_size);
    let (kt, rt) = (cfg.key_type, cfg.record_type);
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("t", cfg).unwrap();
    let side = w
        .create_db("side", DbConfig::raw(KeyType::U64, RecordType::None))
        .unwrap();
    let mut side_model = std::collections::BTreeSet::new();
    let mut side_committed = side_model.clone();
    let max_key = db.limits().max_key_len;
    w.commit().unwrap();
    let mut committed: BTreeMap<KeyBuf, Vec<u8>> = BTreeMap::new();
    let mut model = committed.clone();
    let mut w = Some(env.begin_write().unwrap());
    for op in ops {
        let t = w.as_mut().unwrap();
        match op {
            Op::Insert(k, v) => {
                let (k, v) = (key(kt, *k, max_key), value(rt, *v, page_size));
                match t.insert(&db, &k, &v) {
                    Ok(()) => prop_assert!(model.insert(k, v).is_none()),
                    Err(Error::DuplicateKey { .. }) => prop_assert!(model.contains_key(&k)),
                    Err(e) => return Err(TestCaseError::fail(format!("insert: {e}"))),
                }
            }
            Op::Upsert(k, v) => {
                let (k, v) = (key(kt, *k, max_key), value(rt, *v, page_size));
                let new = t.upsert(&db, &k, &v).unwrap();
                prop_assert_eq!(new, model.insert(k, v).is_none());
            }
            Op::Append(d, v) => {
                let next = match model.keys().next_back() {
                    None => key(kt, *d, max_key),
                    Some(_) => key(kt, 3000 + model.len() as u64 + d, max_key),
                };
                let v = value(rt, *v, page_size);
                if model.keys().next_back().is_none_or(|m| &next > m) {
                    t.append(&db, &next, &v).unwrap();
                    model.insert(next, v);
                } else {
                    prop_assert!(matches!(
                        t.append(&db, &next, &v),
                        Err(Error::InvalidKey(_))
                    ));
                }
            }
            Op::Erase(k) => {
                let k = key(kt, *k, max_key);
                prop_assert_eq!(t.erase(&db, &k).unwrap(), model.remove(&k).is_some());
            }
            Op::Bulk(a, n, st) => {
                for i in 0..*n {
                    let kk = a + i * st;
                    let (k, v) = (key(kt, kk, max_key), value(rt, kk as usize, page_size));
                    let new = t.upsert(&db, &k, &v).unwrap();
                    prop_assert_eq!(new, model.insert(k, v).is_none());
                }
            }
            Op::EraseMany(a, n, st) => {
                for i in 0..*n {
                    let k = key(kt, a + i * st, max_key);
                    prop_assert_eq!(t.erase(&db, &k).unwrap(), model.remove(&k).is_some());
                }
            }
            Op::Get(k) => {
                let k = key(kt, *k, max_key);
                prop_assert_eq!(t.get(&db, &k).unwrap(), model.get(&k).cloned());
                prop_assert_eq!(t.len(&db).unwrap(), model.len() as u64);
            }
            Op::Walk(k, moves) => {
                let k = key(kt, *k, max_key);
                let mut c = t.cursor(&db).unwrap();
                let mut pos = model.range(k.clone()..).next().map(|x| x.0.clone());
                prop_assert_eq!(c.lower_bound(&k).unwrap(), pos.is_some());
                for fwd in moves {
                    let Some(p) = pos.clone() else { break };
                    let nxt = if *fwd {
                        model.range((Bound::Excluded(p), Bound::Unbounded)).next()
                    } else {
                        model.range(..p).next_back()
                    };
                    let moved = if *fwd {
                        c.next().unwrap()
                    } else {
                        c.prev().unwrap()
                    };
                    prop_assert_eq!(moved, nxt.is_some());
                    if let Some((nk, nv)) = nxt {
                        pos = Some(nk.clone());
                        prop_assert_eq!(c.value().unwrap(), Some(nv.clone()));
                    }
                    prop_assert_eq!(c.key().map(|k| k.to_owned()), pos.clone());
                }
            }
            Op::Range(a, b, incl) => {
                let mode = *a % 3;
                let (a, b) = (key(kt, *a, max_key), key(kt, *b, max_key));
                if a > b {
                    continue;
                }
                let mut it = if *incl {
                    t.range::<&KeyBuf, _>(&db, &a..=&b).unwrap()
                } else {
                    t.range::<&KeyBuf, _>(&db, &a..&b).unwrap()
                };
                // Forward, backward, or alternating ends (decided by the bounds, so that the
                // case is reproducible).
                let got: Vec<(KeyBuf, Vec<u8>)> = match mode {
                    0 => it.map(|x| x.unwrap()).collect(),
                    1 => {
                        let mut v: Vec<_> = it.rev().map(|x| x.unwrap()).collect();
                        v.reverse();
                        v
                    }
                    _ => {
                        let (mut head, mut tail) = (Vec::new(), Vec::new());
                        let mut front = true;
                        loop {
                            let x = if front { it.next() } else { it.next_back() };
                            match x {
                                Some(x) if front => head.push(x.unwrap()),
                                Some(x) => tail.push(x.unwrap()),
                                None => break,
                            }
                            front = !front;
                        }
                        tail.reverse();
                        head.extend(tail);
                        head
                    }
                };
                let want: Vec<(KeyBuf, Vec<u8>)> = if *incl {
                    model
                        .range(a..=b)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                } else {
                    model
                        .range(a..b)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                };
                prop_assert_eq!(got, want);
            }
            Op::Recreate => {
                t.drop_db("t").unwrap();
                prop_assert!(matches!(t.len(&db), Err(Error::DbNotFound(_))));
                t.create_db("t", cfg).unwrap();
                model.clear();
            }
            Op::RenameRoundTrip => {
                t.rename_db("t", "t2").unwrap();
                prop_assert!(matches!(t.len(&db), Err(Error::DbNotFound(_))));
                t.rename_db("t2", "t").unwrap();
                prop_assert_eq!(t.len(&db).unwrap(), model.len() as u64);
            }
            Op::Side(k) => {
                t.upsert(&side, *k, &[]).unwrap();
                side_model.insert(*k);
            }
            Op::Commit => {
                let old = env.begin_read().unwrap();
                w.take().unwrap().commit().unwrap();
                // The snapshot taken before the commit still sees the old state.
                prop_assert_eq!(old.len(&db).unwrap(), committed.len() as u64);
                if let Some((k, v)) = committed.iter().next() {
                    prop_assert_eq!(old.get(&db, k).unwrap(), Some(v.clone()));
                }
                drop(old);
                committed = model.clone();
                side_committed = side_model.clone();
                w = Some(env.begin_write().unwrap());
            }
            Op::Abort => {
                w.take().unwrap().abort();
                model = committed.clone();
                side_model = side_committed.clone();
                w = Some(env.begin_write().unwrap());
            }
            Op::Reopen => {
                drop(w.take());
                drop(env);
                env = reopen_mem(&storage, page_size);
                model = committed.clone();
                side_model = side_committed.clone();
                w = Some(env.begin_write().unwrap());
            }
        }
    }
    w.take().unwrap().commit().unwrap();
    if std::env::var("MODEL_DEBUG").is_ok() {
        eprintln!(
            "ops {} keys {} height {}",
            ops.len(),
            model.len(),
            env.begin_read().unwrap().stats(&db).unwrap().height
        );
    }
    let r = env.begin_read().unwrap();
    let all: Vec<(KeyBuf, Vec<u8>)> = r.iter(&db).unwrap().map(|x| x.unwrap()).collect();
    let want: Vec<(KeyBuf, Vec<u8>)> = model.into_iter().collect();
    prop_assert_eq!(all, want);
    let side_all: Vec<u64> = r
        .iter(&side)
        .unwrap()
        .map(|x| x.unwrap().0.as_key().as_u64().unwrap())
        .collect();
    prop_assert_eq!(side_all, side_model.into_iter().collect::<Vec<_>>());
    let report = env.check().unwrap();
    prop_assert!(report.is_clean(), "{}", report);
    Ok(())
}

const TYPES: [(KeyType, RecordType); 8] = [
    (KeyType::U32, RecordType::None),
    (KeyType::U32, RecordType::Variable),
    (KeyType::U64, RecordType::Fixed(8)),
    (KeyType::U64, RecordType::None),
    (KeyType::Binary(6), RecordType::Fixed(3)),
    (KeyType::Binary(20), RecordType::Variable),
    (KeyType::VarBinary, RecordType::None),
    (KeyType::VarBinary, RecordType::Variable),
];

fn runner(cases: u32) -> TestRunner {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={seed}");
    let long = std::env::var("TERSEDB_LONG").is_ok();
    TestRunner::new(Config {
        cases: if long { cases * 20 } else { cases },
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    })
}

fn check_all(page_size: usize, cases: u32, len: usize) {
    for (kt, rt) in TYPES {
        eprintln!("page size {page_size}, {kt:?} / {rt:?}");
        runner(cases)
            .run(&prop::collection::vec(op(), 1..len), |ops| {
                run(page_size, DbConfig::raw(kt, rt), &ops)
            })
            .unwrap();
    }
}

#[test]
fn model_small_pages() {
    check_all(512, 40, 600);
}

/// Every key codec, on the smallest page size compressed leaves allow, with tiny blocks (many
/// blocks, splits and gaps) and default blocks, keys only and with records.
#[test]
fn model_compressed() {
    for codec in CodecId::ALL {
        for (rt, block) in [
            (RecordType::None, 0u16),
            (RecordType::None, 5),
            (RecordType::Variable, 0),
            (RecordType::Fixed(8), 3),
        ] {
            let cfg = DbConfig::raw(KeyType::U32, rt)
                .with_codec(Some(codec))
                .with_block_size(block);
            eprintln!("{} block {block} {rt:?}", codec.name());
            for page in [1024, 4096] {
                runner(6)
                    .run(&prop::collection::vec(op(), 1..500), |ops| {
                        run(page, cfg, &ops)
                    })
                    .unwrap();
            }
        }
    }
}

/// Every byte-string key compression scheme (and its parameters at extremes), on 512-byte pages
/// (deep trees, many splits and merges) and 4 KiB pages, with keys of every generator.
#[test]
fn model_string_schemes() {
    let mut cfgs = Vec::new();
    for scheme in KeyScheme::ALL {
        cfgs.push(DbConfig::raw(KeyType::VarBinary, RecordType::Variable).with_key_scheme(scheme));
    }
    let vb = DbConfig::raw(KeyType::VarBinary, RecordType::None);
    cfgs.push(
        vb.with_key_scheme(KeyScheme::WiredTiger)
            .with_scheme_param(1),
    );
    cfgs.push(
        vb.with_key_scheme(KeyScheme::WiredTiger)
            .with_scheme_param(3),
    );
    cfgs.push(vb.with_key_scheme(KeyScheme::Pkb).with_scheme_param(1));
    cfgs.push(vb.with_key_scheme(KeyScheme::Pkb).with_scheme_param(8));
    cfgs.push(vb.with_key_scheme(KeyScheme::HeadTail).with_split_range(25));
    cfgs.push(vb.with_key_scheme(KeyScheme::Tail).with_split_range(1));
    // `SCHEME=name` runs one scheme only (for reproducing a failure with its `SEED`).
    let only = std::env::var("SCHEME").ok();
    for cfg in cfgs {
        if only.as_deref().is_some_and(|o| o != cfg.key_scheme.name()) {
            continue;
        }
        for style in 0..3u8 {
            eprintln!("{} {style} {:?}", cfg.key_scheme.name(), cfg.record_type);
            KEY_STYLE.set(style);
            for page in [512, 4096] {
                runner(10)
                    .run(&prop::collection::vec(op(), 1..400), |ops| {
                        run(page, cfg, &ops)
                    })
                    .unwrap();
            }
        }
    }
    KEY_STYLE.set(0);
}

#[test]
fn model_default_pages() {
    check_all(16384, 12, 400);
}
