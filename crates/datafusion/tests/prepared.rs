//! Prepared statements (`tersedb_datafusion::prepare`): an execution gives what `ctx.sql` gives
//! with the values inlined and what a BTreeMap model gives, on the newest snapshot (commits
//! between executions are seen, a whole-table COUNT(*) included); when the parameters only
//! bound pushed-down key predicates the plan is made once (the table is asked for a scan once,
//! however many executions), else each execution plans with its values. Wrong parameter
//! counts and types are refused with errors naming them.

mod common;
use async_trait::async_trait;
use common::runner;
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, SchemaRef, UInt32Type, UInt64Type,
};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Result, ScalarValue, Statistics};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType, ValueType};
use tersedb_datafusion::{prepare, TableOptions, TerseTable};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tersedb-df-prep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A table that counts the scans it is asked for (each is one physical planning of a query
/// reading it).
#[derive(Debug)]
struct Counting {
    inner: TerseTable,
    scans: AtomicUsize,
}

#[async_trait]
impl TableProvider for Counting {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }
    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.scans.fetch_add(1, Ordering::Relaxed);
        self.inner.scan(state, projection, filters, limit).await
    }
}

/// The model: key -> record (u64).
type Model = BTreeMap<u32, u64>;

fn create(path: &Path, m: &Model) {
    let env = Env::create(path, &EnvOptions::default()).unwrap();
    let mut w = env.begin_write().unwrap();
    let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(8)).with_value_type(ValueType::U64);
    let db = w.create_db("ev", cfg).unwrap();
    for (k, v) in m {
        w.append(&db, *k, &v.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
}

/// Inserts `add` and erases `del` in one commit, in the file and in the model.
fn commit(path: &Path, m: &mut Model, add: &[(u32, u64)], del: &[u32]) {
    let env = Env::open(path, &EnvOptions::default()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.open_db("ev").unwrap();
    for (k, v) in add {
        if m.insert(*k, *v).is_some() {
            w.erase(&db, *k).unwrap();
        }
        w.insert(&db, *k, &v.to_le_bytes()).unwrap();
    }
    for k in del {
        if m.remove(k).is_some() {
            w.erase(&db, *k).unwrap();
        }
    }
    w.commit().unwrap();
}

fn context(path: &Path) -> (SessionContext, Arc<Counting>) {
    let ctx = tersedb_datafusion::session(SessionConfig::new().with_target_partitions(2));
    let t = Arc::new(Counting {
        inner: TerseTable::open(path, "ev", TableOptions::default()).unwrap(),
        scans: AtomicUsize::new(0),
    });
    ctx.register_table("ev", t.clone()).unwrap();
    (ctx, t)
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().build().unwrap())
}

/// A value of the result as a comparable string (floats to 6 significant digits).
fn cell(a: &dyn Array, i: usize) -> String {
    if a.is_null(i) {
        return "NULL".into();
    }
    match a.data_type() {
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Float64 => format!("{:.6e}", a.as_primitive::<Float64Type>().value(i)),
        t => panic!("unexpected column type {t}"),
    }
}

fn table(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            out.push(b.columns().iter().map(|c| cell(c.as_ref(), i)).collect());
        }
    }
    out
}

fn sql(ctx: &SessionContext, q: &str) -> Vec<Vec<String>> {
    table(
        &runtime()
            .block_on(async { ctx.sql(q).await?.collect().await })
            .unwrap(),
    )
}

fn run(p: &tersedb_datafusion::Prepared, params: &[ScalarValue]) -> Vec<Vec<String>> {
    table(&runtime().block_on(p.execute(params)).unwrap())
}

fn prep(ctx: &SessionContext, q: &str) -> tersedb_datafusion::Prepared {
    runtime().block_on(prepare(ctx, q)).unwrap()
}

/// `q` with `$1`, `$2`, ... replaced by the values (the last first, so `$1` is not taken
/// for the start of `$10`).
fn inline(q: &str, vals: &[u32]) -> String {
    let mut s = q.to_string();
    for (i, v) in vals.iter().enumerate().rev() {
        s = s.replace(&format!("${}", i + 1), &v.to_string());
    }
    s
}

fn u32s(v: &[u32]) -> Vec<ScalarValue> {
    v.iter().map(|x| ScalarValue::UInt32(Some(*x))).collect()
}

