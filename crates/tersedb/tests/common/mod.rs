//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tersedb::storage::MemStorage;
use tersedb::{Db, Env, EnvOptions};

/// The storage a test environment lives in, so it can be reopened.
pub type Store = MemStorage;

/// A fresh environment on the real pager over an in-memory file with this page size.
pub fn mem_env(page_size: usize) -> (Env, Store) {
    let store = MemStorage::new();
    let opts = EnvOptions::default().page_size(page_size);
    let env = Env::create_with_storage(Box::new(store.clone()), &opts).unwrap();
    (env, store)
}

/// Reopens the environment from its storage (committed state only): a real reopen that reads
/// the meta pages and the free list back from the bytes.
pub fn reopen_mem(store: &Store, page_size: usize) -> Env {
    let opts = EnvOptions::default().page_size(page_size);
    Env::open_with_storage(Box::new(store.clone()), &opts, false).unwrap()
}

/// The random seed of a test: `SEED` from the environment (to replay a failure), else a fresh
/// one; printed so a failure can be replayed.
pub fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={s}");
    s
}

/// [`seed`] with a fixed default (tests whose size bounds were set on one seed's data).
pub fn seed_or(default: u64) -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    println!("SEED={s}");
    s
}

/// The length of the file at `p`.
pub fn file_len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// The keys of a u32 database, in key order.
pub fn u32_keys(env: &Env, name: &str) -> Vec<u32> {
    let r = env.begin_read().unwrap();
    let db = r.open_db(name).unwrap();
    r.iter(&db)
        .unwrap()
        .map(|e| e.unwrap().0.as_key().as_u32().unwrap())
        .collect()
}

/// `check` finds nothing wrong with the environment.
pub fn assert_clean(env: &Env) {
    let report = env.check().unwrap();
    assert!(report.is_clean(), "{report}");
}

/// Every entry of an integer-key database, in key order.
pub fn contents(env: &Env, name: &str) -> Vec<(u64, Vec<u8>)> {
    let r = env.begin_read().unwrap();
    let db = r.open_db(name).unwrap();
    r.iter(&db)
        .unwrap()
        .map(|x| {
            let (k, v) = x.unwrap();
            (k.as_key().as_u64().unwrap(), v)
        })
        .collect()
}

/// Clustered u32 keys (runs of small gaps separated by large jumps), as ClusterData.
pub fn clustered(n: usize, rng: &mut fastrand::Rng) -> Vec<u32> {
    let mut v = Vec::with_capacity(n);
    let mut k: u32 = 1000;
    while v.len() < n {
        let run = rng.usize(50..2000);
        for _ in 0..run.min(n - v.len()) {
            k += rng.u32(1..8);
            v.push(k);
        }
        k += rng.u32(1000..200_000);
    }
    v
}

/// A scratch directory in the temp dir, removed with everything in it when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!(
            "tersedb-{tag}-{}-{:x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every leaf of `db` with its integer keys, in key order (the forged-page tests pick a leaf to
/// damage and know which keys it held).
pub fn leaves_with_keys(env: &Env, db: &Db) -> Vec<(u64, Vec<u64>)> {
    let r = env.begin_read().unwrap();
    let mut leaves = Vec::new();
    let mut blocks = tersedb::scan::Blocks::default();
    let mut buf = tersedb::scan::KeyBuffer::default();
    r.scan_leaves(db, &[(0, u64::MAX)], false, &mut |leaf, _| {
        leaf.blocks(&mut blocks, 0, u64::MAX)?;
        let mut ks = Vec::new();
        for b in blocks.iter() {
            let bk = leaf.keys(&b, &mut buf)?;
            ks.extend((0..bk.len()).filter_map(|i| bk.get(i)));
        }
        leaves.push((leaf.page_id(), ks));
        Ok(true)
    })
    .unwrap();
    leaves
}
