//! Analytic queries: a small language (`SELECT AVG(key) FROM events WHERE key > 1000000`) and
//! its executor, which runs aggregates inside the B+-tree block by block.
//!
//! ```text
//! text --parse.rs--> ast::Query --exec.rs--> QueryResult
//!                         ^ built in code as well
//! exec: subqueries and constants folded -> predicate in negation normal form
//!       -> key intervals (a sorted union of disjoint [lo, hi]) + residual filter
//!       -> descent by key to the leaves overlapping the intervals -> btree::scan blocks
//! ```
//!
//! The text of a query is untrusted: the lexer, parser and planner return errors, never panic
//! (indexing, `unwrap`, `expect` and `panic!` are denied outside the unit tests).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

pub mod ast;
pub mod error;
pub(crate) mod exec;
pub mod parse;
pub(crate) mod plan;
pub(crate) mod suggest;
pub mod value;

use crate::error::Result;
pub use ast::{
    AggFunc, Aggregate, ArithOp, At, CmpOp, Column, Expr, GroupBy, Item, Pred, Query, SelectItem,
};
pub use error::QueryError;
pub use value::{QueryResult, QueryStats, Value};

// The query entry points of the transactions live here, above them: `txn` knows nothing of
// queries (no import circle between the two).
impl crate::txn::ReadTxn {
    /// Runs a query (see [`crate::query`]): aggregates computed inside the tree, block by
    /// block, in this snapshot.
    pub fn query(&self, q: &Query) -> Result<QueryResult> {
        exec::run(self, q)
    }

    /// Parses and runs the text of a query:
    /// `txn.query_str("SELECT COUNT(*), AVG(key) FROM events WHERE key > 1000")`.
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table, Value};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let delay = w.open_table(Table::<u64, i64>::def("delay"))?;
    /// for (t, d) in [(0, 4), (3_600, 12), (86_400, 6), (90_000, -2)] {
    ///     delay.put(&mut w, t, d)?;
    /// }
    /// w.commit()?;
    /// let r = env.begin_read()?;
    /// // One aggregate row: `values`.
    /// let all = r.query_str("SELECT COUNT(*), MAX(record) FROM delay")?;
    /// assert_eq!(all.values, [Value::Int(4), Value::Int(12)]);
    /// // One row per day: `rows`; `Display` prints a table.
    /// let days = r.query_str(
    ///     "SELECT key / 86400 AS day, SUM(record) AS total FROM delay GROUP BY key / 86400",
    /// )?;
    /// assert_eq!(days.rows, [[Value::Int(0), Value::Int(16)], [Value::Int(1), Value::Int(4)]]);
    /// assert_eq!(
    ///     days.to_string(),
    ///     "day | total\n----+------\n0   | 16\n1   | 4\n(2 rows)"
    /// );
    /// // Rows of entries, newest first.
    /// let last = r.query_str("SELECT key, record FROM delay ORDER BY key DESC LIMIT 1")?;
    /// assert_eq!(last.rows, [[Value::Int(90_000), Value::Int(-2)]]);
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn query_str(&self, text: &str) -> Result<QueryResult> {
        self.query(&Query::parse(text)?)
    }
}

impl crate::txn::WriteTxn {
    /// Runs a query on the state as of now, this transaction's changes included (see
    /// [`ReadTxn::query`](crate::ReadTxn::query)).
    ///
    /// ```
    /// # use tersedb::{Env, EnvOptions, Table, Value};
    /// # let env = Env::in_memory(&EnvOptions::default())?;
    /// let mut w = env.begin_write()?;
    /// let t = w.open_table(Table::<u32, i64>::def("t"))?;
    /// t.put(&mut w, 1, -5)?;
    /// t.put(&mut w, 2, 7)?;
    /// let r = w.query_str("SELECT SUM(record) FROM t")?;
    /// assert_eq!(r.values[0], Value::Int(2));
    /// # Ok::<(), tersedb::Error>(())
    /// ```
    pub fn query(&self, q: &Query) -> Result<QueryResult> {
        self.w()?;
        exec::run(self, q)
    }

    /// Parses and runs the text of a query on the state as of now (see
    /// [`WriteTxn::query`](crate::WriteTxn::query)).
    pub fn query_str(&self, text: &str) -> Result<QueryResult> {
        self.query(&Query::parse(text)?)
    }
}