/// The model's answer to the aggregate query of [`AGGS`] over keys in `[lo, hi]`.
fn model_aggs(m: &Model, lo: u32, hi: u32) -> Vec<Vec<String>> {
    let sel: Vec<(u32, u64)> = if lo <= hi {
        m.range(lo..=hi).map(|(k, v)| (*k, *v)).collect()
    } else {
        Vec::new()
    };
    let n = sel.len();
    let ks: u64 = sel.iter().map(|(k, _)| *k as u64).sum();
    let rs: u64 = sel.iter().map(|(_, v)| *v).sum();
    let opt = |x: Option<String>| x.unwrap_or_else(|| "NULL".into());
    vec![vec![
        ks.to_string(),
        n.to_string(),
        opt(sel.first().map(|x| x.0.to_string())),
        opt(sel.last().map(|x| x.0.to_string())),
        opt((n > 0).then(|| format!("{:.6e}", ks as f64 / n as f64))),
        rs.to_string(),
        opt(sel.iter().map(|x| x.1).max().map(|x| x.to_string())),
    ]]
    .into_iter()
    .map(|mut r| {
        if n == 0 {
            // SUM of nothing is NULL.
            r[0] = "NULL".into();
            r[5] = "NULL".into();
        }
        r
    })
    .collect()
}

const AGGS: &str = "SELECT SUM(key), COUNT(*), MIN(key), MAX(key), AVG(key), SUM(record), \
                    MAX(record) FROM ev WHERE key BETWEEN $1 AND $2";
const COUNT: &str = "SELECT COUNT(*) FROM ev WHERE key BETWEEN $1 AND $2";
const SUM: &str = "SELECT SUM(key) FROM ev WHERE key >= $1 AND key <= $2";
const ROWS: &str = "SELECT key, record FROM ev WHERE key >= $1 AND key < $2 ORDER BY key";

fn model_rows(m: &Model, lo: u32, hi: u32) -> Vec<Vec<String>> {
    if lo >= hi {
        return Vec::new();
    }
    m.range(lo..hi)
        .map(|(k, v)| vec![k.to_string(), v.to_string()])
        .collect()
}

