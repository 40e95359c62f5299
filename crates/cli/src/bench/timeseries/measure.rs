//! One database of `tersedb bench timeseries`: loading a series into it and timing the reads,
//! each answer checked against the series (the model). Only the engine's public API.

use super::series::{Prefix, Series, Total};
use crate::bench::timing::median;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tersedb::{CodecId, Db, DbConfig, Durability, Env, EnvOptions, KeyType, ReadTxn};

/// Entries per write transaction of the random-order load.
pub const RANDOM_BATCH: usize = 100_000;
/// The database's name in every file (the queries name it).
pub const DB: &str = "ts";

/// How a database stores its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    None,
    Codec(CodecId),
    Auto,
}

impl Keys {
    pub fn name(self) -> &'static str {
        match self {
            Keys::None => "none",
            Keys::Codec(c) => c.name(),
            Keys::Auto => "auto",
        }
    }
}

/// The configuration of a series' database: keys as `keys` says, records compressed or raw.
pub fn config(s: &Series, key_type: KeyType, keys: Keys, compressed: bool) -> DbConfig {
    let c = DbConfig::raw(key_type, s.record_type())
        .with_value_type(s.value_type())
        .with_compressed_records(compressed);
    match keys {
        Keys::None => c,
        Keys::Codec(codec) => c.with_codec(Some(codec)),
        Keys::Auto => c.with_auto_codec(true),
    }
}

