//! Query results in Python: `query()` gives the one row of an aggregate query as a dict;
//! `execute()` gives any query (aggregates, rows, groups) as a [`QueryResult`], a table read as
//! tuples (the sqlite3 habit) or as columns (numpy arrays, as `ReadTxn.range` returns them).
//!
//! ```text
//! execute(text) -> QueryResult  .columns  ["key", "record"]
//!                               .rows     [(1, 10), (2, 20)]     also len(), iteration, [i]
//!                               .to_dict() {"key": array([1, 2]), "record": array([10, 20])}
//!                               .to_pandas() / .to_arrow() / .to_polars()
//! ```

use crate::ops;
use numpy::PyArray1;
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tersedb::Value;

/// The one row of an aggregate query as `{column: value}`; a row or GROUP BY query is a
/// `QueryError` pointing at `execute()` (a dict cannot hold its rows).
pub fn aggregates_dict<'py>(
    py: Python<'py>,
    r: &tersedb::QueryResult,
) -> PyResult<Bound<'py, PyDict>> {
    if r.is_rows() {
        return Err(crate::errors::QueryError::new_err(
            "this query returns rows (SELECT key/record or GROUP BY): run it with execute(), \
             which returns a QueryResult; query() returns the one row of an aggregate query \
             as a dict",
        ));
    }
    let d = PyDict::new(py);
    for (c, v) in r.columns.iter().zip(&r.values) {
        d.set_item(c.as_ref(), ops::value_to_py(py, v)?)?;
    }
    Ok(d)
}

/// The result of `execute()`: a table of `len(result)` rows and `len(result.columns)` columns.
/// An aggregate query is one row (NULLs, such as the AVG of an empty selection, are None); a
/// row query one row per entry, a GROUP BY query one per non-empty group, in the query's
/// order. Values are int, float, bytes (string keys, byte records), None, or a list (TOP,
/// BOTTOM). `str(result)` prints it as a table.
#[pyclass(frozen, module = "tersedb", name = "QueryResult")]
pub struct QueryResult {
    /// Invariant: `is_rows()` or exactly one row in `values` (see `tersedb::QueryResult`).
    inner: tersedb::QueryResult,
}

impl QueryResult {
    pub fn new(inner: tersedb::QueryResult) -> QueryResult {
        QueryResult { inner }
    }

    /// The number of rows (one for an aggregate query).
    fn n_rows(&self) -> usize {
        if self.inner.is_rows() {
            self.inner.rows.len()
        } else {
            1
        }
    }

    fn row<'py>(&self, py: Python<'py>, r: &[Value]) -> PyResult<Bound<'py, PyTuple>> {
        let items = r
            .iter()
            .map(|v| ops::value_to_py(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// Columns `which` as numpy arrays where a column's values are all integers (int64, or
    /// uint64 when one is above the int64 range) or all floats (float64), else as lists (NULLs
    /// as None). The numeric ones are built in one pass over the rows.
    fn columns_at(&self, py: Python<'_>, which: &[usize]) -> PyResult<Vec<Py<PyAny>>> {
        let inner = &self.inner;
        // Plain Rust over the result: without the GIL, as every engine call.
        let built = py.detach(|| numeric_columns(inner, which));
        which
            .iter()
            .zip(built)
            .map(|(&i, b)| match b {
                Some(Numeric::I64(v)) => Ok(PyArray1::from_vec(py, v).into_any().unbind()),
                Some(Numeric::U64(v)) => Ok(PyArray1::from_vec(py, v).into_any().unbind()),
                Some(Numeric::F64(v)) => Ok(PyArray1::from_vec(py, v).into_any().unbind()),
                None => {
                    let items = cells(inner, i)
                        .map(|v| ops::value_to_py(py, v))
                        .collect::<PyResult<Vec<_>>>()?;
                    Ok(PyList::new(py, items)?.into_any().unbind())
                }
            })
            .collect()
    }

    fn index_of(&self, c: &Bound<'_, PyAny>) -> PyResult<usize> {
        let names = &self.inner.columns;
        if let Ok(name) = c.extract::<String>() {
            return names.iter().position(|n| *n == name).ok_or_else(|| {
                PyKeyError::new_err(format!(
                    "no column {name:?}; the columns are {}",
                    names
                        .iter()
                        .map(|n| format!("{n:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            });
        }
        if let Ok(i) = c.extract::<isize>() {
            let n = names.len() as isize;
            let j = if i < 0 { i + n } else { i };
            if (0..n).contains(&j) {
                return Ok(j as usize);
            }
            return Err(PyIndexError::new_err(format!(
                "column {i} of a result of {n} columns"
            )));
        }
        Err(PyTypeError::new_err(
            "a column is named by its name (str) or its index (int)",
        ))
    }
}

#[pymethods]
impl QueryResult {
    /// Column names, in the order of the SELECT list (an alias of `AS`, else the item as it
    /// prints: "COUNT(*)", "key / 60").
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner.columns.iter().map(|c| c.to_string()).collect()
    }

    /// Every row as a tuple (a new list on each access).
    #[getter]
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = cells_of(&self.inner)
            .map(|r| self.row(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }

    fn __len__(&self) -> usize {
        self.n_rows()
    }

    /// Row `i` (negative counts from the end) as a tuple.
    fn __getitem__<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.n_rows() as isize;
        let j = if i < 0 { i + n } else { i };
        let row = match usize::try_from(j) {
            Ok(j) if self.inner.is_rows() => self.inner.rows.get(j).map(Vec::as_slice),
            Ok(0) => Some(&self.inner.values[..]),
            _ => None,
        };
        match row {
            Some(r) => self.row(py, r),
            None => Err(PyIndexError::new_err(format!(
                "row {i} of a result of {n} rows"
            ))),
        }
    }

    /// Iterates over the rows as tuples.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.rows(py)?.try_iter()?.into_any().unbind())
    }

    /// One column by name or index: a numpy array when all its values are integers (int64;
    /// uint64 when one is above the int64 range; an empty column is int64) or all floats
    /// (float64), else a list (NULLs as None, bytes, lists).
    fn column(&self, py: Python<'_>, c: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let i = self.index_of(c)?;
        let mut one = self.columns_at(py, &[i])?;
        Ok(one.remove(0))
    }

    /// `{name: column}` for every column, as `column()` makes them. Two columns of one name
    /// (`SELECT key, key`) are a ValueError: name them apart with AS.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let names = &self.inner.columns;
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(PyValueError::new_err(format!(
                    "two columns are named {name:?}; name them apart with AS"
                )));
            }
        }
        let all: Vec<usize> = (0..names.len()).collect();
        let d = PyDict::new(py);
        for (name, col) in names.iter().zip(self.columns_at(py, &all)?) {
            d.set_item(name.as_ref(), col)?;
        }
        Ok(d)
    }

    /// A pandas DataFrame of the columns (needs pandas).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = py.import("pandas")?;
        pd.getattr("DataFrame")?.call1((self.to_dict(py)?,))
    }

    /// A pyarrow Table of the columns (needs pyarrow).
    fn to_arrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pa = py.import("pyarrow")?;
        pa.getattr("table")?.call1((self.to_dict(py)?,))
    }

    /// A polars DataFrame of the columns (needs polars).
    fn to_polars<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pl = py.import("polars")?;
        pl.getattr("DataFrame")?.call1((self.to_dict(py)?,))
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        let n = self.n_rows();
        format!(
            "QueryResult({n} row{}: {})",
            if n == 1 { "" } else { "s" },
            self.inner.columns.join(", ")
        )
    }
}

