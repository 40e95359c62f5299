//! The stores `tersedb bench --peers` measures tersedb against, behind one [`Store`] contract,
//! and the workload every store runs ([`run_workload`]).
//!
//! Peers: LMDB (heed), redb, SQLite (rusqlite, `bundled`, a WITHOUT ROWID table), Roaring bitmaps
//! (an in-memory integer set, serialized at close); with feature `rocksdb`, RocksDB with LZ4 and
//! with ZSTD blocks (the system's librocksdb: its C++ build from source takes far too long on 2
//! cores); with feature `fjall`, fjall (a pure-Rust LSM tree). tersedb itself is one more
//! [`Store`] per key codec (and `auto`). The workload:
//!
//! ```text
//! ascending load   the sorted keys in one write transaction (each store's bulk path)
//! random load      the keys in random order, 100,000 per write transaction (a second store)
//! size             bytes on disk of both after a clean close
//! lookups          every key, in random order, after reopening the ascending store
//! absent           1,000,000 keys not in the set
//! scan             every key in order, summed
//! ranges           COUNT, then SUM and COUNT, over 1,000 random ranges of ~1% of the keys
//! ```
//!
//! Every answer is returned in [`Answers`] for the caller to check against the truth and the
//! other stores. The crate lives apart from the engine (as redb keeps `redb-bench`) so the
//! engine's dependency tree stays lean.

// The LMDB binding's environment open and NO_SYNC flag are `unsafe` (the caller promises not to
// open the same file twice in one process): the one FFI boundary here, see lmdb.rs.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod entropy;
#[cfg(feature = "fjall")]
pub mod fjall_store;
pub mod lmdb;
pub mod redb_store;
pub mod roaring_set;
#[cfg(feature = "rocksdb")]
pub mod rocksdb_store;
pub mod sqlite;
pub mod tersedb_store;
pub mod worker;

use std::path::Path;
use std::time::Instant;

/// Errors of a store, as text a user can act on.
pub type Result<T> = std::result::Result<T, String>;

/// Keys per write transaction of the random-order load.
pub const BATCH: usize = 100_000;
/// Absent keys looked up.
pub const ABSENT: usize = 1_000_000;
/// Random ranges of the range queries.
pub const RANGES: usize = 1_000;
/// Fraction of the keys each range covers.
pub const RANGE_FRACTION: f64 = 0.01;

/// Key width every store uses: 4 bytes when every key fits in u32, else 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    U32,
    U64,
}

impl Width {
    pub fn of(keys: &[u64]) -> Width {
        if keys.last().is_some_and(|&k| k > u32::MAX as u64) {
            Width::U64
        } else {
            Width::U32
        }
    }
}

/// One store under test. Keys are u64 here; a [`Width::U32`] store keeps them as u32.
pub trait Store {
    /// How commits reach the disk, printed beside the figures.
    fn durability(&self) -> String;
    /// Loads sorted distinct keys in one write transaction.
    fn load_ascending(&mut self, keys: &[u64]) -> Result<()>;
    /// Loads distinct keys in the given order, `batch` keys per write transaction.
    fn load_batches(&mut self, keys: &[u64], batch: usize) -> Result<()>;
    /// Closes cleanly (everything on disk, files closed); returns the bytes of its files.
    fn close(&mut self) -> Result<u64>;
    /// Reopens after [`Store::close`].
    fn reopen(&mut self) -> Result<()>;
    /// How many of `keys` are present (one point lookup each, in the given order).
    fn count_present(&mut self, keys: &[u64]) -> Result<u64>;
    /// Every key in order: (count, sum).
    fn scan(&mut self) -> Result<(u64, u128)>;
    /// Per inclusive range: (count, sum), or (count, 0) without `sum`.
    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>>;
    /// Extra work after the load that a user would do before measuring size (RocksDB's full
    /// compaction); returns its name when there is some.
    fn settle(&mut self) -> Result<Option<&'static str>> {
        Ok(None)
    }
}

/// Peers this build can run, for help texts and errors.
pub fn peer_names() -> Vec<&'static str> {
    let mut v = vec!["lmdb", "redb", "sqlite", "roaring"];
    if cfg!(feature = "rocksdb") {
        v.extend(["rocksdb-lz4", "rocksdb-zstd"]);
    }
    if cfg!(feature = "fjall") {
        v.push("fjall");
    }
    v
}

