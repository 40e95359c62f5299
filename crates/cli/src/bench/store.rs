//! `tersedb bench` (and `tersedb bench store`): the Upscaledb paper's store experiment.
//!
//! Keys (ClusterData by default: N keys in [0, 9N/8), seeded) are inserted into a fresh
//! environment in one write transaction with Durability::None; then every key is looked up in
//! random order, a cursor scans the whole database, SUM of all keys is computed, and
//! `AVG(key) WHERE key > MAX(key)/2` (seed 000 Fig. 10). Each figure is the median of `--repeat`
//! runs; every run verifies its answers. Leaves are uncompressed until compressed KeyLists land
//! (the codec column then grows a row per codec); SUM and AVG run through a cursor for now.

use super::timing::median;
use crate::datasets;
use std::io::IsTerminal;
use std::time::Instant;
use tersedb::{DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

/// Options of the store benchmark.
#[derive(Clone, Debug)]
pub struct Options {
    pub keys: usize,
    pub dist: String,
    pub order: String,
    pub page_size: usize,
    pub record_size: u32,
    pub repeat: usize,
    pub json: bool,
    pub seed: u64,
}

#[derive(Clone, Debug, Default)]
struct Run {
    insert_s: f64,
    find_s: f64,
    cursor_s: f64,
    sum_s: f64,
    avg_where_s: f64,
    file_bytes: u64,
}

fn generate(opts: &Options) -> Result<Vec<u32>, String> {
    let n = opts.keys;
    let mut rng = fastrand::Rng::with_seed(opts.seed);
    let keys = match opts.dist.as_str() {
        "clustered" => datasets::clustered(&mut rng, n, 0, (9 * n as u64 / 8).max(n as u64)),
        "uniform" => datasets::uniform(&mut rng, n, 0, 1u64 << 32),
        "ascending" => (0..n as u64).collect(),
        d => {
            return Err(format!(
                "unknown distribution {d:?} (clustered, uniform, ascending)"
            ))
        }
    };
    if keys.last().is_some_and(|&k| k > u32::MAX as u64) {
        return Err("too many keys for u32".into());
    }
    Ok(datasets::to_u32(&keys))
}

fn one_run(
    opts: &Options,
    keys: &[u32],
    insert_order: &[u32],
    lookups: &[u32],
) -> Result<Run, String> {
    let e = |x: tersedb::Error| x.to_string();
    let path = std::env::temp_dir().join(format!("tersedb-bench-{}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let env_opts = EnvOptions::default()
        .page_size(opts.page_size)
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::create(&path, &env_opts).map_err(e)?;
    let record = vec![0u8; opts.record_size as usize];
    let rt = if opts.record_size == 0 {
        RecordType::None
    } else {
        RecordType::Fixed(opts.record_size)
    };
    let mut run = Run::default();

    let t = Instant::now();
    let mut w = env.begin_write().map_err(e)?;
    let db = w
        .create_db("bench", DbConfig::new(KeyType::U32, rt))
        .map_err(e)?;
    let ascending = opts.order == "ascending";
    for &k in insert_order {
        if ascending {
            w.append(&db, k, &record).map_err(e)?;
        } else {
            w.insert(&db, k, &record).map_err(e)?;
        }
    }
    w.commit().map_err(e)?;
    run.insert_s = t.elapsed().as_secs_f64();
    run.file_bytes = std::fs::metadata(&path).map_err(|x| x.to_string())?.len();

    let r = env.begin_read().map_err(e)?;
    let t = Instant::now();
    let mut hits = 0usize;
    for &k in lookups {
        hits += r.contains(&db, k).map_err(e)? as usize;
    }
    run.find_s = t.elapsed().as_secs_f64();
    if hits != lookups.len() {
        return Err(format!("lookups: {hits} of {} keys found", lookups.len()));
    }

    let t = Instant::now();
    let mut c = r.cursor(&db).map_err(e)?;
    let mut count = 0usize;
    let mut ok = c.first().map_err(e)?;
    while ok {
        count += c.key_u32().is_some() as usize;
        ok = c.next().map_err(e)?;
    }
    run.cursor_s = t.elapsed().as_secs_f64();
    if count != keys.len() {
        return Err(format!("cursor saw {count} of {} keys", keys.len()));
    }

    let t = Instant::now();
    let mut sum = 0u64;
    let mut ok = c.first().map_err(e)?;
    while ok {
        sum += c.key_u32().unwrap_or(0) as u64;
        ok = c.next().map_err(e)?;
    }
    run.sum_s = t.elapsed().as_secs_f64();
    let want: u64 = keys.iter().map(|&k| k as u64).sum();
    if sum != want {
        return Err(format!("SUM is {sum}, expected {want}"));
    }

    let t = Instant::now();
    let max = if c.last().map_err(e)? {
        c.key_u32().unwrap_or(0)
    } else {
        0
    };
    let (mut s, mut n) = (0u64, 0u64);
    let mut ok = c.lower_bound(max / 2 + 1).map_err(e)?;
    while ok {
        s += c.key_u32().unwrap_or(0) as u64;
        n += 1;
        ok = c.next().map_err(e)?;
    }
    run.avg_where_s = t.elapsed().as_secs_f64();
    let half: Vec<u64> = keys
        .iter()
        .filter(|&&k| k > max / 2)
        .map(|&k| k as u64)
        .collect();
    if n != half.len() as u64 || s != half.iter().sum::<u64>() {
        return Err("AVG(key) WHERE key > MAX(key)/2 is wrong".into());
    }
    drop(c);
    drop(r);
    drop(env);
    let _ = std::fs::remove_file(&path);
    Ok(run)
}

/// Runs the benchmark and prints a table (or one JSON object per codec).
pub fn run(opts: &Options) -> Result<(), String> {
    if opts.keys == 0 {
        return Err("--keys must be at least 1".into());
    }
    if !matches!(opts.order.as_str(), "ascending" | "random") {
        return Err(format!(
            "unknown insert order {:?} (ascending, random)",
            opts.order
        ));
    }
    let keys = generate(opts)?;
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 0x5eed);
    let mut insert_order = keys.clone();
    if opts.order == "random" {
        rng.shuffle(&mut insert_order);
    }
    let mut lookups = keys.clone();
    rng.shuffle(&mut lookups);
    let tty = std::io::stderr().is_terminal();
    let mut runs = Vec::new();
    for i in 0..opts.repeat.max(1) {
        if tty {
            eprint!(
                "\r\x1b[Kbench: codec none, run {}/{}",
                i + 1,
                opts.repeat.max(1)
            );
        }
        runs.push(one_run(opts, &keys, &insert_order, &lookups)?);
    }
    if tty {
        eprint!("\r\x1b[K");
    }
    let med = |f: fn(&Run) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    let r = Run {
        insert_s: med(|r| r.insert_s),
        find_s: med(|r| r.find_s),
        cursor_s: med(|r| r.cursor_s),
        sum_s: med(|r| r.sum_s),
        avg_where_s: med(|r| r.avg_where_s),
        file_bytes: runs[0].file_bytes,
    };
    let bpk = r.file_bytes as f64 / keys.len() as f64;
    if opts.json {
        outln!(
            "{{\"codec\":\"none\",\"keys\":{},\"dist\":\"{}\",\"order\":\"{}\",\"bytes_per_key\":{bpk:.4},\"file_bytes\":{},\"insert_s\":{:.6},\"find_s\":{:.6},\"cursor_s\":{:.6},\"sum_s\":{:.6},\"avg_where_s\":{:.6}}}",
            keys.len(), opts.dist, opts.order, r.file_bytes, r.insert_s, r.find_s, r.cursor_s, r.sum_s, r.avg_where_s
        );
    } else {
        outln!(
            "# tersedb bench: {} {} keys, {} inserts, page {} B, record {} B, median of {}; answers verified",
            keys.len(), opts.dist, opts.order, opts.page_size, opts.record_size, opts.repeat.max(1)
        );
        outln!("codec         bytes/key   insert s   lookup s   cursor s      SUM s  AVG>max/2 s");
        outln!(
            "{:<12} {:>10.3} {:>10.3} {:>10.3} {:>10.4} {:>10.4} {:>12.4}",
            "none",
            bpk,
            r.insert_s,
            r.find_s,
            r.cursor_s,
            r.sum_s,
            r.avg_where_s
        );
        outln!("(compressed leaves are not built yet: only the uncompressed baseline runs)");
    }
    Ok(())
}
