//! Where a query's time goes through DataFusion with the push-downs: SQL parsing and the
//! logical plan, the logical optimizer, physical planning (the table's `scan`, the physical
//! optimizer rules and the statistics they ask for) and execution; beside it the table's
//! `statistics()` and the in-tree query language. Medians of RUNS runs, microseconds. Then
//! the same queries as prepared statements (`tersedb_datafusion::prepare`, the key range as
//! parameters): an execution against `ctx.sql` + `collect` and the query language.
//!
//! `cargo run --release --manifest-path crates/datafusion/Cargo.toml --example sql_phases --
//! [KEYS] [RUNS]` (default 20,000,000 keys, 21 runs). Data as in `sql_speed`: ClusterData-like
//! u32 keys, BP128 leaves, no records, one file.

mod common;

use common::{median, write};
use datafusion::execution::SessionState;
use datafusion::physical_plan::collect;
use datafusion::prelude::SessionConfig;
use std::path::Path;
use std::time::Instant;
use tersedb::{Env, EnvOptions};
use tersedb_datafusion::datafusion::catalog::TableProvider;
use tersedb_datafusion::{TableOptions, TerseTable};

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

async fn phases(state: &SessionState, sql: &str) -> [f64; 5] {
    let t = Instant::now();
    let logical = state.create_logical_plan(sql).await.unwrap();
    let parse = us(t);
    let t = Instant::now();
    let optimized = state.optimize(&logical).unwrap();
    let optimize = us(t);
    let t = Instant::now();
    // The physical planner and optimizer (`SessionState::create_physical_plan` would run the
    // logical optimizer again first).
    let physical = state
        .query_planner()
        .create_physical_plan(&optimized, state)
        .await
        .unwrap();
    let plan = us(t);
    let t = Instant::now();
    let batches = collect(physical, state.task_ctx()).await.unwrap();
    let exec = us(t);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    [parse, optimize, plan, exec, parse + optimize + plan + exec]
}

