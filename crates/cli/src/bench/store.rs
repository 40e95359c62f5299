//! `tersedb bench` (and `tersedb bench store`): the Upscaledb paper's store experiment.
//!
//! Keys (ClusterData by default: N keys in [0, 9N/8), seeded) are inserted into a fresh
//! environment in one write transaction with Durability::None; then every key is looked up in
//! random order, a cursor scans the whole database, SUM of all keys is computed, and
//! `AVG(key) WHERE key > MAX(key)/2` (seed 000 Fig. 10), both inside the tree block by block
//! (`ReadTxn::fold_keys`), not through a cursor. This runs for no compression and every leaf
//! codec; each figure is the median of `--repeat` runs, and ratios are against `none` measured in
//! the same invocation. Every run verifies its answers.

use super::timing::median;
use crate::datasets;
use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

/// The codecs of the default run: the paper's Table 2 set plus StreamVByte, Masked VByte and
/// PFOR-DELTA (plain PFOR is available with `--codecs pfor`).
pub const DEFAULT_CODECS: [&str; 9] = [
    "vbyte",
    "masked-vbyte",
    "varintgb",
    "streamvbyte",
    "bp128",
    "for",
    "simd-for",
    "pfor-delta",
    "pfor",
];

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
    /// Codec names (`none` included); empty = `none` and every codec.
    pub codecs: Vec<String>,
    pub block_size: u16,
    /// Also run the range-query benchmark (`--queries`).
    pub queries: bool,
    /// Keys from a file (one per line) instead of the generator; `keys` and `dist` are ignored.
    pub input: Option<std::path::PathBuf>,
    /// Write SVG charts into this directory (`--plot`).
    pub plot: Option<std::path::PathBuf>,
}

/// Fractions of the keys the `--queries` ranges cover.
const COVERAGE: [f64; 4] = [0.001, 0.01, 0.1, 1.0];
/// Random ranges per coverage.
const RANGES: usize = 16;
/// Timed rounds per range (after one warm-up call); each query's time is their median.
const TIMED_ROUNDS: usize = 5;

