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

    fn table(&self) -> Vec<&[Value]> {
        self.inner.all_rows()
    }

    fn row<'py>(&self, py: Python<'py>, r: &[Value]) -> PyResult<Bound<'py, PyTuple>> {
        let items = r
            .iter()
            .map(|v| ops::value_to_py(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// Column `i` as a numpy array when its values are all integers (int64, or uint64 when one
    /// is above the int64 range) or all floats (float64), else as a list (NULLs as None).
    fn column_at(&self, py: Python<'_>, i: usize) -> PyResult<Py<PyAny>> {
        let vals: Vec<&Value> = self.table().iter().map(|r| &r[i]).collect();
        let ints: Option<Vec<i128>> = vals.iter().map(|v| v.as_int()).collect();
        if let Some(ints) = ints {
            let i64s: Option<Vec<i64>> = ints.iter().map(|&x| i64::try_from(x).ok()).collect();
            if let Some(v) = i64s {
                return Ok(PyArray1::from_vec(py, v).into_any().unbind());
            }
            let u64s: Option<Vec<u64>> = ints.iter().map(|&x| u64::try_from(x).ok()).collect();
            if let Some(v) = u64s {
                return Ok(PyArray1::from_vec(py, v).into_any().unbind());
            }
        }
        let floats: Option<Vec<f64>> = vals
            .iter()
            .map(|v| match v {
                Value::Float(f) => Some(*f),
                _ => None,
            })
            .collect();
        if let Some(v) = floats {
            return Ok(PyArray1::from_vec(py, v).into_any().unbind());
        }
        let items = vals
            .iter()
            .map(|v| ops::value_to_py(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.into_any().unbind())
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
        let rows = self
            .table()
            .into_iter()
            .map(|r| self.row(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }

    fn __len__(&self) -> usize {
        self.table().len()
    }

    /// Row `i` (negative counts from the end) as a tuple.
    fn __getitem__<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyTuple>> {
        let t = self.table();
        let n = t.len() as isize;
        let j = if i < 0 { i + n } else { i };
        match usize::try_from(j).ok().and_then(|j| t.get(j)) {
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
        self.column_at(py, i)
    }

    /// `{name: column}` for every column, as `column()` makes them. Two columns of one name
    /// (`SELECT key, key`) are a ValueError: name them apart with AS.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (i, name) in self.inner.columns.iter().enumerate() {
            if d.contains(name.as_ref())? {
                return Err(PyValueError::new_err(format!(
                    "two columns are named {name:?}; name them apart with AS"
                )));
            }
            d.set_item(name.as_ref(), self.column_at(py, i)?)?;
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
        let n = self.table().len();
        format!(
            "QueryResult({n} row{}: {})",
            if n == 1 { "" } else { "s" },
            self.inner.columns.join(", ")
        )
    }
}