/// Peers this crate knows but this build left out, with the cargo feature each needs.
pub fn missing_peers() -> Vec<(&'static str, &'static str)> {
    let mut v = Vec::new();
    if !cfg!(feature = "rocksdb") {
        v.extend([("rocksdb-lz4", "rocksdb"), ("rocksdb-zstd", "rocksdb")]);
    }
    if !cfg!(feature = "fjall") {
        v.push(("fjall", "fjall"));
    }
    v
}

/// The stores a peer name stands for: `rocksdb` is RocksDB with LZ4 and with ZSTD.
pub fn expand_peer(name: &str) -> Vec<&str> {
    match name {
        "rocksdb" => vec!["rocksdb-lz4", "rocksdb-zstd"],
        n => vec![n],
    }
}

/// Opens a fresh store `name` (`tersedb-<codec>` or a peer name) in the empty directory `dir`.
pub fn create(name: &str, dir: &Path, width: Width) -> Result<Box<dyn Store>> {
    if let Some(codec) = name.strip_prefix("tersedb-") {
        return Ok(Box::new(tersedb_store::TerseStore::create(
            dir, width, codec,
        )?));
    }
    Ok(match name {
        "lmdb" => Box::new(lmdb::Lmdb::create(dir, width)?),
        "redb" => Box::new(redb_store::Redb::create(dir, width)?),
        "sqlite" => Box::new(sqlite::Sqlite::create(dir, width)?),
        "roaring" => Box::new(roaring_set::Roaring::create(dir, width)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb-lz4" => Box::new(rocksdb_store::Rocks::create(
            dir,
            width,
            rocksdb_store::Compression::Lz4,
        )?),
        #[cfg(feature = "rocksdb")]
        "rocksdb-zstd" => Box::new(rocksdb_store::Rocks::create(
            dir,
            width,
            rocksdb_store::Compression::Zstd,
        )?),
        #[cfg(feature = "fjall")]
        "fjall" => Box::new(fjall_store::Fjall::create(dir, width)?),
        n => {
            if let Some((_, feature)) = missing_peers().into_iter().find(|(p, _)| *p == n) {
                return Err(format!(
                    "{n}: this build has no {n} (rebuild with the `{feature}` feature)"
                ));
            }
            return Err(format!(
                "unknown store {n:?} (tersedb-<codec>, {})",
                peer_names().join(", ")
            ));
        }
    })
}

/// The inputs every store gets, derived deterministically from the keys and a seed, so that
/// separate processes build the same plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Sorted, distinct.
    pub keys: Vec<u64>,
    /// The keys in random order: the random load's order.
    pub insert_order: Vec<u64>,
    /// The keys in another random order: the lookups.
    pub lookups: Vec<u64>,
    /// Keys not in the set.
    pub absent: Vec<u64>,
    /// Inclusive ranges over ~1% of the keys each.
    pub ranges: Vec<(u64, u64)>,
}

impl Plan {
    pub fn new(keys: Vec<u64>, seed: u64) -> Plan {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x7065_6572);
        let mut insert_order = keys.clone();
        rng.shuffle(&mut insert_order);
        let mut lookups = keys.clone();
        rng.shuffle(&mut lookups);
        // Absent keys: drawn below twice the largest key (within the key width), members
        // rejected; a dense set has no holes, so the draw covers [max+1, 2 max+2) as well.
        let top = keys.last().copied().unwrap_or(0);
        let limit = match Width::of(&keys) {
            Width::U32 => (2 * top + 2).min(1 << 32),
            Width::U64 => top.saturating_mul(2).saturating_add(2),
        };
        let room = limit - keys.len() as u64;
        let want = (ABSENT as u64).min(room) as usize;
        let mut absent = Vec::with_capacity(want);
        while absent.len() < want {
            let k = rng.u64(..limit);
            if keys.binary_search(&k).is_err() {
                absent.push(k);
            }
        }
        let len =
            ((keys.len() as f64 * RANGE_FRACTION).round() as usize).clamp(1, keys.len().max(1));
        // No keys, no ranges (nothing to draw them from).
        let ranges = (0..if keys.is_empty() { 0 } else { RANGES })
            .map(|_| {
                let a = rng.usize(0..=keys.len() - len);
                (keys[a], keys[a + len - 1])
            })
            .collect();
        Plan {
            keys,
            insert_order,
            lookups,
            absent,
            ranges,
        }
    }

    /// The answers every store must give.
    pub fn truth(&self) -> Answers {
        let mut prefix = Vec::with_capacity(self.keys.len() + 1);
        prefix.push(0u128);
        for &k in &self.keys {
            prefix.push(prefix.last().copied().unwrap_or(0) + k as u128);
        }
        let mut ranges = 0u128;
        let mut count = 0u128;
        for &(lo, hi) in &self.ranges {
            let a = self.keys.partition_point(|&k| k < lo);
            let b = self.keys.partition_point(|&k| k <= hi);
            ranges = mix(ranges, (b - a) as u64, prefix[b] - prefix[a]);
            count = mix(count, (b - a) as u64, 0);
        }
        Answers {
            found: self.keys.len() as u64,
            absent_found: 0,
            scan_count: self.keys.len() as u64,
            scan_sum: prefix.last().copied().unwrap_or(0),
            range_counts: count,
            range_sums: ranges,
        }
    }
}

