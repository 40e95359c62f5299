//! Lookups of absent keys, for profiling (issue 21's peers measure 1M of them): 2M
//! ClusterData-like keys in a file, and keys drawn below twice the largest as `bench --peers`
//! draws them (most of them above the largest key), against present keys in random order.
//! `dense` as a third argument stores the keys 0..2M instead (every absent key above the largest).
//! `cargo run --release -p tersedb --example absent_keys [codec|none] [rounds] [dense]`.

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions};

/// The absent keys' lookups, out of line (callgrind: `--toggle-collect='*absent_loop*'`).
#[inline(never)]
fn absent_loop(r: &tersedb::ReadTxn, db: &tersedb::Db, keys: &[u32]) -> tersedb::Result<u64> {
    let mut found = 0;
    for &k in keys {
        found += r.contains(db, k)? as u64;
    }
    Ok(found)
}

/// The present keys' lookups, out of line (`--toggle-collect='*present_loop*'`). Counts the
/// misses, so that the compiler cannot fold it into `absent_loop`.
#[inline(never)]
fn present_loop(r: &tersedb::ReadTxn, db: &tersedb::Db, keys: &[u32]) -> tersedb::Result<u64> {
    let mut missed = 0;
    for &k in keys {
        missed += !r.contains(db, k)? as u64;
    }
    Ok(keys.len() as u64 - missed)
}

/// One read transaction per lookup (`--toggle-collect='*short_loop*'`): what a snapshot's
/// setup and teardown cost beside its lookup.
#[inline(never)]
fn short_loop(env: &Env, db: &tersedb::Db, keys: &[u32]) -> tersedb::Result<u64> {
    let mut found = 0;
    for &k in keys {
        found += env.begin_read()?.contains(db, k)? as u64;
    }
    Ok(found)
}

fn main() -> tersedb::Result<()> {
    let codec = std::env::args().nth(1).and_then(|c| CodecId::from_name(&c));
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let dense = std::env::args().nth(3).is_some_and(|a| a == "dense");
    let n = 2_000_000usize;
    let mut rng = fastrand::Rng::with_seed(7);
    let mut keys = Vec::with_capacity(n);
    let mut k = 0u64;
    while keys.len() < n {
        if dense {
            keys.push(keys.len() as u32);
            continue;
        }
        k += 1 + if rng.u8(0..8) == 0 { rng.u64(0..3) } else { 0 };
        keys.push(k as u32);
    }
    let dir = std::env::temp_dir().join(format!("absent_keys_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("db.tdb");
    let env = Env::create(&path, &EnvOptions::default().durability(Durability::None))?;
    let mut w = env.begin_write()?;
    let db = w.create_db("db", DbConfig::u32_set().with_codec(codec))?;
    for &k in &keys {
        w.append(&db, k, &[])?;
    }
    w.commit()?;
    let top = *keys.last().unwrap_or(&0) as u64;
    let mut absent = Vec::with_capacity(1_000_000);
    while absent.len() < 1_000_000 {
        let k = rng.u64(..2 * top + 2) as u32;
        if keys.binary_search(&k).is_err() {
            absent.push(k);
        }
    }
    let mut present = keys.clone();
    rng.shuffle(&mut present);
    present.truncate(1_000_000);
    let r = env.begin_read()?;
    for _ in 0..rounds {
        let t = Instant::now();
        let mut found = absent_loop(&r, &db, &absent)?;
        let ta = t.elapsed().as_secs_f64();
        assert_eq!(found, 0);
        let t = Instant::now();
        found += present_loop(&r, &db, &present)?;
        let tp = t.elapsed().as_secs_f64();
        assert_eq!(found, present.len() as u64);
        let t = Instant::now();
        let short = present.get(..100_000).unwrap_or_default();
        assert_eq!(short_loop(&env, &db, short)?, short.len() as u64);
        let ts = t.elapsed().as_secs_f64();
        println!(
            "{}: 1M absent {:.3} s, 1M present {:.3} s, 100k one-lookup transactions {:.3} s",
            codec.map_or("none", |c| c.name()),
            ta,
            tp,
            ts
        );
    }
    drop(r);
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
