//! Times `SELECT SUM(key)` and `SELECT COUNT(*)` through the query executor against the
//! engine's key fold (`ReadTxn::fold_keys`) on ClusterData-like keys, uncompressed and with
//! every codec, and prints the blocks each query decoded.
//!
//! `cargo run --release -p tersedb --example query_speed [keys]` (default 2,000,000).

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions};

fn best(mut f: impl FnMut() -> u64) -> (f64, u64) {
    let mut t = f64::MAX;
    let mut v = 0;
    for _ in 0..7 {
        let s = Instant::now();
        v = f();
        t = t.min(s.elapsed().as_secs_f64());
    }
    (t * 1e3, v)
}

fn main() -> tersedb::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let mut rng = fastrand::Rng::with_seed(1);
    // N keys in [0, 9N/8): clustered runs.
    let mut keys = Vec::with_capacity(n as usize);
    let mut k = 0u64;
    while (keys.len() as u64) < n {
        k += 1 + if rng.u8(0..8) == 0 { rng.u64(0..3) } else { 0 };
        keys.push(k as u32);
    }
    let mut codecs = vec![None];
    codecs.extend(CodecId::ALL.map(Some));
    println!(
        "codec         SUM ms  fold ms  COUNT(10%) ms  SUM(10%) ms  blocks SUM(10%)  COUNT(10%)"
    );
    for c in codecs {
        let env = Env::in_memory(&EnvOptions::default().durability(Durability::None))?;
        let mut w = env.begin_write()?;
        let db = w.create_db("db", DbConfig::u32_set().with_codec(c))?;
        for &k in &keys {
            w.append(&db, k, &[])?;
        }
        w.commit()?;
        let r = env.begin_read()?;
        let (lo, hi) = (keys[keys.len() / 3], keys[keys.len() / 3 + keys.len() / 10]);
        let sum_all = tersedb::Query::parse("SELECT SUM(key) FROM db").unwrap();
        let range = format!("FROM db WHERE key BETWEEN {lo} AND {hi}");
        let count_r = tersedb::Query::parse(&format!("SELECT COUNT(*) {range}")).unwrap();
        let sum_r = tersedb::Query::parse(&format!("SELECT SUM(key) {range}")).unwrap();
        let (t_sum, _) = best(|| r.query(&sum_all).unwrap().values[0].as_int().unwrap() as u64);
        let (t_fold, _) = best(|| r.fold_keys(&db, 0, u64::MAX, true).unwrap().sum as u64);
        let (t_cr, _) = best(|| r.query(&count_r).unwrap().values[0].as_int().unwrap() as u64);
        let (t_sr, _) = best(|| r.query(&sum_r).unwrap().values[0].as_int().unwrap() as u64);
        let bs = r.query(&sum_r)?.stats.blocks_decoded;
        let bc = r.query(&count_r)?.stats.blocks_decoded;
        println!(
            "{:<12} {t_sum:>7.2} {t_fold:>8.2} {t_cr:>14.3} {t_sr:>12.3} {bs:>16} {bc:>11}",
            c.map_or("none", |c| c.name())
        );
    }
    Ok(())
}
