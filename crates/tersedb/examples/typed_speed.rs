//! What the typed layer costs against the byte API on the same data, in the same run: loading
//! N random u32 keys with u64 values (`Table::put` against
//! `WriteTxn::upsert`), overwriting them all (`put` returns the old value, read in the same descent),
//! and looking every key up (`Table::get` through a page-holding guard against
//! `ReadTxn::get`, which copies the record into a `Vec`). Medians of ROUNDS rounds, in ns per
//! operation; uncompressed (`raw`, `uncompressed()`) and the defaults (`DbConfig::new`: auto keys,
//! compressed records).
//!
//! `cargo run --release -p tersedb --example typed_speed [N] [ROUNDS]`

use std::time::Instant;
use tersedb::{DbConfig, Durability, Env, EnvOptions, KeyType, RecordType, TableDef, ValueType};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut rng = fastrand::Rng::with_seed(7);
    let keys: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
    for auto in [false, true] {
        let mut t_put = Vec::new();
        let mut t_upsert = Vec::new();
        let mut t_reput = Vec::new();
        let mut t_reupsert = Vec::new();
        let mut t_get = Vec::new();
        let mut t_rawget = Vec::new();
        let per = |d: std::time::Duration| d.as_nanos() as f64 / n as f64;
        for _ in 0..rounds {
            let opts = EnvOptions::default().durability(Durability::None);
            let env = Env::in_memory(&opts).unwrap();
            let def = TableDef::<u32, u64>::new("typed");
            let def = if auto { def } else { def.uncompressed() };
            let mut w = env.begin_write().unwrap();
            let t = w.open_table(def).unwrap();
            // The byte database as the table is configured: `new` (auto keys, compressed
            // records) or `raw`.
            let config = if auto {
                DbConfig::new(KeyType::U32, RecordType::Fixed(8))
            } else {
                DbConfig::raw(KeyType::U32, RecordType::Fixed(8))
            }
            .with_value_type(ValueType::U64);
            let db = w.create_db("raw", config).unwrap();
            let s = Instant::now();
            for &k in &keys {
                w.upsert(&db, k, &(k as u64).to_le_bytes()).unwrap();
            }
            t_upsert.push(per(s.elapsed()));
            let s = Instant::now();
            for &k in &keys {
                t.put(&mut w, k, k as u64).unwrap();
            }
            t_put.push(per(s.elapsed()));
            let s = Instant::now();
            for &k in &keys {
                w.upsert(&db, k, &(k as u64 + 1).to_le_bytes()).unwrap();
            }
            t_reupsert.push(per(s.elapsed()));
            let s = Instant::now();
            for &k in &keys {
                t.put(&mut w, k, k as u64 + 1).unwrap();
            }
            t_reput.push(per(s.elapsed()));
            w.commit().unwrap();
            let r = env.begin_read().unwrap();
            let s = Instant::now();
            let mut sum = 0u64;
            for &k in &keys {
                let v = r.get(&db, k).unwrap().unwrap();
                sum += u64::from_le_bytes(v.try_into().unwrap());
            }
            t_rawget.push(per(s.elapsed()));
            let s = Instant::now();
            let mut sum2 = 0u64;
            for &k in &keys {
                sum2 += t.get(&r, k).unwrap().unwrap();
            }
            t_get.push(per(s.elapsed()));
            assert_eq!(sum, sum2);
        }
        println!(
            "{} keys, {}: new keys put {:.0} / upsert {:.0} ns; overwrite put {:.0} / upsert \
             {:.0} ns; get typed {:.0} / bytes {:.0} ns",
            n,
            if auto { "defaults" } else { "uncompressed" },
            median(t_put),
            median(t_upsert),
            median(t_reput),
            median(t_reupsert),
            median(t_get),
            median(t_rawget),
        );
    }
}
