//! Aggregate push-down: COUNT, SUM, MIN, MAX and AVG without GROUP BY over a tersedb scan are
//! answered inside the tree, never decoded into Arrow arrays.
//!
//! [`TerseAggregateRule`] (a physical optimizer rule, run after DataFusion's own) looks for
//!
//! ```text
//! AggregateExec (Final | Single, no GROUP BY)          TerseAggregateExec
//!   [CoalescePartitions | Repartition]*          =>      (same output schema; one row)
//!   [AggregateExec (Partial)]
//!   [Repartition | CoalesceBatches | Cooperative | Projection of columns]*
//!   TerseScanExec (no limit)
//! ```
//!
//! where every aggregate is `count`, `sum`, `min`, `max` or `avg` of `key`, `record` or a
//! constant (COUNT(*)), without DISTINCT or FILTER, possibly through a widening cast. Each file
//! then answers for its selected key intervals (the pushed-down filters): aggregates of keys
//! by [`tersedb::ReadTxn::fold_keys`] per interval (blocks wholly inside an interval give
//! COUNT/MIN/MAX from the block index; SUM decodes in registers), aggregates of records by
//! the engine's query executor ([`tersedb::ReadTxn::query`]), and the files' answers are
//! merged. MIN/MAX of f64 records stay with DataFusion: it orders NaN above every number, the
//! engine skips NaN.

use crate::filter::Ivs;
use crate::scan::{show_ivs, Col, TerseScanExec};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::{CastExpr, Column, Literal};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
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
use std::fmt;
use std::sync::Arc;
use tersedb::query::{AggFunc, Column as QCol, Pred, Query, Value};
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
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            Ok(match replace(&node) {
                Some(new) => Transformed::new(new, true, TreeNodeRecursion::Jump),
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
        DataType::Int64 => matches!(from, DataType::UInt32 | DataType::Int64),
        _ => from.is_numeric(),
    };
    widening.then_some(())?;
    argument(input, cast.expr())
}

fn replace(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let top = node.as_ref().downcast_ref::<AggregateExec>()?;
    if !matches!(top.mode(), AggregateMode::Final | AggregateMode::Single)
        || !top.group_expr().is_empty()
    {
        return None;
    }
    // The aggregate that reads rows: `top` itself, or the Partial one below it.
    let raw = if *top.mode() == AggregateMode::Single {
        top
    } else {
        let mut p = top.input();
        loop {
            if let Some(a) = p.as_ref().downcast_ref::<AggregateExec>() {
                break (*a.mode() == AggregateMode::Partial && a.group_expr().is_empty())
                    .then_some(a)?;
            }
            p = only_child(p)?;
        }
    };
    let input = raw.input();
    let scan = scan_below(input)?;
    if scan.limit.is_some() || raw.filter_expr().iter().any(Option::is_some) {
        return None;
    }
    let f64_records = scan.config.value_type == ValueType::F64;
    let mut aggs = Vec::with_capacity(raw.aggr_expr().len());
    for (ae, field) in raw.aggr_expr().iter().zip(top.schema().fields()) {
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
    Some(Arc::new(TerseAggregateExec::new(scan, aggs, top.schema())))
}

fn numeric(scan: &TerseScanExec) -> bool {
    scan.config.value_type != ValueType::Bytes
}

/// Answers aggregates of a scan inside the tree (see the module docs).
#[derive(Debug)]
pub struct TerseAggregateExec {
    scan: Arc<TerseScanExec>,
    aggs: Vec<Agg>,
    schema: SchemaRef,
    props: Arc<PlanProperties>,
}

impl TerseAggregateExec {
    fn new(scan: Arc<TerseScanExec>, aggs: Vec<Agg>, schema: SchemaRef) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        TerseAggregateExec {
            scan,
            aggs,
            schema,
            props: Arc::new(props),
        }
    }
}

impl DisplayAs for TerseAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let aggs: Vec<String> = self.aggs.iter().map(|a| a.to_string()).collect();
        write!(
            f,
            "TerseAggregateExec: db={}, aggregates=[{}] in-tree, files={}/{}",
            self.scan.db,
            aggs.join(", "),
            self.scan.parts.len(),
            self.scan.files
        )?;
        if let Some(ivs) = self.scan.parts.first().and_then(|p| p.ivs.as_ref()) {
            write!(f, ", key_ranges={}", show_ivs(ivs))?;
        }
        Ok(())
    }
}

