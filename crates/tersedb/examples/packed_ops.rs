//! A/B probe for the compressed KeyList: `N` clustered u32 keys in a BP128 (or other codec)
//! database, then the phases named on the command line, each timed: `load` (random order, 50k
//! keys per commit), `get` (every key, random order), `scan` (cursor over every key), `fold`
//! (1,000 SUMs over ~1% ranges). Run it under `valgrind --tool=callgrind` with `load` alone and
//! with `load,PHASE` to count a phase's instructions on a shared machine. `asc` loads the keys
//! in ascending order into another database (50k keys per commit). With `u64` last, the keys
//! are u64 millisecond-like timestamps (the same clustered deltas plus 1.764e12).
//! Usage: `cargo run --release -p tersedb --example packed_ops -- N CODEC PHASES [u32|u64]`.

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, Key, KeyType, RecordType};

/// What `u64` keys add to the clustered u32 deltas: millisecond timestamps of late 2025.
const U64_OFFSET: u64 = 1_764_000_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(200_000, |s| s.parse().expect("N"));
    let codec = args.next().unwrap_or_else(|| "bp128".into());
    let auto = codec == "auto";
    let codec = CodecId::ALL
        .into_iter()
        .find(|c| c.name() == codec || auto)
        .expect("codec name");
    let phases = args.next().unwrap_or_else(|| "load,get,scan,fold".into());
    let wide = args.next().is_some_and(|s| s == "u64");
    let off = if wide { U64_OFFSET } else { 0 };
    let key = |k: u32| -> Key<'static> {
        if wide {
            Key::U64(U64_OFFSET + k as u64)
        } else {
            Key::U32(k)
        }
    };
    let mut rng = fastrand::Rng::with_seed(7);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u32;
    while keys.len() < n {
        for _ in 0..rng.usize(1..200).min(n - keys.len()) {
            keys.push(k);
            k += rng.u32(1..3);
        }
        let w = rng.u32(1..20);
        k += rng.u32(1..1 << w);
    }
    let path = std::env::temp_dir().join(format!("tersedb-ops-{}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::create(&path, &opts).expect("create");
    let kt = if wide { KeyType::U64 } else { KeyType::U32 };
    let cfg = DbConfig::raw(kt, RecordType::None)
        .with_codec(Some(codec))
        .with_auto_codec(auto);
    let mut order = keys.clone();
    rng.shuffle(&mut order);
    let mut out = Vec::new();
    for phase in phases.split(',') {
        let t = Instant::now();
        let check: u128 = match phase {
            "load" => {
                for batch in order.chunks(50_000) {
                    let mut w = env.begin_write().expect("write");
                    let db = w
                        .open_db("k")
                        .or_else(|_| w.create_db("k", cfg))
                        .expect("db");
                    for &k in batch {
                        w.insert(&db, key(k), &[]).expect("insert");
                    }
                    w.commit().expect("commit");
                }
                n as u128
            }
            "asc" => {
                for batch in keys.chunks(50_000) {
                    let mut w = env.begin_write().expect("write");
                    let db = w
                        .open_db("a")
                        .or_else(|_| w.create_db("a", cfg))
                        .expect("db");
                    for &k in batch {
                        w.insert(&db, key(k), &[]).expect("insert");
                    }
                    w.commit().expect("commit");
                }
                n as u128
            }
            "get" => {
                let r = env.begin_read().expect("read");
                let db = r.open_db("k").expect("db");
                order
                    .iter()
                    .map(|&k| r.contains(&db, key(k)).expect("get") as u128)
                    .sum()
            }
            "scan" => {
                let r = env.begin_read().expect("read");
                let db = r.open_db("k").expect("db");
                let mut c = r.cursor(&db).expect("cursor");
                let mut s = 0u128;
                let mut more = c.first().expect("first");
                while more {
                    s += c.key_u64().expect("key") as u128;
                    more = c.next().expect("next");
                }
                s
            }
            "fold" => {
                let r = env.begin_read().expect("read");
                let db = r.open_db("k").expect("db");
                let top = *keys.last().expect("keys") as u64;
                (0..1000)
                    .map(|_| {
                        let a = off + rng.u64(0..top);
                        r.fold_keys(&db, a, a + top / 100, true).expect("fold").sum
                    })
                    .sum()
            }
            p => panic!("unknown phase {p}"),
        };
        out.push(format!(
            "{phase} {:.1} ms ({check})",
            t.elapsed().as_secs_f64() * 1e3
        ));
    }
    let name = if auto { "auto" } else { codec.name() };
    let kt = if wide { "u64" } else { "u32" };
    println!("{name} {kt} {n}: {}", out.join(", "));
    let _ = std::fs::remove_file(&path);
}
