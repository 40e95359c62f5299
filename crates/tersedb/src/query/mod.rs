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

pub mod ast;
pub mod error;
pub mod exec;
pub mod parse;
pub(crate) mod plan;
pub(crate) mod strkeys;
pub(crate) mod suggest;
pub mod value;

pub use ast::{
    AggFunc, Aggregate, ArithOp, At, CmpOp, Column, Expr, GroupBy, Item, Pred, Query, SelectItem,
};
pub use error::QueryError;
pub use value::{QueryResult, QueryStats, Value};