/// Every row of `r`, in order (the one row of an aggregate query).
fn cells_of(r: &tersedb::QueryResult) -> impl Iterator<Item = &[Value]> + Clone {
    let (rows, one) = if r.is_rows() {
        (&r.rows[..], None)
    } else {
        (&[][..], Some(&r.values[..]))
    };
    rows.iter().map(Vec::as_slice).chain(one)
}

/// Cell `i` of every row of `r`, in order.
fn cells(r: &tersedb::QueryResult, i: usize) -> impl Iterator<Item = &Value> {
    cells_of(r).filter_map(move |row| row.get(i))
}

/// A column of one numeric type, the vector numpy takes over.
enum Numeric {
    I64(Vec<i64>),
    U64(Vec<u64>),
    F64(Vec<f64>),
}

/// A column being built by [`numeric_columns`].
enum Build {
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// Integers, one above the int64 range: uint64 if they all fit.
    Wide,
    /// Not all of one numeric kind (NULLs, bytes, lists, a mix).
    Other,
}

/// Columns `which` of `r`, each as one vector when every cell is an integer in the int64 range
/// (else, all in the uint64 range) or every cell a float; `None` for the others. One pass over
/// the rows fills every column's final vector (a row is its own allocation: one pass per column
/// would walk them all again); only a column with a value above int64 takes a second.
fn numeric_columns(r: &tersedb::QueryResult, which: &[usize]) -> Vec<Option<Numeric>> {
    let n = if r.is_rows() { r.rows.len() } else { 1 };
    let mut rows = cells_of(r);
    let first = rows.clone().next();
    // The first row decides each column's kind; an empty result is int64 throughout.
    let mut b: Vec<Build> = which
        .iter()
        .map(|&i| match first.map(|row| row.get(i)) {
            None => Build::I64(Vec::new()),
            Some(Some(Value::Int(_))) => Build::I64(Vec::with_capacity(n)),
            Some(Some(Value::Float(_))) => Build::F64(Vec::with_capacity(n)),
            Some(_) => Build::Other,
        })
        .collect();
    for row in &mut rows {
        for (col, &i) in b.iter_mut().zip(which) {
            match (&mut *col, row.get(i)) {
                (Build::I64(v), Some(Value::Int(x))) => match i64::try_from(*x) {
                    Ok(x) => v.push(x),
                    Err(_) => *col = Build::Wide,
                },
                (Build::F64(v), Some(Value::Float(x))) => v.push(*x),
                (Build::Wide | Build::Other, _) => {}
                _ => *col = Build::Other,
            }
        }
    }
    b.into_iter()
        .zip(which)
        .map(|(col, &i)| match col {
            Build::I64(v) => Some(Numeric::I64(v)),
            Build::F64(v) => Some(Numeric::F64(v)),
            Build::Wide => cells(r, i)
                .map(|c| match c {
                    Value::Int(x) => u64::try_from(*x).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>()
                .map(Numeric::U64),
            Build::Other => None,
        })
        .collect()
}
