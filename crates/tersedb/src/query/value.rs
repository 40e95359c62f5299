//! Query results: one [`Value`] per aggregate, with the statistics of the run.

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
}

impl Value {
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            _ => None,
        }
    }
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
}

impl QueryStats {
    pub(crate) fn add(&mut self, o: &QueryStats) {
        self.leaves += o.leaves;
        self.blocks_skipped += o.blocks_skipped;
        self.blocks_from_index += o.blocks_from_index;
        self.blocks_decoded += o.blocks_decoded;
        self.subqueries += o.subqueries;
    }
}

/// The result of a query: one column per aggregate, named as the aggregate prints.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResult {
    /// Borrowed names for the usual aggregates: a query that returns one makes no string.
    pub columns: Vec<Cow<'static, str>>,
    pub values: Vec<Value>,
    pub stats: QueryStats,
}

impl QueryResult {
    /// `{"columns": [...], "values": [...]}`.
    pub fn to_json(&self) -> String {
        let cols: Vec<String> = self.columns.iter().map(|c| json_str(c)).collect();
        let vals: Vec<String> = self.values.iter().map(Value::to_json).collect();
        format!(
            "{{\"columns\":[{}],\"values\":[{}]}}",
            cols.join(","),
            vals.join(",")
        )
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
