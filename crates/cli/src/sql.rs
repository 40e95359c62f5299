//! `tersedb sql PATH "SELECT ..."`: any SQL DataFusion runs (joins, GROUP BY, ORDER BY, window
//! functions) over the databases of a tersedb file, or of every file of a directory (one table
//! per database, one partition per file, a `file` column naming it), with the key-range and
//! aggregate push-downs of the tersedb-datafusion crate. Prints a table, or with `--json` one
//! JSON object per row in an array, or with `--csv` CSV with a header line. Built only with the
//! `sql` feature, so the plain CLI does not compile DataFusion.

use std::path::Path;

/// How `tersedb sql` prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[cfg(not(feature = "sql"))]
pub fn run(_: &Path, _: &str, _: Format, _: usize) -> Result<(), String> {
    Err("this tersedb was built without SQL (rebuild with `--features sql`)".into())
}

#[cfg(feature = "sql")]
pub fn run(path: &Path, sql: &str, format: Format, batch_size: usize) -> Result<(), String> {
    use tersedb_datafusion::datafusion::arrow;
    let opts = tersedb_datafusion::TableOptions {
        batch_size,
        ..Default::default()
    };
    let batches = tersedb_datafusion::query(path, sql, &opts).map_err(|e| e.to_string())?;
    let text = match format {
        Format::Table => arrow::util::pretty::pretty_format_batches(&batches)
            .map_err(|e| e.to_string())?
            .to_string(),
        Format::Json => {
            let mut w = arrow::json::ArrayWriter::new(Vec::new());
            for b in &batches {
                w.write(b).map_err(|e| e.to_string())?;
            }
            w.finish().map_err(|e| e.to_string())?;
            let out = String::from_utf8_lossy(&w.into_inner()).into_owned();
            // An empty result is an empty array, not nothing.
            if out.is_empty() {
                "[]".into()
            } else {
                out
            }
        }
        Format::Csv => {
            let mut buf = Vec::new();
            {
                let mut w = arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut buf);
                for b in &batches {
                    w.write(b).map_err(|e| e.to_string())?;
                }
            }
            String::from_utf8_lossy(&buf).trim_end().to_string()
        }
    };
    outln!("{text}");
    Ok(())
}
