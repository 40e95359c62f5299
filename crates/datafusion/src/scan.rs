//! The scan: one partition per file, each a stream of record batches of the projected columns
//! of the rows whose keys lie in the partition's intervals, in key order.
//!
//! Integer keys with fixed-size (or no) records are read leaf by leaf through
//! [`tersedb::ReadTxn::scan_leaves`] ([`tersedb::scan`]): a block outside the intervals is skipped by its zone map
//! entry, the others are decoded whole into a small buffer and copied into the Arrow column
//! (records are read only when projected). Byte-string keys and variable-size records go
//! through a cursor. A batch ends after `batch_size` rows; the next one starts with a fresh
//! descent to the key after the last one returned (a batch of 8192 rows costs one descent).
//!
//! A scan planned for a prepared statement ([`crate::prepared`]) is *deferred*: it keeps the
//! table and the pushed-down filters (parameters unbound) instead of snapshots and intervals,
//! has one partition per file of the table and states no statistics; [`TerseScanExec::bind`]
//! makes the scan one execution runs, on each file's newest snapshot.

use crate::filter::{self, Ivs};
use crate::table::{extent, table_statistics, Extent, TerseTable};
use crate::{KEY, RECORD};
use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, FixedSizeBinaryBuilder, Float64Array, Int16Array, Int32Array,
    Int64Array, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, ParamValues, Result, ScalarValue, Statistics};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs,
};
use std::fmt;
use std::sync::Arc;
use tersedb::scan::{BlockKeys, Blocks, KeyBuffer};
use tersedb::{Db, DbConfig, Key, KeyBuf, KeyType, ReadTxn, RecordType, ValueType};

/// One partition: a file's snapshot and the keys the pushed-down filters select in it
/// (`None`: every key).
#[derive(Clone)]
pub struct Part {
    pub name: String,
    pub txn: Arc<ReadTxn>,
    pub db: Db,
    pub ivs: Option<Ivs>,
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Part")
            .field("name", &self.name)
            .field("ivs", &self.ivs)
            .finish()
    }
}

/// Which table column a projected column is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Col {
    Key,
    Record,
    File,
}

/// COUNT, MIN and MAX of a partition's selected keys (no decoding).
pub(crate) type PartStats = Extent;

/// Scans one database of one or more files (see the module docs).
#[derive(Clone, Debug)]
pub struct TerseScanExec {
    pub(crate) db: String,
    pub(crate) config: DbConfig,
    pub(crate) parts: Vec<Part>,
    /// Files of the table (before pruning).
    pub(crate) files: usize,
    /// Whether the table is a directory (EXPLAIN names each file's key ranges).
    dir: bool,
    pub(crate) cols: Vec<Col>,
    pub(crate) limit: Option<usize>,
    batch_size: usize,
    key_max: Option<u64>,
    /// Exact statistics per partition (push-down on, integer keys).
    pub(crate) stats: Option<Vec<PartStats>>,
    /// [`crate::TableOptions::split_rows`].
    pub(crate) split_rows: u64,
    /// The pushed-down filters, for EXPLAIN.
    filters: Vec<String>,
    /// A prepared statement's scan before [`Self::bind`] (then `parts` is empty).
    pub(crate) deferred: Option<Arc<Deferred>>,
    props: Arc<PlanProperties>,
}

/// What a deferred scan reads at each execution: every file of the table, with the keys the
/// pushed-down filters select once their parameters are bound.
#[derive(Debug)]
pub(crate) struct Deferred {
    table: TerseTable,
    filters: Vec<Expr>,
}

impl TerseScanExec {
    pub(crate) fn new(
        t: &TerseTable,
        parts: Vec<Part>,
        projection: Vec<usize>,
        limit: Option<usize>,
        filters: &[Expr],
    ) -> Result<TerseScanExec> {
        Self::build(t, parts, projection, limit, filters, None)
    }