/// A scratch directory for the bench's files, removed (with everything in it) when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// `tag` tells apart the scratch directories of one process (tests run in threads).
    pub fn new(tag: &str) -> Result<Scratch, String> {
        let p = std::env::temp_dir().join(format!(
            "tersedb-bench-timeseries-{}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(Scratch(p))
    }

    /// A fresh file path in the directory (any old file of that name removed).
    pub fn file(&self, name: &str) -> PathBuf {
        let p = self.0.join(name);
        remove_env(&p);
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes an environment file and its readers directory.
pub fn remove_env(p: &Path) {
    let _ = std::fs::remove_file(p);
    let mut r = p.as_os_str().to_owned();
    r.push("-readers");
    let _ = std::fs::remove_dir_all(PathBuf::from(r));
}

fn err(e: tersedb::Error) -> String {
    e.to_string()
}

pub fn open_env(path: &Path) -> Result<Env, String> {
    let opts = EnvOptions::default()
        .durability(Durability::None)
        .cache_bytes(1 << 30);
    Env::create(path, &opts).map_err(|e| format!("{}: {e}", path.display()))
}

/// Bytes of a loaded database, per the engine's statistics and the file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizes {
    /// The file's length.
    pub file: u64,
    /// `Env::space().live_bytes`: pages holding the catalog and the trees.
    pub live: u64,
    /// `DbStats::leaf_key_bytes`.
    pub keys: u64,
    /// `DbStats::leaf_record_bytes`.
    pub records: u64,
}

/// Measures the sizes of a committed database.
pub fn sizes(env: &Env, db: &Db, path: &Path) -> Result<Sizes, String> {
    let st = env.begin_read().map_err(err)?.stats(db).map_err(err)?;
    Ok(Sizes {
        file: std::fs::metadata(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len(),
        live: env.space().map_err(err)?.live_bytes,
        keys: st.leaf_key_bytes,
        records: st.leaf_record_bytes,
    })
}

/// A key as a database of `key_type` takes it.
fn key(key_type: KeyType, k: u64) -> tersedb::Key<'static> {
    if key_type == KeyType::U32 {
        tersedb::Key::U32(k as u32)
    } else {
        tersedb::Key::U64(k)
    }
}

/// Loads `s` in ascending order (`WriteTxn::append`, one transaction) into a new database of
/// `cfg`, keys shifted by `base` (the u64-vs-u32 check stores series c's keys as u64 above
/// 2^32), records omitted when `cfg` has none; returns it and the seconds the load took
/// (commit included).
pub fn load_ascending(
    env: &Env,
    s: &Series,
    cfg: DbConfig,
    base: u64,
) -> Result<(Db, f64), String> {
    let t = Instant::now();
    let mut w = env.begin_write().map_err(err)?;
    let db = w.create_db(DB, cfg).map_err(err)?;
    let mut buf = [0u8; 8];
    let with_records = cfg.record_type != tersedb::RecordType::None;
    for (i, &k) in s.keys.iter().enumerate() {
        let n = if with_records {
            s.record(i, &mut buf)
        } else {
            0
        };
        w.append(&db, key(cfg.key_type, k + base), &buf[..n])
            .map_err(err)?;
    }
    w.commit().map_err(err)?;
    Ok((db, t.elapsed().as_secs_f64()))
}

/// Loads `s` in the order `order` (indexes), `RANDOM_BATCH` entries per transaction.
pub fn load_random(
    env: &Env,
    s: &Series,
    cfg: DbConfig,
    order: &[u32],
) -> Result<(Db, f64), String> {
    let t = Instant::now();
    let mut w = env.begin_write().map_err(err)?;
    let db = w.create_db(DB, cfg).map_err(err)?;
    let mut buf = [0u8; 8];
    for (j, &i) in order.iter().enumerate() {
        if j > 0 && j % RANDOM_BATCH == 0 {
            w.commit().map_err(err)?;
            w = env.begin_write().map_err(err)?;
        }
        let i = i as usize;
        let n = s.record(i, &mut buf);
        w.insert(&db, key(cfg.key_type, s.keys[i]), &buf[..n])
            .map_err(err)?;
    }
    w.commit().map_err(err)?;
    Ok((db, t.elapsed().as_secs_f64()))
}

/// What the read phases do: fixed per series so every database answers the same questions.
pub struct Plan {
    /// Entry indexes looked up, in this order.
    pub lookups: Vec<u32>,
    /// Per coverage (fraction of the entries), the index ranges `[i, j)` summed.
    pub ranges: Vec<(f64, Vec<(usize, usize)>)>,
    /// GROUP BY key / width.
    pub width: u64,
    /// Timed rounds of every read phase, after one warm-up round (medians are reported).
    pub rounds: usize,
}

/// An order-sensitive checksum of (key, record) pairs: a polynomial hash over the keys and the
/// records' bytes, and the count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksum {
    pub count: u64,
    pub hash: u64,
}

impl Checksum {
    pub fn add(&mut self, key: u64, record: &[u8]) {
        let mut b = [0u8; 8];
        let n = record.len().min(8);
        b[..n].copy_from_slice(&record[..n]);
        let v = u64::from_le_bytes(b) ^ ((record.len() as u64) << 59);
        self.hash = self
            .hash
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(key.rotate_left(17) ^ v);
        self.count += 1;
    }

    /// The checksum of the whole series.
    pub fn of(s: &Series) -> Checksum {
        let mut c = Checksum::default();
        let mut buf = [0u8; 8];
        for (i, &k) in s.keys.iter().enumerate() {
            let w = s.record(i, &mut buf);
            c.add(k, &buf[..w]);
        }
        c
    }
}

/// The coverages of the SUM(record) ranges and how many ranges of each.
pub const COVERAGE: [(f64, usize); 3] = [(0.01, 16), (0.1, 5), (1.0, 1)];
/// Buckets of the GROUP BY.
pub const BUCKETS: u64 = 1000;

impl Plan {
    pub fn new(s: &Series, lookups: usize, rounds: usize, seed: u64) -> Plan {
        let n = s.len();
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x7157);
        let mut order: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut order);
        order.truncate(lookups.min(n));
        let ranges = COVERAGE
            .iter()
            .map(|&(cov, count)| {
                let len = ((n as f64 * cov).round() as usize).clamp(1, n);
                let count = if len == n { 1 } else { count };
                let r = (0..count)
                    .map(|_| {
                        let i = rng.usize(0..=n - len);
                        (i, i + len)
                    })
                    .collect();
                (cov, r)
            })
            .collect();
        let span = s.keys[n - 1] - s.keys[0];
        Plan {
            lookups: order,
            ranges,
            width: span / BUCKETS + 1,
            rounds: rounds.max(1),
        }
    }
}

/// Seconds of each read phase of one database: per lookup, per cursor scan, per query (SUMs:
/// the mean over a coverage's ranges), per GROUP BY.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    pub lookup_s: f64,
    pub cursor_s: f64,
    /// Per coverage of [`COVERAGE`].
    pub sum_s: Vec<f64>,
    pub group_s: f64,
    /// Answers compared with the model: lookups, cursor entries, sums, groups.
    pub checked: u64,
}

/// One read phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Every lookup of the plan, in its order.
    Lookups,
    /// A cursor over every entry.
    Cursor,
    /// `SELECT SUM(record)` over each range of the plan's coverage `i`.
    Sum(usize),
    /// `GROUP BY key / width`.
    Group,
}

impl Phase {
    /// Every phase, in the order they run.
    pub fn all() -> Vec<Phase> {
        let mut v = vec![Phase::Lookups, Phase::Cursor];
        v.extend((0..COVERAGE.len()).map(Phase::Sum));
        v.push(Phase::Group);
        v
    }
}

/// What a phase reads: a database in a read transaction, and the model it must agree with.
pub struct Subject<'a> {
    pub r: &'a ReadTxn,
    pub db: &'a Db,
    pub s: &'a Series,
    pub prefix: &'a Prefix,
    /// [`Checksum::of`] the series.
    pub checksum: Checksum,
}