/// The merged answer of every file.
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
    /// Every file's answer, merged; the files are folded on one thread each.
    fn totals(&self) -> Result<Totals> {
        let parts = &self.scan.parts;
        let each: Vec<Result<Totals>> = if parts.len() > 1 {
            std::thread::scope(|s| {
                let hs: Vec<_> = parts
                    .iter()
                    .map(|p| s.spawn(move || self.part_totals(p)))
                    .collect();
                hs.into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(DataFusionError::Internal("a fold thread panicked".into()))
                        })
                    })
                    .collect()
            })
        } else {
            parts.iter().map(|p| self.part_totals(p)).collect()
        };
        let mut t = Totals::default();
        for x in each {
            let x = x?;
            t.count += x.count;
            t.key_sum = t.key_sum.wrapping_add(x.key_sum);
            t.key_min = pick_u64(t.key_min, x.key_min, u64::min);
            t.key_max = pick_u64(t.key_max, x.key_max, u64::max);
            t.rec_sum = t.rec_sum.add(x.rec_sum);
            t.rec_min = pick(t.rec_min, x.rec_min, Num::min);
            t.rec_max = pick(t.rec_max, x.rec_max, Num::max);
        }
        Ok(t)
    }

    /// One file's answer for its selected keys.
    fn part_totals(&self, p: &crate::scan::Part) -> Result<Totals> {
        let records = self.aggs.iter().any(|a| {
            matches!(
                a,
                Agg::Sum(Col::Record)
                    | Agg::Min(Col::Record)
                    | Agg::Max(Col::Record)
                    | Agg::Avg(Col::Record)
            )
        });
        let key_sum = self
            .aggs
            .iter()
            .any(|a| matches!(a, Agg::Sum(Col::Key) | Agg::Avg(Col::Key)));
        let key_max = match self.scan.config.key_type {
            KeyType::U32 => u32::MAX as u64,
            KeyType::U64 => u64::MAX,
            kt => {
                return Err(DataFusionError::Internal(format!(
                    "aggregate push-down on {kt:?} keys"
                )))
            }
        };
        let err = |e: tersedb::Error| DataFusionError::External(format!("{}: {e}", p.name).into());
        let mut t = Totals::default();
        let all = Ivs::all(key_max);
        let ivs = p.ivs.as_ref().unwrap_or(&all);
        if ivs.is_empty() {
            return Ok(t);
        }
        if records {
            // One pass of the engine's executor over the records of the selected keys.
            let mut q = Query::from_db(p.db.name())
                .select(AggFunc::CountStar)
                .select(AggFunc::Sum(QCol::Record))
                .select(AggFunc::Min(QCol::Record))
                .select(AggFunc::Max(QCol::Record))
                .select(AggFunc::Sum(QCol::Key))
                .select(AggFunc::Min(QCol::Key))
                .select(AggFunc::Max(QCol::Key));
            if p.ivs.is_some() {
                q = q.filter(cover(&ivs.0));
            }
            let r = p.txn.query(&q).map_err(err)?;
            let v = &r.values;
            let int = |i: usize| v.get(i).and_then(Value::as_int);
            t.count = int(0).unwrap_or(0) as u64;
            if t.count > 0 {
                t.rec_sum = v.get(1).and_then(Num::of).unwrap_or_default();
                t.rec_min = v.get(2).and_then(Num::of);
                t.rec_max = v.get(3).and_then(Num::of);
                t.key_sum = int(4).unwrap_or(0) as u128;
                t.key_min = int(5).map(|x| x as u64);
                t.key_max = int(6).map(|x| x as u64);
            }
        } else {
            for &(lo, hi) in &ivs.0 {
                let f = p.txn.fold_keys(&p.db, lo, hi, key_sum).map_err(err)?;
                t.count += f.count;
                t.key_sum = t.key_sum.wrapping_add(f.sum);
                t.key_min = pick_u64(t.key_min, f.min, u64::min);
                t.key_max = pick_u64(t.key_max, f.max, u64::max);
            }
        }
        Ok(t)
    }

    fn batch(&self) -> Result<RecordBatch> {
        let t = self.totals()?;
        let key_scalar = |v: Option<u64>| match self.scan.config.key_type {
            KeyType::U32 => ScalarValue::UInt32(v.map(|v| v as u32)),
            _ => ScalarValue::UInt64(v),
        };
        let rec_scalar = |v: Option<Num>| match (self.scan.config.value_type, v) {
            (ValueType::U32, v) => ScalarValue::UInt32(v.map(|n| int_of(n) as u32)),
            (ValueType::U64, v) => ScalarValue::UInt64(v.map(|n| int_of(n) as u64)),
            (ValueType::I64, v) => ScalarValue::Int64(v.map(|n| int_of(n) as i64)),
            (_, v) => ScalarValue::Float64(v.map(Num::f64)),
        };
        let empty = t.count == 0;
        let mut cols = Vec::with_capacity(self.aggs.len());
        for (a, field) in self.aggs.iter().zip(self.schema.fields()) {
            let ty = field.data_type();
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
            let v = if v.data_type() == *ty {
                v
            } else {
                v.cast_to(ty)?
            };
            cols.push(v.to_array_of_size(1)?);
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
        let batch = self.batch();
        let stream = futures::stream::iter(std::iter::once(batch));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}
