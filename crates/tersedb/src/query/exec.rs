//! The executor: runs a [`Query`] inside a read transaction, block by block.
//!
//! ```text
//! 1. type checks (integer keys; `record` needs a numeric value type)
//! 2. plan.rs: constants and subqueries evaluated; condition -> key intervals (+ residual)
//! 3. btree::scan: descend by key to the leaves overlapping the intervals; per block:
//!    no per-row work (COUNT/SUM/AVG/MIN/MAX of keys, exact key ranges): each leaf folded
//!    per interval as ReadTxn::fold_keys does (LeafScan::fold_range):
//!      block index sought for the interval     blocks before it never read
//!      inside, COUNT/MIN/MAX only              answered from first/last/count (zone map)
//!      inside, SUM/AVG                         codec block sum (BP128, SIMD FOR) or decode
//!      boundary block                          decoded into an L1 buffer and searched
//!      plain leaf                              binary search + one vectorised sum
//!    rows needed (residual filter, records, TOP/BOTTOM): the leaf's blocks listed; outside
//!    every interval skipped, else decode_keys into an L1 buffer, then per slot
//! 4. aggregates finished: COUNT 0, SUM 0, AVG/MIN/MAX NULL, TOP/BOTTOM [] when nothing selected
//! ```
//!
//! Sums are exact (u128 for keys, i128 for integer records); AVG divides the exact sum,
//! converted to f64, by the count. f64 records sum in key order in f64.

// The zone map on records (`WHERE record > 100`): record chunks judged by their bounds.
mod reczone;
// Row queries whose condition reads the record: block by block, chunks judged by the zone map.
mod recrows;
// String-key and row execution: a part of this executor (the two call each other for row
// queries and subqueries).
mod strkeys;

use super::ast::{AggFunc, Aggregate, Column, GroupBy, Item, Query, SelectItem};
use super::error::QueryError;
use super::plan::{self, Binder, Bound, Num, RecVal, RecordDomain};
use super::suggest::did_you_mean;
use super::value::{QueryResult, QueryStats, Value};
use crate::btree::fold::{self, FoldSpec};
use crate::btree::scan::{self, BlockKeys, KeyBuffer, LeafScan, RecFold, RecNum, ScanBlock};
use crate::btree::KeyType;
use crate::db::{Db, ValueType};
use crate::error::{Error, Result};
use crate::txn::Reader;
use reczone::{covers, Verdict};
use smallvec::{smallvec, SmallVec};
use std::borrow::Cow;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::ops::Range;

/// Deepest nesting of subqueries a query may have.
pub const MAX_SUBQUERY_DEPTH: usize = 32;

fn type_err(at: Option<u32>, what: String) -> Error {
    QueryError::Type { at, what }.into()
}

/// The function of `q`'s aggregate `i` (a SELECT item); [`shape`] has checked that it exists.
pub(crate) fn agg_func(q: &Query, i: usize) -> Result<AggFunc> {
    q.aggregates
        .get(i)
        .map(|a| a.func)
        .ok_or_else(|| type_err(None, format!("SELECT item {i} names no aggregate")))
}

/// The intervals of `ivs` (sorted, disjoint) that overlap the keys `first..=last` of a block,
/// and whether the block lies inside one of them.
fn overlapping(ivs: &[(u64, u64)], first: u64, last: u64) -> (&[(u64, u64)], bool) {
    let s = ivs.partition_point(|iv| iv.1 < first);
    let e = ivs.partition_point(|iv| iv.0 <= last);
    let hit = ivs.get(s..e).unwrap_or_default();
    let inside = matches!(hit, [iv] if iv.0 <= first && iv.1 >= last);
    (hit, inside)
}

/// Runs `q` in `txn`.
pub fn run(txn: &dyn Reader, q: &Query) -> Result<QueryResult> {
    // A query built in code has not met the parser's depth limit, and planning and evaluation
    // recurse over the tree: one deeper than a parsed query can be is refused before either.
    let max = super::parse::MAX_TREE_DEPTH as usize;
    if q.deeper_than(max) {
        return Err(type_err(
            None,
            format!(
                "query deeper than {max} conditions, operators and subqueries                  (write long lists as IN (...))"
            ),
        ));
    }
    run_at(txn, q, 0)
}

/// What a query returns, from its SELECT list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Aggregates over the whole selection: one row.
    Aggregates,
    /// One row per selected entry.
    Rows,
    /// One row per non-empty group.
    Groups(GroupBy),
}

/// The shape of `q`, or a type error for a SELECT list that mixes what cannot be mixed.
pub(crate) fn shape(q: &Query) -> Result<Shape> {
    // The output items without cloning the SELECT list (aggregate queries stay at two heap
    // allocations, see docs/ARCHITECTURE.md).
    let n_aggs = if q.select.is_empty() {
        q.aggregates.len()
    } else {
        0
    };
    let items = || {
        q.select
            .iter()
            .map(|s| s.item)
            .chain((0..n_aggs).map(Item::Agg))
    };
    let first_at = q.aggregates.first().and_then(|a| a.at.0);
    // What the items are, in one pass (it runs before every query).
    let (mut cols, mut aggs) = (false, false);
    for it in items() {
        match it {
            Item::Key | Item::Record => cols = true,
            Item::Agg(i) if i >= q.aggregates.len() => {
                return Err(type_err(
                    None,
                    format!("SELECT item {i} names no aggregate"),
                ));
            }
            Item::Agg(_) => aggs = true,
            _ => {}
        }
    }
    if let Some(g) = q.group_by {
        if g == GroupBy::KeyDiv(0) {
            return Err(type_err(
                None,
                "GROUP BY key / 0: a bucket width is at least 1".into(),
            ));
        }
        if let Some(it) = items().find(|i| matches!(i, Item::Key | Item::Record)) {
            return Err(type_err(
                None,
                format!(
                    "{} is not grouped (GROUP BY {g}): select the group or aggregate it",
                    q.item_text(it)
                ),
            ));
        }
        if g == GroupBy::Record && items().any(|i| i == Item::BucketStart) {
            return Err(type_err(
                None,
                "a bucket's first key needs GROUP BY key / N".into(),
            ));
        }
        return Ok(Shape::Groups(g));
    }
    if items().any(|i| matches!(i, Item::Group | Item::BucketStart)) {
        return Err(type_err(
            None,
            "key / N in the SELECT list needs GROUP BY key / N".into(),
        ));
    }
    if cols {
        if aggs {
            return Err(type_err(
                first_at,
                "key or record beside aggregates needs GROUP BY (key / N or record)".into(),
            ));
        }
        return Ok(Shape::Rows);
    }
    if q.aggregates.is_empty() {
        return Err(type_err(
            None,
            "a query needs at least one aggregate".into(),
        ));
    }
    if q.limit.is_some() || q.offset > 0 || q.descending {
        return Err(type_err(
            None,
            "ORDER BY, LIMIT and OFFSET apply to rows (SELECT key, record) and groups \
             (GROUP BY); aggregates alone return one row"
                .into(),
        ));
    }
    Ok(Shape::Aggregates)
}