/// Runs one phase once and times it: seconds per operation (lookup, scan, query) and the
/// answers checked. An answer that differs from the model is an error naming the phase, what
/// was asked, and both values.
pub fn phase(x: &Subject, plan: &Plan, p: Phase) -> Result<(f64, u64), String> {
    let (r, db, s) = (x.r, x.db, x.s);
    let kt = db.config().key_type;
    let mut buf = [0u8; 8];
    match p {
        Phase::Lookups => {
            let t = Instant::now();
            for &i in &plan.lookups {
                let i = i as usize;
                let got = r.get(db, key(kt, s.keys[i])).map_err(err)?;
                let w = s.record(i, &mut buf);
                if got.as_deref() != Some(&buf[..w]) {
                    return Err(format!(
                        "lookup of key {}: got {got:?}, expected {:?}",
                        s.keys[i],
                        &buf[..w]
                    ));
                }
            }
            let n = plan.lookups.len();
            Ok((t.elapsed().as_secs_f64() / n.max(1) as f64, n as u64))
        }
        Phase::Cursor => {
            // A checksum of the keys and records in order (cheaper than comparing each, so
            // the scan is what is timed), compared with the model's.
            let t = Instant::now();
            let mut c = r.cursor(db).map_err(err)?;
            let mut got = Checksum::default();
            let mut ok = c.first().map_err(err)?;
            while ok {
                let v = c.value_ref().map_err(err)?;
                got.add(c.key_u64().unwrap_or(u64::MAX), v.as_deref().unwrap_or(&[]));
                ok = c.next().map_err(err)?;
            }
            let secs = t.elapsed().as_secs_f64();
            let want = x.checksum;
            if got != want {
                return Err(format!(
                    "cursor: {} entries with checksum {:#x}, expected {} with {:#x}",
                    got.count, got.hash, want.count, want.hash
                ));
            }
            Ok((secs, got.count))
        }
        Phase::Sum(c) => {
            let Some((cov, ranges)) = plan.ranges.get(c) else {
                return Err(format!("no coverage {c}"));
            };
            let mut secs = 0.0;
            for &(i, j) in ranges {
                let (lo, hi) = (s.keys[i], s.keys[j - 1]);
                let q = format!("SELECT SUM(record) FROM {DB} WHERE key >= {lo} AND key <= {hi}");
                let t = Instant::now();
                let res = r.query_str(&q).map_err(err)?;
                secs += t.elapsed().as_secs_f64();
                let want = x.prefix.total(i, j);
                let got = res.values.first().cloned().unwrap_or(tersedb::Value::Null);
                if !want.matches(&got) {
                    return Err(format!(
                        "SUM(record) over {:.0}% ({q}): got {got:?}, expected {want}",
                        cov * 100.0
                    ));
                }
            }
            Ok((secs / ranges.len().max(1) as f64, ranges.len() as u64))
        }
        Phase::Group => {
            let q = format!(
                "SELECT key / {w} AS bucket, COUNT(*), SUM(record) FROM {DB} GROUP BY key / {w}",
                w = plan.width
            );
            let t = Instant::now();
            let res = r.query_str(&q).map_err(err)?;
            let secs = t.elapsed().as_secs_f64();
            let want = s.buckets(plan.width, x.prefix);
            if res.rows.len() != want.len() {
                return Err(format!(
                    "{q}: {} groups, expected {}",
                    res.rows.len(),
                    want.len()
                ));
            }
            for (row, &(b, count, sum)) in res.rows.iter().zip(&want) {
                let ok = row.len() == 3
                    && row[0].as_int() == Some(b as i128)
                    && row[1].as_int() == Some(count as i128)
                    && sum.matches(&row[2]);
                if !ok {
                    return Err(format!(
                        "{q}: group {row:?}, expected [{b}, {count}, {sum}]"
                    ));
                }
            }
            Ok((secs, want.len() as u64))
        }
    }
}

/// Every phase on several databases, interleaved: one untimed round (it warms the pages),
/// then `plan.rounds` rounds in which each phase runs on each database in turn, so a noisy
/// stretch of a shared machine hits them alike. Per database, the median of each phase.
pub fn reads_interleaved(subjects: &[Subject], plan: &Plan) -> Result<Vec<Reads>, String> {
    let phases = Phase::all();
    // times[subject][phase] = one time per round
    let mut times = vec![vec![Vec::new(); phases.len()]; subjects.len()];
    let mut out = vec![Reads::default(); subjects.len()];
    for round in 0..=plan.rounds {
        for (pi, &p) in phases.iter().enumerate() {
            for (si, x) in subjects.iter().enumerate() {
                let (secs, checked) = phase(x, plan, p)?;
                if round > 0 {
                    times[si][pi].push(secs);
                }
                out[si].checked += checked;
            }
        }
    }
    for (si, o) in out.iter_mut().enumerate() {
        let mut med = |pi: usize| median(&mut times[si][pi]);
        for (pi, &p) in phases.iter().enumerate() {
            match p {
                Phase::Lookups => o.lookup_s = med(pi),
                Phase::Cursor => o.cursor_s = med(pi),
                Phase::Sum(_) => o.sum_s.push(med(pi)),
                Phase::Group => o.group_s = med(pi),
            }
        }
    }
    Ok(out)
}

