//! tersedb files as DataFusion tables.
//!
//! One named database of a tersedb file (or of every file of a directory) is a table with the
//! columns `key` and, when the database has records, `record`, typed from its configuration:
//!
//! ```text
//! key:    u32 -> UInt32   u64 -> UInt64   Binary(n) -> FixedSizeBinary(n)   VarBinary -> Binary
//! record: value type u32 -> UInt32, u64 -> UInt64, i64 -> Int64, f64 -> Float64; else Binary
//! file:   (directory tables) Utf8, the file's name without its extension
//! ```
//!
//! What the engine does instead of DataFusion:
//! - projection and LIMIT: a scan reads only the columns asked for and stops at the limit;
//! - key predicates (`=`, `<`, `BETWEEN`, `IN`, `AND`/`OR`/`NOT` of them, with SQL's NULL rules)
//!   and predicates on the file column become key intervals for the tree's range scan, pushed
//!   down as `Exact` ([`filter`]); files whose interval set is empty are not read;
//! - `statistics()`: exact row count and key range;
//! - COUNT/SUM/MIN/MAX/AVG over a scan, without GROUP BY or per `GROUP BY key / N` bucket:
//!   answered by the engine's in-tree fold (keys) or query executor (records, buckets), never
//!   decoded into Arrow arrays ([`aggregate`]; needs the [`TerseAggregateRule`], which
//!   [`session`] installs).
//!
//! A directory is one table with one partition per file, scanned in parallel; the file column
//! says which file a row came from and predicates on it prune files.
//!
//! A query repeated with other values ([`prepare`], `$1`, `$2`, ...) is planned once when its
//! parameters only bound pushed-down key and file predicates ([`prepared`]).
//!
//! ```no_run
//! # async fn f() -> datafusion::error::Result<()> {
//! let ctx = tersedb_datafusion::session(Default::default());
//! tersedb_datafusion::register_all(&ctx, "events.tdb".as_ref(), &Default::default())?;
//! ctx.sql("SELECT SUM(key) FROM events WHERE key BETWEEN 10 AND 20").await?.show().await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod aggregate;
pub mod filter;
pub mod prepared;
pub mod scan;
pub mod table;

pub use aggregate::{TerseAggregateExec, TerseAggregateRule};
/// The DataFusion this crate is built against (for its Arrow and session types).
pub use datafusion;
pub use prepared::{prepare, Prepared};
pub use scan::TerseScanExec;
pub use table::{TableOptions, TerseTable};

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use std::path::Path;
use std::sync::Arc;

/// The key column's name.
pub const KEY: &str = "key";
/// The record column's name.
pub const RECORD: &str = "record";

/// A DataFusion session with the aggregate push-down rule installed, `config` otherwise as
/// given (`SessionConfig::default()`: one target partition per core).
pub fn session(config: SessionConfig) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(TerseAggregateRule))
        .build();
    SessionContext::new_with_state(state)
}

/// Registers every database of the file or directory at `path` as a table of the same name
/// (in a directory: the databases every file has). Returns the names registered.
pub fn register_all(
    ctx: &SessionContext,
    path: &Path,
    opts: &TableOptions,
) -> datafusion::error::Result<Vec<String>> {
    // Each file opened once, its environment shared by the tables.
    let files = table::open_files(path)?;
    let names = table::common_names(&files)?;
    for name in &names {
        let t = TerseTable::from_envs(files.envs.clone(), files.dir, name, opts.clone())?;
        ctx.register_table(
            datafusion::common::TableReference::bare(name.as_str()),
            Arc::new(t),
        )?;
    }
    Ok(names)
}

/// Runs one SQL statement over the databases of the file or directory at `path` (each a table
/// named after it), with the push-downs, on a multi-threaded runtime: the blocking front door
/// for programs that are not async (the `tersedb sql` command).
pub fn query(
    path: &Path,
    sql: &str,
    opts: &TableOptions,
) -> datafusion::error::Result<Vec<datafusion::arrow::array::RecordBatch>> {
    let ctx = session(SessionConfig::new());
    register_all(&ctx, path, opts)?;
    runtime()?.block_on(async { ctx.sql(sql).await?.collect().await })
}

/// The multi-threaded runtime [`query`] runs on, started by its first call and kept for the
/// process (starting one costs a thread per core every call).
fn runtime() -> datafusion::error::Result<&'static tokio::runtime::Runtime> {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .build()
        .map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
    Ok(RT.get_or_init(|| rt))
}
