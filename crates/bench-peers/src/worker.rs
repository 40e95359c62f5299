//! The hidden `tersedb bench peer-worker` side: reads the keys the parent wrote, runs the
//! workload on one store in this process (so peak memory is that store's), and prints its
//! figures as `name=value` lines the parent parses with [`parse`].

use crate::{Answers, Figures, Plan, Result};
use std::io::{Read, Write};
use std::path::Path;

/// Writes sorted keys for workers: little-endian u64s.
pub fn write_keys(path: &Path, keys: &[u64]) -> Result<()> {
    let mut b = Vec::with_capacity(keys.len() * 8);
    for k in keys {
        b.extend_from_slice(&k.to_le_bytes());
    }
    std::fs::write(path, b).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads what [`write_keys`] wrote.
pub fn read_keys(path: &Path) -> Result<Vec<u64>> {
    let mut b = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut b))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if b.len() % 8 != 0 {
        return Err(format!("{}: not a key file", path.display()));
    }
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

/// Runs store `name` on the keys of `keys_file` and writes its figures to `out`.
pub fn run(name: &str, keys_file: &Path, seed: u64, work: &Path, out: impl Write) -> Result<()> {
    let plan = Plan::new(read_keys(keys_file)?, seed);
    let harness_rss = crate::peak_rss();
    let f = crate::run_workload(name, &plan, work)?;
    format(&f, harness_rss, out).map_err(|e| e.to_string())
}

fn format(f: &Figures, harness_rss: Option<u64>, mut o: impl Write) -> std::io::Result<()> {
    let a = &f.answers;
    writeln!(o, "durability={}", f.durability)?;
    writeln!(o, "settle={}", f.settle.as_deref().unwrap_or(""))?;
    for (k, v) in [
        ("load_ascending_s", f.load_ascending_s),
        ("load_random_s", f.load_random_s),
        ("settle_s", f.settle_s),
        ("lookup_s", f.lookup_s),
        ("absent_s", f.absent_s),
        ("scan_s", f.scan_s),
        ("range_count_s", f.range_count_s),
        ("range_sum_s", f.range_sum_s),
    ] {
        writeln!(o, "{k}={v:e}")?;
    }
    for (k, v) in [
        ("bytes_ascending", f.bytes_ascending as u128),
        ("bytes_random", f.bytes_random as u128),
        ("peak_rss", f.peak_rss.unwrap_or(0) as u128),
        ("harness_rss", harness_rss.unwrap_or(0) as u128),
        ("found", a.found as u128),
        ("absent_found", a.absent_found as u128),
        ("scan_count", a.scan_count as u128),
        ("scan_sum", a.scan_sum),
        ("range_counts", a.range_counts),
        ("range_sums", a.range_sums),
    ] {
        writeln!(o, "{k}={v}")?;
    }
    Ok(())
}

/// A worker's report: its figures and the memory the harness itself held before the store ran
/// (the plan's key arrays), both peaks.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub figures: Figures,
    pub harness_rss: u64,
}

/// Parses a worker's output.
pub fn parse(text: &str) -> Result<Report> {
    let mut r = Report::default();
    let f = &mut r.figures;
    let mut a = Answers::default();
    let mut seen = 0;
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let fl = || v.parse::<f64>().map_err(|_| format!("worker: bad {k}={v}"));
        let int = || {
            v.parse::<u128>()
                .map_err(|_| format!("worker: bad {k}={v}"))
        };
        seen += 1;
        match k {
            "durability" => f.durability = v.to_string(),
            "settle" => f.settle = (!v.is_empty()).then(|| v.to_string()),
            "load_ascending_s" => f.load_ascending_s = fl()?,
            "load_random_s" => f.load_random_s = fl()?,
            "settle_s" => f.settle_s = fl()?,
            "lookup_s" => f.lookup_s = fl()?,
            "absent_s" => f.absent_s = fl()?,
            "scan_s" => f.scan_s = fl()?,
            "range_count_s" => f.range_count_s = fl()?,
            "range_sum_s" => f.range_sum_s = fl()?,
            "bytes_ascending" => f.bytes_ascending = int()? as u64,
            "bytes_random" => f.bytes_random = int()? as u64,
            "peak_rss" => f.peak_rss = Some(int()? as u64).filter(|&x| x > 0),
            "harness_rss" => r.harness_rss = int()? as u64,
            "found" => a.found = int()? as u64,
            "absent_found" => a.absent_found = int()? as u64,
            "scan_count" => a.scan_count = int()? as u64,
            "scan_sum" => a.scan_sum = int()?,
            "range_counts" => a.range_counts = int()?,
            "range_sums" => a.range_sums = int()?,
            _ => seen -= 1,
        }
    }
    if seen < 20 {
        return Err(format!("worker: incomplete report ({seen} of 20 fields)"));
    }
    f.answers = a;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        let dir = std::env::temp_dir().join(format!("tersedb-worker-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keys: Vec<u64> = (0..5000).map(|k| k * 3).collect();
        let kf = dir.join("keys.bin");
        write_keys(&kf, &keys).unwrap();
        assert_eq!(read_keys(&kf).unwrap(), keys);
        let mut out = Vec::new();
        run("roaring", &kf, 1, &dir, &mut out).unwrap();
        let r = parse(&String::from_utf8(out).unwrap()).unwrap();
        assert_eq!(r.figures.answers, Plan::new(keys, 1).truth());
        assert!(r.figures.durability.contains("memory"));
        assert!(parse("durability=x\n").is_err());
        std::fs::write(&kf, [1u8, 2, 3]).unwrap();
        assert!(read_keys(&kf).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