    /// A prepared statement's scan of every file of `t` (see the module docs).
    pub(crate) fn deferred(
        t: &TerseTable,
        projection: Vec<usize>,
        limit: Option<usize>,
        filters: &[Expr],
    ) -> Result<TerseScanExec> {
        let cx = t.key_ctx(None);
        let pushed = filters
            .iter()
            .filter(|f| filter::translates(f, &cx))
            .cloned()
            .collect();
        let d = Deferred {
            table: t.clone(),
            filters: pushed,
        };
        Self::build(t, Vec::new(), projection, limit, filters, Some(Arc::new(d)))
    }

    /// The scan one execution of a prepared statement runs: a deferred scan's files, each on
    /// its newest snapshot, with the keys the filters select given `params` (a scan that is not
    /// deferred is returned as it is). `None`: a filter does not translate with these values
    /// (a NaN, a value of a type no comparison of keys takes), so the statement must be
    /// planned with them. The partitions stay one per file of the table: a file none of whose
    /// keys is selected is not opened, and the partitions past the selected files' are empty.
    /// No statistics: a split fold reads its own ([`TerseScanExec::part_stats`]).
    pub(crate) fn bind(&self, params: &ParamValues) -> Result<Option<TerseScanExec>> {
        let Some(d) = &self.deferred else {
            return Ok(Some(self.clone()));
        };
        let bound = d
            .filters
            .iter()
            .map(|f| filter::bind(f, params))
            .collect::<Result<Vec<_>>>()?;
        let t = &d.table;
        let mut parts = Vec::with_capacity(t.sources.len());
        for s in &t.sources {
            let Some(ivs) = t.selected_exactly(&bound, &s.name) else {
                return Ok(None);
            };
            if ivs.as_ref().is_some_and(Ivs::is_empty) {
                continue;
            }
            let (txn, db) = t.open_db(s)?;
            parts.push(Part {
                name: s.name.clone(),
                txn,
                db,
                ivs,
            });
        }
        Ok(Some(TerseScanExec {
            parts,
            stats: None,
            deferred: None,
            ..self.clone()
        }))
    }

    /// Each partition's COUNT, MIN and MAX: the ones read at planning, or (a bound scan of a
    /// prepared statement) read now. `None`: the table has no integer keys or no push-down.
    pub(crate) fn part_stats(&self) -> Result<Option<Vec<PartStats>>> {
        if let Some(s) = &self.stats {
            return Ok(Some(s.clone()));
        }
        if self.key_max.is_none() || self.deferred.is_some() {
            return Ok(None);
        }
        self.parts
            .iter()
            .map(part_stats)
            .collect::<Result<_>>()
            .map(Some)
    }

