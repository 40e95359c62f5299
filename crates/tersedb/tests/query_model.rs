//! The query executor against a model: random data (u32 keys plain and with every codec, u64
//! keys, every record value type, records plain or compressed, spread or one value nine times in
//! ten: PDICT chunks) on small and default pages, random generated queries (also
//! printed and re-parsed), answered by the engine and by a `BTreeMap` with plain iterator
//! arithmetic and SQL's three-valued logic. Seeded: prints the seed; re-run with `SEED=n`;
//! more cases with `TERSEDB_LONG=1`.

mod query_common;

use proptest::prelude::*;
use query_common::runner;
use std::collections::{BTreeMap, HashSet};
use tersedb::query::{
    AggFunc, ArithOp, CmpOp, Column, Expr, GroupBy, Item, Pred, Query, QueryError, SelectItem,
    Value,
};
use tersedb::{CodecId, DbConfig, Env, EnvOptions, Error, KeyType, RecordType, ValueType};

const DB: &str = "db";

#[derive(Clone, Copy, Debug, PartialEq)]
enum R {
    I(i128),
    F(f64),
    None,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum N {
    I(i128),
    F(f64),
    Null,
}

struct Model {
    rows: BTreeMap<u64, R>,
    vt: ValueType,
}

/// Exact comparison of an integer with a float.
fn cmp_int_float(i: i128, f: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let fl = f.floor();
    if fl > 1e30 {
        return Less;
    }
    if fl < -1e30 {
        return Greater;
    }
    let fi = fl as i128;
    match i.cmp(&fi) {
        Equal if f == fl => Equal,
        Equal => Less,
        o => o,
    }
}

fn cmp_holds(op: CmpOp, o: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::*;
    match o {
        None => matches!(op, CmpOp::Ne), // NaN: only != holds
        Some(o) => match op {
            CmpOp::Eq => o == Equal,
            CmpOp::Ne => o != Equal,
            CmpOp::Lt => o == Less,
            CmpOp::Le => o != Greater,
            CmpOp::Gt => o == Greater,
            CmpOp::Ge => o != Less,
        },
    }
}

/// A condition with its constants evaluated.
enum MP {
    Cmp(Column, CmpOp, N),
    And(Box<MP>, Box<MP>),
    Or(Box<MP>, Box<MP>),
    Not(Box<MP>),
    AnyOf(Vec<MP>),
}

impl Model {
    fn eval(&self, e: &Expr) -> Result<N, ()> {
        Ok(match e {
            Expr::Str(_) => unreachable!("integer keys: no strings generated"),
            Expr::Int(v) => N::I(*v),
            Expr::Float(v) => N::F(*v),
            Expr::Subquery(q) => match self.run(q)?.pop() {
                Some(Value::Int(v)) => N::I(v),
                Some(Value::Float(v)) => N::F(v),
                _ => N::Null,
            },
            Expr::Bin { op, l, r, .. } => {
                let (a, b) = (self.eval(l)?, self.eval(r)?);
                match (a, b) {
                    (N::Null, _) | (_, N::Null) => N::Null,
                    (N::I(x), N::I(y)) => N::I(
                        match op {
                            ArithOp::Add => x.checked_add(y),
                            ArithOp::Sub => x.checked_sub(y),
                            ArithOp::Mul => x.checked_mul(y),
                            ArithOp::Div => x.checked_div(y),
                            ArithOp::Rem => x.checked_rem(y),
                        }
                        .ok_or(())?,
                    ),
                    (a, b) => {
                        let f = |n| match n {
                            N::I(v) => v as f64,
                            N::F(v) => v,
                            N::Null => unreachable!(),
                        };
                        let (x, y) = (f(a), f(b));
                        if y == 0.0 && matches!(op, ArithOp::Div | ArithOp::Rem) {
                            return Err(());
                        }
                        let v = match op {
                            ArithOp::Add => x + y,
                            ArithOp::Sub => x - y,
                            ArithOp::Mul => x * y,
                            ArithOp::Div => x / y,
                            ArithOp::Rem => x % y,
                        };
                        if !v.is_finite() {
                            return Err(());
                        }
                        N::F(v)
                    }
                }
            }
        })
    }

