//! GROUP BY of time buckets: one `GROUP BY key / W` query against the same buckets asked as
//! separate range queries, in tersedb (folded per bucket) and in SQLite (`INTEGER PRIMARY KEY`
//! table, its own GROUP BY and prepared range queries), on the same data: a time series of
//! `--keys` ascending u32 timestamps (gaps of 1 or 2) with a u32 record each.
//!
//! `cargo run --release -p tersedb-bench-peers --example group_by -- [KEYS] [BUCKETS] [RUNS]`
//! (default 20,000,000 keys, 1,000 buckets, 5 runs; medians, every answer cross-checked).

use rusqlite::{params, Connection};
use std::time::Instant;
use tersedb::{
    CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType, Value, ValueType,
};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut t = Vec::new();
    let mut out = None;
    for _ in 0..runs {
        let s = Instant::now();
        out = Some(f());
        t.push(s.elapsed().as_secs_f64());
    }
    (median(t), out.unwrap())
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let n = *args.first().unwrap_or(&20_000_000);
    let buckets = *args.get(1).unwrap_or(&1000);
    let runs = *args.get(2).unwrap_or(&5) as usize;
    let mut rng = fastrand::Rng::with_seed(7);
    let mut keys = Vec::with_capacity(n as usize);
    let mut k = 1_700_000_000u32 - 3 * n as u32;
    for _ in 0..n {
        keys.push(k);
        k += rng.u32(1..=2);
    }
    let recs: Vec<u32> = (0..n).map(|_| rng.u32(0..1000)).collect();
    let (lo, hi) = (keys[0] as u64, *keys.last().unwrap() as u64);
    let w = (hi - lo).div_ceil(buckets).max(1);
    // Buckets aligned to multiples of w: b = key / w.
    let (b0, b1) = (lo / w, hi / w);
    println!(
        "{n} keys {lo}..={hi}, {} buckets of {w} keys (GROUP BY key / {w}), {runs} runs, medians",
        b1 - b0 + 1
    );
    let dir = std::env::temp_dir().join(format!("tersedb-groupby-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Raw keys and records, BP128 keys with raw records, and the defaults (`DbConfig::new`: a
    // codec chosen per block for the keys, records compressed per chunk).
    for (name, codec) in [
        ("none", Some(None)),
        ("bp128", Some(Some(CodecId::Bp128))),
        ("auto", None),
    ] {
        let path = dir.join(format!("{name}.tdb"));
        let env = Env::open_or_create(&path, &EnvOptions::default().durability(Durability::None))
            .unwrap();
        let t = Instant::now();
        let mut wtx = env.begin_write().unwrap();
        let db = wtx
            .create_db(
                "ts",
                match codec {
                    Some(c) => DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_codec(c),
                    None => DbConfig::new(KeyType::U32, RecordType::Fixed(4)),
                }
                .with_value_type(ValueType::U32),
            )
            .unwrap();
        for (k, r) in keys.iter().zip(&recs) {
            wtx.append(&db, *k, &r.to_le_bytes()).unwrap();
        }
        wtx.commit().unwrap();
        eprintln!(
            "tersedb {name}: loaded in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let r = env.begin_read().unwrap();
        for (label, aggs) in [
            ("COUNT(*), SUM(key)", "COUNT(*), SUM(key)"),
            ("AVG(record)", "AVG(record)"),
        ] {
            let g = format!("SELECT key / {w}, {aggs} FROM ts GROUP BY key / {w}");
            let (tg, res) = time(runs, || r.query_str(&g).unwrap());
            let (tr, sep) = time(runs, || {
                (b0..=b1)
                    .map(|b| {
                        r.query_str(&format!(
                            "SELECT {aggs} FROM ts WHERE key BETWEEN {} AND {}",
                            b * w,
                            b * w + w - 1
                        ))
                        .unwrap()
                    })
                    .filter(|q| q.values[0] != Value::Int(0) && !q.values[0].is_null())
                    .collect::<Vec<_>>()
            });
            assert_eq!(res.rows.len(), sep.len());
            for (g, s) in res.rows.iter().zip(&sep) {
                assert_eq!(&g[1..], &s.values[..], "bucket {:?}", g[0]);
            }
            println!(
                "tersedb {name:<5} {label:<19} GROUP BY {:>9.2} ms   {} range queries {:>9.2} ms   ratio {:.2}",
                tg * 1e3,
                sep.len(),
                tr * 1e3,
                tr / tg
            );
        }
    }

    let path = dir.join("sqlite.db");
    let mut c = Connection::open(&path).unwrap();
    c.execute_batch("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER NOT NULL);").unwrap();
    let t = Instant::now();
    {
        let tx = c.transaction().unwrap();
        {
            let mut ins = tx.prepare("INSERT INTO t VALUES (?1, ?2)").unwrap();
            for (k, r) in keys.iter().zip(&recs) {
                ins.execute(params![*k, *r]).unwrap();
            }
        }
        tx.commit().unwrap();
    }
    eprintln!("sqlite: loaded in {:.1} s", t.elapsed().as_secs_f64());
    for (label, aggs) in [
        ("COUNT(*), SUM(key)", "COUNT(*), SUM(k)"),
        ("AVG(record)", "AVG(v)"),
    ] {
        let g = format!("SELECT k / {w}, {aggs} FROM t GROUP BY k / {w} ORDER BY 1");
        let ncols = aggs.split(',').count();
        let (tg, rows) = time(runs, || {
            let mut st = c.prepare_cached(&g).unwrap();
            st.query_map([], |row| read_g(row, ncols))
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>()
        });
        let q = format!("SELECT {aggs} FROM t WHERE k BETWEEN ?1 AND ?2");
        let (tr, sep) = time(runs, || {
            let mut st = c.prepare_cached(&q).unwrap();
            (b0..=b1)
                .filter_map(|b| {
                    let v: Vec<f64> = st
                        .query_row(
                            params![(b * w) as i64, (b * w + w - 1) as i64],
                            read_all(ncols),
                        )
                        .unwrap();
                    (v[0] != 0.0).then_some(v)
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(rows.len(), sep.len());
        println!(
            "sqlite        {label:<19} GROUP BY {:>9.2} ms   {} range queries {:>9.2} ms   ratio {:.2}",
            tg * 1e3,
            sep.len(),
            tr * 1e3,
            tr / tg
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn read_g(row: &rusqlite::Row<'_>, ncols: usize) -> rusqlite::Result<Vec<f64>> {
    (0..ncols).map(|i| row.get::<_, f64>(i + 1)).collect()
}

fn read_all(ncols: usize) -> impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<Vec<f64>> {
    move |row| {
        (0..ncols)
            .map(|i| row.get::<_, Option<f64>>(i).map(|v| v.unwrap_or(0.0)))
            .collect()
    }
}