/// One coverage of the `--queries` benchmark: mean per query over the ranges.
#[derive(Clone, Debug, Default)]
struct QueryRow {
    coverage: f64,
    count_ms: f64,
    count_blocks: f64,
    sum_ms: f64,
    sum_blocks: f64,
    /// `ReadTxn::fold_keys` over the same ranges: decoding exactly the blocks they overlap.
    fold_ms: f64,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Run {
    pub(super) insert_s: f64,
    pub(super) find_s: f64,
    pub(super) cursor_s: f64,
    pub(super) sum_s: f64,
    pub(super) avg_where_s: f64,
    pub(super) file_bytes: u64,
    queries: Vec<QueryRow>,
}

/// The `--queries` part of a run: for each coverage, `RANGES` random ranges of that many keys;
/// `SELECT COUNT(*)` and `SELECT SUM(key)` through the query language, and the raw in-tree fold of
/// the same range as the reference. Every answer is checked against the generated keys.
fn run_queries(
    r: &tersedb::ReadTxn,
    db: &tersedb::Db,
    keys: &[u32],
    seed: u64,
) -> Result<Vec<QueryRow>, String> {
    let e = |x: tersedb::Error| x.to_string();
    let mut prefix = Vec::with_capacity(keys.len() + 1);
    prefix.push(0u128);
    for &k in keys {
        prefix.push(prefix.last().copied().unwrap_or(0) + k as u128);
    }
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x9e37);
    let mut rows = Vec::new();
    for cov in COVERAGE {
        let len = ((keys.len() as f64 * cov).round() as usize).clamp(1, keys.len());
        let mut row = QueryRow {
            coverage: cov,
            ..QueryRow::default()
        };
        for _ in 0..RANGES {
            let a = rng.usize(0..=keys.len() - len);
            let (lo, hi) = (keys[a], keys[a + len - 1]);
            let want_sum = prefix[a + len] - prefix[a];
            let count = tersedb::Query::parse(&format!(
                "SELECT COUNT(*) FROM {} WHERE key BETWEEN {lo} AND {hi}",
                db.name()
            ))
            .map_err(|x| x.to_string())?;
            let sum = tersedb::Query::parse(&format!(
                "SELECT SUM(key) FROM {} WHERE key BETWEEN {lo} AND {hi}",
                db.name()
            ))
            .map_err(|x| x.to_string())?;
            // The first call of each warms the range's pages; then TIMED_ROUNDS rounds time
            // the three in turn, and each takes its median (cold misses would otherwise fall
            // on whichever runs first).
            let mut c = r.query(&count).map_err(e)?;
            let mut s = r.query(&sum).map_err(e)?;
            let mut f = r.fold_keys(db, lo as u64, hi as u64, true).map_err(e)?;
            let mut times = [[0f64; 3]; TIMED_ROUNDS];
            for t3 in &mut times {
                let t = Instant::now();
                c = r.query(&count).map_err(e)?;
                t3[0] = t.elapsed().as_secs_f64() * 1e3;
                let t = Instant::now();
                s = r.query(&sum).map_err(e)?;
                t3[1] = t.elapsed().as_secs_f64() * 1e3;
                let t = Instant::now();
                f = r.fold_keys(db, lo as u64, hi as u64, true).map_err(e)?;
                t3[2] = t.elapsed().as_secs_f64() * 1e3;
            }
            let med = |i: usize| median(&mut times.iter().map(|t| t[i]).collect::<Vec<_>>());
            row.count_ms += med(0);
            row.sum_ms += med(1);
            row.fold_ms += med(2);
            let got_c = c.values.first().and_then(|v| v.as_int());
            let got_s = s.values.first().and_then(|v| v.as_int());
            if got_c != Some(len as i128) || got_s != Some(want_sum as i128) || f.sum != want_sum {
                return Err(format!("range [{lo}, {hi}]: wrong COUNT or SUM"));
            }
            row.count_blocks += c.stats.blocks_decoded as f64;
            row.sum_blocks += s.stats.blocks_decoded as f64;
        }
        let n = RANGES as f64;
        row.count_ms /= n;
        row.sum_ms /= n;
        row.fold_ms /= n;
        row.count_blocks /= n;
        row.sum_blocks /= n;
        rows.push(row);
    }
    Ok(rows)
}

