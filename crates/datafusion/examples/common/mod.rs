//! What the timing examples share: the data they query and the median of their runs.

use std::path::Path;
use tersedb::{CodecId, DbConfig, Durability, Env, EnvOptions, KeyType, RecordType};

/// Writes `n` BP128 u32 keys to database `k` of a new file at `path` (each value kept with
/// probability 8/9, seed 42) and returns the writer's environment and the largest key.
pub fn write(path: &Path, n: u64) -> (Env, u64) {
    let _ = std::fs::remove_file(path);
    let env = Env::create(path, &EnvOptions::default().durability(Durability::None)).unwrap();
    let mut w = env.begin_write().unwrap();
    let cfg = DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::Bp128));
    let db = w.create_db("k", cfg).unwrap();
    let mut rng = fastrand::Rng::with_seed(42);
    let (mut k, mut done) = (0u64, 0u64);
    while done < n {
        if rng.u32(..9) != 0 {
            w.append(&db, k as u32, b"").unwrap();
            done += 1;
        }
        k += 1;
    }
    w.commit().unwrap();
    (env, k - 1)
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
