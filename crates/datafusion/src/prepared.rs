//! Prepared statements: a query planned once and executed many times with new parameter values
//! (`$1`, `$2`, ...), for the small queries a dashboard repeats with other key ranges.
//!
//! DataFusion's own `PREPARE`/`EXECUTE` keeps only the logical plan: each `EXECUTE` substitutes
//! the values, optimizes and plans again, which costs several times what a 1% range SUM takes
//! to answer. Here the physical plan is kept when every parameter lands in a predicate pushed
//! down into a tersedb table:
//!
//! ```text
//! prepare:  SQL -> logical plan ($1 typed from what it is compared with)
//!             -> physical plan in a session marked Deferring: scans keep their pushed-down
//!                filters with the parameters in them, read no snapshot and state no statistics
//!                (nothing of the data at planning is kept: DataFusion cannot answer COUNT(*)
//!                from them, TerseAggregateExec reads the catalog's count at execution)
//! execute:  values checked -> bind: each deferred TerseScanExec / TerseAggregateExec rebuilt
//!             on every file's newest snapshot with the keys the bound filters select, every
//!             other node rebuilt over them, and reset where it keeps state
//!             (ExecutionPlan::reset_state: joins, sorts, subqueries) -> executed
//! ```
//!
//! The partition counts, schemas and properties the plan was optimized with do not depend on
//! the values, so the plan holds for every binding. When a parameter reaches anything else (a
//! projection, a record predicate, LIMIT), the physical planner refuses the placeholder and
//! the statement falls back to DataFusion's path at every execution:
//! `LogicalPlan::with_param_values`, then optimization and planning, as `ctx.sql` with the
//! values inlined. So does a single execution whose values a pushed-down filter cannot take
//! exactly (a NaN), and every execution of a statement that reads another kind of table (its
//! scan may keep what it read at planning, as a MemTable's does).

use crate::aggregate::TerseAggregateExec;
use crate::scan::TerseScanExec;
use crate::table::Deferring;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{DataFusionError, ParamValues, Result, ScalarValue};
use datafusion::execution::{SessionState, TaskContext};
use datafusion::logical_expr::LogicalPlan;
#[allow(deprecated)]
use datafusion::physical_plan::coalesce_batches::CoalesceBatchesExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{
    displayable, execute_stream, ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions,
    SendableRecordBatchStream,
};
use datafusion::prelude::{SQLOptions, SessionContext};
use futures::TryStreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A query planned once for many executions (see the module docs). Make it with [`prepare`].
#[derive(Debug)]
pub struct Prepared {
    /// The session as it was when prepared (DataFusion's path plans in it).
    state: SessionState,
    /// The statement's plan, parameters unbound.
    logical: LogicalPlan,
    /// Each parameter's type, `$1` first (`None`: nothing in the statement says).
    types: Vec<Option<DataType>>,
    /// The physical plan every execution binds, when the parameters reach only pushed-down
    /// filters.
    plan: Option<Arc<dyn ExecutionPlan>>,
    task: Arc<TaskContext>,
    /// Physical plans made: one when prepared on the fast path, then one per execution that
    /// takes DataFusion's path.
    plans: AtomicU64,
}

