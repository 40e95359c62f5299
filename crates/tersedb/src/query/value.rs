//! Query results: one [`Value`] per aggregate (aggregate queries), or rows of values (row and
//! GROUP BY queries), with the statistics of the run. [`QueryResult`] prints as a table.

use std::borrow::Cow;
use std::fmt;

/// The value of one aggregate.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// AVG, MIN and MAX of an empty selection.
    Null,
    /// Counts, sums and integer MIN/MAX/TOP/BOTTOM values (exact).
    Int(i128),
    /// AVG, and anything over f64 records.
    Float(f64),
    /// TOP and BOTTOM (empty for an empty selection).
    List(Vec<Value>),
    /// A string key or a byte record (rows, MIN/MAX of string keys).
    Bytes(Vec<u8>),
}

impl Value {
    /// The integer, if the value is one.
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }
    /// The number as f64 (integers convert), if the value is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
    /// Whether the value is NULL (an aggregate of an empty selection).
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as JSON: integers exact, floats in the shortest form that reads back the
    /// same, non-finite floats (an f64 sum that overflowed) as `null`.
    pub fn to_json(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Int(v) => v.to_string(),
            Value::Float(v) if v.is_finite() => format!("{v:?}"),
            Value::Float(_) => "null".into(),
            Value::List(l) => {
                let items: Vec<String> = l.iter().map(Value::to_json).collect();
                format!("[{}]", items.join(","))
            }
            Value::Bytes(b) => json_str(&bytes_text(b)),
        }
    }
}

/// Bytes as text: UTF-8 as it is, anything else as `0x` and hex digits.
pub fn bytes_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut o = String::from("0x");
            for x in b {
                o.push_str(&format!("{x:02x}"));
            }
            o
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::List(l) => {
                f.write_str("[")?;
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Bytes(b) => f.write_str(&bytes_text(b)),
        }
    }
}

/// What a query read (summed over its subqueries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Leaves visited (their key range overlaps the selected key intervals).
    pub leaves: u64,
    /// Blocks of visited leaves skipped by the zone map (outside every interval).
    pub blocks_skipped: u64,
    /// Blocks wholly inside an interval answered from the zone map alone (COUNT, MIN, MAX).
    pub blocks_from_index: u64,
    /// Blocks whose keys were decoded or folded.
    pub blocks_decoded: u64,
    /// Subqueries run.
    pub subqueries: u64,
    /// Compressed record chunks whose bounds made the condition on `record` false for every
    /// record: none of their records read (nor keys, in key blocks lying wholly in them).
    pub record_chunks_skipped: u64,
    /// Compressed record chunks whose bounds made the condition on `record` true for every
    /// record: folded as if it were absent (no record tested).
    pub record_chunks_folded: u64,
}

impl QueryStats {
    pub(crate) fn add(&mut self, o: &QueryStats) {
        self.leaves += o.leaves;
        self.blocks_skipped += o.blocks_skipped;
        self.blocks_from_index += o.blocks_from_index;
        self.blocks_decoded += o.blocks_decoded;
        self.subqueries += o.subqueries;
        self.record_chunks_skipped += o.record_chunks_skipped;
        self.record_chunks_folded += o.record_chunks_folded;
    }
}

/// The result of a query. An aggregate query has one value per column in `values` and no
/// `rows`; a row or GROUP BY query has its rows in `rows` (each as long as `columns`) and no
/// `values`. Columns are named by their alias, else as the item prints.
///
/// ```
/// # use tersedb::{Env, EnvOptions, Table, Value};
/// # let env = Env::in_memory(&EnvOptions::default())?;
/// let mut w = env.begin_write()?;
/// let ids = w.open_table(Table::<u32, ()>::def("ids"))?;
/// for id in [3, 5, 8] {
///     ids.put(&mut w, id, ())?;
/// }
/// let r = w.query_str("SELECT COUNT(*) AS n, AVG(key) FROM ids")?;
/// assert!(!r.is_rows());
/// assert_eq!(r.columns, ["n", "AVG(key)"]);
/// assert_eq!(r.values, [Value::Int(3), Value::Float(16.0 / 3.0)]);
/// assert_eq!(r.to_json(), r#"{"columns":["n","AVG(key)"],"values":[3,5.333333333333333]}"#);
/// let rows = w.query_str("SELECT key FROM ids WHERE key > 3")?;
/// assert!(rows.is_rows());
/// assert_eq!(rows.to_csv(), "key\r\n5\r\n8\r\n");
/// # Ok::<(), tersedb::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// Borrowed names for the usual aggregates: a query that returns one makes no string.
    pub columns: Vec<Cow<'static, str>>,
    /// Aggregate queries: the one row.
    pub values: Vec<Value>,
    /// Row and GROUP BY queries: the rows, in order.
    pub rows: Vec<Vec<Value>>,
    /// What the executor read: blocks decoded, skipped, answered from the index.
    pub stats: QueryStats,
}