/// The benchmark's keys, sorted and distinct: read from `input`, or `n` keys of the generator
/// `dist` (clustered = ClusterData in [0, 9n/8), uniform over u32, ascending = dense 0..n).
/// Returns the keys and a label for the report (the distribution, or the file and its duplicates).
pub fn bench_keys(
    input: Option<&std::path::Path>,
    dist: &str,
    n: usize,
    seed: u64,
) -> Result<(Vec<u64>, String), String> {
    if let Some(p) = input {
        let f = datasets::read_keys(p)?;
        let label = if f.duplicates > 0 {
            format!("{} ({} duplicate lines dropped)", p.display(), f.duplicates)
        } else {
            p.display().to_string()
        };
        return Ok((f.keys, label));
    }
    if n == 0 {
        return Err("--keys must be at least 1".into());
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let keys = match dist {
        "clustered" => datasets::clustered(&mut rng, n, 0, (9 * n as u64 / 8).max(n as u64)),
        "uniform" => {
            if n as u64 > 1 << 32 {
                return Err("too many keys for u32".into());
            }
            datasets::uniform(&mut rng, n, 0, 1u64 << 32)
        }
        "ascending" | "dense" => (0..n as u64).collect(),
        d => {
            return Err(format!(
                "unknown distribution {d:?} (clustered, uniform, ascending)"
            ))
        }
    };
    Ok((keys, dist.to_string()))
}

fn generate(opts: &Options) -> Result<(Vec<u32>, String), String> {
    let (keys, label) = bench_keys(opts.input.as_deref(), &opts.dist, opts.keys, opts.seed)?;
    if let Some(&k) = keys.last().filter(|&&k| k > u32::MAX as u64) {
        return Err(if opts.input.is_some() {
            format!(
                "{label}: key {k} does not fit in u32; the store benchmark compares the u32 key \
                 codecs (`bench --peers` takes u64 keys)"
            )
        } else {
            "too many keys for u32".into()
        });
    }
    Ok((datasets::to_u32(&keys), label))
}

pub(super) fn one_run(
    opts: &Options,
    codec: Option<CodecId>,
    keys: &[u32],
    insert_order: &[u32],
    lookups: &[u32],
) -> Result<Run, String> {
    let e = |x: tersedb::Error| x.to_string();
    let path = std::env::temp_dir().join(format!("tersedb-bench-{}.tdb", std::process::id()));
    remove_env(&path);
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
        .create_db(
            "bench",
            DbConfig::raw(KeyType::U32, rt)
                .with_codec(codec)
                .with_block_size(if codec.is_some() { opts.block_size } else { 0 }),
        )
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

    // The full scan: median of 3 within the run. The keys are checked in order (a checksum of
    // position and key would cost as much as the scan itself, so compare with the input).
    let mut times = Vec::new();
    let mut c = r.cursor(&db).map_err(e)?;
    for _ in 0..3 {
        let t = Instant::now();
        let mut count = 0usize;
        let mut sum = 0u64;
        let mut ok = c.first().map_err(e)?;
        while ok {
            sum = sum.wrapping_add(c.key_u32().unwrap_or(u32::MAX) as u64);
            count += 1;
            ok = c.next().map_err(e)?;
        }
        times.push(t.elapsed().as_secs_f64());
        let want = keys.iter().fold(0u64, |a, &k| a.wrapping_add(k as u64));
        if count != keys.len() || sum != want {
            return Err(format!("cursor saw {count} of {} keys", keys.len()));
        }
    }
    run.cursor_s = median(&mut times);

    // SUM and AVG take milliseconds: each is the median of 7 timings within the run.
    let mut times = Vec::new();
    let mut f = tersedb::KeyFold::default();
    for _ in 0..7 {
        let t = Instant::now();
        f = r.fold_keys(&db, 0, u64::MAX, true).map_err(e)?;
        times.push(t.elapsed().as_secs_f64());
    }
    run.sum_s = median(&mut times);
    let want: u128 = keys.iter().map(|&k| k as u128).sum();
    if f.sum != want || f.count != keys.len() as u64 {
        return Err(format!("SUM is {}, expected {want}", f.sum));
    }

    // AVG(key) WHERE key > MAX(key) / 2: MAX from the rightmost leaf, then an in-tree fold.
    let mut times = Vec::new();
    let (mut g, mut avg, mut max) = (tersedb::KeyFold::default(), 0.0, 0);
    for _ in 0..7 {
        let t = Instant::now();
        max = if c.last().map_err(e)? {
            c.key_u32().unwrap_or(0)
        } else {
            0
        };
        g = r
            .fold_keys(&db, max as u64 / 2 + 1, u64::MAX, true)
            .map_err(e)?;
        avg = g.sum as f64 / g.count.max(1) as f64;
        times.push(t.elapsed().as_secs_f64());
    }
    run.avg_where_s = median(&mut times);
    let half: Vec<u64> = keys
        .iter()
        .filter(|&&k| k > max / 2)
        .map(|&k| k as u64)
        .collect();
    let want = half.iter().sum::<u64>() as f64 / half.len().max(1) as f64;
    if g.count != half.len() as u64 || avg != want {
        return Err("AVG(key) WHERE key > MAX(key)/2 is wrong".into());
    }
    if opts.queries {
        run.queries = run_queries(&r, &db, keys, opts.seed)?;
    }
    drop(c);
    drop(r);
    drop(env);
    remove_env(&path);
    Ok(run)
}

/// Removes a bench environment: its file and the reader table beside it.
fn remove_env(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(path));
}

/// Per coverage, the median over runs of each query figure.
fn median_queries(runs: &[Run]) -> Vec<QueryRow> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    (0..first.queries.len())
        .map(|i| {
            let med = |f: fn(&QueryRow) -> f64| {
                median(&mut runs.iter().map(|r| f(&r.queries[i])).collect::<Vec<_>>())
            };
            QueryRow {
                coverage: first.queries[i].coverage,
                count_ms: med(|q| q.count_ms),
                count_blocks: med(|q| q.count_blocks),
                sum_ms: med(|q| q.sum_ms),
                sum_blocks: med(|q| q.sum_blocks),
                fold_ms: med(|q| q.fold_ms),
            }
        })
        .collect()
}

