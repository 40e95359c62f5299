//! SUM and COUNT over 1% and 100% key ranges (the full SUM also with its in-tree fold split
//! across the 2 target partitions), and per `GROUP BY key / N` bucket, through
//! DataFusion with the push-downs, the same SQL with push-down off (DataFusion filters and
//! aggregates every row the scan decodes), and the in-tree query language; then a 4-file directory against one file of the same keys,
//! scanned with push-down off (every row decoded, one partition per file).
//!
//! `cargo run --release --manifest-path crates/datafusion/Cargo.toml --example sql_speed --
//! [KEYS] [RUNS]`
//! (default 20,000,000 keys, 5 runs; medians). Keys: ClusterData-like (each of 0..9N/8 kept
//! with probability 8/9, seeded), u32, BP128 leaves, no records.

use datafusion::prelude::{SessionConfig, SessionContext};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};
use tersedb_datafusion::{TableOptions, TerseTable};

fn keys(n: u64) -> Vec<u32> {
    let mut rng = fastrand::Rng::with_seed(42);
    let mut v = Vec::with_capacity(n as usize);
    let mut k = 0u64;
    while (v.len() as u64) < n {
        if rng.u32(..9) != 0 {
            v.push(k as u32);
        }
        k += 1;
    }
    v
}

fn write(path: &Path, keys: &[u32]) {
    let _ = std::fs::remove_file(path);
    let env = Env::create(path, &EnvOptions::default().durability(Durability::None)).unwrap();
    let mut w = env.begin_write().unwrap();
    let cfg = DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::Bp128));
    let db = w.create_db("k", cfg).unwrap();
    for &k in keys {
        w.append(&db, k, b"").unwrap();
    }
    w.commit().unwrap();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn ctx(path: &Path, pushdown: bool, partitions: usize) -> SessionContext {
    ctx_with(
        path,
        pushdown,
        partitions,
        TableOptions::default().split_rows,
    )
}

/// `split_rows`: see [`TableOptions::split_rows`].
fn ctx_with(path: &Path, pushdown: bool, partitions: usize, split_rows: u64) -> SessionContext {
    let cfg = SessionConfig::new().with_target_partitions(partitions);
    let ctx = if pushdown {
        tersedb_datafusion::session(cfg)
    } else {
        SessionContext::new_with_config(cfg)
    };
    let t = TerseTable::open(
        path,
        "k",
        TableOptions {
            pushdown,
            split_rows,
            ..Default::default()
        },
    )
    .unwrap();
    ctx.register_table("k", std::sync::Arc::new(t)).unwrap();
    ctx
}

/// Median seconds of `runs` runs of `sql` (planning included), and its first value.
fn time_sql(
    rt: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    sql: &str,
    runs: usize,
) -> (f64, String) {
    let mut t = Vec::new();
    let mut first = String::new();
    for _ in 0..runs {
        let s = Instant::now();
        let b = rt
            .block_on(async { ctx.sql(sql).await?.collect().await })
            .unwrap();
        t.push(s.elapsed().as_secs_f64());
        first = datafusion::arrow::util::display::array_value_to_string(b[0].column(0), 0).unwrap();
    }
    (median(t), first)
}

/// Median seconds of `runs` runs of `sql`, and the rows it returned.
fn time_sql_rows(
    rt: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    sql: &str,
    runs: usize,
) -> (f64, usize) {
    let mut t = Vec::new();
    let mut n = 0;
    for _ in 0..runs {
        let s = Instant::now();
        let b = rt
            .block_on(async { ctx.sql(sql).await?.collect().await })
            .unwrap();
        t.push(s.elapsed().as_secs_f64());
        n = b.iter().map(|b| b.num_rows()).sum();
    }
    (median(t), n)
}

