//! Compressed-record reads and writes phase by phase, for instruction counts: `N` time-series
//! entries (u64 µs timestamps with jitter, BP128 keys) of four value kinds (`f`: f64 readings
//! with two decimals, `i`: an i64 random walk, `u`: u64 codes of 7 values alike, `s`: u64 status
//! codes, one nine times in ten), compressed records only; each phase is a
//! function of its own (`p_load_asc`, `p_load_rand`, `p_lookups`, `p_cursor`, `p_sums`,
//! `p_minmax`, `p_groups`), so that `callgrind_annotate --inclusive=yes` gives its count.
//! Usage: `valgrind --tool=callgrind target/release/examples/record_reads [N] [KINDS]` (default
//! 200,000 and `fius`) after `cargo build --release -p tersedb --example record_reads`.

use tersedb::{
    CodecId, Db, DbConfig, Durability, Env, EnvOptions, KeyType, ReadTxn, RecordType, ValueType,
};

#[inline(never)]
fn p_load_asc(env: &Env, name: &str, cfg: DbConfig, rows: &[(u64, [u8; 8])]) -> Db {
    let mut w = env.begin_write().unwrap();
    let db = w.create_db(name, cfg).unwrap();
    for (k, v) in rows {
        w.append(&db, *k, v).unwrap();
    }
    w.commit().unwrap();
    db
}

#[inline(never)]
fn p_load_rand(env: &Env, name: &str, cfg: DbConfig, rows: &[(u64, [u8; 8])]) {
    let mut w = env.begin_write().unwrap();
    let db = w.create_db(name, cfg).unwrap();
    for (j, (k, v)) in rows.iter().enumerate() {
        if j > 0 && j % 50_000 == 0 {
            w.commit().unwrap();
            w = env.begin_write().unwrap();
        }
        w.insert(&db, *k, v).unwrap();
    }
    w.commit().unwrap();
}

#[inline(never)]
fn p_lookups(r: &ReadTxn, db: &Db, order: &[u64]) -> usize {
    let mut found = 0;
    for &k in order {
        found += r.get(db, k).unwrap().map_or(0, |v| v.len());
    }
    found
}

#[inline(never)]
fn p_cursor(r: &ReadTxn, db: &Db) -> u64 {
    let mut h = 0u64;
    for x in r.iter(db).unwrap() {
        let (_, v) = x.unwrap();
        h = h
            .wrapping_mul(31)
            .wrapping_add(u64::from_le_bytes(v.try_into().unwrap()));
    }
    h
}

#[inline(never)]
fn p_sums(r: &ReadTxn, name: &str, ranges: &[(u64, u64)]) -> usize {
    let mut t = 0;
    for &(a, b) in ranges {
        let q = r
            .query_str(&format!(
                "SELECT SUM(record), COUNT(*) FROM {name} WHERE key BETWEEN {a} AND {b}"
            ))
            .unwrap();
        t += q.to_csv().len();
    }
    t
}

#[inline(never)]
fn p_minmax(r: &ReadTxn, name: &str, ranges: &[(u64, u64)]) -> usize {
    let mut t = 0;
    for &(a, b) in ranges.iter().take(200) {
        let q = r
            .query_str(&format!(
                "SELECT MIN(record), MAX(record) FROM {name} WHERE key BETWEEN {a} AND {b}"
            ))
            .unwrap();
        t += q.to_csv().len();
    }
    t
}

#[inline(never)]
fn p_groups(r: &ReadTxn, name: &str, width: u64) -> usize {
    let q = r
        .query_str(&format!(
            "SELECT key / {width}, SUM(record) FROM {name} GROUP BY key / {width}"
        ))
        .unwrap();
    q.to_csv().len()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(200_000, |s| s.parse().unwrap());
    let only = std::env::args().nth(2).unwrap_or_else(|| "fius".into());
    let mut rng = fastrand::Rng::with_seed(7);
    let t0 = 1_764_000_000_000_000u64;
    let keys: Vec<u64> = (0..n as u64)
        .map(|i| t0 + i * 1_000_000 + rng.u64(0..1000))
        .collect();
    let mut walk = 0i64;
    let kinds: Vec<(&str, ValueType, Vec<[u8; 8]>)> = vec![
        (
            "f",
            ValueType::F64,
            (0..n)
                .map(|i| {
                    ((2000 + (i as i64 / 60 % 500) + rng.i64(-30..30)) as f64 / 100.0).to_le_bytes()
                })
                .collect(),
        ),
        (
            "i",
            ValueType::I64,
            (0..n)
                .map(|_| {
                    walk += rng.i64(-5..6);
                    walk.to_le_bytes()
                })
                .collect(),
        ),
        (
            "u",
            ValueType::U64,
            (0..n)
                .map(|_| (rng.u64(0..7) * 100).to_le_bytes())
                .collect(),
        ),
        (
            "s",
            ValueType::U64,
            (0..n)
                .map(|_| match rng.u64(0..100) {
                    0..90 => 200u64,
                    90..95 => 404,
                    95..98 => 301,
                    _ => 500,
                })
                .map(u64::to_le_bytes)
                .collect(),
        ),
    ];
    let mut order = keys.clone();
    rng.shuffle(&mut order);
    let ranges: Vec<(u64, u64)> = (0..1000)
        .map(|_| {
            let a = rng.usize(0..n - n / 100);
            (keys[a], keys[a + n / 100])
        })
        .collect();
    let path = std::env::temp_dir().join(format!("probe18-{}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    let env = Env::create(&path, &opts).unwrap();
    let mut out = 0usize;
    for (name, vt, vals) in kinds.iter().filter(|k| only.contains(k.0)) {
        let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(8))
            .with_codec(Some(CodecId::Bp128))
            .with_value_type(*vt)
            .with_compressed_records(true);
        let rows: Vec<(u64, [u8; 8])> = keys.iter().copied().zip(vals.iter().copied()).collect();
        let db = p_load_asc(&env, name, cfg, &rows);
        let mut shuffled = rows.clone();
        rng.shuffle(&mut shuffled);
        p_load_rand(&env, &format!("{name}r"), cfg, &shuffled);
        let r = env.begin_read().unwrap();
        out += p_lookups(&r, &db, &order);
        out += p_cursor(&r, &db) as usize & 1;
        out += p_sums(&r, name, &ranges);
        out += p_minmax(&r, name, &ranges);
        out += p_groups(&r, name, n as u64 * 1000);
    }
    drop(env);
    let _ = std::fs::remove_file(&path);
    println!("{out}");
}