fn print_queries(rows: &[(String, Run)], json: bool, keys: usize) {
    if !json {
        outln!(
            "\n# range queries (query language): mean over {RANGES} random ranges of each range's median of {TIMED_ROUNDS} warm runs; blocks = blocks decoded; fold = ReadTxn::fold_keys over the same range"
        );
        outln!(
            "{:<12} {:>8} {:>10} {:>8} {:>10} {:>9} {:>10} {:>9}",
            "codec",
            "coverage",
            "COUNT ms",
            "blocks",
            "SUM ms",
            "blocks",
            "fold ms",
            "SUM/fold"
        );
    }
    for (name, r) in rows {
        for q in &r.queries {
            if json {
                outln!(
                    "{{\"codec\":\"{name}\",\"keys\":{keys},\"query_coverage\":{},\"count_ms\":{:.6},\"count_blocks\":{:.2},\"sum_ms\":{:.6},\"sum_blocks\":{:.2},\"fold_ms\":{:.6},\"verified\":true}}",
                    q.coverage, q.count_ms, q.count_blocks, q.sum_ms, q.sum_blocks, q.fold_ms
                );
            } else {
                outln!(
                    "{:<12} {:>7.1}% {:>10.4} {:>8.1} {:>10.4} {:>9.1} {:>10.4} {:>8.2}x",
                    name,
                    q.coverage * 100.0,
                    q.count_ms,
                    q.count_blocks,
                    q.sum_ms,
                    q.sum_blocks,
                    q.fold_ms,
                    q.sum_ms / q.fold_ms.max(1e-9)
                );
            }
        }
    }
}

/// The keys of a run, their label, the insert order and the lookup order.
pub(super) type Workload = (Vec<u32>, String, Vec<u32>, Vec<u32>);

/// Generates (or reads) the keys and shuffles the insert and lookup orders.
pub(super) fn generate_keys(opts: &Options) -> Result<Workload, String> {
    if !matches!(opts.order.as_str(), "ascending" | "random") {
        return Err(format!(
            "unknown insert order {:?} (ascending, random)",
            opts.order
        ));
    }
    let (keys, label) = generate(opts)?;
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 0x5eed);
    let mut insert_order = keys.clone();
    if opts.order == "random" {
        rng.shuffle(&mut insert_order);
    }
    let mut lookups = keys.clone();
    rng.shuffle(&mut lookups);
    Ok((keys, label, insert_order, lookups))
}