/// Prepares the query `sql` of `ctx` (its settings as they are now, its tables resolved now).
/// Parameters are positional: `$1`, `$2`, ...
///
/// ```no_run
/// # async fn f(ctx: datafusion::prelude::SessionContext) -> datafusion::error::Result<()> {
/// use datafusion::scalar::ScalarValue;
/// let p = tersedb_datafusion::prepare(&ctx, "SELECT SUM(key) FROM t WHERE key BETWEEN $1 AND $2").await?;
/// let batches = p.execute(&[ScalarValue::from(10u32), ScalarValue::from(20u32)]).await?;
/// # Ok(()) }
/// ```
pub async fn prepare(ctx: &SessionContext, sql: &str) -> Result<Prepared> {
    let state = ctx.state();
    let logical = state.create_logical_plan(sql).await?;
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
        .verify_plan(&logical)
        .map_err(|e| DataFusionError::Plan(format!("only a query can be prepared: {e}")))?;
    let types = parameter_types(&logical)?;
    let mut deferring = state.clone();
    let config = deferring.config_mut();
    config.set_extension(Arc::new(Deferring));
    // Dynamic filters are filled in by one execution and read by another node of the same plan;
    // a plan run again would find them filled in by the run before.
    config.options_mut().set(
        "datafusion.optimizer.enable_dynamic_filter_pushdown",
        "false",
    )?;
    let plan = match deferring.create_physical_plan(&logical).await {
        // Another provider's scan may hold what it read at planning (a MemTable's batches):
        // only plans whose data all comes through deferred tersedb nodes are kept.
        Ok(p) if reads_at_execution(&p) => Some(p),
        Ok(_) => None,
        // A parameter that reached more than a pushed-down filter: DataFusion's path.
        Err(_) if !types.is_empty() => None,
        Err(e) => return Err(e),
    };
    let task = state.task_ctx();
    Ok(Prepared {
        plans: AtomicU64::new(u64::from(plan.is_some())),
        state,
        logical,
        types,
        plan,
        task,
    })
}

/// Whether every leaf of `p` reads its data when executed: a deferred tersedb scan or
/// aggregate, or a node without data (`SELECT 1`).
fn reads_at_execution(p: &Arc<dyn ExecutionPlan>) -> bool {
    let children = p.children();
    if !children.is_empty() {
        return children.into_iter().all(reads_at_execution);
    }
    let any = p.as_ref();
    if let Some(s) = any.downcast_ref::<TerseScanExec>() {
        return s.deferred.is_some();
    }
    if let Some(a) = any.downcast_ref::<TerseAggregateExec>() {
        return a.scan.deferred.is_some();
    }
    any.is::<EmptyExec>() || any.is::<PlaceholderRowExec>()
}

/// `$1`..`$n`'s types; `$n` is the highest one the statement names.
fn parameter_types(plan: &LogicalPlan) -> Result<Vec<Option<DataType>>> {
    let fields = plan.get_parameter_fields()?;
    let mut types = Vec::new();
    for (id, field) in fields {
        let n = id
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "parameter {id}: only positional parameters $1, $2, ... can be prepared"
                ))
            })?;
        if types.len() < n {
            types.resize(n, None);
        }
        types[n - 1] = field.map(|f| f.data_type().clone());
    }
    Ok(types)
}

impl Prepared {
    /// Runs the statement with `params` (`$1` first) and collects its result.
    pub async fn execute(&self, params: &[ScalarValue]) -> Result<Vec<RecordBatch>> {
        self.execute_stream(params).await?.try_collect().await
    }

    /// Runs the statement with `params` (`$1` first): every table read at its newest snapshot.
    pub async fn execute_stream(
        &self,
        params: &[ScalarValue],
    ) -> Result<SendableRecordBatchStream> {
        let values = ParamValues::from(self.check(params)?);
        if let Some(plan) = &self.plan {
            if let Some(bound) = bind(plan, &values)? {
                return execute_stream(bound, self.task.clone());
            }
        }
        self.plans.fetch_add(1, Ordering::Relaxed);
        let logical = self.logical.clone().with_param_values(values)?;
        let physical = self.state.create_physical_plan(&logical).await?;
        execute_stream(physical, self.task.clone())
    }

    /// The parameters' types, `$1` first (`None`: any value; a value must have its
    /// parameter's type, or be an integer that type holds exactly).
    pub fn parameter_types(&self) -> &[Option<DataType>] {
        &self.types
    }

