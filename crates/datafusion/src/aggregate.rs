//! Aggregate push-down: COUNT, SUM, MIN, MAX and AVG over a tersedb scan, without GROUP BY or
//! with `GROUP BY key / N` (time buckets), are answered inside the tree, never decoded into
//! Arrow arrays.
//!
//! [`TerseAggregateRule`] (a physical optimizer rule, run after DataFusion's own) looks for
//!
//! ```text
//! AggregateExec (Final | Single [Partitioned],         TerseAggregateExec
//!   no GROUP BY or GROUP BY key / N)             =>      (same output schema: one row, or
//!   [CoalescePartitions | Repartition]*                  one per non-empty bucket in bucket
//!   [AggregateExec (Partial, same GROUP BY)]             order; under a Repartition to the
//!   [Repartition | CoalesceBatches | Cooperative         replaced node's partitioning when
//!    | Projection of columns or of key / N]*              that had several partitions)
//!   TerseScanExec (no limit)
//! ```
//!
//! where every aggregate is `count`, `sum`, `min`, `max` or `avg` of `key`, `record` or a
//! constant (COUNT(*)), without DISTINCT or FILTER, possibly through a widening cast, and the
//! group is integer division of the key (seen through widening casts) by a positive integer
//! constant. Each file then answers for its selected key intervals (the pushed-down filters):
//! without GROUP BY, aggregates of keys by [`tersedb::ReadTxn::fold_keys`] per interval (blocks
//! wholly inside an interval give COUNT/MIN/MAX from the block index; SUM decodes in
//! registers); records, and every bucketed query, by the engine's query executor
//! ([`tersedb::ReadTxn::query`], `GROUP BY key / N` folding each bucket's key range); the
//! files' answers are merged (per bucket: a bucket may span files). MIN/MAX of f64 records stay
//! with DataFusion: it orders NaN above every number, the engine skips NaN.

use crate::filter::Ivs;
use crate::scan::{Col, Part, TerseScanExec};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, ParamValues, Result, ScalarValue};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column, Literal};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{
    AggregateExec, AggregateInputMode, AggregateMode, AggregateOutputMode,
};
#[allow(deprecated)]
use datafusion::physical_plan::coalesce_batches::CoalesceBatchesExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use tersedb::query::{AggFunc, Column as QCol, GroupBy, Item, Pred, Query, Value};
use tersedb::{KeyType, ValueType};

/// One pushed-down aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Agg {
    Count,
    Sum(Col),
    Min(Col),
    Max(Col),
    Avg(Col),
}

impl fmt::Display for Agg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = |c: &Col| if *c == Col::Key { "key" } else { "record" };
        match self {
            Agg::Count => f.write_str("count"),
            Agg::Sum(x) => write!(f, "sum({})", c(x)),
            Agg::Min(x) => write!(f, "min({})", c(x)),
            Agg::Max(x) => write!(f, "max({})", c(x)),
            Agg::Avg(x) => write!(f, "avg({})", c(x)),
        }
    }
}

/// The physical optimizer rule (see the module docs). Install it with
/// `SessionStateBuilder::with_physical_optimizer_rule` or use [`crate::session`].
#[derive(Debug, Default)]
pub struct TerseAggregateRule;