/// Checks a database's entry count and its SUM(record) over everything (the check of the
/// databases that are only measured for size).
pub fn check_totals(r: &ReadTxn, db: &Db, s: &Series, prefix: &Prefix) -> Result<(), String> {
    let count = r.len(db).map_err(err)?;
    if count != s.len() as u64 {
        return Err(format!("{count} entries, expected {}", s.len()));
    }
    if db.config().record_type == tersedb::RecordType::None {
        return Ok(());
    }
    let res = r
        .query_str(&format!("SELECT SUM(record) FROM {DB}"))
        .map_err(err)?;
    let got = res.values.first().cloned().unwrap_or(tersedb::Value::Null);
    let want: Total = prefix.total(0, s.len());
    if !want.matches(&got) {
        return Err(format!("SUM(record): got {got:?}, expected {want}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::timeseries::series::Values;

    /// Every read phase once on `db` against the model `s` (the phases of [`reads_interleaved`]
    /// with one subject).
    fn reads(
        r: &ReadTxn,
        db: &Db,
        s: &Series,
        prefix: &Prefix,
        plan: &Plan,
    ) -> Result<Reads, String> {
        let x = Subject {
            r,
            db,
            s,
            prefix,
            checksum: Checksum::of(s),
        };
        let mut out = reads_interleaved(std::slice::from_ref(&x), plan)?;
        Ok(out.remove(0))
    }

    /// Every read phase passes on the data it loaded and fails, naming the phase, when the
    /// model differs from the database in one value.
    #[test]
    fn reads_pass_on_the_loaded_series_and_fail_on_another() {
        let scratch = Scratch::new("reads").unwrap();
        for name in ["a", "b", "c"] {
            let s = Series::generate(name, 20_000, 9).unwrap();
            for compressed in [false, true] {
                let path = scratch.file(&format!("{name}{compressed}.tdb"));
                let env = open_env(&path).unwrap();
                let cfg = config(&s, s.key_type, Keys::Auto, compressed);
                let (db, _) = load_ascending(&env, &s, cfg, 0).unwrap();
                let r = env.begin_read().unwrap();
                let plan = Plan::new(&s, 500, 1, 1);
                let prefix = s.prefix();
                let got = reads(&r, &db, &s, &prefix, &plan).unwrap();
                assert_eq!(got.sum_s.len(), COVERAGE.len());
                assert!(got.checked > 20_500, "{}", got.checked);
                check_totals(&r, &db, &s, &prefix).unwrap();
                // One value off in the model: the lookups (if they hit it) or the cursor say so.
                let mut other = s.clone();
                match &mut other.values {
                    Values::I64(v) | Values::Cents(v) => v[777] += 1,
                    Values::U32(v) => v[777] += 1,
                }
                let e = reads(&r, &db, &other, &other.prefix(), &plan).unwrap_err();
                assert!(e.contains("lookup") || e.contains("cursor"), "{e}");
                // Without the lookups, the cursor's checksum catches it.
                let blind = Plan {
                    lookups: Vec::new(),
                    ..Plan::new(&other, 0, 1, 1)
                };
                let e = reads(&r, &db, &other, &other.prefix(), &blind).unwrap_err();
                assert!(e.contains("cursor"), "{e}");
                assert!(check_totals(&r, &db, &other, &other.prefix()).is_err());
                drop(r);
                drop(env);
                remove_env(&path);
            }
        }
    }

    #[test]
    fn random_loads_hold_the_same_entries() {
        let scratch = Scratch::new("random").unwrap();
        let s = Series::generate("a", 2 * RANDOM_BATCH + 77, 2).unwrap();
        let mut order: Vec<u32> = (0..s.len() as u32).collect();
        fastrand::Rng::with_seed(3).shuffle(&mut order);
        let path = scratch.file("r.tdb");
        let env = open_env(&path).unwrap();
        let (db, _) =
            load_random(&env, &s, config(&s, s.key_type, Keys::Auto, true), &order).unwrap();
        let r = env.begin_read().unwrap();
        check_totals(&r, &db, &s, &s.prefix()).unwrap();
        let plan = Plan::new(&s, 100, 1, 4);
        reads(&r, &db, &s, &s.prefix(), &plan).unwrap();
    }
}
