//! Queries answered entry by entry through a cursor: rows (`SELECT key, record`, any key type;
//! on integer keys under a condition on the record, `recrows.rs` walks blocks instead) and
//! every query on a database of string (byte) keys, which has no integer zone map.
//!
//! ```text
//! condition --> one key span [lo, hi] from the top-level AND of key comparisons, BETWEEN,
//!               IN and LIKE 'prefix%' (the cursor seeks lo and stops past hi)
//!           --> a per-entry test of the whole condition (string atoms compared as bytes,
//!               record atoms through plan::bind as in integer-key queries)
//! ```
//!
//! Rows come in key order (reversed with ORDER BY key DESC, walking the cursor backwards);
//! OFFSET skips and LIMIT stops the walk.

use super::{agg_func, column_name, f64_from_key, f64_group, rec_val, Acc, Shape, Window};
use crate::btree::Key;
use crate::cursor::Cursor;
use crate::db::{Db, ValueType};
use crate::error::{Error, Result};
use crate::query::ast::{AggFunc, CmpOp, Column, Expr, GroupBy, Item, Pred, Query};
use crate::query::error::QueryError;
use crate::query::plan::{self, Binder, Bound, Num, RecVal, RecordDomain};
use crate::query::value::{QueryResult, QueryStats, Value};
use crate::txn::Reader;
use std::collections::BTreeMap;

fn type_err(at: Option<u32>, what: String) -> Error {
    QueryError::Type { at, what }.into()
}

/// A record as an output value: a number for numeric value types, bytes otherwise.
fn record_value(vt: ValueType, raw: &[u8]) -> Result<Value> {
    Ok(match rec_val(vt, raw, 0)? {
        RecVal::Int(v) => Value::Int(v),
        RecVal::F64(v) => Value::Float(v),
        RecVal::None => Value::Bytes(raw.to_vec()),
    })
}