impl PhysicalOptimizerRule for TerseAggregateRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let threads = config.execution.target_partitions.max(1);
        plan.transform_down(|node| {
            Ok(match replace(&node, threads) {
                Some(new) => Transformed::new(new, true, TreeNodeRecursion::Jump),
                None => Transformed::no(node),
            })
        })?
        .data
        .transform_up(|node| {
            Ok(match renamed(&node) {
                Some(new) => Transformed::yes(new),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tersedb_aggregate_pushdown"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[allow(deprecated)] // CoalesceBatchesExec: older plans still have it
fn only_child(p: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    let any = p.as_ref();
    if any.is::<RepartitionExec>()
        || any.is::<CoalescePartitionsExec>()
        || any.is::<CooperativeExec>()
        || any.is::<CoalesceBatchesExec>()
    {
        p.children().first().copied()
    } else {
        None
    }
}

/// The scan at the bottom of a chain of row-preserving nodes and column projections.
fn scan_below(p: &Arc<dyn ExecutionPlan>) -> Option<&TerseScanExec> {
    if let Some(s) = p.as_ref().downcast_ref::<TerseScanExec>() {
        return Some(s);
    }
    if let Some(pr) = p.as_ref().downcast_ref::<ProjectionExec>() {
        return scan_below(pr.input());
    }
    scan_below(only_child(p)?)
}

/// The scan column that output column `i` of `p` is.
fn column_of(p: &Arc<dyn ExecutionPlan>, i: usize) -> Option<Col> {
    if let Some(s) = p.as_ref().downcast_ref::<TerseScanExec>() {
        return s.cols.get(i).copied();
    }
    if let Some(pr) = p.as_ref().downcast_ref::<ProjectionExec>() {
        let e = &pr.expr().get(i)?.expr;
        let c = e.as_ref().downcast_ref::<Column>()?;
        return column_of(pr.input(), c.index());
    }
    column_of(only_child(p)?, i)
}

/// The scan column an aggregate argument reads, through casts that keep the order of values.
fn argument(input: &Arc<dyn ExecutionPlan>, e: &Arc<dyn PhysicalExpr>) -> Option<Col> {
    if let Some(c) = e.as_ref().downcast_ref::<Column>() {
        return column_of(input, c.index());
    }
    let cast = e.as_ref().downcast_ref::<CastExpr>()?;
    matches!(
        cast.cast_type(),
        DataType::UInt64 | DataType::Int64 | DataType::Float64
    )
    .then_some(())?;
    let from = cast.expr().data_type(&input.schema()).ok()?;
    let widening = match cast.cast_type() {
        DataType::UInt64 => matches!(from, DataType::UInt32 | DataType::UInt64),
        DataType::Int64 => matches!(
            from,
            DataType::UInt32 | DataType::Int16 | DataType::Int32 | DataType::Int64
        ),
        _ => from.is_numeric(),
    };
    widening.then_some(())?;
    argument(input, cast.expr())
}

/// `key / N` with `N >= 1` a constant, in integer arithmetic: the bucket width `N`, if `e`
/// (an expression over `input`'s rows) is that. A column that a projection below computes is
/// looked up there.
fn bucket_width(input: &Arc<dyn ExecutionPlan>, e: &Arc<dyn PhysicalExpr>) -> Option<u64> {
    if let Some(c) = e.as_ref().downcast_ref::<Column>() {
        if let Some(pr) = input.as_ref().downcast_ref::<ProjectionExec>() {
            return bucket_width(pr.input(), &pr.expr().get(c.index())?.expr);
        }
        return bucket_width(only_child(input)?, e);
    }
    let b = e.as_ref().downcast_ref::<BinaryExpr>()?;
    // Integer division truncates, which is the floor for keys (never negative). A decimal or
    // float quotient is no bucket.
    (*b.op() == Operator::Divide && e.data_type(&input.schema()).ok()?.is_integer())
        .then_some(())?;
    let n = match b.right().as_ref().downcast_ref::<Literal>()?.value() {
        ScalarValue::Int8(Some(v)) => i64::from(*v),
        ScalarValue::Int16(Some(v)) => i64::from(*v),
        ScalarValue::Int32(Some(v)) => i64::from(*v),
        ScalarValue::Int64(Some(v)) => *v,
        ScalarValue::UInt8(Some(v)) => i64::from(*v),
        ScalarValue::UInt16(Some(v)) => i64::from(*v),
        ScalarValue::UInt32(Some(v)) => i64::from(*v),
        ScalarValue::UInt64(Some(v)) => return (*v > 0 && is_key(input, b.left())).then_some(*v),
        _ => return None,
    };
    (n > 0 && is_key(input, b.left())).then_some(n as u64)
}

fn is_key(input: &Arc<dyn ExecutionPlan>, e: &Arc<dyn PhysicalExpr>) -> bool {
    argument(input, e) == Some(Col::Key)
}

/// The aggregate below `top` that reads rows: `top` itself, or the Partial one below it with
/// the same number of group expressions.
fn raw_of(top: &AggregateExec) -> Option<&AggregateExec> {
    if top.mode().input_mode() == AggregateInputMode::Raw {
        return Some(top);
    }
    let mut p = top.input();
    loop {
        if let Some(a) = p.as_ref().downcast_ref::<AggregateExec>() {
            let same = a.group_expr().expr().len() == top.group_expr().expr().len();
            return (*a.mode() == AggregateMode::Partial && a.group_expr().is_single() && same)
                .then_some(a);
        }
        p = only_child(p)?;
    }
}

fn replace(node: &Arc<dyn ExecutionPlan>, threads: usize) -> Option<Arc<dyn ExecutionPlan>> {
    let top = node.as_ref().downcast_ref::<AggregateExec>()?;
    if top.mode().output_mode() != AggregateOutputMode::Final
        || !top.group_expr().is_single()
        || top.group_expr().expr().len() > 1
    {
        return None;
    }
    let raw = raw_of(top)?;
    let input = raw.input();
    let scan = scan_below(input)?;
    if scan.limit.is_some() || raw.filter_expr().iter().any(Option::is_some) {
        return None;
    }
    let bucket = match raw.group_expr().expr() {
        [] => None,
        [(e, _)] => Some(bucket_width(input, e)?),
        _ => return None,
    };
    let groups = usize::from(bucket.is_some());
    if bucket.is_some() && !top.schema().field(0).data_type().is_integer() {
        return None;
    }
    let f64_records = scan.config.value_type == ValueType::F64;
    let mut aggs = Vec::with_capacity(raw.aggr_expr().len());
    let out = top.schema();
    let fields = out.fields().iter().skip(groups);
    for (ae, field) in raw.aggr_expr().iter().zip(fields) {
        if ae.is_distinct() || !ae.order_bys().is_empty() {
            return None;
        }
        let args = ae.expressions();
        let [arg] = args.as_slice() else { return None };
        let name = ae.fun().name();
        let agg = if let Some(l) = arg.as_ref().downcast_ref::<Literal>() {
            (name == "count" && !l.value().is_null()).then_some(Agg::Count)?
        } else {
            let c = argument(input, arg)?;
            if c == Col::File || (c == Col::Record && !numeric(scan)) {
                (name == "count").then_some(Agg::Count)?
            } else {
                match name {
                    "count" => Agg::Count,
                    "sum" => Agg::Sum(c),
                    "avg" => Agg::Avg(c),
                    "min" if !(c == Col::Record && f64_records) => Agg::Min(c),
                    "max" if !(c == Col::Record && f64_records) => Agg::Max(c),
                    _ => return None,
                }
            }
        };
        // Results are made in these types only.
        let ok = match agg {
            Agg::Count => field.data_type() == &DataType::Int64,
            Agg::Sum(_) => matches!(
                field.data_type(),
                DataType::UInt64 | DataType::Int64 | DataType::Float64
            ),
            Agg::Avg(_) => field.data_type() == &DataType::Float64,
            Agg::Min(_) | Agg::Max(_) => field.data_type().is_numeric(),
        };
        ok.then_some(())?;
        aggs.push(agg);
    }
    let scan = Arc::new(scan.clone());
    let exec: Arc<dyn ExecutionPlan> = Arc::new(TerseAggregateExec::new(
        scan,
        aggs,
        bucket,
        top.schema(),
        threads,
    ));
    let parts = top.properties().output_partitioning();
    let exec: Arc<dyn ExecutionPlan> = if parts.partition_count() > 1 {
        // Parents of a FinalPartitioned aggregate may rely on its hash partitioning (a join,
        // a window): the buckets go out the same way.
        Arc::new(RepartitionExec::try_new(exec, parts.clone()).ok()?)
    } else {
        exec
    };
    // And on its ordering: ours is by bucket (which a one-partition repartition keeps).
    if let Some(ord) = top.properties().output_ordering() {
        let eq = exec.properties().equivalence_properties();
        eq.ordering_satisfy(ord.iter().cloned())
            .ok()?
            .then_some(())?;
    }
    Some(exec)
}

/// A projection that only renames the columns of a TerseAggregateExec below it (DataFusion
/// names `COUNT(*)`'s column `count(Int64(1))` and renames it on top) as that aggregate with
/// the projection's schema: one node less to build and run per execution.
fn renamed(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let pr = node.as_ref().downcast_ref::<ProjectionExec>()?;
    let a = pr.input().as_ref().downcast_ref::<TerseAggregateExec>()?;
    let out = pr.schema();
    let fields = a.schema.fields();
    (pr.expr().len() == fields.len()).then_some(())?;
    for (i, (e, f)) in pr.expr().iter().zip(fields.iter()).enumerate() {
        let c = e.expr.as_ref().downcast_ref::<Column>()?;
        let g = out.field(i);
        let same =
            c.index() == i && g.data_type() == f.data_type() && g.is_nullable() == f.is_nullable();
        same.then_some(())?;
    }
    Some(Arc::new(TerseAggregateExec::new(
        a.scan.clone(),
        a.aggs.clone(),
        a.bucket,
        out,
        a.threads,
    )))
}

fn numeric(scan: &TerseScanExec) -> bool {
    scan.config.value_type != ValueType::Bytes
}

/// Answers aggregates of a scan inside the tree (see the module docs).
#[derive(Debug)]
pub struct TerseAggregateExec {
    pub(crate) scan: Arc<TerseScanExec>,
    aggs: Vec<Agg>,
    /// `GROUP BY key / N`: N (the output's first column is the bucket).
    bucket: Option<u64>,
    /// Threads a file's fold may be split across (the session's target partitions).
    threads: usize,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
}

impl TerseAggregateExec {
    fn new(
        scan: Arc<TerseScanExec>,
        aggs: Vec<Agg>,
        bucket: Option<u64>,
        schema: SchemaRef,
        threads: usize,
    ) -> Self {
        // Buckets come out in ascending order.
        let eq = match bucket {
            Some(_) => {
                let b: Arc<dyn PhysicalExpr> = Arc::new(Column::new(schema.field(0).name(), 0));
                EquivalenceProperties::new_with_orderings(
                    schema.clone(),
                    [[PhysicalSortExpr::new_default(b)]],
                )
            }
            None => EquivalenceProperties::new(schema.clone()),
        };
        let props = PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        TerseAggregateExec {
            scan,
            aggs,
            bucket,
            threads,
            schema,
            props: Arc::new(props),
        }
    }
}

impl TerseAggregateExec {
    /// The node one execution of a prepared statement runs: its scan bound to `params` on each
    /// file's newest snapshot ([`TerseScanExec::bind`]; `None` as there).
    pub(crate) fn bind(&self, params: &ParamValues) -> Result<Option<TerseAggregateExec>> {
        let Some(scan) = self.scan.bind(params)? else {
            return Ok(None);
        };
        Ok(Some(TerseAggregateExec {
            scan: Arc::new(scan),
            aggs: self.aggs.clone(),
            bucket: self.bucket,
            threads: self.threads,
            schema: self.schema.clone(),
            props: self.props.clone(),
        }))
    }
}

impl DisplayAs for TerseAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let aggs: Vec<String> = self.aggs.iter().map(|a| a.to_string()).collect();
        write!(f, "TerseAggregateExec: db={}", self.scan.db)?;
        if let Some(n) = self.bucket {
            write!(f, ", group_by=[key / {n}]")?;
        }
        write!(
            f,
            ", aggregates=[{}] in-tree, files={}/{}{}",
            aggs.join(", "),
            self.scan.files_read(),
            self.scan.files,
            self.scan.show_ranges()
        )
    }
}

/// The answer of one file, or of several merged (for one bucket, or the whole selection).
#[derive(Clone, Debug, Default)]
struct Totals {
    count: u64,
    key_sum: u128,
    key_min: Option<u64>,
    key_max: Option<u64>,
    rec_sum: Num,
    rec_min: Option<Num>,
    rec_max: Option<Num>,
}

/// A record value or sum: exact integer or f64.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Default for Num {
    fn default() -> Self {
        Num::Int(0)
    }
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        match v {
            Value::Int(i) => Some(Num::Int(*i)),
            Value::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }
    fn add(self, o: Num) -> Num {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.wrapping_add(b)),
            (a, b) => Num::Float(a.f64() + b.f64()),
        }
    }
    fn f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    fn min(self, o: Num) -> Num {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.min(b)),
            (a, b) => Num::Float(a.f64().min(b.f64())),
        }
    }
    fn max(self, o: Num) -> Num {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.max(b)),
            (a, b) => Num::Float(a.f64().max(b.f64())),
        }
    }
}