    fn build(
        t: &TerseTable,
        parts: Vec<Part>,
        projection: Vec<usize>,
        limit: Option<usize>,
        filters: &[Expr],
        deferred: Option<Arc<Deferred>>,
    ) -> Result<TerseScanExec> {
        let schema = Arc::new(t.schema.project(&projection)?);
        let cols = schema
            .fields()
            .iter()
            .map(|f| match f.name().as_str() {
                KEY => Col::Key,
                RECORD => Col::Record,
                _ => Col::File,
            })
            .collect::<Vec<_>>();
        let key_max = t.key_max();
        // With push-down, a file none of whose keys is selected (its key range misses the
        // intervals) is not read at all.
        let (parts, stats) = if deferred.is_some() {
            (parts, None)
        } else if t.opts.pushdown && key_max.is_some() {
            let mut kept = Vec::with_capacity(parts.len());
            let mut v = Vec::with_capacity(parts.len());
            for p in parts {
                let s = part_stats(&p)?;
                if s.rows > 0 {
                    kept.push(p);
                    v.push(s);
                }
            }
            (kept, Some(v))
        } else {
            (parts, None)
        };
        // Each partition is in key order.
        let mut eq = EquivalenceProperties::new(schema.clone());
        if let Some(i) = cols.iter().position(|c| *c == Col::Key) {
            let key: Arc<dyn PhysicalExpr> = Arc::new(Column::new(KEY, i));
            eq = EquivalenceProperties::new_with_orderings(
                schema.clone(),
                [[PhysicalSortExpr::new_default(key)]],
            );
        }
        let n = if deferred.is_some() {
            t.sources.len()
        } else {
            parts.len()
        };
        let props = PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(n.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let cx_filters = filters
            .iter()
            .filter(|f| {
                t.supports_filters_pushdown(&[f]).is_ok_and(|v| {
                    v[0] == datafusion::logical_expr::TableProviderFilterPushDown::Exact
                })
            })
            .map(|f| f.to_string())
            .collect();
        Ok(TerseScanExec {
            db: t.db.clone(),
            config: t.config,
            files: t.sources.len(),
            dir: t.file_column,
            parts,
            cols,
            limit,
            batch_size: t.opts.batch_size,
            split_rows: t.opts.split_rows,
            key_max,
            stats,
            filters: cx_filters,
            deferred,
            props: Arc::new(props),
        })
    }

    /// Files read: those with selected keys (a deferred scan's: all, until bound).
    pub(crate) fn files_read(&self) -> usize {
        if self.deferred.is_some() {
            return self.files;
        }
        let read = |p: &&Part| p.ivs.as_ref().is_none_or(|i| !i.is_empty());
        self.parts.iter().filter(read).count()
    }

    /// An error for executing a deferred scan (or an aggregate over one) unbound.
    pub(crate) fn unbound(&self) -> Result<()> {
        match self.deferred {
            Some(_) => Err(DataFusionError::Execution(format!(
                "a scan of {} planned for a prepared statement runs only through Prepared::execute",
                self.db
            ))),
            None => Ok(()),
        }
    }

    /// Whether a row's keys are read through leaf blocks (else through a cursor).
    fn leaf_path(&self) -> bool {
        matches!(self.config.key_type, KeyType::U32 | KeyType::U64)
            && (!self.cols.contains(&Col::Record)
                || matches!(self.config.record_type, RecordType::Fixed(_)))
    }

    fn stats_of(&self, parts: &[PartStats]) -> Statistics {
        let mut rows = 0u64;
        let (mut min, mut max) = (None::<u64>, None::<u64>);
        let mut limited = false;
        for p in parts {
            let n = match self.limit {
                Some(l) if (l as u64) < p.rows => {
                    limited = true;
                    l as u64
                }
                _ => p.rows,
            };
            rows += n;
            if n > 0 {
                min = p.min.map(|a| min.map_or(a, |b| b.min(a)));
                max = p.max.map(|a| max.map_or(a, |b| b.max(a)));
            }
        }
        let mut s = table_statistics(&self.schema(), self.config.key_type, rows, min, max);
        if limited {
            // Which keys a limited partition returns is exact, but not worth stating.
            for c in &mut s.column_statistics {
                c.max_value = c.max_value.clone().to_inexact();
                c.distinct_count = c.distinct_count.to_inexact();
            }
        }
        s
    }
}

fn engine_err(name: &str, e: tersedb::Error) -> DataFusionError {
    DataFusionError::External(format!("{name}: {e}").into())
}

/// COUNT/MIN/MAX of a partition's selected keys: without a key predicate the file's
/// [`extent`], O(depth); else a COUNT fold per interval (blocks and leaves wholly inside are
/// answered from their descriptors; cheaper for a narrow range than two descents more).
fn part_stats(p: &Part) -> Result<PartStats> {
    let err = |e| engine_err(&p.name, e);
    let Some(ivs) = &p.ivs else {
        return extent(&p.txn, &p.db).map_err(err);
    };
    let mut s = PartStats::default();
    for &(lo, hi) in &ivs.0 {
        let f = p.txn.fold_keys(&p.db, lo, hi, false).map_err(err)?;
        s.rows += f.count;
        s.min = s.min.or(f.min);
        s.max = f.max.or(s.max);
    }
    Ok(s)
}

/// Files of a directory whose key ranges EXPLAIN spells out.
const SHOWN_FILES: usize = 16;

impl TerseScanExec {
    /// The key intervals the scan reads, for EXPLAIN: `, key_ranges=[a, b] [c, d]` for a file,
    /// `, key_ranges={f0: [a, b], f2: all}` naming every file read for a directory (their
    /// intervals differ when predicates on the file column are pushed down), nothing when no
    /// key predicate was.
    pub(crate) fn show_ranges(&self) -> String {
        if self.deferred.is_some() {
            return ", key_ranges=at execution".into();
        }
        if self.parts.iter().all(|p| p.ivs.is_none()) {
            return String::new();
        }
        if !self.dir {
            return self
                .parts
                .first()
                .and_then(|p| p.ivs.as_ref())
                .map_or(String::new(), |ivs| {
                    format!(", key_ranges={}", show_ivs(ivs))
                });
        }
        let mut each: Vec<String> = self
            .parts
            .iter()
            .take(SHOWN_FILES)
            .map(|p| {
                let ivs = p.ivs.as_ref().map_or("all".into(), show_ivs);
                format!("{}: {ivs}", p.name)
            })
            .collect();
        if self.parts.len() > SHOWN_FILES {
            each.push(format!("... ({} files)", self.parts.len()));
        }
        format!(", key_ranges={{{}}}", each.join(", "))
    }
}

/// `[a, b] [c, d] ...` with at most a few intervals spelled out.
pub(crate) fn show_ivs(ivs: &Ivs) -> String {
    const SHOWN: usize = 4;
    let mut s: Vec<String> = ivs
        .0
        .iter()
        .take(SHOWN)
        .map(|(a, b)| format!("[{a}, {b}]"))
        .collect();
    if ivs.0.len() > SHOWN {
        s.push(format!("... ({} intervals)", ivs.0.len()));
    }
    if s.is_empty() {
        "none".into()
    } else {
        s.join(" ")
    }
}

impl DisplayAs for TerseScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<String> = self
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        write!(
            f,
            "TerseScanExec: db={}, files={}/{}, projection=[{}]",
            self.db,
            self.files_read(),
            self.files,
            names.join(", ")
        )?;
        f.write_str(&self.show_ranges())?;
        if !self.filters.is_empty() {
            write!(f, ", pushed=[{}]", self.filters.join(", "))?;
        }
        if let Some(l) = self.limit {
            write!(f, ", limit={l}")?;
        }
        write!(f, ", batch_size={}", self.batch_size)
    }
}

