//! Runs one prepared statement many times, for a profiler: `prepared_loop KEYS ROUNDS [count|sum]`
//! executes `SELECT COUNT(*)` (or `SUM(key)`) `... WHERE key BETWEEN $1 AND $2` over 1% of
//! `KEYS` BP128 keys `ROUNDS` times, then the same query through the query language on a
//! fresh snapshot each time, and prints the median of each in microseconds. Under callgrind,
//! `--toggle-collect='*Prepared::execute*'` counts the prepared path alone.

mod common;

use common::{median, write};
use datafusion::scalar::ScalarValue;
use std::time::Instant;
use tersedb::{Env, EnvOptions};
use tersedb_datafusion::{TableOptions, TerseTable};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(2_000_000, |s| s.parse().unwrap());
    let rounds: usize = args.get(2).map_or(10_000, |s| s.parse().unwrap());
    let agg = match args.get(3).map(String::as_str) {
        Some("sum") => "SUM(key)",
        _ => "COUNT(*)",
    };
    let path = std::env::temp_dir().join(format!("tersedb-prep-loop-{}.tdb", std::process::id()));
    let (writer, max) = write(&path, n);
    let (lo, hi) = (max / 2, max / 2 + max / 100);
    let ctx = tersedb_datafusion::session(Default::default());
    // `PREPARED_LOOP_ENV=writer`: the table and the query language read through the writer's
    // own environment (snapshots without system calls), else through read-only environments
    // of their own (each snapshot reads the meta pages and publishes itself to the writer).
    let same = std::env::var("PREPARED_LOOP_ENV").as_deref() == Ok("writer");
    let table = if same {
        let envs = vec![("k".to_string(), writer.clone())];
        TerseTable::from_envs(envs, false, "k", TableOptions::default()).unwrap()
    } else {
        TerseTable::open(&path, "k", TableOptions::default()).unwrap()
    };
    ctx.register_table("k", std::sync::Arc::new(table)).unwrap();
    // `PREPARED_LOOP_RT=multi` runs on tokio's multi-thread runtime (as `sql_phases` does).
    let rt = match std::env::var("PREPARED_LOOP_RT").as_deref() {
        Ok("multi") => tokio::runtime::Builder::new_multi_thread().build(),
        _ => tokio::runtime::Builder::new_current_thread().build(),
    }
    .unwrap();
    let sql = format!("SELECT {agg} FROM k WHERE key BETWEEN $1 AND $2");
    let p = rt
        .block_on(tersedb_datafusion::prepare(&ctx, &sql))
        .unwrap();
    let values = [ScalarValue::from(lo as u32), ScalarValue::from(hi as u32)];
    let env = if same {
        writer.clone()
    } else {
        Env::open_read_only(&path, &EnvOptions::default()).unwrap()
    };
    let inlined = format!("SELECT {agg} FROM k WHERE key BETWEEN {lo} AND {hi}");
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let s = Instant::now();
        let got = rt.block_on(p.execute(&values)).unwrap();
        a.push(s.elapsed().as_secs_f64() * 1e6);
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    }
    for _ in 0..rounds {
        let s = Instant::now();
        env.begin_read().unwrap().query_str(&inlined).unwrap();
        b.push(s.elapsed().as_secs_f64() * 1e6);
    }
    {
        let held = env.begin_read().unwrap();
        for _ in 0..rounds {
            let s = Instant::now();
            held.query_str(&inlined).unwrap();
            c.push(s.elapsed().as_secs_f64() * 1e6);
        }
    }
    let (a, b, c) = (median(a), median(b), median(c));
    println!(
        "{agg} over 1% of {n} keys, {} environment, medians of {rounds}: prepared {a:.2} us; query language on a fresh snapshot {b:.2} us ({:.2}x), on one held snapshot {c:.2} us ({:.2}x)",
        if same { "the writer's" } else { "a read-only" },
        a / b,
        a / c
    );
    let _ = std::fs::remove_file(&path);
}