impl Totals {
    fn merge(&mut self, x: &Totals) {
        self.count += x.count;
        self.key_sum = self.key_sum.wrapping_add(x.key_sum);
        self.key_min = pick_u64(self.key_min, x.key_min, u64::min);
        self.key_max = pick_u64(self.key_max, x.key_max, u64::max);
        self.rec_sum = self.rec_sum.add(x.rec_sum);
        self.rec_min = pick(self.rec_min, x.rec_min, Num::min);
        self.rec_max = pick(self.rec_max, x.rec_max, Num::max);
    }
}

fn pick(a: Option<Num>, b: Option<Num>, f: fn(Num, Num) -> Num) -> Option<Num> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}

fn pick_u64(a: Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}

/// `ivs` (sorted, disjoint) clipped to `[min, max]`, in at most `k` pieces of consecutive
/// keys of about equal span (by key value: even for evenly spread keys); none when nothing
/// is left after clipping. Their union is the clipped set.
fn split(ivs: &[(u64, u64)], min: u64, max: u64, k: usize) -> Vec<Ivs> {
    let clipped: Vec<(u64, u64)> = ivs
        .iter()
        .map(|&(lo, hi)| (lo.max(min), hi.min(max)))
        .filter(|(lo, hi)| lo <= hi)
        .collect();
    let total: u128 = clipped.iter().map(|&(a, b)| u128::from(b - a) + 1).sum();
    let step = total.div_ceil(k.max(1) as u128).max(1);
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut room = step; // keys the current piece still takes, at least 1
    for (mut a, b) in clipped {
        loop {
            let len = u128::from(b - a) + 1;
            if len < room {
                cur.push((a, b));
                room -= len;
                break;
            }
            // room <= len: the piece ends inside [a, b]
            let end = a + (room - 1) as u64;
            cur.push((a, end));
            out.push(Ivs(std::mem::take(&mut cur)));
            room = step;
            if end == b {
                break;
            }
            a = end + 1;
        }
    }
    if !cur.is_empty() {
        out.push(Ivs(cur));
    }
    out
}

