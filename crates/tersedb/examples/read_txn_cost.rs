//! What a read transaction costs on the writer's handle and on a read-only handle beside it
//! (which reads the newest commit from the meta pages and publishes its snapshot in the reader
//! table at each `begin_read`): `begin_read` + one lookup, many times, alternating batches. And
//! what the writer's `begin_write` + `abort` costs with and without a reader slot to scan.
//!
//! `cargo run --release -p tersedb --example read_txn_cost [ROUNDS]`

use std::time::Instant;
use tersedb::{DbConfig, Env, EnvOptions, KeyType, RecordType};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(7);
    let path = std::env::temp_dir().join(format!("tersedb-read-txn-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let opts = EnvOptions::default();
    let w = Env::create(&path, &opts).unwrap();
    let mut t = w.begin_write().unwrap();
    let db = t
        .create_db("d", DbConfig::raw(KeyType::U32, RecordType::None))
        .unwrap();
    for k in 0..100_000u32 {
        t.insert(&db, k * 3, &[]).unwrap();
    }
    t.commit().unwrap();
    let ro = Env::open_read_only(&path, &opts).unwrap();
    const N: u32 = 20_000;
    let run = |env: &Env| {
        let start = Instant::now();
        for i in 0..N {
            let r = env.begin_read().unwrap();
            let db = r.open_db("d").unwrap();
            assert!(r.contains(&db, (i % 100_000) * 3).unwrap());
        }
        start.elapsed().as_nanos() as f64 / N as f64
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(run(&w));
        b.push(run(&ro));
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (ma, mb) = (a[a.len() / 2], b[b.len() / 2]);
    println!(
        "begin_read + open_db + lookup, ns (median of {rounds} batches of {N}): writer's handle \
         {ma:.0}, read-only handle {mb:.0} (+{:.0})",
        mb - ma
    );
    let run_w = |env: &Env| {
        let start = Instant::now();
        for _ in 0..N {
            env.begin_write().unwrap().abort();
        }
        start.elapsed().as_nanos() as f64 / N as f64
    };
    let mut with = Vec::new();
    for _ in 0..rounds {
        with.push(run_w(&w));
    }
    drop(ro);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&path));
    let mut without = Vec::new();
    for _ in 0..rounds {
        without.push(run_w(&w));
    }
    with.sort_by(f64::total_cmp);
    without.sort_by(f64::total_cmp);
    println!(
        "begin_write + abort, ns (median of {rounds} batches of {N}): no reader table {:.0}, \
         one reader slot {:.0}",
        without[without.len() / 2],
        with[with.len() / 2]
    );
    drop(w);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(tersedb::storage::readers::dir_of(&path));
}