/// Opens the query's database; an unknown name suggests the closest existing one.
pub(crate) fn open<'t>(
    txn: &'t dyn Reader,
    name: &str,
) -> Result<(Cow<'t, Db>, crate::catalog::Entry)> {
    match txn.open_db_entry(name) {
        Err(Error::DbNotFound(_)) => {
            let names: Vec<String> = txn.list_dbs()?.into_iter().map(|(n, _)| n).collect();
            let what = match did_you_mean(name, &names) {
                Some(h) => format!("no database named {name:?} (did you mean {h:?}?)"),
                None if names.is_empty() => {
                    format!("no database named {name:?} (the file has none)")
                }
                None => format!(
                    "no database named {name:?} (the file has {})",
                    names
                        .iter()
                        .map(|n| format!("{n:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            Err(QueryError::UnknownName { what }.into())
        }
        r => r,
    }
}

fn run_at(txn: &dyn Reader, q: &Query, depth: usize) -> Result<QueryResult> {
    if depth > MAX_SUBQUERY_DEPTH {
        return Err(type_err(
            None,
            format!("subqueries nested more than {MAX_SUBQUERY_DEPTH} deep"),
        ));
    }
    let shape = shape(q)?;
    let (db, entry) = open(txn, &q.db)?;
    let key_domain = match db.spec.key_type {
        KeyType::U32 => (0, u32::MAX as i128),
        KeyType::U64 => (0, u64::MAX as i128),
        _ => return strkeys::run(txn, q, &db, shape, depth),
    };
    let mut ctx = Ctx {
        txn,
        db: &db,
        depth,
        key_domain,
        stats: QueryStats::default(),
    };
    for a in &q.aggregates {
        if a.func.column() == Some(Column::Record) {
            ctx.record_domain()
                .map_err(|w| type_err(a.at.0, format!("{a}: {w}")))?;
        }
    }
    if matches!(shape, Shape::Groups(GroupBy::Record)) {
        ctx.record_domain()
            .map_err(|w| type_err(None, format!("GROUP BY record: {w}")))?;
    }
    // Ranges and points of literal keys (most queries) skip building a condition tree.
    let (ivs, residual) = match &q.filter {
        None => (smallvec![key_domain], None),
        Some(p) => match plan::literal_key_ivs(p, false, key_domain) {
            Some(ivs) => (ivs, None),
            None => {
                let bound = plan::simplify(plan::bind(p, false, &mut ctx)?);
                let (ivs, exact) = plan::cover(&bound, key_domain);
                (ivs, (!exact).then_some(bound))
            }
        },
    };
    let ivs: SmallVec<[(u64, u64); 2]> = ivs
        .iter()
        .map(|&(lo, hi)| (lo.max(0) as u64, hi.min(u64::MAX as i128) as u64))
        .collect();
    let stats = ctx.stats;
    match shape {
        Shape::Aggregates => aggregate(txn, q, &db, entry.root, &ivs, residual, stats),
        Shape::Rows => match residual {
            Some(r) if plan::uses_record(&r) => {
                recrows::rows(txn, q, &db, entry.root, &ivs, &r, stats)
            }
            r => strkeys::rows_int(txn, q, &db, &ivs, r.as_ref(), stats),
        },
        Shape::Groups(g) => groups(txn, q, &db, entry.root, g, &ivs, residual, stats),
    }
}

/// Aggregates alone: one pass over the selection, one row.
fn aggregate(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    root: crate::error::PageId,
    ivs: &[(u64, u64)],
    residual: Option<Bound>,
    mut stats: QueryStats,
) -> Result<QueryResult> {
    if residual.is_none() {
        if let Some(sum) = keys_only(q) {
            return key_aggregate(txn, q, db, root, ivs, sum, stats);
        }
    }
    let mut acc = Acc::new(q, db.value_type(), residual);
    let mut zones = reczone::RecZones::new(q, &acc, db.value_type());
    let mut blocks = Vec::new();
    // Only queries with per-row work decode blocks (3 KiB, allocated on first use).
    let mut buf: Option<Box<KeyBuffer>> = None;
    let rev = acc.early == Some(Early::Descending);
    scan::leaves_overlapping(txn.pages(), &db.spec, root, ivs, rev, &mut |leaf, ivs| {
        stats.leaves += 1;
        if !acc.rows {
            // No per-row work: each interval folded as `ReadTxn::fold_keys` folds a leaf.
            for &(lo, hi) in ivs {
                let f = leaf.fold_range(lo, hi, acc.key_sum_needed)?;
                stats.blocks_decoded += f.blocks_decoded;
                stats.blocks_from_index += f.blocks_skipped;
                if let (Some(min), Some(max)) = (f.min, f.max) {
                    acc.add_summary(f.count, f.sum, min, max);
                }
            }
            return Ok(!acc.satisfied());
        }
        if let Some(rn) = acc.rec_fold {
            // Only record folds: each interval's keys folded as above, its records as the
            // one run of slots they hold (whole record chunks from their stored sums).
            for &(lo, hi) in ivs {
                let (slots, f) = leaf.slots_in(lo, hi, acc.key_sum_needed)?;
                stats.blocks_decoded += f.blocks_decoded;
                stats.blocks_from_index += f.blocks_skipped;
                if let (Some(min), Some(max)) = (f.min, f.max) {
                    acc.add_summary(f.count, f.sum, min, max);
                    acc.fold_records(leaf, slots, rn)?;
                }
            }
            acc.end_leaf();
            return Ok(!acc.satisfied());
        }
        // Only the blocks the leaf's intervals can touch (they are sorted and disjoint).
        let lo = ivs.first().map_or(0, |iv| iv.0);
        let hi = ivs.last().map_or(u64::MAX, |iv| iv.1);
        leaf.blocks_in(&mut blocks, lo, hi)?;
        let buf = buf.get_or_insert_with(Box::default);
        let zoned = match &mut zones {
            Some(z) => z.leaf(&mut acc, leaf, &blocks, ivs, buf, &mut stats)?,
            None => false,
        };
        if !zoned {
            acc.leaf(leaf, &blocks, ivs, buf, &mut stats)?;
        }
        acc.end_leaf();
        Ok(!acc.satisfied())
    })?;
    aggregates_row(q, |f| acc.finish(f), stats)
}

/// Which aggregates [`key_aggregate`] answers: COUNT, SUM, AVG, MIN and MAX of keys with at
/// least one COUNT, SUM or AVG among them (MIN or MAX alone take the early walk of [`Acc`]).
/// `Some(whether a key sum is needed)`.
fn keys_only(q: &Query) -> Option<bool> {
    let (mut sum, mut whole) = (false, false);
    for a in &q.aggregates {
        match a.func {
            AggFunc::CountStar | AggFunc::Count(Column::Key) => whole = true,
            AggFunc::Sum(Column::Key) | AggFunc::Avg(Column::Key) => (sum, whole) = (true, true),
            AggFunc::Min(Column::Key) | AggFunc::Max(Column::Key) => {}
            _ => return None,
        }
    }
    whole.then_some(sum)
}

/// Key aggregates alone over exact key intervals ([`keys_only`]): each leaf folded per interval
/// into one [`scan::KeyFold`] total, as [`aggregate`]'s no-row path does, without the general
/// accumulator (its setup, copy and teardown were ~350 instructions of a small range query).
fn key_aggregate(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    root: crate::error::PageId,
    ivs: &[(u64, u64)],
    sum: bool,
    mut stats: QueryStats,
) -> Result<QueryResult> {
    if let &[(lo, hi)] = ivs {
        // One interval (a range or a point): the fold's own descent, lighter than the block
        // scan's (no fences, no visitor), as `ReadTxn::fold_keys` takes it.
        let f = fold::fold_keys_counted(txn.pages(), &db.spec, root, FoldSpec { lo, hi, sum })?;
        stats.leaves += f.leaves;
        stats.blocks_decoded += f.keys.blocks_decoded;
        stats.blocks_from_index += f.keys.blocks_skipped;
        let mut keys = KeyTotals::new();
        if let (Some(a), Some(z)) = (f.keys.min, f.keys.max) {
            keys.add(f.keys.count, f.keys.sum, a, z);
        }
        return key_row(q, &keys, stats);
    }
    let mut keys = KeyTotals::new();
    scan::leaves_overlapping(txn.pages(), &db.spec, root, ivs, false, &mut |leaf, ivs| {
        stats.leaves += 1;
        for &(lo, hi) in ivs {
            let f = leaf.fold_range(lo, hi, sum)?;
            stats.blocks_decoded += f.blocks_decoded;
            stats.blocks_from_index += f.blocks_skipped;
            if let (Some(a), Some(z)) = (f.min, f.max) {
                keys.add(f.count, f.sum, a, z);
            }
        }
        Ok(true)
    })?;
    key_row(q, &keys, stats)
}

/// The one row of a query whose aggregates are all of keys.
fn key_row(q: &Query, keys: &KeyTotals, stats: QueryStats) -> Result<QueryResult> {
    aggregates_row(
        q,
        |f| {
            keys.value(f)
                .unwrap_or_else(|| Err(type_err(None, format!("{f:?} is no aggregate of keys"))))
        },
        stats,
    )
}

/// COUNT, SUM, MIN and MAX of the keys selected so far: [`Acc`]'s key part and
/// [`key_aggregate`]'s whole state.
#[derive(Clone, Copy, Debug)]
struct KeyTotals {
    count: u64,
    sum: u128,
    /// Smallest and largest key added, meaningful once `count > 0`. Plain integers, not
    /// `Option`s: a `None`'s payload is never written, and the compiled `map_or` compared it
    /// before testing the discriminant, which valgrind reported in the C API's test.
    min: u64,
    max: u64,
}

impl KeyTotals {
    fn new() -> KeyTotals {
        KeyTotals {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Adds `count` keys of sum `sum` between `min` and `max` (nothing for none).
    #[inline]
    fn add(&mut self, count: u64, sum: u128, min: u64, max: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.sum += sum;
        self.min = self.min.min(min);
        self.max = self.max.max(max);
    }

    /// The value of a key aggregate (COUNT, SUM, AVG, MIN, MAX of keys); `None` for the others.
    fn value(&self, f: AggFunc) -> Option<Result<Value>> {
        let n = self.count;
        let int = |v: u64| {
            if n > 0 {
                Value::Int(v as i128)
            } else {
                Value::Null
            }
        };
        Some(Ok(match f {
            AggFunc::CountStar | AggFunc::Count(_) | AggFunc::CountDistinct(Column::Key) => {
                Value::Int(n as i128)
            }
            AggFunc::Sum(Column::Key) => {
                return Some(i128::try_from(self.sum).map(Value::Int).map_err(|_| {
                    Error::from(QueryError::Arithmetic {
                        at: None,
                        what: "the sum of the keys exceeds 127 bits".into(),
                    })
                }))
            }
            AggFunc::Avg(Column::Key) if n == 0 => Value::Null,
            AggFunc::Avg(Column::Key) => Value::Float(self.sum as f64 / n as f64),
            AggFunc::Min(Column::Key) => int(self.min),
            AggFunc::Max(Column::Key) => int(self.max),
            _ => return None,
        }))
    }
}

/// The one row of an aggregate query: each aggregate's value from `value`, named by its alias
/// or text, in the SELECT list's order (aggregates named twice are computed once).
fn aggregates_row(
    q: &Query,
    mut value: impl FnMut(AggFunc) -> Result<Value>,
    stats: QueryStats,
) -> Result<QueryResult> {
    let mut values = Vec::with_capacity(q.aggregates.len());
    let mut columns = Vec::with_capacity(q.aggregates.len());
    let items = &q.select;
    for (i, a) in q.aggregates.iter().enumerate() {
        values.push(value(a.func)?);
        let alias = items
            .iter()
            .find(|s| s.item == Item::Agg(i))
            .and_then(|s| s.alias.clone());
        columns.push(match alias {
            Some(a) => Cow::Owned(a),
            None => a
                .static_name()
                .map_or_else(|| a.to_string().into(), Cow::Borrowed),
        });
    }
    if !q.select.is_empty() {
        // The SELECT list's order (aggregates named twice are computed once).
        let order: Vec<usize> = q
            .select
            .iter()
            .filter_map(|s| match s.item {
                Item::Agg(i) => Some(i),
                _ => None,
            })
            .collect();
        let names: Vec<Cow<'static, str>> = q.select.iter().map(|s| column_name(q, s)).collect();
        values = order
            .iter()
            .map(|&i| {
                values
                    .get(i)
                    .cloned()
                    .ok_or_else(|| type_err(None, format!("SELECT item {i} names no aggregate")))
            })
            .collect::<Result<_>>()?;
        columns = names;
    }
    Ok(QueryResult {
        columns,
        values,
        rows: Vec::new(),
        stats,
    })
}

/// The name of an output column: its alias, else its text.
pub(crate) fn column_name(q: &Query, s: &SelectItem) -> Cow<'static, str> {
    match (&s.alias, s.item) {
        (Some(a), _) => Cow::Owned(a.clone()),
        (None, Item::Agg(i)) => match q.aggregates.get(i).and_then(|a| a.static_name()) {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(q.item_text(s.item)),
        },
        (None, Item::Key) => Cow::Borrowed("key"),
        (None, Item::Record) => Cow::Borrowed("record"),
        (None, it) => Cow::Owned(q.item_text(it)),
    }
}

/// Rows kept after OFFSET, up to LIMIT.
pub(crate) struct Window {
    skip: u64,
    room: u64,
    pub rows: Vec<Vec<Value>>,
}

impl Window {
    pub(crate) fn new(q: &Query) -> Window {
        Window {
            skip: q.offset,
            room: q.limit.unwrap_or(u64::MAX),
            rows: Vec::new(),
        }
    }
    /// Whether the next row is kept (false while OFFSET skips, or once LIMIT is reached).
    pub(crate) fn take(&mut self) -> bool {
        if self.room == 0 {
            return false;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        self.room -= 1;
        true
    }
    pub(crate) fn full(&self) -> bool {
        self.room == 0
    }
}

/// A group's running aggregates.
struct Group {
    key: i128,
    acc: Acc,
}

/// `GROUP BY key / N` and `GROUP BY record` over integer keys.
///
/// Key buckets are key ranges visited in key order, so one group is open at a time: when no
/// per-row work is needed, each bucket's part of a leaf is folded with
/// [`LeafScan::fold_range`] (the fold `ReadTxn::fold_keys` uses; inner blocks answered from
/// the block index or summed by the codec), never row by row. A leaf inside one bucket costs
/// one fold. With a residual condition, record aggregates or TOP/BOTTOM, blocks are decoded
/// and each selected row goes to its bucket. Record groups are kept in a sorted map. A
/// condition on the record is judged per record chunk first (`reczone::Judge`): chunks it is
/// false for are skipped, and the rows of chunks it is true for are taken untested, folded per
/// bucket where the query only folds.
#[allow(clippy::too_many_arguments)]
fn groups(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    root: crate::error::PageId,
    by: GroupBy,
    ivs: &[(u64, u64)],
    residual: Option<Bound>,
    mut stats: QueryStats,
) -> Result<QueryResult> {
    let vt = db.value_type();
    let items = q.items();
    let proto = Acc::new(q, vt, None);
    let by_record = by == GroupBy::Record;
    let read_record =
        proto.read_record || by_record || residual.as_ref().is_some_and(plan::uses_record);
    let rows = proto.rows || residual.is_some() || by_record;
    // Key buckets whose only per-row work is folding records, or none (COUNT and key
    // aggregates under a condition): runs of a bucket's selected rows folded at once, without
    // a condition, or in record chunks whose bounds make it true for every row.
    let bulk_rows = !by_record && (proto.rec_fold.is_some() || !proto.rows);
    // Rows taken untested read their record only for the aggregates or the group.
    let untested_record = proto.read_record || by_record;
    let mut judge = reczone::Judge::default();
    let mut runs = reczone::Runs::new();
    let sum = proto.key_sum_needed;
    let width = match by {
        GroupBy::KeyDiv(n) => n,
        GroupBy::Record => 1,
    };
    let new_acc = || {
        let mut a = Acc::new(q, vt, None);
        a.early = None;
        a.rows = rows;
        a.read_record = read_record;
        a
    };
    // Ascending walks stop once LIMIT groups are complete; descending ones reverse at the end.
    let mut win = Window::new(q);
    let streaming = !q.descending;
    let mut done: Vec<Group> = Vec::new();
    let mut open: Option<Group> = None;
    let mut by_rec: std::collections::BTreeMap<i128, Acc> = Default::default();
    let mut blocks = Vec::new();
    let mut buf: Option<Box<KeyBuffer>> = None;
    let out = |g: Group, win: &mut Window, done: &mut Vec<Group>| -> Result<()> {
        if streaming {
            if win.take() {
                win.rows.push(group_row(q, &items, by, g.key, &g.acc)?);
            }
        } else {
            done.push(g);
        }
        Ok(())
    };
    // The open bucket `b`, finishing the previous one.
    let enter =
        |b: u64, open: &mut Option<Group>, win: &mut Window, done: &mut Vec<Group>| -> Result<()> {
            if open.as_ref().is_some_and(|g| g.key == b as i128) {
                return Ok(());
            }
            if let Some(g) = open.take() {
                out(g, win, done)?;
            }
            *open = Some(Group {
                key: b as i128,
                acc: new_acc(),
            });
            Ok(())
        };
    scan::leaves_overlapping(txn.pages(), &db.spec, root, ivs, false, &mut |leaf, ivs| {
        stats.leaves += 1;
        if !rows {
            for &(lo, hi) in ivs {
                // Where the interval's keys lie, from the block index (no sum: a leaf of
                // several buckets is summed bucket by bucket below, not twice).
                let probe = leaf.fold_range(lo, hi, false)?;
                stats.blocks_decoded += probe.blocks_decoded;
                stats.blocks_from_index += probe.blocks_skipped;
                let (Some(mn), Some(mx)) = (probe.min, probe.max) else {
                    continue;
                };
                let (b0, b1) = (mn / width, mx / width);
                if b0 == b1 {
                    let f = if sum {
                        let f = leaf.fold_range(lo, hi, true)?;
                        stats.blocks_decoded += f.blocks_decoded;
                        stats.blocks_from_index += f.blocks_skipped;
                        f
                    } else {
                        probe
                    };
                    enter(b0, &mut open, &mut win, &mut done)?;
                    if let Some(g) = &mut open {
                        g.acc.add_summary(f.count, f.sum, mn, mx);
                    }
                    continue;
                }
                // Several buckets in this leaf: one fold per bucket, jumping over empty ones.
                let mut cur = mn;
                loop {
                    let b = cur / width;
                    let bhi = (b.saturating_mul(width)).saturating_add(width - 1).min(hi);
                    let f = leaf.fold_range(cur, bhi, sum)?;
                    stats.blocks_decoded += f.blocks_decoded;
                    stats.blocks_from_index += f.blocks_skipped;
                    if let (Some(a), Some(z)) = (f.min, f.max) {
                        enter(b, &mut open, &mut win, &mut done)?;
                        if let Some(g) = &mut open {
                            g.acc.add_summary(f.count, f.sum, a, z);
                        }
                    }
                    if bhi >= mx {
                        break;
                    }
                    // The next bucket with a key: dense buckets start right after, sparse
                    // ones are found by a count-only fold of the rest.
                    let next = bhi + 1;
                    if (mx - next) / width < probe.count {
                        cur = next;
                    } else {
                        let r = leaf.fold_range(next, hi, false)?;
                        stats.blocks_decoded += r.blocks_decoded;
                        stats.blocks_from_index += r.blocks_skipped;
                        match r.min {
                            Some(m) => cur = m,
                            None => break,
                        }
                    }
                }
            }
            return Ok(!(streaming && win.full()));
        }
        let lo = ivs.first().map_or(0, |iv| iv.0);
        let hi = ivs.last().map_or(u64::MAX, |iv| iv.1);
        leaf.blocks_in(&mut blocks, lo, hi)?;
        let buf = buf.get_or_insert_with(Box::default);
        // A condition on the record: each record chunk judged by its bounds (one zone that
        // tests every row otherwise).
        let zoned = judge.leaf(leaf, residual.as_ref())?;
        // Consecutive blocks of one bucket answered from the block index, folded as one run
        // of slots (whole compressed record chunks then fold from their stored sums): the
        // bucket, the slots, the first and last key.
        let mut run: Option<(u64, Range<usize>, u64, u64)> = None;
        macro_rules! fold_run {
            () => {
                if let Some((bucket, slots, first, last)) = run.take() {
                    enter(bucket, &mut open, &mut win, &mut done)?;
                    if let Some(g) = &mut open {
                        g.acc.add_summary(slots.len() as u64, 0, first, last);
                        g.acc.fold_run(leaf, slots)?;
                    }
                }
            };
        }
        for b in &blocks {
            let (hit, inside) = overlapping(ivs, b.first, b.last);
            if hit.is_empty() {
                stats.blocks_skipped += 1;
                continue;
            }
            let slots = b.slots();
            let zs = judge.block(leaf, &slots, true, &mut stats)?;
            if zoned && judge.all(zs.clone(), |v| *v == Verdict::Never) {
                stats.blocks_skipped += 1;
                continue;
            }
            // A block inside one interval and one bucket, its keys summed by nobody, its rows
            // all selected (no condition, or chunks whose bounds make it true for all): the
            // block index answers its keys and only its records are folded, as a range query
            // does.
            let all_taken = residual.is_none()
                || (zoned
                    && judge.all(
                        zs.clone(),
                        |v| matches!(v, Verdict::Keys(k) if covers(k, b)),
                    ));
            if bulk_rows && !sum && inside && b.first / width == b.last / width && all_taken {
                stats.blocks_from_index += 1;
                let bucket = b.first / width;
                match &mut run {
                    Some((rb, slots, _, last)) if *rb == bucket && slots.end == b.start => {
                        slots.end = b.start + b.count;
                        *last = b.last;
                    }
                    _ => {
                        fold_run!();
                        run = Some((bucket, b.start..b.start + b.count, b.first, b.last));
                    }
                }
                continue;
            }
            fold_run!();
            let keys = leaf.decode_keys(b, buf)?;
            stats.blocks_decoded += 1;
            judge.runs(zs, &slots, &keys, hit, residual.is_some(), &mut runs);
            for (r, test) in runs.drain(..) {
                let (a, z) = (r.start, r.end);
                if bulk_rows && !test {
                    // Each bucket's run of the block folded at once (records included).
                    let mut i = a;
                    while i < z {
                        let bucket = keys.at(i) / width;
                        let last = bucket.saturating_mul(width).saturating_add(width - 1);
                        let j = keys.upper_bound(last).min(z);
                        enter(bucket, &mut open, &mut win, &mut done)?;
                        if let Some(g) = &mut open {
                            let ks = keys.slice(i..j);
                            let s = if sum { ks.sum() } else { 0 };
                            g.acc
                                .add_summary(ks.len() as u64, s, ks.at(0), ks.at(j - i - 1));
                            g.acc.fold_run(leaf, b.start + i..b.start + j)?;
                        }
                        i = j;
                    }
                    continue;
                }
                for i in a..z {
                    let k = keys.at(i);
                    let rec = if read_record && (test || untested_record) {
                        rec_val(vt, &leaf.record(b.start + i)?, leaf.page_id())?
                    } else {
                        RecVal::None
                    };
                    if let Some(r) = residual.as_ref().filter(|_| test) {
                        if !plan::test(r, k, rec) {
                            continue;
                        }
                    }
                    if by_record {
                        let g = match rec {
                            RecVal::Int(v) => v,
                            RecVal::F64(v) => f64_group(v),
                            RecVal::None => continue,
                        };
                        by_rec.entry(g).or_insert_with(&new_acc).add_row(k, rec)?;
                    } else {
                        enter(k / width, &mut open, &mut win, &mut done)?;
                        if let Some(g) = &mut open {
                            g.acc.add_row(k, rec)?;
                        }
                    }
                }
            }
        }
        fold_run!();
        Ok(!(streaming && win.full()))
    })?;
    if let Some(g) = open.take() {
        out(g, &mut win, &mut done)?;
    }
    for (key, acc) in std::mem::take(&mut by_rec) {
        out(Group { key, acc }, &mut win, &mut done)?;
    }
    if !streaming {
        for g in done.into_iter().rev() {
            if win.full() {
                break;
            }
            if win.take() {
                win.rows.push(group_row(q, &items, by, g.key, &g.acc)?);
            }
        }
    }
    let columns = items.iter().map(|s| column_name(q, s)).collect();
    Ok(QueryResult {
        columns,
        values: Vec::new(),
        rows: win.rows,
        stats,
    })
}

/// An f64 record as a group key: ordered as the numbers (IEEE total order), -0.0 with 0.0,
/// every NaN in one group, last.
pub(crate) fn f64_group(v: f64) -> i128 {
    if v.is_nan() {
        i128::MAX
    } else if v == 0.0 {
        0
    } else {
        f64_key(v)
    }
}

/// One output row of a group.
fn group_row(
    q: &Query,
    items: &[SelectItem],
    by: GroupBy,
    key: i128,
    acc: &Acc,
) -> Result<Vec<Value>> {
    let mut row = Vec::with_capacity(items.len());
    for s in items {
        row.push(match s.item {
            Item::Agg(i) => acc.finish(agg_func(q, i)?)?,
            Item::Group => match by {
                GroupBy::Record if acc.vt == ValueType::F64 => Value::Float(if key == i128::MAX {
                    f64::NAN
                } else {
                    f64_from_key(key)
                }),
                _ => Value::Int(key),
            },
            Item::BucketStart => match by {
                GroupBy::KeyDiv(n) => Value::Int(key * n as i128),
                GroupBy::Record => Value::Null,
            },
            Item::Key | Item::Record => Value::Null,
        });
    }
    Ok(row)
}

struct Ctx<'a> {
    txn: &'a dyn Reader,
    db: &'a Db,
    depth: usize,
    key_domain: (i128, i128),
    stats: QueryStats,
}

/// What the records of `db` range over as numbers; an error naming the database when they are
/// opaque bytes.
pub(crate) fn record_domain(db: &Db) -> std::result::Result<RecordDomain, String> {
    match db.value_type() {
        ValueType::U32 => Ok(RecordDomain::Int(0, u32::MAX as i128)),
        ValueType::U64 => Ok(RecordDomain::Int(0, u64::MAX as i128)),
        ValueType::I64 => Ok(RecordDomain::Int(i64::MIN as i128, i64::MAX as i128)),
        ValueType::I32 => Ok(RecordDomain::Int(i32::MIN as i128, i32::MAX as i128)),
        ValueType::I16 => Ok(RecordDomain::Int(i16::MIN as i128, i16::MAX as i128)),
        ValueType::F64 => Ok(RecordDomain::F64),
        ValueType::Bytes => Err(format!(
            "the records of database {:?} are not numbers (create it with a value type \
             u32, u64, i16, i32, i64 or f64)",
            db.name()
        )),
    }
}

impl Binder for Ctx<'_> {
    fn key_domain(&self) -> (i128, i128) {
        self.key_domain
    }
    fn record_domain(&self) -> std::result::Result<RecordDomain, String> {
        record_domain(self.db)
    }
    fn subquery(&mut self, q: &Query) -> Result<Num> {
        let r = run_sub(self.txn, q, self.depth + 1)?;
        self.stats.add(&r.stats);
        self.stats.subqueries += 1;
        Ok(match r.values.into_iter().next() {
            Some(Value::Int(v)) => Num::Int(v),
            Some(Value::Float(v)) => Num::Float(v),
            _ => Num::Null,
        })
    }
}

/// Runs a scalar subquery (at nesting `depth`): one aggregate that is not a list.
pub(crate) fn run_sub(txn: &dyn Reader, q: &Query, depth: usize) -> Result<QueryResult> {
    if shape(q)? != Shape::Aggregates {
        return Err(type_err(
            None,
            format!("a subquery must return one value, ({q}) returns rows"),
        ));
    }
    if q.aggregates.len() != 1 {
        return Err(type_err(
            q.aggregates.get(1).and_then(|a| a.at.0),
            format!(
                "a subquery must return one value, ({q}) has {} aggregates",
                q.aggregates.len()
            ),
        ));
    }
    if let [a @ Aggregate {
        func: AggFunc::Top(..) | AggFunc::Bottom(..),
        ..
    }] = q.aggregates.as_slice()
    {
        return Err(type_err(
            a.at.0,
            format!("a subquery must return one value, {a} returns a list"),
        ));
    }
    run_at(txn, q, depth)
}

/// A record value as an ordered key (f64: the IEEE total order; NaN never reaches here).
pub(crate) use crate::btree::scan::f64_key;
pub(crate) fn f64_from_key(k: i128) -> f64 {
    let b = k as i64;
    f64::from_bits((b ^ (((b >> 63) as u64) >> 1) as i64) as u64)
}

/// A stored record as a number (`RecVal::None` for byte records); `page` names the leaf in the
/// error for a record of the wrong size.
pub(crate) fn rec_val(vt: ValueType, raw: &[u8], page: u64) -> Result<RecVal> {
    let bad = || Error::Corrupted {
        page,
        what: format!("record of {} bytes for value type {}", raw.len(), vt.name()),
    };
    Ok(match vt {
        ValueType::U32 => {
            RecVal::Int(u32::from_le_bytes(raw.try_into().map_err(|_| bad())?) as i128)
        }
        ValueType::U64 => {
            RecVal::Int(u64::from_le_bytes(raw.try_into().map_err(|_| bad())?) as i128)
        }
        ValueType::I64 => {
            RecVal::Int(i64::from_le_bytes(raw.try_into().map_err(|_| bad())?) as i128)
        }
        ValueType::I32 => {
            RecVal::Int(i32::from_le_bytes(raw.try_into().map_err(|_| bad())?) as i128)
        }
        ValueType::I16 => {
            RecVal::Int(i16::from_le_bytes(raw.try_into().map_err(|_| bad())?) as i128)
        }
        ValueType::F64 => RecVal::F64(f64::from_le_bytes(raw.try_into().map_err(|_| bad())?)),
        ValueType::Bytes => RecVal::None,
    })
}

/// How a fold reads the records of a numeric value type (`None`: bytes, not numbers).
fn rec_num(vt: ValueType) -> Option<RecNum> {
    let (width, num) = match vt {
        ValueType::U32 => (4, scan::Num::Unsigned),
        ValueType::U64 => (8, scan::Num::Unsigned),
        ValueType::I64 => (8, scan::Num::Signed),
        ValueType::I32 => (4, scan::Num::Signed),
        ValueType::I16 => (2, scan::Num::Signed),
        ValueType::F64 => (8, scan::Num::Float),
        ValueType::Bytes => return None,
    };
    Some(RecNum { width, num })
}

/// Running aggregates of one query.
pub(crate) struct Acc {
    vt: ValueType,
    residual: Option<Bound>,
    /// Rows are read only for COUNT/SUM/AVG/MIN/MAX of records: a range of selected slots is
    /// folded by the record list (`LeafScan::fold_records`), not row by row.
    rec_fold: Option<RecNum>,
    /// Per-row work is needed (filter, records, TOP/BOTTOM of keys).
    pub(crate) rows: bool,
    pub(crate) read_record: bool,
    key_sum_needed: bool,
    /// COUNT, SUM, MIN and MAX of the keys selected.
    keys: KeyTotals,
    key_bottom: Vec<u64>,
    key_bottom_k: usize,
    key_top: VecDeque<u64>,
    key_top_k: usize,
    /// COUNT/SUM/MIN/MAX of records, from folds and rows alike (`skip_extremes` when neither
    /// MIN nor MAX is asked for; min and max are ordered keys, see `f64_key`).
    rec: RecFold,
    rec_distinct: Option<HashSet<i128>>,
    /// Min-heap of the largest / max-heap of the smallest record keys.
    rec_top: BinaryHeap<std::cmp::Reverse<i128>>,
    rec_top_k: usize,
    rec_bottom: BinaryHeap<i128>,
    rec_bottom_k: usize,
    /// Queries answered by the first (last) selected keys stop early.
    early: Option<Early>,
    /// Descending walks: this leaf's selected keys, for `key_top`.
    leaf_top: Vec<u64>,
}

/// Which end of the selection answers the whole query: only BOTTOM(k)/MIN of keys (ascending
/// walk), or only TOP(k)/MAX of keys (descending walk, leaves in reverse order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Early {
    Ascending,
    Descending,
}

fn cap(k: u64) -> usize {
    k.min(usize::MAX as u64) as usize
}

impl Acc {
    pub(crate) fn new(q: &Query, vt: ValueType, residual: Option<Bound>) -> Acc {
        let mut a = Acc {
            vt,
            rec_fold: None,
            rows: residual.is_some(),
            read_record: residual.as_ref().is_some_and(plan::uses_record),
            residual,
            key_sum_needed: false,
            keys: KeyTotals::new(),
            key_bottom: Vec::new(),
            key_bottom_k: 0,
            key_top: VecDeque::new(),
            key_top_k: 0,
            rec: RecFold::default(),
            rec_distinct: None,
            rec_top: BinaryHeap::new(),
            rec_top_k: 0,
            rec_bottom: BinaryHeap::new(),
            rec_bottom_k: 0,
            early: None,
            leaf_top: Vec::new(),
        };
        let all = |f: fn(&AggFunc) -> bool| q.aggregates.iter().all(|ag| f(&ag.func));
        if all(|f| {
            matches!(
                f,
                AggFunc::Bottom(_, Column::Key) | AggFunc::Min(Column::Key)
            )
        }) {
            a.early = Some(Early::Ascending);
        } else if all(|f| matches!(f, AggFunc::Top(_, Column::Key) | AggFunc::Max(Column::Key))) {
            a.early = Some(Early::Descending);
        }
        for ag in &q.aggregates {
            match ag.func {
                AggFunc::Sum(Column::Key) | AggFunc::Avg(Column::Key) => a.key_sum_needed = true,
                AggFunc::Top(k, Column::Key) => {
                    a.key_top_k = a.key_top_k.max(cap(k));
                    a.rows = true;
                }
                AggFunc::Bottom(k, Column::Key) => {
                    a.key_bottom_k = a.key_bottom_k.max(cap(k));
                    a.rows = true;
                }
                AggFunc::CountDistinct(Column::Record) => {
                    a.rec_distinct = Some(HashSet::new());
                    a.rows = true;
                    a.read_record = true;
                }
                AggFunc::Top(k, Column::Record) => {
                    a.rec_top_k = a.rec_top_k.max(cap(k));
                    a.rows = true;
                    a.read_record = true;
                }
                AggFunc::Bottom(k, Column::Record) => {
                    a.rec_bottom_k = a.rec_bottom_k.max(cap(k));
                    a.rows = true;
                    a.read_record = true;
                }
                AggFunc::Sum(Column::Record)
                | AggFunc::Avg(Column::Record)
                | AggFunc::Min(Column::Record)
                | AggFunc::Max(Column::Record) => {
                    a.rows = true;
                    a.read_record = true;
                }
                _ => {}
            }
        }
        let only_record_folds = a.residual.is_none()
            && a.key_top_k == 0
            && a.key_bottom_k == 0
            && a.rec_distinct.is_none()
            && a.rec_top_k == 0
            && a.rec_bottom_k == 0;
        a.rec.skip_extremes = !q.aggregates.iter().any(|ag| {
            matches!(
                ag.func,
                AggFunc::Min(Column::Record) | AggFunc::Max(Column::Record)
            )
        });
        if a.rows && only_record_folds {
            a.rec_fold = rec_num(vt);
        }
        a
    }

    /// After a leaf: a descending walk puts the leaf's largest keys below the ones it has (every
    /// key of a later leaf is smaller than every key of this one).
    fn end_leaf(&mut self) {
        if self.leaf_top.is_empty() {
            return;
        }
        let need = self.key_top_k.saturating_sub(self.key_top.len());
        for &k in self.leaf_top.iter().rev().take(need) {
            self.key_top.push_front(k);
        }
        self.leaf_top.clear();
    }

    /// Whether the keys seen so far answer the query (early-stopping queries only).
    fn satisfied(&self) -> bool {
        match self.early {
            None => false,
            Some(Early::Ascending) => {
                self.keys.count > 0 && self.key_bottom.len() >= self.key_bottom_k
            }
            Some(Early::Descending) => self.keys.count > 0 && self.key_top.len() >= self.key_top_k,
        }
    }

    /// Adds keys known to be selected, in bulk (no per-row work).
    fn add_summary(&mut self, count: u64, sum: u128, min: u64, max: u64) {
        self.keys.add(count, sum, min, max);
    }

    fn record(&self, leaf: &LeafScan<'_>, slot: usize) -> Result<RecVal> {
        rec_val(self.vt, &leaf.record(slot)?, leaf.page_id())
    }

    /// The records of `slots` (their keys already added) folded into the record aggregates.
    fn fold_records(&mut self, leaf: &LeafScan<'_>, slots: Range<usize>, rn: RecNum) -> Result<()> {
        leaf.fold_records(slots, rn, &mut self.rec)
    }

    /// Keys `keys` (selected by the key intervals) at slots `start..`: tested and added.
    fn add_keys(&mut self, leaf: &LeafScan<'_>, keys: BlockKeys<'_>, start: usize) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        if !self.rows || self.rec_fold.is_some() {
            let sum = if self.key_sum_needed { keys.sum() } else { 0 };
            self.add_summary(keys.len() as u64, sum, keys.at(0), keys.at(keys.len() - 1));
            if let Some(rn) = self.rec_fold {
                self.fold_records(leaf, start..start + keys.len(), rn)?;
            }
            return Ok(());
        }
        for i in 0..keys.len() {
            let k = keys.at(i);
            let rec = if self.read_record {
                self.record(leaf, start + i)?
            } else {
                RecVal::None
            };
            if let Some(r) = &self.residual {
                if !plan::test(r, k, rec) {
                    continue;
                }
            }
            self.add_row(k, rec)?;
        }
        Ok(())
    }

    /// One selected entry (the residual condition already tested).
    pub(crate) fn add_row(&mut self, k: u64, rec: RecVal) -> Result<()> {
        {
            self.add_summary(1, k as u128, k, k);
            if self.key_bottom.len() < self.key_bottom_k {
                self.key_bottom.push(k);
            }
            if self.key_top_k > 0 {
                if self.early == Some(Early::Descending) {
                    // Leaves come in descending order: merged at the end of the leaf.
                    self.leaf_top.push(k);
                } else {
                    if self.key_top.len() == self.key_top_k {
                        self.key_top.pop_front();
                    }
                    self.key_top.push_back(k);
                }
            }
            match rec {
                RecVal::Int(v) => {
                    self.rec.isum = self.rec.isum.checked_add(v).ok_or_else(|| {
                        Error::from(QueryError::Arithmetic {
                            at: None,
                            what: "the sum of the records overflows 128 bits".into(),
                        })
                    })?;
                    self.add_rec_key(v);
                }
                RecVal::F64(v) => {
                    self.rec.fsum += v;
                    if !v.is_nan() {
                        self.add_rec_key(f64_key(v));
                    }
                    if let Some(d) = &mut self.rec_distinct {
                        // -0.0 and 0.0 are one value; every NaN is one value.
                        let canon = if v == 0.0 {
                            0
                        } else if v.is_nan() {
                            i128::MAX
                        } else {
                            f64_key(v)
                        };
                        d.insert(canon);
                    }
                    return Ok(());
                }
                RecVal::None => return Ok(()),
            }
            if let (Some(d), RecVal::Int(v)) = (&mut self.rec_distinct, rec) {
                d.insert(v);
            }
        }
        Ok(())
    }

    /// A non-NaN record value as an ordered key: min, max, top, bottom.
    fn add_rec_key(&mut self, v: i128) {
        self.rec.min = Some(self.rec.min.map_or(v, |m| m.min(v)));
        self.rec.max = Some(self.rec.max.map_or(v, |m| m.max(v)));
        if self.rec_top_k > 0 {
            self.rec_top.push(std::cmp::Reverse(v));
            if self.rec_top.len() > self.rec_top_k {
                self.rec_top.pop();
            }
        }
        if self.rec_bottom_k > 0 {
            self.rec_bottom.push(v);
            if self.rec_bottom.len() > self.rec_bottom_k {
                self.rec_bottom.pop();
            }
        }
    }

    /// The blocks of a leaf, with the leaf's intervals, when rows are needed (a residual
    /// filter, records, TOP/BOTTOM of keys): blocks wholly inside an interval are decoded and
    /// taken whole, boundary blocks searched.
    fn leaf(
        &mut self,
        leaf: &LeafScan<'_>,
        blocks: &[ScanBlock],
        ivs: &[(u64, u64)],
        buf: &mut KeyBuffer,
        stats: &mut QueryStats,
    ) -> Result<()> {
        for b in blocks {
            self.block(leaf, b, ivs, buf, stats)?;
        }
        Ok(())
    }

    /// Folds the records of a run of slots, when the query folds records (GROUP BY's runs of
    /// whole blocks of one bucket).
    fn fold_run(&mut self, leaf: &LeafScan<'_>, run: Range<usize>) -> Result<()> {
        match self.rec_fold {
            Some(rn) => self.fold_records(leaf, run, rn),
            None => Ok(()),
        }
    }

    /// One block of a leaf, with the leaf's intervals (queries that only fold records take
    /// `aggregate`'s slot runs and never come here).
    fn block(
        &mut self,
        leaf: &LeafScan<'_>,
        b: &ScanBlock,
        ivs: &[(u64, u64)],
        buf: &mut KeyBuffer,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let (hit, inside) = overlapping(ivs, b.first, b.last);
        if hit.is_empty() {
            stats.blocks_skipped += 1;
            return Ok(());
        }
        let keys = leaf.decode_keys(b, buf)?;
        stats.blocks_decoded += 1;
        if inside {
            return self.add_keys(leaf, keys, b.start);
        }
        for &(lo, hi) in hit {
            let a = keys.lower_bound(lo);
            let z = keys.upper_bound(hi);
            if a < z {
                self.add_keys(leaf, keys.slice(a..z), b.start + a)?;
            }
        }
        Ok(())
    }

    fn rec_value(&self, k: i128) -> Value {
        if self.vt == ValueType::F64 {
            Value::Float(f64_from_key(k))
        } else {
            Value::Int(k)
        }
    }

    pub(crate) fn finish(&self, f: AggFunc) -> Result<Value> {
        let n = self.keys.count;
        let f64_rec = self.vt == ValueType::F64;
        Ok(match f {
            // The key aggregates, as `key_aggregate` answers them (always `Some`).
            AggFunc::CountStar
            | AggFunc::Count(_)
            | AggFunc::CountDistinct(Column::Key)
            | AggFunc::Sum(Column::Key)
            | AggFunc::Avg(Column::Key)
            | AggFunc::Min(Column::Key)
            | AggFunc::Max(Column::Key) => {
                return self.keys.value(f).unwrap_or(Ok(Value::Null));
            }
            AggFunc::CountDistinct(Column::Record) => {
                Value::Int(self.rec_distinct.as_ref().map_or(0, |d| d.len()) as i128)
            }
            AggFunc::Sum(Column::Record) if f64_rec => Value::Float(self.rec.float_sum()),
            AggFunc::Sum(Column::Record) => Value::Int(self.rec.isum),
            _ if n == 0 && !matches!(f, AggFunc::Top(..) | AggFunc::Bottom(..)) => Value::Null,
            AggFunc::Avg(Column::Record) if f64_rec => {
                Value::Float(self.rec.float_sum() / n as f64)
            }
            AggFunc::Avg(Column::Record) => Value::Float(self.rec.isum as f64 / n as f64),
            AggFunc::Min(Column::Record) => self.rec.min.map_or(Value::Null, |v| self.rec_value(v)),
            AggFunc::Max(Column::Record) => self.rec.max.map_or(Value::Null, |v| self.rec_value(v)),
            AggFunc::Top(k, Column::Key) => Value::List(
                self.key_top
                    .iter()
                    .rev()
                    .take(cap(k))
                    .map(|&v| Value::Int(v as i128))
                    .collect(),
            ),
            AggFunc::Bottom(k, Column::Key) => Value::List(
                self.key_bottom
                    .iter()
                    .take(cap(k))
                    .map(|&v| Value::Int(v as i128))
                    .collect(),
            ),
            AggFunc::Top(k, Column::Record) => {
                let mut v: Vec<i128> = self.rec_top.iter().map(|r| r.0).collect();
                v.sort_unstable_by(|a, b| b.cmp(a));
                Value::List(
                    v.into_iter()
                        .take(cap(k))
                        .map(|x| self.rec_value(x))
                        .collect(),
                )
            }
            AggFunc::Bottom(k, Column::Record) => {
                let mut v: Vec<i128> = self.rec_bottom.iter().copied().collect();
                v.sort_unstable();
                Value::List(
                    v.into_iter()
                        .take(cap(k))
                        .map(|x| self.rec_value(x))
                        .collect(),
                )
            }
        })
    }
}