/// `key BETWEEN lo AND hi OR ...` as a balanced tree (no deep recursion for long lists).
fn cover(ivs: &[(u64, u64)]) -> Pred {
    match ivs {
        [(lo, hi)] => Pred::between(QCol::Key, *lo, *hi),
        _ => {
            let (a, b) = ivs.split_at(ivs.len() / 2);
            cover(a).or(cover(b))
        }
    }
}

impl TerseAggregateExec {
    /// The pieces of work: each file with its selected keys, cut into key ranges of at least
    /// `split_rows` keys each, at most the file's share of `threads` (a COUNT, MIN and MAX
    /// alone is read from block descriptors: never cut, and no statistics are read for it).
    fn pieces(&self) -> Result<Vec<Part>> {
        let parts = &self.scan.parts;
        let share = self.threads.div_ceil(parts.len().max(1)) as u64;
        let folds = self.key_sum() || self.records() || self.bucket.is_some();
        if share <= 1 || !folds || self.scan.split_rows == u64::MAX {
            return Ok(parts.clone());
        }
        let Some(stats) = self.scan.part_stats()? else {
            return Ok(parts.clone());
        };
        let mut out = Vec::with_capacity(parts.len());
        for (p, s) in parts.iter().zip(stats) {
            let k = share.min(s.rows / self.scan.split_rows.max(1));
            let (Some(min), Some(max), true) = (s.min, s.max, k > 1) else {
                out.push(p.clone());
                continue;
            };
            let all = [(0, u64::MAX)];
            let ivs = p.ivs.as_ref().map_or(&all[..], |i| &i.0[..]);
            for piece in split(ivs, min, max, k as usize) {
                out.push(Part {
                    ivs: Some(piece),
                    ..p.clone()
                });
            }
        }
        Ok(out)
    }