    fn bind(&self, p: &Pred) -> Result<MP, ()> {
        Ok(match p {
            Pred::Cmp { col, op, value, .. } => MP::Cmp(*col, *op, self.eval(value)?),
            Pred::Between { col, lo, hi, .. } => {
                let (lo, hi) = (self.eval(lo)?, self.eval(hi)?);
                MP::And(
                    Box::new(MP::Cmp(*col, CmpOp::Ge, lo)),
                    Box::new(MP::Cmp(*col, CmpOp::Le, hi)),
                )
            }
            Pred::In { col, list, .. } => MP::AnyOf(
                list.iter()
                    .map(|e| Ok(MP::Cmp(*col, CmpOp::Eq, self.eval(e)?)))
                    .collect::<Result<_, ()>>()?,
            ),
            Pred::And(a, b) => MP::And(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Pred::Or(a, b) => MP::Or(Box::new(self.bind(a)?), Box::new(self.bind(b)?)),
            Pred::Not(a) => MP::Not(Box::new(self.bind(a)?)),
            Pred::Like { .. } => unreachable!("integer keys: no LIKE generated"),
        })
    }

    /// Three-valued: None is UNKNOWN.
    fn test(p: &MP, key: u64, rec: R) -> Option<bool> {
        match p {
            MP::Cmp(col, op, c) => {
                let v = match col {
                    Column::Key => R::I(key as i128),
                    Column::Record => rec,
                };
                let o = match (v, *c) {
                    (_, N::Null) => return None,
                    (R::I(a), N::I(b)) => Some(a.cmp(&b)),
                    (R::I(a), N::F(b)) => Some(cmp_int_float(a, b)),
                    (R::F(a), N::I(b)) => a.partial_cmp(&(b as f64)),
                    (R::F(a), N::F(b)) => a.partial_cmp(&b),
                    (R::None, _) => unreachable!("record of a bytes database"),
                };
                Some(cmp_holds(*op, o))
            }
            MP::And(a, b) => match (Self::test(a, key, rec), Self::test(b, key, rec)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            MP::Or(a, b) => match (Self::test(a, key, rec), Self::test(b, key, rec)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            MP::Not(a) => Self::test(a, key, rec).map(|v| !v),
            MP::AnyOf(items) => {
                let mut out = Some(false);
                for i in items {
                    match Self::test(i, key, rec) {
                        Some(true) => return Some(true),
                        None => out = None,
                        Some(false) => {}
                    }
                }
                out
            }
        }
    }

    fn run(&self, q: &Query) -> Result<Vec<Value>, ()> {
        let filter = match &q.filter {
            Some(p) => Some(self.bind(p)?),
            None => None,
        };
        let sel: Vec<(u64, R)> = self
            .rows
            .iter()
            .filter(|(k, r)| {
                filter
                    .as_ref()
                    .is_none_or(|p| Self::test(p, **k, **r) == Some(true))
            })
            .map(|(k, r)| (*k, *r))
            .collect();
        let n = sel.len();
        let f64r = self.vt == ValueType::F64;
        let keys: Vec<i128> = sel.iter().map(|(k, _)| *k as i128).collect();
        let recs: Vec<R> = sel.iter().map(|(_, r)| *r).collect();
        // Record values as an ordered list (NaN left out), as results.
        let rec_val = |r: &R| match r {
            R::I(v) => Value::Int(*v),
            R::F(v) => Value::Float(*v),
            R::None => Value::Null,
        };
        let mut ordered: Vec<R> = recs
            .iter()
            .copied()
            .filter(|r| !matches!(r, R::F(v) if v.is_nan()))
            .collect();
        ordered.sort_by(|a, b| match (a, b) {
            (R::I(x), R::I(y)) => x.cmp(y),
            (R::F(x), R::F(y)) => x.total_cmp(y),
            _ => std::cmp::Ordering::Equal,
        });
        let isum: i128 = recs
            .iter()
            .map(|r| if let R::I(v) = r { *v } else { 0 })
            .sum();
        let fsum: f64 = recs
            .iter()
            .fold(0.0, |s, r| if let R::F(v) = r { s + v } else { s });
        let ksum: i128 = keys.iter().sum();
        let out = q
            .aggregates
            .iter()
            .map(|a| match a.func {
                AggFunc::CountStar | AggFunc::Count(_) | AggFunc::CountDistinct(Column::Key) => {
                    Value::Int(n as i128)
                }
                AggFunc::CountDistinct(Column::Record) => {
                    let d: HashSet<(u8, i128)> = recs
                        .iter()
                        .map(|r| match r {
                            R::I(v) => (0, *v),
                            R::F(v) if *v == 0.0 => (1, 0),
                            R::F(v) if v.is_nan() => (2, 0),
                            R::F(v) => (3, v.to_bits() as i128),
                            R::None => (4, 0),
                        })
                        .collect();
                    Value::Int(d.len() as i128)
                }
                AggFunc::Sum(Column::Key) => Value::Int(ksum),
                AggFunc::Sum(Column::Record) if f64r => Value::Float(fsum),
                AggFunc::Sum(Column::Record) => Value::Int(isum),
                _ if n == 0 && !matches!(a.func, AggFunc::Top(..) | AggFunc::Bottom(..)) => {
                    Value::Null
                }
                AggFunc::Avg(Column::Key) => Value::Float(ksum as f64 / n as f64),
                AggFunc::Avg(Column::Record) if f64r => Value::Float(fsum / n as f64),
                AggFunc::Avg(Column::Record) => Value::Float(isum as f64 / n as f64),
                AggFunc::Min(Column::Key) => Value::Int(keys[0]),
                AggFunc::Max(Column::Key) => Value::Int(keys[n - 1]),
                AggFunc::Min(Column::Record) => ordered.first().map_or(Value::Null, rec_val),
                AggFunc::Max(Column::Record) => ordered.last().map_or(Value::Null, rec_val),
                AggFunc::Top(k, Column::Key) => Value::List(
                    keys.iter()
                        .rev()
                        .take(k as usize)
                        .map(|&v| Value::Int(v))
                        .collect(),
                ),
                AggFunc::Bottom(k, Column::Key) => Value::List(
                    keys.iter()
                        .take(k as usize)
                        .map(|&v| Value::Int(v))
                        .collect(),
                ),
                AggFunc::Top(k, Column::Record) => {
                    Value::List(ordered.iter().rev().take(k as usize).map(rec_val).collect())
                }
                AggFunc::Bottom(k, Column::Record) => {
                    Value::List(ordered.iter().take(k as usize).map(rec_val).collect())
                }
            })
            .collect();
        Ok(out)
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits() || x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

#[derive(Clone)]
struct Data {
    key_type: KeyType,
    vt: ValueType,
    codec: Option<CodecId>,
    /// Records as a compressed list (`DbConfig::with_compressed_records`).
    compressed: bool,
    block_size: u16,
    page_size: usize,
    span: u64,
    keys: Vec<u64>,
    recs: Vec<u64>,
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Data {{ {:?} keys, {:?} records (compressed {}), codec {:?}, block size {}, page {}, span {}, {} keys: {:?} .. }}",
            self.key_type,
            self.vt,
            self.compressed,
            self.codec,
            self.block_size,
            self.page_size,
            self.span,
            self.keys.len(),
            &self.keys[..self.keys.len().min(20)]
        )
    }
}

fn data() -> impl Strategy<Value = Data> {
    let kind = prop_oneof![
        Just((KeyType::U32, None)),
        prop::sample::select(CodecId::ALL.to_vec()).prop_map(|c| (KeyType::U32, Some(c))),
        Just((KeyType::U64, None)),
    ];
    let vt = prop::sample::select(ValueType::ALL.to_vec());
    (
        kind,
        vt,
        any::<bool>(),
        prop_oneof![Just(0u16), 2u16..20],
        1u64..4000,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|((kt, codec), vt, small, bs, span, compressed, skewed)| {
            let extreme = match kt {
                KeyType::U32 => vec![u32::MAX as u64, u32::MAX as u64 - 1, 0],
                _ => vec![u64::MAX, u64::MAX - 1, u32::MAX as u64 + 1, 0],
            };
            let key = prop_oneof![
                20 => 0..span,
                1 => prop::sample::select(extreme),
            ];
            let n = if small { 0..400usize } else { 0..2500usize };
            // Skewed records: one value nine times in ten (compressed: PDICT chunks).
            let rec = if skewed {
                prop_oneof![9 => Just(7u64 << 8 | 2), 1 => any::<u64>()].boxed()
            } else {
                any::<u64>().boxed()
            };
            (
                Just((kt, codec, vt, small, bs, span, compressed)),
                prop::collection::vec(key, n.clone()),
                prop::collection::vec(rec, 2500),
            )
        })
        .prop_map(
            |((kt, codec, vt, small, bs, span, compressed), keys, recs)| Data {
                key_type: kt,
                vt,
                codec,
                compressed,
                block_size: if codec.is_some() { bs } else { 0 },
                page_size: match (codec.is_some(), small) {
                    (true, _) => 1024,
                    (false, true) => 512,
                    (false, false) => 4096,
                },
                span,
                keys,
                recs,
            },
        )
}

/// A record of the value type from random bits: small values (duplicates), extremes, and for
/// f64 halves, -0.0 and sometimes NaN.
fn record(vt: ValueType, bits: u64) -> (Vec<u8>, R) {
    let pick = bits % 16;
    let small = (bits >> 8) % 50;
    match vt {
        ValueType::U32 => {
            let v = if pick == 0 { u32::MAX } else { small as u32 };
            (v.to_le_bytes().to_vec(), R::I(v as i128))
        }
        ValueType::U64 => {
            let v = if pick == 0 { u64::MAX } else { small };
            (v.to_le_bytes().to_vec(), R::I(v as i128))
        }
        ValueType::I64 => {
            let v = match pick {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => small as i64 - 25,
            };
            (v.to_le_bytes().to_vec(), R::I(v as i128))
        }
        ValueType::I32 => {
            let v = match pick {
                0 => i32::MIN,
                1 => i32::MAX,
                _ => small as i32 - 25,
            };
            (v.to_le_bytes().to_vec(), R::I(v as i128))
        }
        ValueType::I16 => {
            let v = match pick {
                0 => i16::MIN,
                1 => i16::MAX,
                _ => small as i16 - 25,
            };
            (v.to_le_bytes().to_vec(), R::I(v as i128))
        }
        ValueType::F64 => {
            let v = match pick {
                0 => -0.0,
                1 if bits % 7 == 0 => f64::NAN,
                _ => (small as f64 - 25.0) / 2.0,
            };
            (v.to_le_bytes().to_vec(), R::F(v))
        }
        ValueType::Bytes => ((bits as u32).to_le_bytes().to_vec(), R::None),
    }
}

fn load(d: &Data) -> (Env, Model) {
    let env = Env::in_memory(&EnvOptions::default().page_size(d.page_size)).unwrap();
    let rt = RecordType::Fixed(d.vt.width().unwrap_or(4));
    let cfg = DbConfig::raw(d.key_type, rt)
        .with_codec(d.codec)
        .with_block_size(d.block_size)
        .with_value_type(d.vt)
        .with_compressed_records(d.compressed);
    let mut w = env.begin_write().unwrap();
    let db = w.create_db(DB, cfg).unwrap();
    let mut rows = BTreeMap::new();
    for (i, &k) in d.keys.iter().enumerate() {
        let (bytes, r) = record(d.vt, d.recs[i % d.recs.len()]);
        match d.key_type {
            KeyType::U32 => w.upsert(&db, k as u32, &bytes).unwrap(),
            _ => w.upsert(&db, k, &bytes).unwrap(),
        };
        rows.insert(k, r);
    }
    w.commit().unwrap();
    (env, Model { rows, vt: d.vt })
}

/// Compares engine and model on `q`; returns 0 for an arithmetic error, 1 when nothing was
/// selected, 2 otherwise.
fn check(env: &Env, m: &Model, q: &Query) -> Result<u8, TestCaseError> {
    let text = q.to_string();
    let parsed = Query::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    prop_assert_eq!(&parsed, q);
    let r = env.begin_read().unwrap();
    let got = r.query(&parsed);
    let count = r
        .query(&Query {
            aggregates: vec![AggFunc::CountStar.into()],
            ..q.clone()
        })
        .ok()
        .and_then(|c| c.values[0].as_int());
    match (m.run(q), got) {
        (Ok(want), Ok(got)) => {
            prop_assert_eq!(got.columns.len(), want.len());
            for (i, (w, g)) in want.iter().zip(&got.values).enumerate() {
                prop_assert!(
                    same(w, g),
                    "{}: column {} = {}: engine {:?}, model {:?}",
                    text,
                    i,
                    got.columns[i],
                    g,
                    w
                );
            }
        }
        (Err(()), Err(Error::Query(QueryError::Arithmetic { .. }))) => return Ok(0),
        (want, got) => {
            return Err(TestCaseError::fail(format!(
                "{text}: engine {got:?}, model {want:?}"
            )))
        }
    }
    Ok(if count == Some(0) { 1 } else { 2 })
}

#[test]
fn queries_match_the_model() {
    let strat = data().prop_flat_map(|d| {
        let span = d.span as i128;
        let rec = d.vt != ValueType::Bytes;
        (
            Just(d),
            prop::collection::vec(query_common::query(DB, span, rec), 1..12),
        )
    });
    let tally = std::cell::RefCell::new([0u64; 4]);
    runner(256)
        .run(&strat, |(d, queries)| {
            let (env, m) = load(&d);
            for q in &queries {
                let t = check(&env, &m, q)?;
                let mut a = tally.borrow_mut();
                a[0] += 1;
                a[t as usize + 1] += 1;
            }
            Ok(())
        })
        .unwrap();
    // The generator must exercise every outcome: errors, empty and non-empty selections.
    let [n, errors, empty, some] = *tally.borrow();
    eprintln!(
        "{n} queries: {errors} arithmetic errors, {empty} select nothing, {some} select some"
    );
    assert!(
        errors > 0 && empty > n / 20 && some > n / 4,
        "{n} {errors} {empty} {some}"
    );
}

// GROUP BY and row queries: the same data and conditions; the model groups the selection with
// a BTreeMap and answers each group's aggregates as a query of its own, and sorts, skips and
// cuts rows with plain iterator calls.

impl Model {
    /// The entries `q`'s condition selects, in key order.
    fn selected(&self, q: &Query) -> Result<Vec<(u64, R)>, ()> {
        let filter = match &q.filter {
            Some(p) => Some(self.bind(p)?),
            None => None,
        };
        Ok(self
            .rows
            .iter()
            .filter(|(k, r)| {
                filter
                    .as_ref()
                    .is_none_or(|p| Self::test(p, **k, **r) == Some(true))
            })
            .map(|(k, r)| (*k, *r))
            .collect())
    }

    /// Rows of a GROUP BY or row query.
    fn run_rows(&self, q: &Query) -> Result<Vec<Vec<Value>>, ()> {
        let sel = self.selected(q)?;
        let rec_val = |r: &R| match r {
            R::I(v) => Value::Int(*v),
            R::F(v) => Value::Float(*v),
            R::None => Value::Null,
        };
        let mut rows: Vec<Vec<Value>> = match q.group_by {
            None => sel
                .iter()
                .map(|(k, r)| {
                    q.select
                        .iter()
                        .map(|s| match s.item {
                            Item::Key => Value::Int(*k as i128),
                            _ => rec_val(r),
                        })
                        .collect()
                })
                .collect(),
            Some(g) => {
                // Group key: (order class, value) so NaN sorts last and -0.0 joins 0.0.
                let mut groups: BTreeMap<(u8, i128), (Value, Model)> = BTreeMap::new();
                for &(k, r) in &sel {
                    let (gk, gv) = match (g, r) {
                        (GroupBy::KeyDiv(n), _) => {
                            ((0, (k / n) as i128), Value::Int((k / n) as i128))
                        }
                        (GroupBy::Record, R::I(v)) => ((0, v), Value::Int(v)),
                        (GroupBy::Record, R::F(v)) if v.is_nan() => {
                            ((1, 0), Value::Float(f64::NAN))
                        }
                        (GroupBy::Record, R::F(v)) => {
                            let v = if v == 0.0 { 0.0 } else { v };
                            let b = v.to_bits() as i64;
                            (
                                (0, (b ^ (((b >> 63) as u64) >> 1) as i64) as i128),
                                Value::Float(v),
                            )
                        }
                        (GroupBy::Record, R::None) => return Err(()),
                    };
                    groups
                        .entry(gk)
                        .or_insert_with(|| {
                            (
                                gv,
                                Model {
                                    rows: BTreeMap::new(),
                                    vt: self.vt,
                                },
                            )
                        })
                        .1
                        .rows
                        .insert(k, r);
                }
                let aggs = Query {
                    filter: None,
                    select: Vec::new(),
                    group_by: None,
                    descending: false,
                    limit: None,
                    offset: 0,
                    ..q.clone()
                };
                let mut out = Vec::new();
                for (_, (gv, m)) in groups {
                    let vals = m.run(&aggs)?;
                    out.push(
                        q.select
                            .iter()
                            .map(|s| match (s.item, g) {
                                (Item::Agg(i), _) => vals[i].clone(),
                                (Item::BucketStart, GroupBy::KeyDiv(n)) => {
                                    Value::Int(gv.as_int().unwrap() * n as i128)
                                }
                                _ => gv.clone(),
                            })
                            .collect(),
                    );
                }
                out
            }
        };
        if q.descending {
            rows.reverse();
        }
        Ok(rows
            .into_iter()
            .skip(q.offset.min(usize::MAX as u64) as usize)
            .take(q.limit.unwrap_or(u64::MAX).min(usize::MAX as u64) as usize)
            .collect())
    }
}

/// A GROUP BY or row query over `base`'s condition (and, for groups, its aggregates), with the
/// window `(descending, limit, offset)`.
fn shaped(
    base: Query,
    kind: u8,
    width: u64,
    rec: bool,
    (desc, lim, off): (bool, Option<u64>, u64),
    alias: bool,
) -> Query {
    let mut q = base;
    q.descending = desc;
    q.limit = lim;
    q.offset = off;
    let named = |item: Item, name: &str| SelectItem {
        item,
        alias: alias.then(|| name.to_string()),
    };
    match kind {
        0 => {
            q.aggregates.clear();
            q.select = if rec {
                vec![named(Item::Key, "k"), named(Item::Record, "r")]
            } else {
                vec![named(Item::Key, "k")]
            };
        }
        _ => {
            let by = if kind == 2 && rec {
                GroupBy::Record
            } else {
                GroupBy::KeyDiv(width)
            };
            q.group_by = Some(by);
            let mut sel = vec![named(Item::Group, "g")];
            if matches!(by, GroupBy::KeyDiv(_)) && width % 2 == 0 {
                sel.push(named(Item::BucketStart, "start"));
            }
            for i in 0..q.aggregates.len() {
                sel.push(SelectItem {
                    item: Item::Agg(i),
                    alias: None,
                });
            }
            q.select = sel;
        }
    }
    q
}

#[test]
fn groups_and_rows_match_the_model() {
    let strat = data().prop_flat_map(|d| {
        let span = d.span as i128;
        let rec = d.vt != ValueType::Bytes;
        let width = prop_oneof![
            Just(1u64),
            2u64..20,
            Just((span as u64 / 10).max(1)),
            Just(1000u64),
            Just(u64::MAX),
            Just(u32::MAX as u64 + 1),
        ];
        let one = (
            query_common::query(DB, span, rec),
            0u8..3,
            width,
            any::<bool>(),
            proptest::option::of(0u64..40),
            prop_oneof![3 => Just(0u64), 1 => 0u64..30],
            any::<bool>(),
        )
            .prop_map(move |(b, kind, w, desc, lim, off, alias)| {
                shaped(b, kind, w, rec, (desc, lim, off), alias)
            });
        (Just(d), prop::collection::vec(one, 1..8))
    });
    let tally = std::cell::RefCell::new([0u64; 3]);
    runner(256)
        .run(&strat, |(d, queries)| {
            let (env, m) = load(&d);
            let r = env.begin_read().unwrap();
            for q in &queries {
                let text = q.to_string();
                let parsed =
                    Query::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(&parsed, q, "{}", text);
                match (m.run_rows(q), r.query(q)) {
                    (Ok(want), Ok(got)) => {
                        prop_assert!(got.is_rows(), "{}", text);
                        prop_assert_eq!(got.columns.len(), q.select.len());
                        prop_assert_eq!(
                            got.rows.len(),
                            want.len(),
                            "{}: {:?} vs {:?}",
                            text,
                            got.rows,
                            want
                        );
                        for (g, w) in got.rows.iter().zip(&want) {
                            prop_assert!(
                                g.len() == w.len() && g.iter().zip(w).all(|(a, b)| same(a, b)),
                                "{}: engine {:?}, model {:?}",
                                text,
                                g,
                                w
                            );
                        }
                        let mut t = tally.borrow_mut();
                        t[usize::from(!want.is_empty())] += 1;
                    }
                    (Err(()), Err(Error::Query(QueryError::Arithmetic { .. }))) => {
                        tally.borrow_mut()[2] += 1;
                    }
                    (want, got) => {
                        return Err(TestCaseError::fail(format!(
                            "{text}: engine {got:?}, model {want:?}"
                        )))
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let [empty, some, errors] = *tally.borrow();
    eprintln!("{empty} empty results, {some} with rows, {errors} arithmetic errors");
    assert!(
        some > 4 * (empty + errors) / 10 && empty > 0,
        "{empty} {some} {errors}"
    );
}
