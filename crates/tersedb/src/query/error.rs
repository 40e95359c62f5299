//! Errors of the query language: what is wrong and where (a 1-based character column of the
//! query text, when the query came from text).

use std::fmt;

/// A query that cannot run: bad syntax, a type error (such as `SUM(record)` on a database
/// whose records are bytes), or arithmetic that overflows or divides by zero.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueryError {
    Syntax {
        at: u32,
        what: String,
    },
    Type {
        at: Option<u32>,
        what: String,
    },
    Arithmetic {
        at: Option<u32>,
        what: String,
    },
    /// A database or column that does not exist (with a suggestion when one is close).
    UnknownName {
        what: String,
    },
}

impl QueryError {
    /// The 1-based character column the error points at, if known.
    pub fn column(&self) -> Option<u32> {
        match self {
            QueryError::Syntax { at, .. } => Some(*at),
            QueryError::Type { at, .. } | QueryError::Arithmetic { at, .. } => *at,
            QueryError::UnknownName { .. } => None,
        }
    }
}

fn at(f: &mut fmt::Formatter<'_>, at: Option<u32>) -> fmt::Result {
    match at {
        Some(c) => write!(f, " at column {c}"),
        None => Ok(()),
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Syntax { at: c, what } => {
                f.write_str("syntax error")?;
                at(f, Some(*c))?;
                write!(f, ": {what}")
            }
            QueryError::Type { at: c, what } => {
                f.write_str("type error")?;
                at(f, *c)?;
                write!(f, ": {what}")
            }
            QueryError::UnknownName { what } => f.write_str(what),
            QueryError::Arithmetic { at: c, what } => {
                f.write_str("arithmetic error")?;
                at(f, *c)?;
                write!(f, ": {what}")
            }
        }
    }
}

impl std::error::Error for QueryError {}