fn time_tree(txn: &tersedb::ReadTxn, q: &str, runs: usize) -> (f64, String) {
    let mut t = Vec::new();
    let mut first = String::new();
    for _ in 0..runs {
        let s = Instant::now();
        let r = txn.query_str(q).unwrap();
        t.push(s.elapsed().as_secs_f64());
        first = r.values[0].to_string();
    }
    (median(t), first)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(20_000_000, |s| s.parse().unwrap());
    let runs: usize = args.get(2).map_or(5, |s| s.parse().unwrap());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default();
    println!("{cpu}; {n} keys; median of {runs} runs");
    let root: PathBuf =
        std::env::temp_dir().join(format!("tersedb-sql-speed-{}", std::process::id()));
    std::fs::create_dir_all(root.join("dir")).unwrap();
    let ks = keys(n);
    let t = Instant::now();
    write(&root.join("one.tdb"), &ks);
    for (i, part) in ks.chunks(ks.len().div_ceil(4)).enumerate() {
        write(&root.join(format!("dir/part{i}.tdb")), part);
    }
    println!("loaded in {:.1} s", t.elapsed().as_secs_f64());
    let max = *ks.last().unwrap() as u64;
    let (lo, hi) = (max / 2, max / 2 + max / 100);
    let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
    let one = root.join("one.tdb");
    let on = ctx(&one, true, 2);
    let off = ctx(&one, false, 2);
    let split = ctx_with(&one, true, 2, 1 << 19);
    let env = Env::open_read_only(&one, &EnvOptions::default()).unwrap();
    let txn = env.begin_read().unwrap();

    println!("| query | push-down | no push-down | query language | no push-down / push-down | push-down / query language |");
    println!("|---|---|---|---|---|---|");
    for (agg, range, on) in [
        ("SUM(key)", "1%", &on),
        ("COUNT(*)", "1%", &on),
        ("SUM(key)", "100%", &on),
        // The fold cut in two key ranges folded on two threads (TableOptions::split_rows).
        ("SUM(key)", "100% (fold split in 2)", &split),
        ("COUNT(*)", "100%", &on),
    ] {
        let cond = if range == "1%" {
            format!(" WHERE key BETWEEN {lo} AND {hi}")
        } else {
            String::new()
        };
        let q = format!("SELECT {agg} FROM k{cond}");
        let (a, va) = time_sql(&rt, on, &q, runs);
        let (b, vb) = time_sql(&rt, &off, &q, runs);
        let (c, vc) = time_tree(&txn, &q, runs);
        assert!(va == vb && vb == vc, "{q}: {va} {vb} {vc}");
        println!(
            "| `{agg}`, {range} | {:.3} ms | {:.3} ms | {:.3} ms | {:.0}x | {:.2}x |",
            a * 1e3,
            b * 1e3,
            c * 1e3,
            b / a,
            a / c
        );
    }

    // Time buckets: GROUP BY key / N (about 340 buckets), each folded in the tree.
    let w = 65536;
    let q = format!("SELECT key / {w} AS b, COUNT(*), SUM(key) FROM k GROUP BY b");
    let tq = format!("SELECT key / {w}, COUNT(*), SUM(key) FROM k GROUP BY key / {w}");
    let (a, na) = time_sql_rows(&rt, &on, &q, runs);
    let (b, nb) = time_sql_rows(&rt, &off, &q, runs);
    let mut t = Vec::new();
    let mut nc = 0;
    for _ in 0..runs {
        let s = Instant::now();
        nc = txn.query_str(&tq).unwrap().rows.len();
        t.push(s.elapsed().as_secs_f64());
    }
    let c = median(t);
    assert!(na == nb && nb == nc, "{q}: {na} {nb} {nc} buckets");
    println!(
        "| `GROUP BY key / {w}` ({na} buckets: COUNT, SUM(key)), 100% | {:.3} ms | {:.3} ms | {:.3} ms | {:.0}x | {:.2}x |",
        a * 1e3,
        b * 1e3,
        c * 1e3,
        b / a,
        a / c
    );

    // Scans that decode every row: one file (one partition) against four files (four
    // partitions), on as many threads as cores.
    println!();
    println!("| scan (no push-down) | one file | 4-file directory | speed-up |");
    println!("|---|---|---|---|");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = root.join("dir");
    for q in [
        "SELECT SUM(key) FROM k",
        "SELECT COUNT(*) FROM k WHERE key % 7 = 3",
    ] {
        let one_ctx = ctx(&one, false, cores);
        let dir_ctx = ctx(&dir, false, cores);
        let (a, va) = time_sql(&rt, &one_ctx, q, runs);
        let (b, vb) = time_sql(&rt, &dir_ctx, q, runs);
        assert_eq!(va, vb, "{q}");
        println!(
            "| `{q}` | {:.1} ms | {:.1} ms | {:.2}x |",
            a * 1e3,
            b * 1e3,
            a / b
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
