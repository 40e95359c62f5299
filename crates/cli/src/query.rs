//! `tersedb query FILE "SELECT ..."`: runs one query of the query language in a read
//! transaction and prints the result as a small table, or with `--json` as one object
//! `{"columns":[<each aggregate as printed>],"values":[<numbers, lists or null>]}` (integers
//! exact). `--stats` adds what the scan read, and the time, on standard error.

use std::path::Path;
use tersedb::{Env, EnvOptions};

/// Formats a result as a table: a header row of the aggregates, a rule, a row of values.
pub fn table<C: AsRef<str>>(columns: &[C], values: &[String]) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .zip(values)
        .map(|(c, v)| c.as_ref().chars().count().max(v.chars().count()))
        .collect();
    let row = |cells: &mut dyn Iterator<Item = &str>| -> String {
        cells
            .zip(&widths)
            .map(|(c, &w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    let rule = widths
        .iter()
        .map(|&w| "-".repeat(w))
        .collect::<Vec<_>>()
        .join("-+-");
    format!(
        "{}\n{rule}\n{}",
        row(&mut columns.iter().map(|c| c.as_ref())),
        row(&mut values.iter().map(String::as_str))
    )
}

/// `tersedb query`.
pub fn run(file: &Path, text: &str, json: bool, stats: bool) -> Result<(), String> {
    let env = Env::open_read_only(file, &EnvOptions::default())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let r = env.begin_read().map_err(|e| e.to_string())?;
    let t = std::time::Instant::now();
    let res = r.query_str(text).map_err(|e| e.to_string())?;
    let elapsed = t.elapsed();
    if json {
        outln!("{}", res.to_json());
    } else {
        let values: Vec<String> = res.values.iter().map(|v| v.to_string()).collect();
        outln!("{}", table(&res.columns, &values));
    }
    if stats {
        let s = res.stats;
        eprintln!(
            "{:.3} ms; {} leaves; blocks: {} decoded, {} answered from the index, {} skipped; {} subqueries",
            elapsed.as_secs_f64() * 1e3,
            s.leaves,
            s.blocks_decoded,
            s.blocks_from_index,
            s.blocks_skipped,
            s.subqueries
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["COUNT(*)", "AVG(key)"],
            &["7".into(), "1234567890.5".into()],
        );
        assert_eq!(
            t,
            "COUNT(*) | AVG(key)\n---------+-------------\n7        | 1234567890.5"
        );
    }
}