/// Order-sensitive digest of per-range answers.
fn mix(acc: u128, count: u64, sum: u128) -> u128 {
    acc.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
        .wrapping_add(sum)
        .wrapping_add((count as u128) << 64)
        .rotate_left(17)
}

/// What a store answered; equal for every correct store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answers {
    pub found: u64,
    pub absent_found: u64,
    pub scan_count: u64,
    pub scan_sum: u128,
    /// Digest of the COUNT-only answers.
    pub range_counts: u128,
    /// Digest of the (COUNT, SUM) answers.
    pub range_sums: u128,
}

/// One store's figures: seconds, bytes and the answers.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub durability: String,
    pub load_ascending_s: f64,
    pub load_random_s: f64,
    /// RocksDB's compaction after each load (included in neither load time).
    pub settle: Option<String>,
    pub settle_s: f64,
    pub bytes_ascending: u64,
    pub bytes_random: u64,
    pub lookup_s: f64,
    pub absent_s: f64,
    pub scan_s: f64,
    pub range_count_s: f64,
    pub range_sum_s: f64,
    /// Peak resident memory of the process (bytes), when the OS reports it.
    pub peak_rss: Option<u64>,
    pub answers: Answers,
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let t = Instant::now();
    let v = f()?;
    Ok((v, t.elapsed().as_secs_f64()))
}

/// Bytes of the files directly in `dir`.
pub fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let m = e.metadata().map_err(|e| e.to_string())?;
        if m.is_file() {
            n += m.len();
        } else if m.is_dir() {
            n += dir_bytes(&e.path())?;
        }
    }
    Ok(n)
}

/// Runs the workload on store `name` in two fresh subdirectories of `work` (created here,
/// removed after).
pub fn run_workload(name: &str, plan: &Plan, work: &Path) -> Result<Figures> {
    let width = Width::of(&plan.keys);
    let fresh = |sub: &str| -> Result<std::path::PathBuf> {
        let d = work.join(sub);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        Ok(d)
    };
    let mut f = Figures::default();

    // Random-order load first, in its own store, measured and dropped.
    let dir_r = fresh("random")?;
    {
        let mut s = create(name, &dir_r, width)?;
        f.durability = s.durability();
        ((), f.load_random_s) = timed(|| s.load_batches(&plan.insert_order, BATCH))?;
        let (settle, t) = timed(|| s.settle())?;
        f.settle = settle.map(String::from);
        f.settle_s = t;
        f.bytes_random = s.close()?;
    }
    let _ = std::fs::remove_dir_all(&dir_r);

    let dir_a = fresh("ascending")?;
    let mut s = create(name, &dir_a, width)?;
    ((), f.load_ascending_s) = timed(|| s.load_ascending(&plan.keys))?;
    let (_, t) = timed(|| s.settle())?;
    f.settle_s = f.settle_s.max(t);
    f.bytes_ascending = s.close()?;
    s.reopen()?;

    let a = &mut f.answers;
    (a.found, f.lookup_s) = timed(|| s.count_present(&plan.lookups))?;
    (a.absent_found, f.absent_s) = timed(|| s.count_present(&plan.absent))?;
    // The scan is short: median of three.
    let mut times = Vec::new();
    for _ in 0..3 {
        let ((c, sum), t) = timed(|| s.scan())?;
        (a.scan_count, a.scan_sum) = (c, sum);
        times.push(t);
    }
    times.sort_by(f64::total_cmp);
    f.scan_s = times[1];
    let (counts, t) = timed(|| s.ranges(&plan.ranges, false))?;
    f.range_count_s = t;
    a.range_counts = counts.iter().fold(0, |acc, &(c, _)| mix(acc, c, 0));
    let (sums, t) = timed(|| s.ranges(&plan.ranges, true))?;
    f.range_sum_s = t;
    a.range_sums = sums.iter().fold(0, |acc, &(c, s)| mix(acc, c, s));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir_a);
    f.peak_rss = peak_rss();
    Ok(f)
}