    /// The result's schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(self.logical.schema().inner())
    }

    /// Whether executions reuse the plan made when prepared (else each plans afresh).
    pub fn reuses_plan(&self) -> bool {
        self.plan.is_some()
    }

    /// Physical plans made so far for this statement (one when prepared with a reusable plan,
    /// and one per execution on DataFusion's path).
    pub fn plans_made(&self) -> u64 {
        self.plans.load(Ordering::Relaxed)
    }

    /// The reused plan as EXPLAIN shows it: deferred scans show `key_ranges=at execution`
    /// and their filters with the parameters; with `params`, the plan one execution runs, with
    /// its key ranges (nothing is executed). `None`: the statement takes DataFusion's path.
    pub fn explain(&self, params: Option<&[ScalarValue]>) -> Result<Option<String>> {
        let Some(plan) = &self.plan else {
            return Ok(None);
        };
        let plan = match params {
            None => plan.clone(),
            Some(p) => match bind(plan, &ParamValues::from(self.check(p)?))? {
                Some(b) => b,
                None => return Ok(None),
            },
        };
        let text = displayable(plan.as_ref()).indent(true).to_string();
        Ok(Some(text))
    }

    /// `params` as the parameters' values: as many as there are parameters, each of its
    /// parameter's type (an integer converted when that type holds it exactly; NULL as a NULL
    /// of the type).
    fn check(&self, params: &[ScalarValue]) -> Result<Vec<ScalarValue>> {
        if params.len() != self.types.len() {
            return Err(DataFusionError::Plan(format!(
                "the statement has {} parameter{}, {} value{} given",
                self.types.len(),
                if self.types.len() == 1 { "" } else { "s" },
                params.len(),
                if params.len() == 1 { "" } else { "s" },
            )));
        }
        params
            .iter()
            .zip(&self.types)
            .enumerate()
            .map(|(i, (v, ty))| match ty {
                None => Ok(v.clone()),
                Some(ty) => convert(v, ty).ok_or_else(|| {
                    DataFusionError::Plan(format!(
                        "parameter ${} is {ty}; the value {v} ({}) is not one",
                        i + 1,
                        v.data_type()
                    ))
                }),
            })
            .collect()
    }
}

/// `v` as a value of `ty`: itself, a NULL of it, or an integer `ty` holds exactly (Arrow's
/// checked cast: an integer out of `ty`'s range is an error, not a NULL).
fn convert(v: &ScalarValue, ty: &DataType) -> Option<ScalarValue> {
    if &v.data_type() == ty {
        return Some(v.clone());
    }
    if v.is_null() {
        return ScalarValue::try_from(ty).ok();
    }
    if !(v.data_type().is_integer() && ty.is_integer()) {
        return None;
    }
    v.cast_to(ty).ok().filter(|c| !c.is_null())
}

/// The plan one execution runs: deferred tersedb nodes bound to `params` on fresh snapshots,
/// every other node reset; `None` when a node cannot take these values exactly.
fn bind(
    node: &Arc<dyn ExecutionPlan>,
    params: &ParamValues,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(a) = node.as_ref().downcast_ref::<TerseAggregateExec>() {
        return Ok(a
            .bind(params)?
            .map(|a| Arc::new(a) as Arc<dyn ExecutionPlan>));
    }
    if let Some(s) = node.as_ref().downcast_ref::<TerseScanExec>() {
        return Ok(s
            .bind(params)?
            .map(|s| Arc::new(s) as Arc<dyn ExecutionPlan>));
    }
    let mut children = Vec::new();
    for c in node.children() {
        match bind(c, params)? {
            Some(b) => children.push(b),
            None => return Ok(None),
        }
    }
    if children.is_empty() {
        return Ok(Some(node.clone().reset_state()?));
    }
    // The bound nodes keep the properties the plan was made with.
    let keep = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep);
    let new = node.clone().replace_children(children, keep)?;
    if stateless(node.as_ref()) {
        return Ok(Some(new));
    }
    Ok(Some(new.reset_state()?))
}

/// Nodes whose `reset_state` is `replace_children` with their children as they are (the
/// default), so a node made by `replace_children` is already reset: calling it again would
/// only build the node twice (microseconds a small statement notices).
#[allow(deprecated)] // CoalesceBatchesExec: older plans still have it
fn stateless(p: &dyn ExecutionPlan) -> bool {
    p.is::<ProjectionExec>()
        || p.is::<CoalescePartitionsExec>()
        || p.is::<CooperativeExec>()
        || p.is::<RepartitionExec>()
        || p.is::<CoalesceBatchesExec>()
        || p.is::<SortPreservingMergeExec>()
        || p.is::<FilterExec>()
        || p.is::<GlobalLimitExec>()
        || p.is::<LocalLimitExec>()
}
