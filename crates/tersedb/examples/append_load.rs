//! The ascending bulk load of `tersedb bench --peers` (issue 21), alone, for timing and profiling:
//! N ClusterData keys (the CLI's generator, `--dist clustered`: [0, 9N/8)) appended in one write
//! transaction, committed, then the file closed; 16 KiB pages, `Durability::None`, a 1 GiB cache,
//! as `crates/bench-peers/src/tersedb_store.rs` sets them.
//! `cargo run --release -p tersedb --example append_load -- N CODEC|none|auto [REPEATS] [SEED]
//! [clustered|uniform]` prints the load time of each repeat (append and commit) and the file's bytes per key. With
//! `RANDOM_FIRST=1` the keys are first loaded in random order into another file, as the
//! harness does before its ascending load. `uniform` takes N distinct keys drawn uniformly over
//! u32 (`--dist uniform`; the same distribution as the CLI's generator, not the same keys).

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

fn uniform(rng: &mut fastrand::Rng, n: usize, min: u64, max: u64) -> Vec<u64> {
    let range = max - min;
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    if (n as u64).saturating_mul(4) >= range {
        let mut needed = n as u64;
        for v in 0..range {
            if rng.u64(..range - v) < needed {
                out.push(min + v);
                needed -= 1;
                if needed == 0 {
                    break;
                }
            }
        }
        return out;
    }
    while out.len() < n {
        let missing = n - out.len();
        out.extend((0..missing + missing / 8 + 8).map(|_| min + rng.u64(..range)));
        out.sort_unstable();
        out.dedup();
    }
    while out.len() > n {
        let i = rng.usize(..out.len());
        out.remove(i);
    }
    out
}

/// `n` distinct keys drawn uniformly over u32, sorted: draws, sorted and deduplicated, then `n`
/// of them kept by selection sampling (linear; `uniform`'s removals by index are quadratic).
fn uniform_u32(rng: &mut fastrand::Rng, n: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(n + n / 8 + 8);
    while out.len() < n {
        let missing = n - out.len();
        out.extend((0..missing + missing / 8 + 8).map(|_| rng.u64(..1 << 32)));
        out.sort_unstable();
        out.dedup();
    }
    let (mut needed, mut left) = (n, out.len());
    out.retain(|_| {
        let keep = rng.usize(..left) < needed;
        needed -= usize::from(keep);
        left -= 1;
        keep
    });
    out
}

/// ClusterData (crates/cli/src/datasets.rs, `fill_clustered`).
fn clustered(rng: &mut fastrand::Rng, out: &mut Vec<u64>, n: usize, min: u64, max: u64) {
    let range = max - min;
    if range == n as u64 || n <= 10 {
        out.extend(uniform(rng, n, min, max));
        return;
    }
    let half = n / 2;
    let slack = range - n as u64;
    let cut = half as u64 + if slack > 1 { rng.u64(..slack) } else { 0 };
    let p = rng.f64();
    if p < 0.25 {
        out.extend(uniform(rng, half, min, min + cut));
        clustered(rng, out, n - half, min + cut, max);
    } else if p < 0.5 {
        clustered(rng, out, half, min, min + cut);
        out.extend(uniform(rng, n - half, min + cut, max));
    } else {
        clustered(rng, out, half, min, min + cut);
        clustered(rng, out, n - half, min + cut, max);
    }
}

fn main() -> tersedb::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: append_load N CODEC|none|auto [REPEATS] [SEED] [clustered|uniform]";
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).expect(usage);
    let codec = args.get(2).map(String::as_str).unwrap_or("bp128");
    let repeats: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let seed: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (id, auto) = match codec {
        "none" => (None, false),
        "auto" => (None, true),
        c => (Some(CodecId::from_name(c).expect("codec name")), false),
    };
    let mut keys = Vec::with_capacity(n);
    let mut rng = fastrand::Rng::with_seed(seed);
    match args.get(5).map(String::as_str).unwrap_or("clustered") {
        "clustered" => clustered(&mut rng, &mut keys, n, 0, (9 * n as u64 / 8).max(n as u64)),
        "uniform" => keys = uniform_u32(&mut rng, n),
        _ => panic!("{usage}"),
    }
    let keys: Vec<u32> = keys.into_iter().map(|k| k as u32).collect();

    let path = std::env::temp_dir().join(format!("tersedb-append-{}.tdb", std::process::id()));
    let opts = EnvOptions::default()
        .page_size(16384)
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    // A new file at `path` holding the empty database "bench", committed.
    let create = |path: &std::path::Path| -> tersedb::Result<(Env, tersedb::Db)> {
        let _ = std::fs::remove_file(path);
        let env = Env::create(path, &opts)?;
        let mut w = env.begin_write()?;
        let db = w.create_db(
            "bench",
            DbConfig::raw(KeyType::U32, RecordType::None)
                .with_codec(id)
                .with_auto_codec(auto),
        )?;
        w.commit()?;
        Ok((env, db))
    };
    let mut times = Vec::new();
    let mut bytes = 0;
    if std::env::var_os("RANDOM_FIRST").is_some() {
        // As `bench --peers` does before its ascending load: the keys in random order, 100,000
        // per transaction, into another file, dropped.
        let rpath = path.with_extension("random");
        let (env, db) = create(&rpath)?;
        let mut order = keys.clone();
        fastrand::Rng::with_seed(seed).shuffle(&mut order);
        for chunk in order.chunks(100_000) {
            let mut w = env.begin_write()?;
            for &k in chunk {
                w.insert(&db, k, &[])?;
            }
            w.commit()?;
        }
        drop(env);
        let _ = std::fs::remove_file(&rpath);
    }
    for _ in 0..repeats {
        let (env, db) = create(&path)?;
        let t = Instant::now();
        let mut w = env.begin_write()?;
        for &k in &keys {
            w.append(&db, k, &[])?;
        }
        w.commit()?;
        times.push(t.elapsed().as_secs_f64());
        let mut w = env.begin_write()?;
        w.set_durability(Durability::Immediate);
        w.commit()?;
        drop(env);
        bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    }
    let _ = std::fs::remove_file(&path);
    let shown: Vec<String> = times.iter().map(|t| format!("{t:.4}")).collect();
    println!(
        "append_load {n} {codec} {}: load s [{}], {:.3} bytes/key",
        args.get(5).map_or("clustered", String::as_str),
        shown.join(", "),
        bytes as f64 / n as f64
    );
    Ok(())
}
