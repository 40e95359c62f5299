//! The table: one named database of one file, or of every file of a directory (one partition
//! per file), with its Arrow schema, exact statistics and the filters it takes over.

use crate::filter::{self, Ivs, KeyCtx};
use crate::scan::{Part, TerseScanExec};
use crate::{KEY, RECORD};
use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, DataFusionError, Result, ScalarValue, Statistics};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tersedb::{Db, DbConfig, Env, EnvOptions, KeyType, ReadTxn, RecordType, ValueType};

/// How a table reads its files.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Rows per record batch a scan produces.
    pub batch_size: usize,
    /// Key predicates pushed into the range scan and exact statistics (`false`: DataFusion
    /// filters every row itself and knows nothing of the data, for comparisons).
    pub pushdown: bool,
    /// Name of the column holding each row's file name (directory tables).
    pub file_column: String,
    /// Fewest selected keys per piece when a pushed-down aggregate splits a file's fold into
    /// key ranges folded on parallel threads: a file gets as many pieces as it has
    /// `split_rows` selected keys, at most its share of the session's target partitions.
    /// Default `u64::MAX`: never split (on the shared 2-core machine of the benchmarks a fold
    /// split in two took longer than whole; `1 << 19` is a start where cores are idle).
    pub split_rows: u64,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            batch_size: 8192,
            pushdown: true,
            file_column: "file".into(),
            split_rows: u64::MAX,
        }
    }
}

/// One file of the table: its name for the file column, and its open environment.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    pub name: String,
    pub env: Env,
}

/// A database of one or more tersedb files as a DataFusion table.
#[derive(Clone, Debug)]
pub struct TerseTable {
    pub(crate) db: String,
    pub(crate) config: DbConfig,
    pub(crate) sources: Vec<Source>,
    /// Whether the table has the file column (it was opened from a directory).
    pub(crate) file_column: bool,
    pub(crate) schema: SchemaRef,
    pub(crate) opts: TableOptions,
}

/// The files of `path`: the file itself, or the regular files of a directory in name order
/// (hidden files skipped).
fn files_of(path: &Path) -> Result<(Vec<PathBuf>, bool)> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if !meta.is_dir() {
        return Ok((vec![path.to_path_buf()], false));
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| io_err(path, e))? {
        let entry = entry.map_err(|e| io_err(path, e))?;
        let p = entry.path();
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.'));
        if !hidden && entry.file_type().map_err(|e| io_err(&p, e))?.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "{}: no tersedb files in the directory",
            path.display()
        )));
    }
    Ok((files, true))
}

fn io_err(p: &Path, e: std::io::Error) -> DataFusionError {
    DataFusionError::External(format!("{}: {e}", p.display()).into())
}

fn engine_err(p: &str, e: tersedb::Error) -> DataFusionError {
    DataFusionError::External(format!("{p}: {e}").into())
}

/// Opens a file, its errors naming the path once: the engine's open errors that name it
/// already (`cannot open P: ...`, `P is not a regular file ...`) as they are, the others after
/// `P: ` (the rule of the CLI's `store::open_error`).
fn open_env(p: &Path) -> Result<Env> {
    Env::open_read_only(p, &EnvOptions::default()).map_err(|e| {
        let s = p.display().to_string();
        let named = match &e {
            tersedb::Error::Io(io) => io.to_string().starts_with(&format!("cannot open {s}")),
            tersedb::Error::BadFormat(w) => w.starts_with(&format!("{s} is ")),
            _ => false,
        };
        if named {
            DataFusionError::External(e.to_string().into())
        } else {
            engine_err(&s, e)
        }
    })
}