    /// `f` of every piece of work ([`Self::pieces`]), on one thread each when there are
    /// several.
    fn each_part<T: Send>(&self, f: impl Fn(&Part) -> Result<T> + Sync) -> Result<Vec<T>> {
        let parts = self.pieces()?;
        if parts.len() <= 1 {
            return parts.iter().map(f).collect();
        }
        std::thread::scope(|s| {
            let f = &f;
            let hs: Vec<_> = parts.iter().map(|p| s.spawn(move || f(p))).collect();
            hs.into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(DataFusionError::Internal("a fold thread panicked".into()))
                    })
                })
                .collect()
        })
    }

    /// Whether an aggregate reads records.
    fn records(&self) -> bool {
        self.aggs.iter().any(|a| {
            matches!(
                a,
                Agg::Sum(Col::Record)
                    | Agg::Min(Col::Record)
                    | Agg::Max(Col::Record)
                    | Agg::Avg(Col::Record)
            )
        })
    }

    /// Whether an aggregate needs the sum of the keys.
    fn key_sum(&self) -> bool {
        self.aggs
            .iter()
            .any(|a| matches!(a, Agg::Sum(Col::Key) | Agg::Avg(Col::Key)))
    }

    /// The rows of the answer: one per non-empty bucket in bucket order, or the one row.
    fn rows(&self) -> Result<Vec<(u64, Totals)>> {
        let Some(width) = self.bucket else {
            let mut t = Totals::default();
            for x in self.each_part(|p| self.part_totals(p))? {
                t.merge(&x);
            }
            return Ok(vec![(0, t)]);
        };
        let mut groups: BTreeMap<u64, Totals> = BTreeMap::new();
        for rows in self.each_part(|p| self.part_groups(p, width))? {
            for (b, x) in rows {
                groups.entry(b).or_default().merge(&x);
            }
        }
        Ok(groups.into_iter().collect())
    }

    /// The keys file `p` selects: `None` when it selects none.
    fn selection<'a>(&self, p: &'a Part, all: &'a Ivs) -> Option<&'a Ivs> {
        let ivs = p.ivs.as_ref().unwrap_or(all);
        (!ivs.is_empty()).then_some(ivs)
    }

    fn key_max(&self) -> Result<u64> {
        match self.scan.config.key_type {
            KeyType::U32 => Ok(u32::MAX as u64),
            KeyType::U64 => Ok(u64::MAX),
            kt => Err(DataFusionError::Internal(format!(
                "aggregate push-down on {kt:?} keys"
            ))),
        }
    }

    /// The engine query answering for file `p` (its selected keys), and where it puts what:
    /// COUNT(*), MIN(key), MAX(key), [SUM(key)], [SUM, MIN, MAX of records].
    fn engine_query(&self, p: &Part) -> Query {
        let mut q = Query::from_db(p.db.name())
            .select(AggFunc::CountStar)
            .select(AggFunc::Min(QCol::Key))
            .select(AggFunc::Max(QCol::Key));
        if self.key_sum() {
            q = q.select(AggFunc::Sum(QCol::Key));
        }
        if self.records() {
            q = q
                .select(AggFunc::Sum(QCol::Record))
                .select(AggFunc::Min(QCol::Record))
                .select(AggFunc::Max(QCol::Record));
        }
        if let Some(ivs) = &p.ivs {
            q = q.filter(cover(&ivs.0));
        }
        q
    }

    /// The totals in the values of [`Self::engine_query`]'s aggregates.
    fn totals_of(&self, v: &[Value]) -> Totals {
        let int = |i: usize| v.get(i).and_then(Value::as_int);
        let mut t = Totals {
            count: int(0).unwrap_or(0) as u64,
            key_min: int(1).map(|x| x as u64),
            key_max: int(2).map(|x| x as u64),
            ..Totals::default()
        };
        if t.count == 0 {
            return t;
        }
        let mut i = 3;
        if self.key_sum() {
            t.key_sum = int(i).unwrap_or(0) as u128;
            i += 1;
        }
        if self.records() {
            t.rec_sum = v.get(i).and_then(Num::of).unwrap_or_default();
            t.rec_min = v.get(i + 1).and_then(Num::of);
            t.rec_max = v.get(i + 2).and_then(Num::of);
        }
        t
    }

    /// One file's answer for its selected keys.
    fn part_totals(&self, p: &Part) -> Result<Totals> {
        let err = |e: tersedb::Error| DataFusionError::External(format!("{}: {e}", p.name).into());
        let all = Ivs::all(self.key_max()?);
        let Some(ivs) = self.selection(p, &all) else {
            return Ok(Totals::default());
        };
        if self.records() {
            // One pass of the engine's executor over the records of the selected keys.
            let r = p.txn.query(&self.engine_query(p)).map_err(err)?;
            return Ok(self.totals_of(&r.values));
        }
        if p.ivs.is_none() && !self.key_sum() {
            // COUNT, MIN and MAX of every key: the catalog's count and a descent to each end.
            let e = crate::table::extent(&p.txn, &p.db).map_err(err)?;
            return Ok(Totals {
                count: e.rows,
                key_min: e.min,
                key_max: e.max,
                ..Totals::default()
            });
        }
        let mut t = Totals::default();
        for &(lo, hi) in &ivs.0 {
            let f = p
                .txn
                .fold_keys(&p.db, lo, hi, self.key_sum())
                .map_err(err)?;
            t.merge(&Totals {
                count: f.count,
                key_sum: f.sum,
                key_min: f.min,
                key_max: f.max,
                ..Totals::default()
            });
        }
        Ok(t)
    }

    /// One file's non-empty buckets of `width` keys, in bucket order.
    fn part_groups(&self, p: &Part, width: u64) -> Result<Vec<(u64, Totals)>> {
        let err = |e: tersedb::Error| DataFusionError::External(format!("{}: {e}", p.name).into());
        let all = Ivs::all(self.key_max()?);
        if self.selection(p, &all).is_none() {
            return Ok(Vec::new());
        }
        let q = self
            .engine_query(p)
            .column(Item::Group)
            .group_by(GroupBy::KeyDiv(width));
        let r = p.txn.query(&q).map_err(err)?;
        r.rows
            .iter()
            .map(|row| {
                let (g, v) = row.split_last().ok_or_else(|| {
                    DataFusionError::Internal("an empty row from a GROUP BY query".into())
                })?;
                let g = g
                    .as_int()
                    .and_then(|g| u64::try_from(g).ok())
                    .ok_or_else(|| {
                        DataFusionError::Internal(format!("bucket {g} from a GROUP BY query"))
                    })?;
                Ok((g, self.totals_of(v)))
            })
            .collect()
    }

    /// The value of aggregate `a` over `t`, in the output type `ty`.
    fn value(&self, a: &Agg, t: &Totals, ty: &DataType) -> Result<ScalarValue> {
        let key_scalar = |v: Option<u64>| match self.scan.config.key_type {
            KeyType::U32 => ScalarValue::UInt32(v.map(|v| v as u32)),
            _ => ScalarValue::UInt64(v),
        };
        let rec_scalar = |v: Option<Num>| match (self.scan.config.value_type, v) {
            (ValueType::U32, v) => ScalarValue::UInt32(v.map(|n| int_of(n) as u32)),
            (ValueType::U64, v) => ScalarValue::UInt64(v.map(|n| int_of(n) as u64)),
            (ValueType::I64, v) => ScalarValue::Int64(v.map(|n| int_of(n) as i64)),
            (ValueType::I32, v) => ScalarValue::Int32(v.map(|n| int_of(n) as i32)),
            (ValueType::I16, v) => ScalarValue::Int16(v.map(|n| int_of(n) as i16)),
            (_, v) => ScalarValue::Float64(v.map(Num::f64)),
        };
        let empty = t.count == 0;
        let sum = |s: Num| -> ScalarValue {
            match (ty, s) {
                (_, _) if empty => ScalarValue::try_from(ty).unwrap_or(ScalarValue::Null),
                // DataFusion's integer sums wrap; so do these.
                (DataType::UInt64, s) => ScalarValue::UInt64(Some(int_of(s) as u64)),
                (DataType::Int64, s) => ScalarValue::Int64(Some(int_of(s) as i64)),
                (_, s) => ScalarValue::Float64(Some(s.f64())),
            }
        };
        let v = match a {
            Agg::Count => ScalarValue::Int64(Some(t.count as i64)),
            Agg::Sum(Col::Key) => sum(Num::Int(t.key_sum as i128)),
            Agg::Sum(_) => sum(t.rec_sum),
            Agg::Avg(c) => {
                let s = if *c == Col::Key {
                    t.key_sum as f64
                } else {
                    t.rec_sum.f64()
                };
                ScalarValue::Float64((!empty).then(|| s / t.count as f64))
            }
            Agg::Min(Col::Key) => key_scalar(t.key_min),
            Agg::Max(Col::Key) => key_scalar(t.key_max),
            Agg::Min(_) => rec_scalar(t.rec_min),
            Agg::Max(_) => rec_scalar(t.rec_max),
        };
        if v.data_type() == *ty {
            Ok(v)
        } else {
            v.cast_to(ty)
        }
    }

    fn batch(&self) -> Result<RecordBatch> {
        let rows = self.rows()?;
        if rows.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let fields = self.schema.fields();
        let mut cols = Vec::with_capacity(fields.len());
        let mut f = fields.iter();
        if self.bucket.is_some() {
            let ty = f
                .next()
                .map(|f| f.data_type().clone())
                .unwrap_or(DataType::UInt64);
            let v = rows
                .iter()
                .map(|(b, _)| ScalarValue::UInt64(Some(*b)).cast_to(&ty))
                .collect::<Result<Vec<_>>>()?;
            cols.push(ScalarValue::iter_to_array(v)?);
        }
        for (a, field) in self.aggs.iter().zip(f) {
            let v = rows
                .iter()
                .map(|(_, t)| self.value(a, t, field.data_type()))
                .collect::<Result<Vec<_>>>()?;
            cols.push(ScalarValue::iter_to_array(v)?);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }
}