/// Prepared executions against `ctx.sql` + `collect` and the query language, each query's
/// three measured in turn (interleaved run by run, so a change in the machine's load hits all
/// three alike).
fn prepared(
    rt: &tokio::runtime::Runtime,
    ctx: &datafusion::prelude::SessionContext,
    txn: &tersedb::ReadTxn,
    path: &Path,
    (lo, hi, max): (u64, u64, u64),
    runs: usize,
) {
    use datafusion::scalar::ScalarValue;
    let range = |a: u64, b: u64| vec![ScalarValue::from(a as u32), ScalarValue::from(b as u32)];
    println!("prepared statements: medians of {runs} runs, us");
    // What an execution pays that the query language's runs (on one open snapshot) do not.
    let env = Env::open_read_only(path, &EnvOptions::default()).unwrap();
    let mut t = Vec::new();
    for _ in 0..runs {
        let s = Instant::now();
        let r = env.begin_read().unwrap();
        r.open_db("k").unwrap();
        t.push(us(s));
    }
    println!(
        "a fresh snapshot (begin_read + open_db): {:.1} us",
        median(t)
    );
    // A prepared execution reads the newest snapshot: the query language is measured on one
    // open snapshot (as above) and on a fresh one per query (`begin_read` first). The first
    // columns interleave the four run by run (a change of load hits all alike; each runs with
    // caches the others' data has cooled), the last runs each back to back.
    println!("| query | prepared `execute` | `ctx.sql` + `collect` | query language | query language, fresh snapshot | prepared / query language | prepared / fresh | `ctx.sql` / prepared | back to back: prepared / query language |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let between = "FROM k WHERE key BETWEEN $1 AND $2";
    for (agg, params) in [
        ("SUM(key)", Some((lo, hi))),
        ("COUNT(*)", Some((lo, hi))),
        ("SUM(key)", None),
        ("COUNT(*)", None),
        ("SUM(key)", Some((0, max))),
        ("COUNT(*)", Some((0, max))),
    ] {
        let (sql, values, inlined) = match params {
            Some((a, b)) => (
                format!("SELECT {agg} {between}"),
                range(a, b),
                format!("SELECT {agg} FROM k WHERE key BETWEEN {a} AND {b}"),
            ),
            None => {
                let q = format!("SELECT {agg} FROM k");
                (q.clone(), Vec::new(), q)
            }
        };
        let p = rt.block_on(tersedb_datafusion::prepare(ctx, &sql)).unwrap();
        assert!(p.reuses_plan());
        let want = rt
            .block_on(async { ctx.sql(&inlined).await?.collect().await })
            .unwrap();
        let got = rt.block_on(p.execute(&values)).unwrap();
        assert_eq!(format!("{want:?}"), format!("{got:?}"));
        let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let s = Instant::now();
            rt.block_on(p.execute(&values)).unwrap();
            a.push(us(s));
            let s = Instant::now();
            rt.block_on(async { ctx.sql(&inlined).await?.collect().await })
                .unwrap();
            b.push(us(s));
            let s = Instant::now();
            txn.query_str(&inlined).unwrap();
            c.push(us(s));
            let s = Instant::now();
            env.begin_read().unwrap().query_str(&inlined).unwrap();
            d.push(us(s));
        }
        // And each back to back (caches warm with its own data, as in the phase table).
        let (mut e, mut g) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let s = Instant::now();
            rt.block_on(p.execute(&values)).unwrap();
            e.push(us(s));
        }
        for _ in 0..runs {
            let s = Instant::now();
            txn.query_str(&inlined).unwrap();
            g.push(us(s));
        }
        let (e, g) = (median(e), median(g));
        assert_eq!(p.plans_made(), 1);
        let (a, b, c, d) = (median(a), median(b), median(c), median(d));
        let shown = match params {
            Some(_) => format!(
                "`{sql}` {}",
                if params == Some((0, max)) {
                    "(all keys)"
                } else {
                    "(1%)"
                }
            ),
            None => format!("`{sql}`"),
        };
        println!(
            "| {shown} | {a:.1} | {b:.1} | {c:.1} | {d:.1} | {:.2} | {:.2} | {:.1} | {e:.1} / {g:.1} = {:.2} |",
            a / c,
            a / d,
            b / a,
            e / g
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(20_000_000, |s| s.parse().unwrap());
    let runs: usize = args.get(2).map_or(21, |s| s.parse().unwrap());
    let path = std::env::temp_dir().join(format!("tersedb-sql-phases-{}.tdb", std::process::id()));
    let (writer, max) = write(&path, n);
    // Closed before the tables open the file read-only, as every run of this example did.
    drop(writer);
    let (lo, hi) = (max / 2, max / 2 + max / 100);
    let ctx = tersedb_datafusion::session(SessionConfig::new().with_target_partitions(2));
    let table = std::sync::Arc::new(TerseTable::open(&path, "k", TableOptions::default()).unwrap());
    ctx.register_table("k", table.clone()).unwrap();
    // The same table with folds split across the 2 target partitions.
    let two = tersedb_datafusion::session(SessionConfig::new().with_target_partitions(2));
    let opts = TableOptions {
        split_rows: 1 << 19,
        ..TableOptions::default()
    };
    two.register_table(
        "k",
        std::sync::Arc::new(TerseTable::open(&path, "k", opts).unwrap()),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
    let env = Env::open_read_only(&path, &EnvOptions::default()).unwrap();
    let txn = env.begin_read().unwrap();

    let mut t = Vec::new();
    for _ in 0..runs {
        let s = Instant::now();
        let _ = table.statistics();
        t.push(us(s));
    }
    println!("{n} keys; medians of {runs} runs, us");
    // The engine's fold alone, whole and split in two (what a split push-down gains).
    {
        let db = txn.open_db("k").unwrap();
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut c = Vec::new();
        for _ in 0..runs {
            let s = Instant::now();
            let f = txn.fold_keys(&db, 0, max, true).unwrap();
            a.push(us(s));
            let s = Instant::now();
            let (x, y) = std::thread::scope(|sc| {
                let h1 = sc.spawn(|| txn.fold_keys(&db, 0, max / 2, true).unwrap());
                let h2 = sc.spawn(|| txn.fold_keys(&db, max / 2 + 1, max, true).unwrap());
                (h1.join().unwrap(), h2.join().unwrap())
            });
            b.push(us(s));
            assert_eq!(x.sum + y.sum, f.sum);
            let s = Instant::now();
            let x = txn.fold_keys(&db, 0, max / 2, true).unwrap();
            let y = txn.fold_keys(&db, max / 2 + 1, max, true).unwrap();
            c.push(us(s));
            assert_eq!(x.sum + y.sum, f.sum);
        }
        println!(
            "fold_keys SUM over every key: {:.1} us; its two halves on two threads {:.1} us, one after the other {:.1} us",
            median(a),
            median(b),
            median(c)
        );
    }
    println!("TableProvider::statistics(): {:.1} us", median(t));
    println!("| query | parse + logical plan | optimize | physical plan | execute | total | `ctx.sql` + `collect` | query language |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (q, ctx, note) in [
        (
            format!("SELECT SUM(key) FROM k WHERE key BETWEEN {lo} AND {hi}"),
            &ctx,
            "",
        ),
        (
            format!("SELECT COUNT(*) FROM k WHERE key BETWEEN {lo} AND {hi}"),
            &ctx,
            "",
        ),
        ("SELECT SUM(key) FROM k".to_string(), &ctx, ""),
        (
            "SELECT SUM(key) FROM k".to_string(),
            &two,
            " (fold split in 2)",
        ),
        ("SELECT COUNT(*) FROM k".to_string(), &ctx, ""),
    ] {
        let state = ctx.state();
        let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 5];
        for _ in 0..runs {
            let p = rt.block_on(phases(&state, &q));
            for (c, v) in cols.iter_mut().zip(p) {
                c.push(v);
            }
        }
        let mut whole = Vec::new();
        for _ in 0..runs {
            let s = Instant::now();
            rt.block_on(async { ctx.sql(&q).await?.collect().await })
                .unwrap();
            whole.push(us(s));
        }
        let mut ql = Vec::new();
        for _ in 0..runs {
            let s = Instant::now();
            txn.query_str(&q).unwrap();
            ql.push(us(s));
        }
        let m: Vec<String> = cols
            .into_iter()
            .map(|c| format!("{:.1}", median(c)))
            .collect();
        println!(
            "| `{q}`{note} | {} | {:.1} | {:.1} |",
            m.join(" | "),
            median(whole),
            median(ql)
        );
    }
    prepared(&rt, &ctx, &txn, &path, (lo, hi, max), runs);
    // The blocking front door (`tersedb sql`): a session, the tables and a runtime per call.
    let q = format!("SELECT SUM(key) FROM k WHERE key BETWEEN {lo} AND {hi}");
    let mut t = Vec::new();
    for _ in 0..runs {
        let s = Instant::now();
        tersedb_datafusion::query(&path, &q, &TableOptions::default()).unwrap();
        t.push(us(s));
    }
    println!(
        "`tersedb_datafusion::query` of the SUM over 1%: {:.1} us",
        median(t)
    );
    let _ = std::fs::remove_file(&path);
}