#[test]
fn plans_once_and_reads_the_newest_snapshot() {
    let d = temp("once");
    let f = d.join("ev.tdb");
    let mut m: Model = (0..5000u32).map(|k| (k * 3, k as u64 * 7)).collect();
    create(&f, &m);
    let (ctx, t) = context(&f);
    let aggs = prep(&ctx, AGGS);
    let rows = prep(&ctx, ROWS);
    let all = prep(&ctx, "SELECT COUNT(*), MIN(key), MAX(key) FROM ev");
    let one = prep(&ctx, "SELECT COUNT(*) FROM ev WHERE key = $1");
    for p in [&aggs, &rows, &all, &one] {
        assert!(p.reuses_plan());
    }
    assert_eq!(t.scans.load(Ordering::Relaxed), 4);
    assert_eq!(
        aggs.parameter_types(),
        [Some(DataType::UInt32), Some(DataType::UInt32)]
    );
    // EXPLAIN: the aggregate in the tree, its ranges bound at execution.
    let e = aggs.explain(None).unwrap().unwrap();
    assert!(
        e.contains("TerseAggregateExec") && e.contains("key_ranges=at execution"),
        "{e}"
    );
    assert!(!e.contains("AggregateExec: mode"), "{e}");
    let e = aggs.explain(Some(&u32s(&[10, 20]))).unwrap().unwrap();
    assert!(e.contains("key_ranges=[10, 20]"), "{e}");
    // Nothing answered from statistics at planning; the projection renaming COUNT(*)'s
    // column is folded into the aggregate.
    let e = all.explain(None).unwrap().unwrap();
    assert!(e.starts_with("TerseAggregateExec"), "{e}");
    for round in 0..3u32 {
        for (lo, hi) in [(0, 100), (150, 14999), (7, 7), (20, 10), (14990, u32::MAX)] {
            let v = u32s(&[lo, hi]);
            assert_eq!(
                run(&aggs, &v),
                model_aggs(&m, lo, hi),
                "round {round} [{lo}, {hi}]"
            );
            assert_eq!(run(&aggs, &v), sql(&ctx, &inline(AGGS, &[lo, hi])));
            assert_eq!(run(&rows, &v), model_rows(&m, lo, hi));
            let n = m.contains_key(&lo) as i64;
            assert_eq!(run(&one, &v[..1]), [[n.to_string()]]);
        }
        let want = vec![vec![
            m.len().to_string(),
            m.keys().next().unwrap().to_string(),
            m.keys().last().unwrap().to_string(),
        ]];
        assert_eq!(run(&all, &[]), want, "round {round}");
        // A commit between executions: inserts below and above the old keys, erases some.
        let add: Vec<(u32, u64)> = (0..50).map(|i| (20_000 + round * 100 + i, 1)).collect();
        let del: Vec<u32> = (0..100).map(|i| i * 3 + round * 300).collect();
        commit(&f, &mut m, &add, &del);
        commit(&f, &mut m, &[(1, 5)], &[]);
    }
    // Every execution above reused the plans.
    assert_eq!(
        t.scans.load(Ordering::Relaxed),
        4 + 15 /* the inlined ctx.sql runs */
    );
    for p in [&aggs, &rows, &all, &one] {
        assert_eq!(p.plans_made(), 1);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn parameters_elsewhere_plan_each_execution() {
    let d = temp("fallback");
    let f = d.join("ev.tdb");
    let mut m: Model = (0..300u32).map(|k| (k * 2, k as u64)).collect();
    create(&f, &m);
    let (ctx, t) = context(&f);
    for q in [
        "SELECT key + $1 FROM ev WHERE key < $2 ORDER BY key",
        "SELECT COUNT(*) FROM ev WHERE record > $1 AND key < $2",
        "SELECT key FROM ev WHERE key > $2 ORDER BY key LIMIT $1",
        "SELECT SUM(key) FROM ev WHERE key + 0 BETWEEN $1 AND $2",
    ] {
        let before = t.scans.load(Ordering::Relaxed);
        let p = prep(&ctx, q);
        assert!(!p.reuses_plan(), "{q}");
        assert!(p.explain(None).unwrap().is_none());
        for (a, b) in [(3, 10), (5, 100)] {
            let v = u32s(&[a, b]);
            assert_eq!(run(&p, &v), sql(&ctx, &inline(q, &[a, b])), "{q} {a} {b}");
        }
        commit(&f, &mut m, &[(1, 1000)], &[4]);
        let v = u32s(&[1, 10]);
        assert_eq!(run(&p, &v), sql(&ctx, &inline(q, &[1, 10])), "{q}");
        assert_eq!(p.plans_made(), 3);
        // The attempt at a reusable plan asked for a scan before the planner refused the
        // parameter; then each execution and each inlined query planned once.
        assert_eq!(t.scans.load(Ordering::Relaxed), before + 1 + 6);
        commit(&f, &mut m, &[(4, 4)], &[1]);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn wrong_parameters_are_refused() {
    let d = temp("errors");
    let f = d.join("ev.tdb");
    create(&f, &(0..100u32).map(|k| (k, 1)).collect());
    let (ctx, _) = context(&f);
    let p = prep(&ctx, COUNT);
    let err = |v: &[ScalarValue]| runtime().block_on(p.execute(v)).unwrap_err().to_string();
    let e = err(&u32s(&[1]));
    assert!(
        e.contains("the statement has 2 parameters, 1 value given"),
        "{e}"
    );
    let e = err(&u32s(&[1, 2, 3]));
    assert!(e.contains("2 parameters, 3 values"), "{e}");
    let e = err(&[ScalarValue::from("a"), ScalarValue::from(2u32)]);
    assert!(
        e.contains("parameter $1 is UInt32") && e.contains("Utf8"),
        "{e}"
    );
    let e = err(&[ScalarValue::from(1u32), ScalarValue::Int64(Some(-1))]);
    assert!(
        e.contains("parameter $2 is UInt32") && e.contains("-1"),
        "{e}"
    );
    let e = err(&[ScalarValue::from(1u32), ScalarValue::Float64(Some(2.0))]);
    assert!(e.contains("parameter $2 is UInt32"), "{e}");
    // Integers the type holds, and NULLs (which select nothing), are taken.
    let v = [ScalarValue::Int64(Some(10)), ScalarValue::UInt64(Some(19))];
    assert_eq!(run(&p, &v), [["10"]]);
    assert_eq!(
        run(&p, &[ScalarValue::Null, ScalarValue::from(5u32)]),
        [["0"]]
    );
    // Named parameters and statements that are not queries.
    let bad = |q: &str| {
        runtime()
            .block_on(prepare(&ctx, q))
            .unwrap_err()
            .to_string()
    };
    let e = bad("SELECT COUNT(*) FROM ev WHERE key = $lo");
    assert!(e.contains("positional"), "{e}");
    let e = bad("CREATE TABLE x AS SELECT 1");
    assert!(e.contains("only a query can be prepared"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn directory_with_a_file_parameter() {
    let d = temp("dir");
    let dir = d.join("parts");
    std::fs::create_dir_all(&dir).unwrap();
    let a: Model = (0..400u32).map(|k| (k * 5, 1)).collect();
    let b: Model = (0..400u32).map(|k| (k * 5 + 1, 2)).collect();
    create(&dir.join("a.tdb"), &a);
    create(&dir.join("b.tdb"), &b);
    let ctx = tersedb_datafusion::session(SessionConfig::new().with_target_partitions(2));
    tersedb_datafusion::register_all(&ctx, &dir, &TableOptions::default()).unwrap();
    let q =
        "SELECT COUNT(*), SUM(key), SUM(record) FROM ev WHERE key BETWEEN $1 AND $2 AND file = $3";
    let p = prep(&ctx, q);
    assert!(p.reuses_plan());
    for (lo, hi, file) in [
        (0, 100, "a"),
        (0, 100, "b"),
        (50, 1000, "c"),
        (7, 1999, "b"),
    ] {
        let v = vec![
            ScalarValue::from(lo),
            ScalarValue::from(hi),
            ScalarValue::from(file),
        ];
        let inl = format!("{} '{file}'", inline(q, &[lo, hi]).trim_end_matches("$3"));
        assert_eq!(run(&p, &v), sql(&ctx, &inl), "{lo} {hi} {file}");
    }
    let e = p
        .explain(Some(&[
            ScalarValue::from(0u32),
            ScalarValue::from(9u32),
            ScalarValue::from("b"),
        ]))
        .unwrap()
        .unwrap();
    assert!(e.contains("files=1/2"), "{e}");
    // Rows, not aggregates: the scan's partitions past the selected file's are empty, so
    // the file that is selected must be read whichever partition it lands in.
    let rows = "SELECT key, record FROM ev WHERE file = $1 AND key < $2 ORDER BY key";
    let p = prep(&ctx, rows);
    assert!(p.reuses_plan());
    for (file, hi) in [("a", 40u32), ("b", 40), ("b", 0), ("c", 40)] {
        let v = vec![ScalarValue::from(file), ScalarValue::from(hi)];
        let inl =
            format!("SELECT key, record FROM ev WHERE file = '{file}' AND key < {hi} ORDER BY key");
        let got = run(&p, &v);
        assert_eq!(got, sql(&ctx, &inl), "{file} {hi}");
        let want = match file {
            "a" => 8,
            "b" if hi > 0 => 8,
            _ => 0,
        };
        assert_eq!(got.len(), want, "{file} {hi}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Random data, random ranges and random commits between executions: each prepared execution
/// equals the model and `ctx.sql` with the values inlined, and no execution plans again.
#[test]
fn random_ranges_and_commits() {
    let case = AtomicUsize::new(0);
    let step = (
        0u32..3100,
        0u32..3100,
        prop::collection::vec((0u32..3100, 0u64..1000), 0..20),
        prop::collection::vec(0u32..3100, 0..20),
    );
    let strat = (
        prop::collection::btree_map(0u32..3000, 0u64..1000, 0..800),
        prop::collection::vec(step, 1..6),
    );
    runner(24)
        .run(&strat, |(keys, steps)| {
            let c = case.fetch_add(1, Ordering::Relaxed);
            let d = temp(&format!("prop-{c}"));
            let f = d.join("ev.tdb");
            let mut m = keys;
            create(&f, &m);
            let (ctx, _t) = context(&f);
            let ps: Vec<_> = [AGGS, COUNT, SUM, ROWS]
                .iter()
                .map(|q| prep(&ctx, q))
                .collect();
            for (lo, hi, add, del) in steps {
                let v = u32s(&[lo, hi]);
                let want = model_aggs(&m, lo, hi);
                prop_assert_eq!(run(&ps[0], &v), want.clone());
                prop_assert_eq!(run(&ps[1], &v), vec![vec![want[0][1].clone()]]);
                prop_assert_eq!(run(&ps[2], &v), vec![vec![want[0][0].clone()]]);
                prop_assert_eq!(run(&ps[3], &v), model_rows(&m, lo, hi));
                for (p, q) in ps.iter().zip([AGGS, COUNT, SUM, ROWS]) {
                    prop_assert_eq!(run(p, &v), sql(&ctx, &inline(q, &[lo, hi])));
                }
                commit(&f, &mut m, &add, &del);
            }
            for p in &ps {
                prop_assert_eq!(p.plans_made(), 1);
            }
            let _ = std::fs::remove_dir_all(&d);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn other_shapes_equal_inlined_sql() {
    // Buckets, IN lists, LIMIT, joins and subqueries (nodes with state to reset between
    // executions), folds split across threads: each execution, between commits, equals the
    // query with its values inlined.
    let d = temp("shapes");
    let f = d.join("ev.tdb");
    let mut m: Model = (0..3000u32)
        .map(|k| (k * 2 + k % 3, k as u64 % 17))
        .collect();
    create(&f, &m);
    let (ctx, t) = context(&f);
    let split = tersedb_datafusion::session(SessionConfig::new().with_target_partitions(3));
    let opts = TableOptions {
        split_rows: 1,
        ..TableOptions::default()
    };
    split
        .register_table("ev", Arc::new(TerseTable::open(&f, "ev", opts).unwrap()))
        .unwrap();
    let shapes: [(&str, bool); 8] = [
        ("SELECT key / 100, COUNT(*), SUM(key) FROM ev WHERE key BETWEEN $1 AND $2 GROUP BY key / 100 ORDER BY 1", true),
        ("SELECT COUNT(*), SUM(record) FROM ev WHERE key IN ($1, $2, 4, 6)", true),
        ("SELECT key FROM ev WHERE key > $1 AND key <> $2 ORDER BY key LIMIT 7", true),
        ("SELECT key, record FROM ev WHERE NOT (key < $1 OR key > $2) AND record > 3 ORDER BY key", true),
        ("SELECT COUNT(*) FROM ev a JOIN ev b ON a.key = b.key + 1 WHERE a.key BETWEEN $1 AND $2", true),
        ("SELECT a.key FROM ev a JOIN ev b ON a.key = b.key WHERE b.key < $2 ORDER BY a.key DESC LIMIT 5 OFFSET $1", false),
        ("SELECT COUNT(*) FROM ev WHERE key < $2 AND key > (SELECT MIN(key) FROM ev WHERE key >= $1)", true),
        ("SELECT SUM(key), AVG(record) FROM ev WHERE key >= $1 AND key <= $2", true),
    ];
    for (q, fast) in shapes {
        for c in [&ctx, &split] {
            let p = prep(c, q);
            assert_eq!(p.reuses_plan(), fast, "{q}");
            for (i, (lo, hi)) in [(10, 900), (0, 5000), (3001, 20), (500, 7000)]
                .into_iter()
                .enumerate()
            {
                let v = u32s(&[lo, hi]);
                assert_eq!(run(&p, &v), sql(c, &inline(q, &[lo, hi])), "{q} {lo} {hi}");
                commit(&f, &mut m, &[(lo + 1, i as u64), (hi + 3, 9)], &[lo + 2]);
            }
        }
    }
    // Another provider's table (a MemTable's scan holds its batches): planned each time.
    let mem = datafusion::datasource::MemTable::try_new(
        runtime()
            .block_on(async {
                ctx.sql("SELECT 5 AS x UNION ALL SELECT 9")
                    .await?
                    .collect()
                    .await
            })
            .unwrap()[0]
            .schema(),
        vec![runtime()
            .block_on(async {
                ctx.sql("SELECT 5 AS x UNION ALL SELECT 9")
                    .await?
                    .collect()
                    .await
            })
            .unwrap()],
    )
    .unwrap();
    ctx.register_table("m", Arc::new(mem)).unwrap();
    let q = "SELECT COUNT(*) FROM ev JOIN m ON CAST(ev.key AS BIGINT) = m.x WHERE key < $1";
    let p = prep(&ctx, q);
    assert!(!p.reuses_plan());
    assert_eq!(run(&p, &u32s(&[100])), sql(&ctx, &inline(q, &[100])));
    // A value a pushed-down filter cannot take (a NaN: above every key as Arrow orders
    // floats) plans that one execution with it.
    let p = prep(
        &ctx,
        "SELECT COUNT(*) FROM ev WHERE CAST(key AS DOUBLE) > $1",
    );
    assert!(p.reuses_plan());
    assert_eq!(p.parameter_types(), [Some(DataType::Float64)]);
    assert_eq!(run(&p, &[ScalarValue::Float64(Some(f64::NAN))]), [["0"]]);
    assert_eq!(p.plans_made(), 2);
    let n = m.range(5001..).count();
    assert_eq!(
        run(&p, &[ScalarValue::Float64(Some(5000.5))]),
        [[n.to_string()]]
    );
    assert_eq!(p.plans_made(), 2);
    drop(t);
    let _ = std::fs::remove_dir_all(&d);
}
