//! The engine calls the Python package's bulk methods make, timed from Rust: the baseline of
//! `crates/python/bench/bench.py`, which runs this next to the same work from Python.
//! `cargo run --release -p tersedb --example bulk_calls FILE KEYS CODEC|none REPEATS`: prints one
//! JSON object of per-repeat seconds: `put` (KEYS ascending u32 keys upserted in one write
//! transaction with `Durability::None`, commit included), `sum` (SUM over the full key range,
//! the median of 21 calls),
//! `contains` (1M seeded random probes, half present).

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions};

/// A SUM takes milliseconds: each repeat reports the median of this many calls.
const SUM_CALLS: usize = 21;

fn main() -> tersedb::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bulk_calls FILE KEYS CODEC|none REPEATS";
    let path = args.get(1).expect(usage);
    let n: u32 = args.get(2).and_then(|s| s.parse().ok()).expect(usage);
    let codec = args.get(3).and_then(|c| CodecId::from_name(c));
    let repeats: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3);
    let probes = probes(n);
    let (mut put, mut sum, mut contains) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats {
        let _ = std::fs::remove_file(path);
        let env = Env::create(path, &EnvOptions::default().durability(Durability::None))?;
        let mut w = env.begin_write()?;
        let db = w.create_db("t", DbConfig::u32_set().with_codec(codec))?;
        w.commit()?;

        let t = Instant::now();
        let mut w = env.begin_write()?;
        for k in 0..n {
            w.upsert(&db, k, &[])?;
        }
        w.commit()?;
        put.push(t.elapsed().as_secs_f64());

        let r = env.begin_read()?;
        let mut sums = Vec::new();
        for _ in 0..SUM_CALLS {
            let t = Instant::now();
            let s = r.fold_keys(&db, 0, u64::MAX, true)?.sum;
            sums.push(t.elapsed().as_secs_f64());
            assert_eq!(s, n as u128 * (n as u128 - 1) / 2);
        }
        sums.sort_by(f64::total_cmp);
        sum.push(sums[SUM_CALLS / 2]);

        let t = Instant::now();
        let mut found = Vec::with_capacity(probes.len());
        for &k in &probes {
            found.push(r.contains(&db, k)?);
        }
        contains.push(t.elapsed().as_secs_f64());
        assert!(found.iter().any(|&f| f));
    }
    let _ = std::fs::remove_file(path);
    let list = |v: &[f64]| {
        let s: Vec<String> = v.iter().map(|x| format!("{x:.6}")).collect();
        format!("[{}]", s.join(","))
    };
    println!(
        "{{\"put\":{},\"sum\":{},\"contains\":{}}}",
        list(&put),
        list(&sum),
        list(&contains)
    );
    Ok(())
}

/// 1M probes in [0, 2n): the same sequence as bench.py's (xorshift64, seed 42).
fn probes(n: u32) -> Vec<u32> {
    let mut x: u64 = 42;
    (0..1_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (2 * n as u64)) as u32
        })
        .collect()
}
