//! `tersedb query FILE "SELECT ..."`: runs one query of the query language in a read
//! transaction and prints the result as a small table, or with `--json` as one object
//! `{"columns":[<each column as printed or its alias>],"values":[<numbers, lists or null>]}`
//! for aggregates and `{"columns":[...],"rows":[[...],...]}` for rows and groups (integers
//! exact), or with `--csv` as CSV with a header line. `--stats` adds what the scan read, and
//! the time, on standard error.

use std::path::Path;
use tersedb::{Env, EnvOptions};

/// `tersedb query`.
pub fn run(file: &Path, text: &str, format: Format, stats: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| crate::store::open_error(file, e))?;
    let r = env.begin_read().map_err(|e| e.to_string())?;
    let t = std::time::Instant::now();
    let res = r.query_str(text).map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    match format {
        Format::Json => outln!("{}", res.to_json()),
        Format::Csv => {
            let csv = res.to_csv();
            outln!("{}", csv.trim_end_matches("\r\n"))
        }
        Format::Table => outln!("{res}"),
    }
    if stats {
        let s = res.stats;
        eprintln!(
            "{:.3} ms; {} leaves; blocks: {} decoded, {} answered from the index, {} skipped; \
             record chunks: {} skipped, {} folded by their bounds; {} subqueries",
            elapsed.as_secs_f64() * 1e3,
            s.leaves,
            s.blocks_decoded,
            s.blocks_from_index,
            s.blocks_skipped,
            s.record_chunks_skipped,
            s.record_chunks_folded,
            s.subqueries
        );
    }
    Ok(())
}

/// How `tersedb query` prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}