/// The file column's value for a file: its name without the extension.
fn file_name(p: &Path) -> String {
    p.file_stem()
        .or(p.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The databases of a file, or those every file of a directory has, in name order.
pub fn database_names(path: &Path) -> Result<Vec<String>> {
    common_names(&open_files(path)?)
}

/// The files of a table: their paths, each opened read-only with its name for the file
/// column, and whether they are a directory's.
pub(crate) struct Files {
    pub paths: Vec<PathBuf>,
    pub envs: Vec<(String, Env)>,
    pub dir: bool,
}

/// The files of `path` (see [`files_of`]), opened.
pub(crate) fn open_files(path: &Path) -> Result<Files> {
    let (paths, dir) = files_of(path)?;
    let mut envs = Vec::with_capacity(paths.len());
    for f in &paths {
        envs.push((file_name(f), open_env(f)?));
    }
    Ok(Files { paths, envs, dir })
}

/// The databases every one of the files has, in name order.
pub(crate) fn common_names(files: &Files) -> Result<Vec<String>> {
    let mut common: Option<Vec<String>> = None;
    for (path, (_, env)) in files.paths.iter().zip(&files.envs) {
        let err = |e| engine_err(&path.display().to_string(), e);
        let txn = env.begin_read().map_err(err)?;
        let names: Vec<String> = txn
            .list_dbs()
            .map_err(err)?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        common = Some(match common {
            None => names,
            Some(c) => c.into_iter().filter(|n| names.contains(n)).collect(),
        });
    }
    Ok(common.unwrap_or_default())
}

/// The Arrow type of the key column.
pub fn key_type(k: KeyType) -> DataType {
    match k {
        KeyType::U32 => DataType::UInt32,
        KeyType::U64 => DataType::UInt64,
        KeyType::Binary(n) => DataType::FixedSizeBinary(n as i32),
        KeyType::VarBinary => DataType::Binary,
    }
}

/// The Arrow type of the record column (`None`: a key-only database has none).
pub fn record_type(c: &DbConfig) -> Option<DataType> {
    if c.record_type == RecordType::None {
        return None;
    }
    Some(match c.value_type {
        ValueType::U32 => DataType::UInt32,
        ValueType::U64 => DataType::UInt64,
        ValueType::I64 => DataType::Int64,
        ValueType::I32 => DataType::Int32,
        ValueType::I16 => DataType::Int16,
        ValueType::F64 => DataType::Float64,
        ValueType::Bytes => DataType::Binary,
    })
}

impl TerseTable {
    /// The database `db` of the tersedb file at `path`, or of every file of the directory at
    /// `path` (each must have it, with the same configuration).
    pub fn open(path: &Path, db: &str, opts: TableOptions) -> Result<TerseTable> {
        let f = open_files(path)?;
        Self::from_envs(f.envs, f.dir, db, opts)
    }

    /// The database `db` of open environments, each with its name for the file column
    /// (`file_column`: whether the table has that column).
    pub fn from_envs(
        envs: Vec<(String, Env)>,
        file_column: bool,
        db: &str,
        opts: TableOptions,
    ) -> Result<TerseTable> {
        if envs.is_empty() {
            return Err(DataFusionError::Plan(
                "a table needs at least one file".into(),
            ));
        }
        if opts.batch_size == 0 {
            return Err(DataFusionError::Plan(
                "batch size must be at least 1".into(),
            ));
        }
        let mut config: Option<DbConfig> = None;
        let mut sources = Vec::with_capacity(envs.len());
        for (name, env) in envs {
            let txn = env.begin_read().map_err(|e| engine_err(&name, e))?;
            let d = txn.open_db(db).map_err(|e| engine_err(&name, e))?;
            let c = d.config();
            match config {
                None => config = Some(c),
                Some(first) if first.key_type != c.key_type
                    || first.record_type != c.record_type
                    || first.value_type != c.value_type =>
                {
                    return Err(DataFusionError::Plan(format!(
                        "{name}: database {db:?} has keys {:?}, records {:?} ({}); the first file's has {:?}, {:?} ({})",
                        c.key_type,
                        c.record_type,
                        c.value_type.name(),
                        first.key_type,
                        first.record_type,
                        first.value_type.name()
                    )))
                }
                Some(_) => {}
            }
            sources.push(Source { name, env });
        }
        let config = config.expect("at least one file");
        let mut fields = vec![Field::new(KEY, key_type(config.key_type), false)];
        if let Some(t) = record_type(&config) {
            fields.push(Field::new(RECORD, t, false));
        }
        if file_column {
            if fields.iter().any(|f| f.name() == &opts.file_column) {
                return Err(DataFusionError::Plan(format!(
                    "the file column cannot be called {:?}",
                    opts.file_column
                )));
            }
            fields.push(Field::new(&opts.file_column, DataType::Utf8, false));
        }
        Ok(TerseTable {
            db: db.to_string(),
            config,
            sources,
            file_column,
            schema: Arc::new(Schema::new(fields)),
            opts,
        })
    }

    /// The largest key of the key type, for integer keys.
    pub(crate) fn key_max(&self) -> Option<u64> {
        match self.config.key_type {
            KeyType::U32 => Some(u32::MAX as u64),
            KeyType::U64 => Some(u64::MAX),
            _ => None,
        }
    }

    pub(crate) fn key_ctx<'a>(&'a self, file: Option<&'a str>) -> KeyCtx<'a> {
        KeyCtx {
            key_max: if self.opts.pushdown {
                self.key_max()
            } else {
                None
            },
            file_col: self.file_column.then_some(self.opts.file_column.as_str()),
            file,
        }
    }

    /// The keys `filters` (all of them) select in file `file`; `None`: every key.
    pub(crate) fn selected(&self, filters: &[Expr], file: &str) -> Option<Ivs> {
        let cx = self.key_ctx(Some(file));
        let sets = filters.iter().filter_map(|f| filter::translate(f, &cx));
        sets.map(|t| t.t).reduce(|a, b| a.intersect(&b))
    }

    /// The keys `filters` select in file `file`, every one of which must translate (`None`:
    /// one does not, with the values its parameters were bound to); `Some(None)`: every key.
    pub(crate) fn selected_exactly(&self, filters: &[Expr], file: &str) -> Option<Option<Ivs>> {
        let cx = self.key_ctx(Some(file));
        let sets = filters
            .iter()
            .map(|f| filter::translate(f, &cx).map(|t| t.t));
        let sets = sets.collect::<Option<Vec<Ivs>>>()?;
        Some(sets.into_iter().reduce(|a, b| a.intersect(&b)))
    }

    pub(crate) fn open_db(&self, s: &Source) -> Result<(Arc<tersedb::ReadTxn>, Db)> {
        let txn = s.env.begin_read().map_err(|e| engine_err(&s.name, e))?;
        let db = txn.open_db(&self.db).map_err(|e| engine_err(&s.name, e))?;
        Ok((Arc::new(txn), db))
    }
}

#[async_trait]
impl TableProvider for TerseTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let cx = self.key_ctx(None);
        Ok(filters
            .iter()
            .map(|f| {
                if filter::translates(f, &cx) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        if !self.opts.pushdown {
            return None;
        }
        // Each file's newest snapshot, read afresh: a commit after registration shows.
        let mut rows = 0u64;
        let (mut min, mut max) = (None::<u64>, None::<u64>);
        for s in &self.sources {
            let (txn, db) = self.open_db(s).ok()?;
            let e = extent(&txn, &db).ok()?;
            rows += e.rows;
            min = e.min.map(|a| min.map_or(a, |b| b.min(a))).or(min);
            max = e.max.map(|a| max.map_or(a, |b| b.max(a))).or(max);
        }
        Some(table_statistics(
            &self.schema,
            self.config.key_type,
            rows,
            min,
            max,
        ))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projection = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        // A prepared statement's plan: files and intervals are read at each execution.
        if state.config().get_extension::<Deferring>().is_some()
            || filters.iter().any(filter::has_placeholder)
        {
            let exec = TerseScanExec::deferred(self, projection, limit, filters)?;
            return Ok(Arc::new(exec));
        }
        let mut parts = Vec::with_capacity(self.sources.len());
        for s in &self.sources {
            let ivs = self.selected(filters, &s.name);
            if ivs.as_ref().is_some_and(|i| i.is_empty()) {
                continue; // the filters exclude the whole file
            }
            let (txn, db) = self.open_db(s)?;
            parts.push(Part {
                name: s.name.clone(),
                txn,
                db,
                ivs,
            });
        }
        let exec = TerseScanExec::new(self, parts, projection, limit, filters)?;
        Ok(Arc::new(exec))
    }
}

/// Set as a session config extension while a prepared statement is planned
/// ([`crate::prepared`]): scans are then deferred ([`TerseScanExec`] takes its snapshots and
/// key intervals when it is bound to parameter values, at each execution) and state no
/// statistics, so nothing of a snapshot at planning stays in the plan.
#[derive(Debug, Default)]
pub(crate) struct Deferring;

/// A database's row count and, for integer keys, its smallest and largest key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Extent {
    pub rows: u64,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// The [`Extent`] of `db` in `txn`'s snapshot without a fold: the count is the catalog
/// entry's, the keys those of a descent to each end of the tree (O(depth)).
pub(crate) fn extent(txn: &ReadTxn, db: &Db) -> tersedb::Result<Extent> {
    let rows = txn.len(db)?;
    if rows == 0 || !matches!(db.config().key_type, KeyType::U32 | KeyType::U64) {
        return Ok(Extent {
            rows,
            ..Extent::default()
        });
    }
    let mut c = txn.cursor(db)?;
    let min = if c.first()? { c.key_u64() } else { None };
    let max = if c.last()? { c.key_u64() } else { None };
    Ok(Extent { rows, min, max })
}

/// Statistics of rows with keys in `[min, max]`: exact count and key range, nothing known of
/// the other columns but that they hold no NULLs.
pub(crate) fn table_statistics(
    schema: &Schema,
    key: KeyType,
    rows: u64,
    min: Option<u64>,
    max: Option<u64>,
) -> Statistics {
    let scalar = |v: Option<u64>| match (key, v) {
        (KeyType::U32, Some(v)) => Precision::Exact(ScalarValue::UInt32(Some(v as u32))),
        (KeyType::U64, Some(v)) => Precision::Exact(ScalarValue::UInt64(Some(v))),
        _ => Precision::Absent,
    };
    let cols = schema
        .fields()
        .iter()
        .map(|f| {
            let c = ColumnStatistics::new_unknown().with_null_count(Precision::Exact(0));
            if f.name() == KEY {
                c.with_min_value(scalar(min))
                    .with_max_value(scalar(max))
                    .with_distinct_count(Precision::Exact(rows as usize))
            } else {
                c
            }
        })
        .collect();
    Statistics {
        num_rows: Precision::Exact(rows as usize),
        total_byte_size: Precision::Absent,
        column_statistics: cols,
    }
}
