//! In-tree SUM speed per codec: `cargo run --release -p tersedb --example fold_speed [N] [REPS]`.
//! Loads N dense-ish ascending u32 keys (gaps of 1 or 2) into an in-memory environment for no
//! compression and each codec (timing the load), then times `fold_keys` over everything (median
//! of REPS).

use std::time::Instant;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(2_000_000);
    let reps = args.get(1).copied().unwrap_or(21);
    let only = std::env::var("CODECS").ok();
    let mut rng = fastrand::Rng::with_seed(1);
    let mut k = 0u32;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            k += rng.u32(1..3);
            k
        })
        .collect();
    let want: u128 = keys.iter().map(|&k| k as u128).sum();
    let codecs = std::iter::once(None).chain(CodecId::ALL.map(Some));
    for codec in codecs {
        let name = codec.map_or("none", |c| c.name());
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|x| x == name))
        {
            continue;
        }
        let env = Env::in_memory(&EnvOptions::default().durability(Durability::None)).unwrap();
        let t = Instant::now();
        let mut w = env.begin_write().unwrap();
        let db = w
            .create_db(
                "k",
                DbConfig::raw(KeyType::U32, RecordType::None).with_codec(codec),
            )
            .unwrap();
        for &k in &keys {
            w.append(&db, k, &[]).unwrap();
        }
        w.commit().unwrap();
        let load = t.elapsed().as_secs_f64();
        let r = env.begin_read().unwrap();
        let mut times = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            let f = r.fold_keys(&db, 0, u64::MAX, true).unwrap();
            times.push(t.elapsed().as_secs_f64());
            assert_eq!(f.sum, want);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let med = times[times.len() / 2];
        println!(
            "{name:<12} SUM of {n} keys: {:.3} ms ({:.2} G keys/s); ascending load {:.3} s",
            med * 1e3,
            n as f64 / med / 1e9,
            load
        );
    }
}