impl ExecutionPlan for TerseScanExec {
    fn name(&self) -> &str {
        "TerseScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn statistics_from_inputs(
        &self,
        _inputs: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let Some(stats) = &self.stats else {
            return Ok(Arc::new(Statistics::new_unknown(&self.schema())));
        };
        Ok(Arc::new(match args.partition() {
            None => self.stats_of(stats),
            Some(i) => self.stats_of(stats.get(i..=i).unwrap_or(&[])),
        }))
    }

    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        self.statistics_from_inputs(&[], &StatisticsArgs::new().with_partition(partition))
    }

    fn execute(
        &self,
        partition: usize,
        _ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.unbound()?;
        let schema = self.schema();
        let part = self.parts.get(partition);
        let part = part.filter(|p| p.ivs.as_ref().is_none_or(|i| !i.is_empty()));
        let reader = part.map(|p| Reader {
            part: p.clone(),
            schema: schema.clone(),
            cols: self.cols.clone(),
            config: self.config,
            key_max: self.key_max.unwrap_or(0),
            batch: self.batch_size,
            left: self.limit.unwrap_or(usize::MAX),
            resume: Resume::Start,
            leaf_path: self.leaf_path(),
            blocks: Blocks::default(),
            buf: KeyBuffer::default(),
        });
        let stream = futures::stream::iter(reader.into_iter().flatten());
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Where the next batch starts.
#[derive(Clone, Debug)]
enum Resume {
    Start,
    /// After this integer key.
    AfterInt(u64),
    /// After this byte-string key.
    AfterBytes(Vec<u8>),
    Done,
}

/// The key column being filled.
enum Keys {
    None,
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bin(BinaryBuilder),
    Fixed(FixedSizeBinaryBuilder),
}

/// The record column being filled.
enum Recs {
    None,
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    F64(Vec<f64>),
    Bin(BinaryBuilder),
}

fn fixed<const N: usize>(b: &[u8], vt: ValueType) -> std::result::Result<[u8; N], String> {
    b.try_into().map_err(|_| {
        format!(
            "a record of {} bytes where value type {} needs {N}",
            b.len(),
            vt.name()
        )
    })
}

impl Recs {
    fn new(c: &DbConfig, n: usize) -> Recs {
        match c.value_type {
            ValueType::U32 => Recs::U32(Vec::with_capacity(n)),
            ValueType::U64 => Recs::U64(Vec::with_capacity(n)),
            ValueType::I64 => Recs::I64(Vec::with_capacity(n)),
            ValueType::I32 => Recs::I32(Vec::with_capacity(n)),
            ValueType::I16 => Recs::I16(Vec::with_capacity(n)),
            ValueType::F64 => Recs::F64(Vec::with_capacity(n)),
            ValueType::Bytes => Recs::Bin(BinaryBuilder::with_capacity(n, 0)),
        }
    }

    fn push(&mut self, b: &[u8]) -> std::result::Result<(), String> {
        match self {
            Recs::None => {}
            Recs::U32(v) => v.push(u32::from_le_bytes(fixed(b, ValueType::U32)?)),
            Recs::U64(v) => v.push(u64::from_le_bytes(fixed(b, ValueType::U64)?)),
            Recs::I64(v) => v.push(i64::from_le_bytes(fixed(b, ValueType::I64)?)),
            Recs::I32(v) => v.push(i32::from_le_bytes(fixed(b, ValueType::I32)?)),
            Recs::I16(v) => v.push(i16::from_le_bytes(fixed(b, ValueType::I16)?)),
            Recs::F64(v) => v.push(f64::from_le_bytes(fixed(b, ValueType::F64)?)),
            Recs::Bin(v) => v.append_value(b),
        }
        Ok(())
    }

    fn finish(self) -> Option<ArrayRef> {
        Some(match self {
            Recs::None => return None,
            Recs::U32(v) => Arc::new(UInt32Array::from(v)),
            Recs::U64(v) => Arc::new(UInt64Array::from(v)),
            Recs::I64(v) => Arc::new(Int64Array::from(v)),
            Recs::I32(v) => Arc::new(Int32Array::from(v)),
            Recs::I16(v) => Arc::new(Int16Array::from(v)),
            Recs::F64(v) => Arc::new(Float64Array::from(v)),
            Recs::Bin(mut v) => Arc::new(v.finish()),
        })
    }
}

impl Keys {
    fn new(k: KeyType, n: usize) -> Keys {
        match k {
            KeyType::U32 => Keys::U32(Vec::with_capacity(n)),
            KeyType::U64 => Keys::U64(Vec::with_capacity(n)),
            KeyType::Binary(w) => Keys::Fixed(FixedSizeBinaryBuilder::with_capacity(n, w as i32)),
            KeyType::VarBinary => Keys::Bin(BinaryBuilder::with_capacity(n, 0)),
        }
    }

    fn push(&mut self, k: &Key<'_>) -> Result<()> {
        match (self, k) {
            (Keys::None, _) => {}
            (Keys::U32(v), Key::U32(x)) => v.push(*x),
            (Keys::U64(v), Key::U64(x)) => v.push(*x),
            (Keys::Bin(v), Key::Bytes(b)) => v.append_value(b),
            (Keys::Fixed(v), Key::Bytes(b)) => v.append_value(b)?,
            (_, k) => {
                return Err(DataFusionError::Internal(format!(
                    "key {k:?} of another type than the database's"
                )))
            }
        }
        Ok(())
    }

    fn finish(self) -> Option<ArrayRef> {
        Some(match self {
            Keys::None => return None,
            Keys::U32(v) => Arc::new(UInt32Array::from(v)),
            Keys::U64(v) => Arc::new(UInt64Array::from(v)),
            Keys::Bin(mut v) => Arc::new(v.finish()),
            Keys::Fixed(mut v) => Arc::new(v.finish()),
        })
    }
}

/// Produces one partition's batches.
struct Reader {
    part: Part,
    schema: SchemaRef,
    cols: Vec<Col>,
    config: DbConfig,
    key_max: u64,
    batch: usize,
    /// Rows the limit still allows.
    left: usize,
    resume: Resume,
    leaf_path: bool,
    blocks: Blocks,
    buf: KeyBuffer,
}

impl Iterator for Reader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        match self.next_batch() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => None,
            Err(e) => {
                self.resume = Resume::Done;
                Some(Err(e))
            }
        }
    }
}