/// The process's peak resident set (Linux `VmHWM`), in bytes.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clustered(n: usize, seed: u64) -> Vec<u64> {
        // Runs and gaps: enough structure for every store's paths.
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut k = 0u64;
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            k += if rng.u8(..) < 200 {
                1
            } else {
                rng.u64(2..5000)
            };
            v.push(k);
        }
        v
    }

    /// Every store gives the true answers, for u32 and u64 keys.
    #[test]
    fn every_store_answers_the_truth() {
        let seed = std::env::var("SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(7);
        eprintln!("SEED={seed}");
        let work = std::env::temp_dir().join(format!("tersedb-peers-test-{}", std::process::id()));
        for keys in [
            clustered(30_000, seed),
            clustered(5_000, seed)
                .into_iter()
                .map(|k| k + (1 << 40))
                .collect(),
        ] {
            let plan = Plan::new(keys, seed);
            let truth = plan.truth();
            assert_eq!(plan.absent.len(), plan.absent.len().min(ABSENT));
            let mut names: Vec<String> = ["none", "bp128", "pfor-delta", "auto"]
                .map(|c| format!("tersedb-{c}"))
                .to_vec();
            names.extend(peer_names().into_iter().map(String::from));
            for name in names {
                let f = run_workload(&name, &plan, &work).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(f.answers, truth, "{name}");
                assert!(f.bytes_ascending > 0 && f.bytes_random > 0, "{name}");
                if name.starts_with("rocksdb-") {
                    // The full compaction rewrites the last level (sequence numbers zeroed):
                    // both loads leave the same table, not one twice the other's size.
                    let (a, r) = (f.bytes_ascending as f64, f.bytes_random as f64);
                    assert!((r - a).abs() < 0.02 * a, "{name}: {a} against {r}");
                }
                assert!(!f.durability.is_empty());
            }
        }
        let _ = std::fs::remove_dir_all(&work);
    }

    #[test]
    fn plans_are_deterministic_and_absent_keys_absent() {
        let keys: Vec<u64> = (0..1000).collect();
        let a = Plan::new(keys.clone(), 3);
        let b = Plan::new(keys.clone(), 3);
        assert_eq!(a.ranges, b.ranges);
        assert_eq!(a.absent, b.absent);
        assert_eq!(a.absent.len(), 2000 - 1000);
        assert!(a.absent.iter().all(|k| keys.binary_search(k).is_err()));
        assert!(a.ranges.iter().all(|&(lo, hi)| hi - lo == 9));
        // No keys: a plan without ranges (it used to panic drawing them), every store agrees.
        let empty = Plan::new(Vec::new(), 3);
        assert!(empty.ranges.is_empty() && empty.keys.is_empty());
        assert_eq!(empty.truth().found, 0);
        let work = std::env::temp_dir().join(format!("tersedb-peers-empty-{}", std::process::id()));
        for name in ["tersedb-bp128", "roaring", "lmdb"] {
            let f = run_workload(name, &empty, &work).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(f.answers, empty.truth(), "{name}");
        }
        let _ = std::fs::remove_dir_all(&work);
    }

    /// Peers outside this build name the cargo feature that brings them in.
    #[test]
    fn left_out_peers_name_their_feature() {
        let d = std::env::temp_dir();
        for (peer, feature) in missing_peers() {
            let err = create(peer, &d, Width::U32).err().unwrap_or_default();
            assert!(err.contains(&format!("`{feature}` feature")), "{err}");
            assert!(!peer_names().contains(&peer));
        }
        assert_eq!(expand_peer("rocksdb"), ["rocksdb-lz4", "rocksdb-zstd"]);
        assert_eq!(expand_peer("lmdb"), ["lmdb"]);
    }

    #[test]
    fn unknown_store_is_an_error() {
        let d = std::env::temp_dir();
        assert!(create("mysql", &d, Width::U32).is_err());
        assert!(create("tersedb-nope", &d, Width::U32).is_err());
    }
}