impl QueryResult {
    /// Whether the query returned rows (a row or GROUP BY query) rather than one row of
    /// aggregates.
    pub fn is_rows(&self) -> bool {
        self.values.is_empty() && !self.columns.is_empty()
    }

    /// Every row: the rows of a row or GROUP BY query, or the one row of aggregates.
    pub fn all_rows(&self) -> Vec<&[Value]> {
        if self.is_rows() {
            self.rows.iter().map(Vec::as_slice).collect()
        } else {
            vec![&self.values[..]]
        }
    }

    /// Aggregates: `{"columns": [...], "values": [...]}`; rows and groups:
    /// `{"columns": [...], "rows": [[...], ...]}`.
    pub fn to_json(&self) -> String {
        let cols: Vec<String> = self.columns.iter().map(|c| json_str(c)).collect();
        let row = |r: &[Value]| {
            let vals: Vec<String> = r.iter().map(Value::to_json).collect();
            format!("[{}]", vals.join(","))
        };
        if self.is_rows() {
            let rows: Vec<String> = self.rows.iter().map(|r| row(r)).collect();
            format!(
                "{{\"columns\":[{}],\"rows\":[{}]}}",
                cols.join(","),
                rows.join(",")
            )
        } else {
            format!(
                "{{\"columns\":[{}],\"values\":{}}}",
                cols.join(","),
                row(&self.values)
            )
        }
    }

    /// CSV (RFC 4180): a header line of the column names, then one line per row; NULL is an
    /// empty field, lists are written as they print (`[1, 2]`, quoted).
    pub fn to_csv(&self) -> String {
        let mut o = String::new();
        let line = |o: &mut String, cells: &mut dyn Iterator<Item = String>| {
            let v: Vec<String> = cells.map(|c| csv_field(&c)).collect();
            o.push_str(&v.join(","));
            o.push_str("\r\n");
        };
        line(&mut o, &mut self.columns.iter().map(|c| c.to_string()));
        for r in self.all_rows() {
            line(
                &mut o,
                &mut r.iter().map(|v| match v {
                    Value::Null => String::new(),
                    v => v.to_string(),
                }),
            );
        }
        o
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A table: a header row of the column names, a rule, then the rows (`(n rows)` below row and
/// group results).
impl fmt::Display for QueryResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: Vec<Vec<String>> = self
            .all_rows()
            .iter()
            .map(|r| r.iter().map(|v| v.to_string()).collect())
            .collect();
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            let s = cells
                .zip(&widths)
                .map(|(c, &w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join(" | ");
            s.trim_end().to_string()
        };
        f.write_str(&line(&mut self.columns.iter().map(|c| c.as_ref())))?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        write!(f, "\n{}", rule.join("-+-"))?;
        for r in &rows {
            write!(f, "\n{}", line(&mut r.iter().map(String::as_str)))?;
        }
        if self.is_rows() {
            let n = self.rows.len();
            write!(f, "\n({n} row{})", if n == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn tables_json_and_csv() {
        let agg = QueryResult {
            columns: vec!["COUNT(*)".into(), "AVG(key)".into()],
            values: vec![Value::Int(7), Value::Float(1234567890.5)],
            rows: Vec::new(),
            stats: QueryStats::default(),
        };
        assert_eq!(
            agg.to_string(),
            "COUNT(*) | AVG(key)\n---------+-------------\n7        | 1234567890.5"
        );
        assert_eq!(
            agg.to_json(),
            "{\"columns\":[\"COUNT(*)\",\"AVG(key)\"],\"values\":[7,1234567890.5]}"
        );
        let rows = QueryResult {
            columns: vec!["key".into(), "record".into()],
            values: Vec::new(),
            rows: vec![
                vec![Value::Bytes(b"a,b".to_vec()), Value::Null],
                vec![
                    Value::Bytes(vec![0xff]),
                    Value::List(vec![Value::Int(1), Value::Int(2)]),
                ],
            ],
            stats: QueryStats::default(),
        };
        assert!(rows.is_rows());
        assert_eq!(
            rows.to_string(),
            "key  | record\n-----+-------\na,b  | NULL\n0xff | [1, 2]\n(2 rows)"
        );
        assert_eq!(
            rows.to_json(),
            "{\"columns\":[\"key\",\"record\"],\"rows\":[[\"a,b\",null],[\"0xff\",[1,2]]]}"
        );
        assert_eq!(
            rows.to_csv(),
            "key,record\r\n\"a,b\",\r\n0xff,\"[1, 2]\"\r\n"
        );
        let none = QueryResult {
            rows: Vec::new(),
            ..rows
        };
        assert!(none.is_rows());
        assert!(none.to_string().ends_with("(0 rows)"));
    }
}
