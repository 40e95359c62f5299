//! `import tersedb`: the Python package's native module (`tersedb._tersedb`).
//!
//! ```text
//! tersedb.open(path) -> Env --create_db/db--> Db (a handle, valid in every transaction)
//!                       Env.write() -> WriteTxn   put/erase (one key or a numpy array of keys)
//!                       Env.read()  -> ReadTxn    get/range/sum/query (snapshot, shareable)
//!                       ReadTxn.execute(text) -> QueryResult   rows and groups of a query
//! ```
//!
//! A thin layer over the Rust API: each method converts its arguments, releases the GIL, makes
//! the same engine calls a Rust program would, and converts the result (numpy arrays are handed
//! the Rust `Vec` without a copy). `unsafe` lives in pyo3 and numpy, not here.

#![forbid(unsafe_code)]

mod arrays;
mod config;
mod env;
mod errors;
mod ops;
mod read;
mod rows;
mod write;

use pyo3::prelude::*;

#[pymodule]
fn _tersedb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(env::open, m)?)?;
    m.add_function(wrap_pyfunction!(env::in_memory, m)?)?;
    m.add_class::<env::Env>()?;
    m.add_class::<env::Db>()?;
    m.add_class::<read::ReadTxn>()?;
    m.add_class::<read::Range>()?;
    m.add_class::<read::Iter>()?;
    m.add_class::<rows::QueryResult>()?;
    m.add_class::<write::WriteTxn>()?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
