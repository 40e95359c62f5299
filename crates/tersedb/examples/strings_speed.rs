//! Speed probe of the byte-string key schemes, for tuning (the full benchmark is `tersedb bench
//! strings`): N keys shuffled, inserted into an in-memory environment in one transaction, then
//! looked up in another order and scanned; per scheme: Mops/s and key bytes per key.
//! Usage: `cargo run --release -p tersedb --example strings_speed [N] [PAGE] [DATA]` with DATA
//! `random62` (32 random alphanumerics) or `prefix` (long shared prefixes, 8 varying digits).

use std::time::Instant;
use tersedb::{DbConfig, Env, EnvOptions, KeyScheme, KeyType, RecordType};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(200_000, |s| s.parse().expect("N"));
    let page: usize = args.next().map_or(4096, |s| s.parse().expect("PAGE"));
    let data = args.next().unwrap_or_else(|| "random62".into());
    let mut rng = fastrand::Rng::with_seed(7);
    let alnum: Vec<u8> = (b'0'..=b'9')
        .chain(b'a'..=b'z')
        .chain(b'A'..=b'Z')
        .collect();
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|_| match data.as_str() {
            "prefix" => format!(
                "1995-03-{:02}|customer#{:06}|{:08}",
                rng.u32(1..29),
                rng.u32(0..2000),
                rng.u32(..100_000_000)
            )
            .into_bytes(),
            _ => (0..32).map(|_| alnum[rng.usize(0..62)]).collect(),
        })
        .collect();
    keys.sort();
    keys.dedup();
    rng.shuffle(&mut keys);
    let mut probes = keys.clone();
    rng.shuffle(&mut probes);
    println!("{} keys, {page}-byte pages, {data}", keys.len());
    println!("scheme       insert   lookup     scan  key B/key  height");
    let only = std::env::var("SCHEMES").ok();
    for scheme in KeyScheme::ALL {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x == scheme.name()))
        {
            continue;
        }
        let env = Env::in_memory(&EnvOptions::default().page_size(page)).expect("env");
        let mut w = env.begin_write().expect("write");
        let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::None).with_key_scheme(scheme);
        let db = w.create_db("k", cfg).expect("db");
        let t = Instant::now();
        for k in &keys {
            w.insert(&db, k, &[]).expect("insert");
        }
        let ins = t.elapsed().as_secs_f64();
        w.commit().expect("commit");
        let r = env.begin_read().expect("read");
        let t = Instant::now();
        let mut hits = 0;
        for k in &probes {
            hits += r.contains(&db, k).expect("get") as usize;
        }
        let look = t.elapsed().as_secs_f64();
        assert_eq!(hits, keys.len());
        let t = Instant::now();
        let scanned = r.iter(&db).expect("iter").count();
        let scan = t.elapsed().as_secs_f64();
        assert_eq!(scanned, keys.len());
        let s = r.stats(&db).expect("stats");
        let m = keys.len() as f64 / 1e6;
        println!(
            "{:<10} {:>8.2} {:>8.2} {:>8.2} {:>10.2} {:>7}",
            scheme.name(),
            m / ins,
            m / look,
            m / scan,
            s.key_bytes as f64 / s.key_count as f64,
            s.height
        );
    }
}