/// Runs the benchmark and prints a table (or one JSON object per codec).
pub fn run(opts: &Options) -> Result<(), String> {
    let (keys, label, insert_order, lookups) = generate_keys(opts)?;
    let names: Vec<String> = if opts.codecs.is_empty() {
        std::iter::once("none")
            .chain(DEFAULT_CODECS)
            .map(String::from)
            .collect()
    } else {
        opts.codecs.clone()
    };
    let mut codecs = Vec::new();
    for n in &names {
        codecs.push(match n.as_str() {
            "none" => None,
            n => Some(CodecId::from_name(n).ok_or_else(|| {
                format!(
                    "unknown codec {n:?} (none, {})",
                    CodecId::ALL.map(|c| c.name()).join(", ")
                )
            })?),
        });
    }
    let reps = opts.repeat.max(1);
    let total = reps * codecs.len();
    let mut progress = crate::progress::Progress::new(total as u64, "runs");
    // Round-robin: run k of every codec before run k + 1 of any, so that a noisy stretch of the
    // shared machine hits every codec alike and the ratios to `none` stay fair.
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); codecs.len()];
    for i in 0..reps {
        for (ci, &codec) in codecs.iter().enumerate() {
            let name = codec.map_or("none", |c| c.name());
            progress.message(&format!("{name} run {}/{reps}", i + 1));
            runs[ci].push(
                one_run(opts, codec, &keys, &insert_order, &lookups)
                    .map_err(|m| format!("{name}: {m}"))?,
            );
            progress.inc(1);
        }
    }
    progress.finish(&format!(
        "{total} runs of {} codecs, every answer verified",
        codecs.len()
    ));
    let mut rows: Vec<(String, Run)> = Vec::new();
    for (ci, &codec) in codecs.iter().enumerate() {
        let runs = &runs[ci];
        let med = |f: fn(&Run) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
        rows.push((
            codec.map_or("none", |c| c.name()).to_string(),
            Run {
                insert_s: med(|r| r.insert_s),
                find_s: med(|r| r.find_s),
                cursor_s: med(|r| r.cursor_s),
                sum_s: med(|r| r.sum_s),
                avg_where_s: med(|r| r.avg_where_s),
                file_bytes: runs[0].file_bytes,
                queries: median_queries(runs),
            },
        ));
    }
    let n = keys.len() as f64;
    if let Some(dir) = &opts.plot {
        let plot_rows: Vec<(String, f64, [f64; 5])> = rows
            .iter()
            .map(|(name, r)| {
                (
                    name.clone(),
                    r.file_bytes as f64 / n,
                    [r.insert_s, r.find_s, r.cursor_s, r.sum_s, r.avg_where_s],
                )
            })
            .collect();
        let label = format!("{} keys ({label})", keys.len());
        for f in super::plot::store(dir, &label, &plot_rows)? {
            eprintln!("tersedb: wrote {f}");
        }
    }
    if opts.json {
        for (name, r) in &rows {
            outln!(
                "{{\"codec\":\"{name}\",\"keys\":{},\"dist\":\"{}\",\"order\":\"{}\",\"block_size\":{},\"bytes_per_key\":{:.4},\"file_bytes\":{},\"insert_s\":{:.6},\"find_s\":{:.6},\"cursor_s\":{:.6},\"sum_s\":{:.6},\"avg_where_s\":{:.6},\"verified\":true}}",
                keys.len(), json_str(&label), opts.order, opts.block_size, r.file_bytes as f64 / n, r.file_bytes, r.insert_s, r.find_s, r.cursor_s, r.sum_s, r.avg_where_s
            );
        }
        print_queries(&rows, true, keys.len());
        return Ok(());
    }
    outln!(
        "# tersedb bench: {} {} keys, {} inserts, page {} B, record {} B, block size {}, median of {reps}; isa {}",
        keys.len(), label, opts.order, opts.page_size, opts.record_size,
        if opts.block_size == 0 { "default".to_string() } else { opts.block_size.to_string() },
        tersedb_codecs::Isa::detect()
    );
    outln!("# seconds, and in parentheses relative to `none` measured in this run");
    outln!(
        "{:<12} {:>9} {:>16} {:>16} {:>16} {:>17} {:>17}",
        "codec",
        "bytes/key",
        "insert s",
        "lookup s",
        "cursor s",
        "SUM s",
        "AVG>max/2 s"
    );
    let base = rows.iter().find(|r| r.0 == "none").map(|r| r.1.clone());
    let cell = |v: f64, b: Option<f64>, p: usize| match b {
        Some(b) if b > 0.0 => format!("{v:.p$} ({:.2}x)", v / b),
        _ => format!("{v:.p$}"),
    };
    for (name, r) in &rows {
        outln!(
            "{:<12} {:>9.3} {:>16} {:>16} {:>16} {:>17} {:>17}",
            name,
            r.file_bytes as f64 / n,
            cell(r.insert_s, base.as_ref().map(|b| b.insert_s), 3),
            cell(r.find_s, base.as_ref().map(|b| b.find_s), 3),
            cell(r.cursor_s, base.as_ref().map(|b| b.cursor_s), 4),
            cell(r.sum_s, base.as_ref().map(|b| b.sum_s), 5),
            cell(r.avg_where_s, base.as_ref().map(|b| b.avg_where_s), 5),
        );
    }
    outln!(
        "verified: every run found all {} keys, the cursor saw them in order, SUM and AVG matched",
        keys.len()
    );
    if opts.queries {
        print_queries(&rows, false, keys.len());
    }
    Ok(())
}

/// `s` with JSON string escapes (a file name may hold quotes or backslashes).
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}