impl Reader {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let want = self.batch.min(self.left);
        if want == 0 || matches!(self.resume, Resume::Done) {
            return Ok(None);
        }
        let mut keys = if self.cols.contains(&Col::Key) {
            Keys::new(self.config.key_type, want)
        } else {
            Keys::None
        };
        let mut recs = if self.cols.contains(&Col::Record) {
            Recs::new(&self.config, want)
        } else {
            Recs::None
        };
        let n = if self.leaf_path {
            self.leaf_rows(want, &mut keys, &mut recs)?
        } else {
            self.cursor_rows(want, &mut keys, &mut recs)?
        };
        self.left -= n;
        if n < want {
            self.resume = Resume::Done;
        }
        if n == 0 {
            return Ok(None);
        }
        let (mut k, mut r) = (keys.finish(), recs.finish());
        let mut arrays = Vec::with_capacity(self.cols.len());
        for c in &self.cols {
            arrays.push(
                match c {
                    Col::Key => k.take(),
                    Col::Record => r.take(),
                    Col::File => {
                        Some(ScalarValue::Utf8(Some(self.part.name.clone())).to_array_of_size(n)?)
                    }
                }
                .ok_or_else(|| DataFusionError::Internal("a column projected twice".into()))?,
            );
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(Some(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &opts,
        )?))
    }

    /// The selected intervals from the resume point on.
    fn remaining(&self) -> Vec<(u64, u64)> {
        let start = match self.resume {
            Resume::Start => 0,
            Resume::AfterInt(k) => match k.checked_add(1) {
                Some(s) => s,
                None => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let all = [(0, self.key_max)];
        let ivs = self.part.ivs.as_ref().map_or(&all[..], |i| &i.0[..]);
        let from = ivs.partition_point(|iv| iv.1 < start);
        let mut v = ivs[from..].to_vec();
        if let Some(first) = v.first_mut() {
            first.0 = first.0.max(start);
        }
        v
    }

    /// Up to `want` rows through leaf blocks; returns how many.
    fn leaf_rows(&mut self, want: usize, keys: &mut Keys, recs: &mut Recs) -> Result<usize> {
        let ivs = self.remaining();
        let part = &self.part;
        let blocks = &mut self.blocks;
        let buf = &mut self.buf;
        let mut n = 0usize;
        let mut last = 0u64;
        let mut bad: Option<String> = None;
        part.txn
            .scan_leaves(&part.db, &ivs, false, &mut |leaf, livs| {
                let (Some(first), Some(end)) = (livs.first(), livs.last()) else {
                    return Ok(true);
                };
                leaf.blocks(blocks, first.0, end.1)?;
                for b in blocks.iter() {
                    // Intervals overlapping the block (zone map: skip the others).
                    let a = livs.partition_point(|iv| iv.1 < b.first());
                    if livs.get(a).is_none_or(|iv| iv.0 > b.last()) {
                        continue;
                    }
                    let k = leaf.keys(&b, buf)?;
                    for &(lo, hi) in &livs[a..] {
                        if lo > b.last() {
                            break;
                        }
                        let i0 = k.lower_bound(lo);
                        let i1 = k.upper_bound(hi);
                        let take = i1.saturating_sub(i0).min(want - n);
                        if take == 0 {
                            continue;
                        }
                        let r = i0..i0 + take;
                        match (&mut *keys, k) {
                            (Keys::U32(v), BlockKeys::U32(s)) => v.extend_from_slice(&s[r.clone()]),
                            (Keys::U64(v), BlockKeys::U64(s)) => v.extend_from_slice(&s[r.clone()]),
                            (Keys::U64(v), BlockKeys::U32(s)) => {
                                v.extend(s[r.clone()].iter().map(|&x| x as u64))
                            }
                            (Keys::U32(v), BlockKeys::U64(s)) => {
                                v.extend(s[r.clone()].iter().map(|&x| x as u32))
                            }
                            _ => {}
                        }
                        if !matches!(recs, Recs::None) {
                            let start = b.slots().start;
                            for i in r.clone() {
                                if let Err(e) = recs.push(&leaf.record(start + i)?) {
                                    bad = Some(e);
                                    return Ok(false);
                                }
                            }
                        }
                        n += take;
                        last = k.get(r.end - 1).unwrap_or(last);
                        if n == want {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            })
            .map_err(|e| engine_err(&part.name, e))?;
        if let Some(e) = bad {
            return Err(DataFusionError::External(
                format!("{}: database {:?}: {e}", part.name, part.db.name()).into(),
            ));
        }
        self.resume = Resume::AfterInt(last);
        Ok(n)
    }

    /// Up to `want` rows through a cursor; returns how many.
    fn cursor_rows(&mut self, want: usize, keys: &mut Keys, recs: &mut Recs) -> Result<usize> {
        let part = &self.part;
        let err = |e| engine_err(&part.name, e);
        let int = matches!(self.config.key_type, KeyType::U32 | KeyType::U64);
        let ivs = if int { Some(self.remaining()) } else { None };
        if ivs.as_ref().is_some_and(|v| v.is_empty()) {
            return Ok(0);
        }
        let probe = |k: u64| match self.config.key_type {
            KeyType::U32 => KeyBuf::U32(k as u32),
            _ => KeyBuf::U64(k),
        };
        let mut c = part.txn.cursor(&part.db).map_err(err)?;
        let mut ok = match (&self.resume, &ivs) {
            (_, Some(v)) => c.lower_bound(&probe(v[0].0)).map_err(err)?,
            (Resume::AfterBytes(b), None) => {
                let b = b.as_slice();
                let at = c.lower_bound(b).map_err(err)?;
                if at && c.key() == Some(Key::Bytes(b)) {
                    c.next().map_err(err)?
                } else {
                    at
                }
            }
            _ => c.first().map_err(err)?,
        };
        let mut n = 0;
        let mut j = 0; // the interval the cursor is in
        let mut last: Option<KeyBuf> = None;
        while ok && n < want {
            let Some(k) = c.key() else { break };
            if let (Some(v), Some(x)) = (&ivs, k.as_u64()) {
                while v.get(j).is_some_and(|iv| iv.1 < x) {
                    j += 1;
                }
                let Some(&(lo, _)) = v.get(j) else { break };
                if x < lo {
                    ok = c.lower_bound(&probe(lo)).map_err(err)?;
                    continue;
                }
            }
            keys.push(&k)?;
            if !matches!(recs, Recs::None) {
                let v = c.value().map_err(err)?.unwrap_or_default();
                recs.push(&v)
                    .map_err(|e| DataFusionError::External(format!("{}: {e}", part.name).into()))?;
            }
            last = Some(k.to_owned());
            n += 1;
            ok = c.next().map_err(err)?;
        }
        self.resume = match last {
            Some(KeyBuf::Bytes(b)) => Resume::AfterBytes(b),
            Some(k) => Resume::AfterInt(k.as_key().as_u64().unwrap_or(u64::MAX)),
            None => Resume::Done,
        };
        Ok(n)
    }
}