/// The integer of a record value (integer record types only; f64 never gets here).
fn int_of(n: Num) -> i128 {
    match n {
        Num::Int(i) => i,
        Num::Float(f) => f as i128,
    }
}

impl ExecutionPlan for TerseAggregateExec {
    fn name(&self) -> &str {
        "TerseAggregateExec"
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

    fn execute(
        &self,
        _partition: usize,
        _ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.scan.unbound()?;
        let batch = self.batch();
        let stream = futures::stream::iter(std::iter::once(batch));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    /// Every piece's keys, in order.
    fn keys(pieces: &[crate::filter::Ivs]) -> Vec<(u64, u64)> {
        pieces.iter().flat_map(|p| p.0.iter().copied()).collect()
    }

    #[test]
    fn split_covers_the_clipped_set_in_order() {
        // One interval in two halves.
        let p = split(&[(0, u64::MAX)], 10, 19, 2);
        assert_eq!(keys(&p), [(10, 14), (15, 19)]);
        assert_eq!(p.len(), 2);
        // Cuts inside and between intervals; clipping drops what lies outside.
        let p = split(&[(0, 3), (5, 9), (12, 12), (20, 30)], 2, 25, 3);
        assert_eq!(p.len(), 3);
        let total: u64 = p.iter().flat_map(|x| &x.0).map(|(a, b)| b - a + 1).sum();
        assert_eq!(total, 2 + 5 + 1 + 6);
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (a, b) in keys(&p) {
            match merged.last_mut() {
                Some(l) if l.1 + 1 == a => l.1 = b,
                _ => merged.push((a, b)),
            }
        }
        assert_eq!(merged, [(2, 3), (5, 9), (12, 12), (20, 25)]);
        for w in keys(&p).windows(2) {
            assert!(w[0].1 < w[1].0 && w[0].0 <= w[0].1);
        }
        // More pieces asked than keys; the whole key space; nothing left after clipping.
        assert_eq!(split(&[(7, 8)], 0, 100, 5).len(), 2);
        let p = split(&[(0, u64::MAX)], 0, u64::MAX, 3);
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].0[0].0, 0);
        assert_eq!(p[2].0[0].1, u64::MAX);
        assert!(split(&[(0, 5)], 6, 9, 2).is_empty());
        assert_eq!(keys(&split(&[(3, 9)], 0, 20, 1)), [(3, 9)]);
    }
}
