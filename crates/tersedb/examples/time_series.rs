//! A time series: u64 microsecond timestamps -> f64 readings, then per-minute averages with
//! `GROUP BY key / 60000000` (each minute a key range, folded block by block in the tree).
//!
//! `cargo run -p tersedb --example time_series [FILE]`

use std::path::{Path, PathBuf};
use tersedb::{Env, EnvOptions, TableDef};

/// Microseconds since the epoch -> a temperature.
const TEMPERATURE: TableDef<u64, f64> = TableDef::new("temperature");

/// 2024-03-01T00:00:00Z in microseconds.
const START_US: u64 = 1_709_251_200_000_000;

/// Loads an hour of readings (one per second) into `path`; returns the minute averages.
pub fn run(path: &Path) -> tersedb::Result<Vec<(u64, f64)>> {
    let env = Env::open_or_create(path, &EnvOptions::default())?;
    let mut w = env.begin_write()?;
    let temp = w.open_table(TEMPERATURE)?;
    for s in 0..3600u64 {
        let celsius = 20.0 + (s / 60) as f64 / 10.0 + (s % 2) as f64 * 0.5;
        temp.put(&mut w, START_US + s * 1_000_000, celsius)?;
    }
    w.commit()?;

    let r = env.begin_read()?;
    assert_eq!(temp.get(&r, START_US)?, Some(20.0));
    // The last three readings, newest first.
    for e in temp.range(&r, START_US..)?.rev().take(3) {
        let (t, c) = e?;
        println!("{t}: {c:.1} °C");
    }
    let minutes = r.query_str(
        "SELECT key / 60000000 * 60000000 AS minute, COUNT(*), AVG(record) FROM temperature \
         GROUP BY key / 60000000",
    )?;
    println!("{} minutes; the first rows:", minutes.rows.len());
    let mut out = Vec::new();
    for row in &minutes.rows {
        let minute = row[0].as_int().unwrap_or(0) as u64;
        out.push((minute, row[2].as_f64().unwrap_or(f64::NAN)));
    }
    for (minute, avg) in out.iter().take(3) {
        println!("{minute}: {avg:.2} °C");
    }
    Ok(out)
}

fn main() -> tersedb::Result<()> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tersedb-example-time-series.tdb"));
    run(&path)?;
    Ok(())
}