/// Walks the entries of `cur` between the bounds in key order (`desc`: backwards), calling
/// `visit` until it returns false. `start` is where an ascending walk seeks (a descending one
/// seeks `end`); `below`/`above` say whether a key lies before/after the span. A seek key the
/// database cannot hold (too long) starts from the first (last) entry instead: every entry is
/// still tested against the span.
#[allow(clippy::too_many_arguments)]
fn walk(
    cur: &mut Cursor<'_>,
    start: Option<Key<'_>>,
    end: Option<Key<'_>>,
    desc: bool,
    below: &dyn Fn(&Key<'_>) -> bool,
    above: &dyn Fn(&Key<'_>) -> bool,
    visit: &mut dyn FnMut(&Cursor<'_>) -> Result<bool>,
) -> Result<bool> {
    if !desc {
        let mut on = match start {
            Some(k) => match cur.lower_bound(k) {
                Ok(m) => m,
                Err(Error::InvalidArgument(_)) | Err(Error::InvalidKey(_)) => cur.first()?,
                Err(e) => return Err(e),
            },
            None => cur.first()?,
        };
        while on {
            let Some(k) = cur.key() else { break };
            if above(&k) {
                break;
            }
            if !below(&k) && !visit(cur)? {
                return Ok(false);
            }
            on = cur.next()?;
        }
        return Ok(true);
    }
    let mut on = match end {
        Some(k) => match cur.lower_bound(k) {
            Ok(m) => m,
            Err(Error::InvalidArgument(_)) | Err(Error::InvalidKey(_)) => false,
            Err(e) => return Err(e),
        },
        None => false,
    };
    if !on {
        on = cur.last()?;
    }
    // Forward to the last entry not after the span (the seek may land before it).
    while on {
        let Some(k) = cur.key() else { break };
        if above(&k) {
            on = cur.prev()?;
            break;
        }
        if !cur.next()? {
            break;
        }
    }
    while on {
        let Some(k) = cur.key() else { break };
        if below(&k) {
            break;
        }
        if !above(&k) && !visit(cur)? {
            return Ok(false);
        }
        on = cur.prev()?;
    }
    Ok(true)
}

/// `SELECT key, record ...` on integer keys: the key intervals of the plan, walked by a cursor.
pub(crate) fn rows_int(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    ivs: &[(u64, u64)],
    residual: Option<&Bound>,
    stats: QueryStats,
) -> Result<QueryResult> {
    let vt = db.value_type();
    let items = q.items();
    let needs_rec =
        items.iter().any(|s| s.item == Item::Record) || residual.is_some_and(plan::uses_record);
    let mut win = Window::new(q);
    let mut cur = Cursor::new(txn.pages(), db.spec, txn.root(db)?);
    let u32_keys = db.config().key_type == crate::btree::KeyType::U32;
    let mk = |v: u64| -> Key<'static> {
        if u32_keys {
            Key::U32(v.min(u32::MAX as u64) as u32)
        } else {
            Key::U64(v)
        }
    };
    let order: Vec<(u64, u64)> = if q.descending {
        ivs.iter().rev().copied().collect()
    } else {
        ivs.to_vec()
    };
    for (lo, hi) in order {
        let int = |k: &Key<'_>| k.as_u64().unwrap_or(0);
        let go = walk(
            &mut cur,
            Some(mk(lo)),
            Some(mk(hi)),
            q.descending,
            &|k| int(k) < lo,
            &|k| int(k) > hi,
            &mut |c| {
                let k = c.key().and_then(|k| k.as_u64()).unwrap_or(0);
                let raw = if needs_rec { c.value()? } else { None };
                let raw = raw.unwrap_or_default();
                if let Some(r) = residual {
                    let rec = if needs_rec {
                        rec_val(vt, &raw, 0)?
                    } else {
                        RecVal::None
                    };
                    if !plan::test(r, k, rec) {
                        return Ok(true);
                    }
                }
                if win.take() {
                    let mut row = Vec::with_capacity(items.len());
                    for s in &items {
                        row.push(match s.item {
                            Item::Key => Value::Int(k as i128),
                            Item::Record => record_value(vt, &raw)?,
                            _ => Value::Null,
                        });
                    }
                    win.rows.push(row);
                }
                Ok(!win.full())
            },
        )?;
        if !go {
            break;
        }
    }
    Ok(QueryResult {
        columns: items.iter().map(|s| column_name(q, s)).collect(),
        values: Vec::new(),
        rows: win.rows,
        stats,
    })
}

/// A condition over string keys and numeric records, negations pushed into the atoms.
enum SPred {
    Const(bool),
    /// `key op 'text'` (negated: the complement; keys are never NULL).
    Cmp(CmpOp, Vec<u8>, bool),
    In(Vec<Vec<u8>>, bool),
    Like(Vec<u8>, bool),
    Rec(Bound),
    And(Vec<SPred>),
    Or(Vec<SPred>),
}

fn like(pat: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard match with one backtrack point (`%` = any run, `_` = one byte).
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&here) = s.get(i) {
        match pat.get(p) {
            Some(b'%') => {
                star = Some((p, i));
                p += 1;
            }
            Some(&c) if c == b'_' || c == here => {
                p += 1;
                i += 1;
            }
            _ => match star {
                Some((sp, si)) => {
                    p = sp + 1;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    pat.iter().skip(p).all(|&c| c == b'%')
}

impl SPred {
    fn test(&self, key: &[u8], rec: RecVal) -> bool {
        match self {
            SPred::Const(v) => *v,
            SPred::Cmp(op, c, neg) => {
                let k = key;
                let c = &c[..];
                let t = match op {
                    CmpOp::Eq => k == c,
                    CmpOp::Ne => k != c,
                    CmpOp::Lt => k < c,
                    CmpOp::Le => k <= c,
                    CmpOp::Gt => k > c,
                    CmpOp::Ge => k >= c,
                };
                t != *neg
            }
            SPred::In(list, neg) => list.iter().any(|c| c[..] == *key) != *neg,
            SPred::Like(p, neg) => like(p, key) != *neg,
            SPred::Rec(b) => plan::test(b, 0, rec),
            SPred::And(v) => v.iter().all(|p| p.test(key, rec)),
            SPred::Or(v) => v.iter().any(|p| p.test(key, rec)),
        }
    }
    fn uses_record(&self) -> bool {
        match self {
            SPred::Rec(_) => true,
            SPred::And(v) | SPred::Or(v) => v.iter().any(SPred::uses_record),
            _ => false,
        }
    }
}

/// The span of keys a condition can select: inclusive start, end with inclusiveness.
#[derive(Clone, Debug, Default)]
struct Span {
    lo: Option<Vec<u8>>,
    hi: Option<(Vec<u8>, bool)>,
}

impl Span {
    fn raise(&mut self, lo: Vec<u8>) {
        if self.lo.as_ref().is_none_or(|l| lo > *l) {
            self.lo = Some(lo);
        }
    }
    fn lower(&mut self, hi: Vec<u8>, incl: bool) {
        let tighter = match &self.hi {
            None => true,
            Some((h, i)) => hi < *h || (hi == *h && *i && !incl),
        };
        if tighter {
            self.hi = Some((hi, incl));
        }
    }
    fn below(&self, k: &[u8]) -> bool {
        self.lo.as_ref().is_some_and(|l| k < &l[..])
    }
    fn above(&self, k: &[u8]) -> bool {
        match &self.hi {
            None => false,
            Some((h, true)) => k > &h[..],
            Some((h, false)) => k >= &h[..],
        }
    }
}

/// The smallest string after every string starting with `p` (`None`: no such string).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut v = p.to_vec();
    while let Some(&last) = v.last() {
        if last < 0xff {
            *v.last_mut()? += 1;
            return Some(v);
        }
        v.pop();
    }
    None
}

struct StrBinder<'a> {
    txn: &'a dyn Reader,
    db: &'a Db,
    depth: usize,
    stats: QueryStats,
}

impl Binder for StrBinder<'_> {
    fn key_domain(&self) -> (i128, i128) {
        (0, 0)
    }
    fn record_domain(&self) -> std::result::Result<RecordDomain, String> {
        super::record_domain(self.db)
    }
    fn subquery(&mut self, q: &Query) -> Result<Num> {
        let r = super::run_sub(self.txn, q, self.depth + 1)?;
        self.stats.add(&r.stats);
        self.stats.subqueries += 1;
        Ok(match r.values.into_iter().next() {
            Some(Value::Int(v)) => Num::Int(v),
            Some(Value::Float(v)) => Num::Float(v),
            _ => Num::Null,
        })
    }
}

/// A string constant of a key comparison.
fn key_str(e: &Expr, at: Option<u32>, db: &Db) -> Result<Vec<u8>> {
    match e {
        Expr::Str(s) => Ok(s.as_bytes().to_vec()),
        _ => Err(type_err(
            at,
            format!(
                "the keys of database {:?} are strings: compare key with a string such as \
                 'abc', not {e}",
                db.name()
            ),
        )),
    }
}

/// Binds `p` (negated when `negated`) into an [`SPred`]; `span` narrows from atoms that every
/// selected entry satisfies (`top`: not under OR or NOT).
fn bind(
    p: &Pred,
    negated: bool,
    top: bool,
    span: &mut Span,
    b: &mut StrBinder<'_>,
) -> Result<SPred> {
    let db = b.db;
    Ok(match p {
        Pred::And(x, y) | Pred::Or(x, y) => {
            let and = matches!(p, Pred::And(..)) != negated;
            let t = top && and;
            let l = bind(x, negated, t, span, b)?;
            let r = bind(y, negated, t, span, b)?;
            if and {
                SPred::And(vec![l, r])
            } else {
                SPred::Or(vec![l, r])
            }
        }
        Pred::Not(x) => bind(x, !negated, false, span, b)?,
        Pred::Cmp {
            col: Column::Key,
            op,
            value,
            at,
        } => {
            let c = key_str(value, at.0, db)?;
            if top && !negated {
                match op {
                    CmpOp::Eq => {
                        span.raise(c.clone());
                        span.lower(c.clone(), true);
                    }
                    CmpOp::Ge => span.raise(c.clone()),
                    CmpOp::Gt => {
                        let mut n = c.clone();
                        n.push(0);
                        span.raise(n);
                    }
                    CmpOp::Lt => span.lower(c.clone(), false),
                    CmpOp::Le => span.lower(c.clone(), true),
                    CmpOp::Ne => {}
                }
            }
            SPred::Cmp(*op, c, negated)
        }
        Pred::Between {
            col: Column::Key,
            lo,
            hi,
            at,
        } => {
            let (a, z) = (key_str(lo, at.0, db)?, key_str(hi, at.0, db)?);
            if top && !negated {
                span.raise(a.clone());
                span.lower(z.clone(), true);
            }
            let both = vec![
                SPred::Cmp(CmpOp::Ge, a, false),
                SPred::Cmp(CmpOp::Le, z, false),
            ];
            if negated {
                SPred::Or(
                    both.into_iter()
                        .map(|p| match p {
                            SPred::Cmp(o, c, _) => SPred::Cmp(o, c, true),
                            p => p,
                        })
                        .collect(),
                )
            } else {
                SPred::And(both)
            }
        }
        Pred::In {
            col: Column::Key,
            list,
            at,
        } => {
            let items = list
                .iter()
                .map(|e| key_str(e, at.0, db))
                .collect::<Result<Vec<_>>>()?;
            if top && !negated {
                match (items.iter().min(), items.iter().max()) {
                    (Some(a), Some(z)) => {
                        span.raise(a.clone());
                        span.lower(z.clone(), true);
                    }
                    _ => return Ok(SPred::Const(false)),
                }
            }
            SPred::In(items, negated)
        }
        Pred::Like {
            col: Column::Key,
            pattern,
            ..
        } => {
            let pat = pattern.as_bytes().to_vec();
            if top && !negated {
                // The bytes before the first wildcard (`split` yields at least one piece).
                let prefix = pat
                    .split(|&c| c == b'%' || c == b'_')
                    .next()
                    .unwrap_or_default();
                span.raise(prefix.to_vec());
                match prefix_end(prefix) {
                    Some(e) => span.lower(e, false),
                    None if prefix.is_empty() => {}
                    None => {}
                }
            }
            SPred::Like(pat, negated)
        }
        Pred::Like {
            col: Column::Record,
            at,
            ..
        } => {
            return Err(type_err(
                at.0,
                "LIKE applies to string keys, not to records".into(),
            ))
        }
        // Record atoms: bound as integer-key queries bind them (three-valued with NULL).
        _ => SPred::Rec(plan::simplify(plan::bind(p, negated, b)?)),
    })
}

/// Running aggregates over string keys: the record aggregates and counts in an [`Acc`], the
/// smallest and largest keys beside it.
struct SAcc {
    acc: Acc,
    min: Option<Vec<u8>>,
    max: Option<Vec<u8>>,
}

impl SAcc {
    fn add(&mut self, key: &[u8], rec: RecVal) -> Result<()> {
        if self.min.as_deref().is_none_or(|m| key < m) {
            self.min = Some(key.to_vec());
        }
        if self.max.as_deref().is_none_or(|m| key > m) {
            self.max = Some(key.to_vec());
        }
        self.acc.add_row(0, rec)
    }
    fn finish(&self, f: AggFunc) -> Result<Value> {
        Ok(match f {
            AggFunc::CountDistinct(Column::Key) => {
                Value::Int(self.acc.finish(AggFunc::CountStar)?.as_int().unwrap_or(0))
            }
            AggFunc::Min(Column::Key) => self.min.clone().map_or(Value::Null, Value::Bytes),
            AggFunc::Max(Column::Key) => self.max.clone().map_or(Value::Null, Value::Bytes),
            f => self.acc.finish(f)?,
        })
    }
}

/// Every query on a database of string keys.
pub(crate) fn run(
    txn: &dyn Reader,
    q: &Query,
    db: &Db,
    shape: Shape,
    depth: usize,
) -> Result<QueryResult> {
    let vt = db.value_type();
    let mut b = StrBinder {
        txn,
        db,
        depth,
        stats: QueryStats::default(),
    };
    for a in &q.aggregates {
        match a.func {
            AggFunc::Sum(Column::Key)
            | AggFunc::Avg(Column::Key)
            | AggFunc::Top(_, Column::Key)
            | AggFunc::Bottom(_, Column::Key) => {
                return Err(type_err(
                    a.at.0,
                    format!(
                        "{a}: the keys of database {:?} are strings (COUNT, MIN and MAX apply)",
                        db.name()
                    ),
                ))
            }
            f if f.column() == Some(Column::Record) => {
                b.record_domain()
                    .map_err(|w| type_err(a.at.0, format!("{a}: {w}")))?;
            }
            _ => {}
        }
    }
    let by_record = match shape {
        Shape::Groups(GroupBy::KeyDiv(n)) => {
            return Err(type_err(
                None,
                format!(
                    "GROUP BY key / {n} needs integer keys; database {:?} has string keys \
                     (GROUP BY record applies)",
                    db.name()
                ),
            ))
        }
        Shape::Groups(GroupBy::Record) => {
            b.record_domain()
                .map_err(|w| type_err(None, format!("GROUP BY record: {w}")))?;
            true
        }
        _ => false,
    };
    let mut span = Span::default();
    let cond = match &q.filter {
        Some(p) => bind(p, false, true, &mut span, &mut b)?,
        None => SPred::Const(true),
    };
    let stats = b.stats;
    let items = q.items();
    let new_acc = || {
        let mut a = Acc::new(q, vt, None);
        a.rows = true;
        a.read_record = true;
        SAcc {
            acc: a,
            min: None,
            max: None,
        }
    };
    let needs_rec = vt != ValueType::Bytes
        && (cond.uses_record()
            || by_record
            || q.aggregates
                .iter()
                .any(|a| a.func.column() == Some(Column::Record)))
        || items.iter().any(|s| s.item == Item::Record);
    let mut cur = Cursor::new(txn.pages(), db.spec, txn.root(db)?);
    let rows_shape = shape == Shape::Rows;
    let desc = q.descending && rows_shape;
    let mut win = Window::new(q);
    let mut all = new_acc();
    let mut groups: BTreeMap<i128, SAcc> = BTreeMap::new();
    let start = span.lo.clone();
    let end = span.hi.as_ref().map(|h| h.0.clone());
    let bytes = |k: &Key<'_>| -> Vec<u8> {
        match *k {
            Key::Bytes(b) => b.to_vec(),
            _ => Vec::new(),
        }
    };
    walk(
        &mut cur,
        start.as_deref().map(Key::Bytes),
        end.as_deref().map(Key::Bytes),
        desc,
        &|k| span.below(&bytes(k)),
        &|k| span.above(&bytes(k)),
        &mut |c| {
            let key = c.key().map(|k| bytes(&k)).unwrap_or_default();
            let raw = if needs_rec {
                c.value()?.unwrap_or_default()
            } else {
                Vec::new()
            };
            let rec = if needs_rec && vt != ValueType::Bytes {
                rec_val(vt, &raw, 0)?
            } else {
                RecVal::None
            };
            if !cond.test(&key, rec) {
                return Ok(true);
            }
            match shape {
                Shape::Rows => {
                    if win.take() {
                        let mut row = Vec::with_capacity(items.len());
                        for s in &items {
                            row.push(match s.item {
                                Item::Key => Value::Bytes(key.clone()),
                                Item::Record => record_value(vt, &raw)?,
                                _ => Value::Null,
                            });
                        }
                        win.rows.push(row);
                    }
                    Ok(!win.full())
                }
                Shape::Groups(_) => {
                    let g = match rec {
                        RecVal::Int(v) => v,
                        RecVal::F64(v) => f64_group(v),
                        RecVal::None => return Ok(true),
                    };
                    groups.entry(g).or_insert_with(&new_acc).add(&key, rec)?;
                    Ok(true)
                }
                Shape::Aggregates => {
                    all.add(&key, rec)?;
                    Ok(true)
                }
            }
        },
    )?;
    let columns = items.iter().map(|s| column_name(q, s)).collect();
    match shape {
        Shape::Rows => Ok(QueryResult {
            columns,
            values: Vec::new(),
            rows: win.rows,
            stats,
        }),
        Shape::Aggregates => {
            let mut values = Vec::with_capacity(items.len());
            for s in &items {
                if let Item::Agg(i) = s.item {
                    values.push(all.finish(agg_func(q, i)?)?);
                }
            }
            Ok(QueryResult {
                columns,
                values,
                rows: Vec::new(),
                stats,
            })
        }
        Shape::Groups(_) => {
            let mut list: Vec<(i128, SAcc)> = groups.into_iter().collect();
            if q.descending {
                list.reverse();
            }
            for (g, acc) in list {
                if !win.take() {
                    if win.full() {
                        break;
                    }
                    continue;
                }
                let mut row = Vec::with_capacity(items.len());
                for s in &items {
                    row.push(match s.item {
                        Item::Agg(i) => acc.finish(agg_func(q, i)?)?,
                        Item::Group if vt == ValueType::F64 => Value::Float(if g == i128::MAX {
                            f64::NAN
                        } else {
                            f64_from_key(g)
                        }),
                        Item::Group => Value::Int(g),
                        _ => Value::Null,
                    });
                }
                win.rows.push(row);
            }
            Ok(QueryResult {
                columns,
                values: Vec::new(),
                rows: win.rows,
                stats,
            })
        }
    }
}
