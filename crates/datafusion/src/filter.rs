//! SQL predicates on the key (and on a directory's file column) turned into key intervals, the
//! form the tree's range scan and fold take.
//!
//! A predicate becomes a [`Tri`]: the keys where it is TRUE and the keys where it is FALSE (the
//! rest are UNKNOWN: a comparison with NULL). `NOT` swaps the two sets, `AND` intersects the
//! TRUE sets and unites the FALSE sets, `OR` the other way round, so SQL's three-valued logic
//! holds exactly (`key NOT IN (1, NULL)` selects nothing) and a scan of the TRUE set returns
//! exactly the rows DataFusion's filter would keep: such a filter is pushed down as `Exact`.
//!
//! ```text
//! key > 10 AND NOT key IN (15, 20)   on u32 keys
//!   TRUE  = [11, 14] [16, 19] [21, 4294967295]
//!   FALSE = [0, 10] [15, 15] [20, 20]
//! ```
//!
//! Atoms on the file column (a directory table) are TRUE or FALSE for a whole file, so the same
//! walk, run once per file, also prunes files. Anything else (a predicate on `record`, a
//! function, a cast that could change the order of keys) is not translated: DataFusion
//! evaluates it.
//!
//! A parameter (`$1`, a prepared statement's placeholder, [`crate::prepared`]) stands where a
//! literal may: the predicate is pushed down with the placeholder in it and translated once
//! the value is known ([`bind`]), at each execution.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{ParamValues, Result};
use datafusion::logical_expr::expr::{InList, Placeholder};
use datafusion::logical_expr::{Between, BinaryExpr, Cast, Expr, Operator};
use datafusion::scalar::ScalarValue;
use std::borrow::Cow;

/// Sorted, disjoint, non-adjacent inclusive key intervals `[lo, hi]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ivs(pub Vec<(u64, u64)>);

impl Ivs {
    pub fn none() -> Ivs {
        Ivs(Vec::new())
    }
    pub fn all(max: u64) -> Ivs {
        Ivs(vec![(0, max)])
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Keys in the set (saturating).
    pub fn len(&self) -> u128 {
        self.0.iter().map(|&(a, b)| (b - a) as u128 + 1).sum()
    }

    fn from_unsorted(mut v: Vec<(u64, u64)>) -> Ivs {
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Ivs(out)
    }

    pub fn union(&self, o: &Ivs) -> Ivs {
        let mut v = self.0.clone();
        v.extend_from_slice(&o.0);
        Ivs::from_unsorted(v)
    }

    pub fn intersect(&self, o: &Ivs) -> Ivs {
        let (mut i, mut j, mut out) = (0, 0, Vec::new());
        while i < self.0.len() && j < o.0.len() {
            let (a, b) = self.0[i];
            let (c, d) = o.0[j];
            let (lo, hi) = (a.max(c), b.min(d));
            if lo <= hi {
                out.push((lo, hi));
            }
            if b < d {
                i += 1;
            } else {
                j += 1;
            }
        }
        Ivs(out)
    }

    /// The keys of `[0, max]` not in the set.
    pub fn complement(&self, max: u64) -> Ivs {
        let mut out = Vec::new();
        let mut next = Some(0u64);
        for &(a, b) in &self.0 {
            if let Some(n) = next {
                if a > n {
                    out.push((n, a - 1));
                }
            }
            next = b.checked_add(1);
        }
        if let Some(n) = next {
            if n <= max {
                out.push((n, max));
            }
        }
        Ivs(out)
    }

    /// Whether `k` is in the set.
    pub fn contains(&self, k: u64) -> bool {
        let i = self.0.partition_point(|iv| iv.1 < k);
        self.0.get(i).is_some_and(|iv| iv.0 <= k)
    }
}

/// Where a predicate is TRUE and where it is FALSE; elsewhere it is UNKNOWN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tri {
    pub t: Ivs,
    pub f: Ivs,
}

impl Tri {
    fn all(max: u64) -> Tri {
        Tri {
            t: Ivs::all(max),
            f: Ivs::none(),
        }
    }
    fn none(max: u64) -> Tri {
        Tri {
            t: Ivs::none(),
            f: Ivs::all(max),
        }
    }
    fn unknown() -> Tri {
        Tri {
            t: Ivs::none(),
            f: Ivs::none(),
        }
    }
    fn exact(t: Ivs, max: u64) -> Tri {
        let f = t.complement(max);
        Tri { t, f }
    }
    fn not(self) -> Tri {
        Tri {
            t: self.f,
            f: self.t,
        }
    }
    fn and(self, o: Tri) -> Tri {
        Tri {
            t: self.t.intersect(&o.t),
            f: self.f.union(&o.f),
        }
    }
    fn or(self, o: Tri) -> Tri {
        Tri {
            t: self.t.union(&o.t),
            f: self.f.intersect(&o.f),
        }
    }
}

/// What the translation knows about the table: the key column, its type, and (directory
/// tables) the file column and the file being planned.
#[derive(Clone, Copy, Debug)]
pub struct KeyCtx<'a> {
    /// Largest key of the key type (`u32::MAX` or `u64::MAX`); `None`: byte-string keys, which
    /// are never pushed down.
    pub key_max: Option<u64>,
    /// The file column's name, and the file's value of it (`None` while only asking whether a
    /// predicate translates).
    pub file_col: Option<&'a str>,
    pub file: Option<&'a str>,
}

/// The TRUE and FALSE key sets of `e` (`None`: not a predicate on the key and file column
/// alone, or one whose semantics differ from a plain comparison of numbers).
pub fn translate(e: &Expr, cx: &KeyCtx<'_>) -> Option<Tri> {
    let max = cx.key_max?;
    Some(match e {
        Expr::Alias(a) => translate(&a.expr, cx)?,
        Expr::Not(inner) => translate(inner, cx)?.not(),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => translate(left, cx)?.and(translate(right, cx)?),
            Operator::Or => translate(left, cx)?.or(translate(right, cx)?),
            _ => compare(left, *op, right, cx, max)?,
        },
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let lo = compare(expr, Operator::GtEq, low, cx, max)?;
            let hi = compare(expr, Operator::LtEq, high, cx, max)?;
            let t = lo.and(hi);
            if *negated {
                t.not()
            } else {
                t
            }
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            // x IN (a, b) is x = a OR x = b, with the same NULL rules.
            let mut acc = Tri::none(max);
            for v in list {
                acc = acc.or(compare(expr, Operator::Eq, v, cx, max)?);
            }
            if *negated {
                acc.not()
            } else {
                acc
            }
        }
        Expr::IsNotNull(inner) | Expr::IsNull(inner) => {
            // Neither column is ever NULL.
            column(inner, cx)?;
            if matches!(e, Expr::IsNotNull(_)) {
                Tri::all(max)
            } else {
                Tri::none(max)
            }
        }
        Expr::IsTrue(inner) => Tri::exact(translate(inner, cx)?.t, max),
        Expr::IsFalse(inner) => Tri::exact(translate(inner, cx)?.f, max),
        Expr::IsNotTrue(inner) => Tri::exact(translate(inner, cx)?.t, max).not(),
        Expr::IsNotFalse(inner) => Tri::exact(translate(inner, cx)?.f, max).not(),
        Expr::Literal(ScalarValue::Boolean(b), _) => match b {
            Some(true) => Tri::all(max),
            Some(false) => Tri::none(max),
            None => Tri::unknown(),
        },
        _ => return None,
    })
}

/// Whether `e` has a parameter (`$1`) in it.
pub fn has_placeholder(e: &Expr) -> bool {
    let mut found = false;
    let _ = e.apply(|x| {
        found = matches!(x, Expr::Placeholder(_));
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

/// `e` with every parameter replaced by its value (an error names a parameter without one).
pub fn bind(e: &Expr, params: &ParamValues) -> Result<Expr> {
    e.clone()
        .transform_up(|x| match x {
            Expr::Placeholder(Placeholder { id, .. }) => {
                let (v, meta) = params.get_placeholders_with_values(&id)?.into_inner();
                Ok(Transformed::yes(Expr::Literal(v, meta)))
            }
            x => cast_literal(x),
        })
        .map(|t| t.data)
}

/// A cast of a literal as the literal cast (type coercion puts casts on parameters, e.g. in
/// `key IN ($1, 4)`, which the simplifier folds for literals but cannot for parameters). A
/// value the cast refuses stays a cast, which does not translate.
fn cast_literal(x: Expr) -> Result<Transformed<Expr>> {
    if let Expr::Cast(Cast { expr, field }) = &x {
        if let Expr::Literal(v, _) = expr.as_ref() {
            if let Ok(c) = v.cast_to(field.data_type()) {
                return Ok(Transformed::yes(Expr::Literal(c, None)));
            }
        }
    }
    Ok(Transformed::no(x))
}

/// Whether `e` translates, whatever values its parameters take: each parameter is tried as a
/// NULL of its type (every value of a type a comparison takes translates as a NULL of it does,
/// except a float NaN and a value of an unknown type; [`bind`] plus [`translate`] at execution
/// sees those and the caller falls back).
pub fn translates(e: &Expr, cx: &KeyCtx<'_>) -> bool {
    let probe = if has_placeholder(e) {
        let nulled = e.clone().transform_up(|x| match x {
            Expr::Placeholder(Placeholder { field, .. }) => {
                let v = field
                    .and_then(|f| ScalarValue::try_from(f.data_type()).ok())
                    .unwrap_or(ScalarValue::Null);
                Ok(Transformed::yes(Expr::Literal(v, None)))
            }
            x => cast_literal(x),
        });
        match nulled {
            Ok(t) => Cow::Owned(t.data),
            Err(_) => return false,
        }
    } else {
        Cow::Borrowed(e)
    };
    translate(&probe, cx).is_some()
}

/// A column reference, seen through casts that keep every value and the order of the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Key,
    File,
}

fn column(e: &Expr, cx: &KeyCtx<'_>) -> Option<Col> {
    match e {
        Expr::Column(c) if c.name == crate::KEY => Some(Col::Key),
        Expr::Column(c) if Some(c.name.as_str()) == cx.file_col => Some(Col::File),
        Expr::Cast(Cast { expr, field }) => {
            let inner = column(expr, cx)?;
            let lossless = match inner {
                Col::Key => lossless_key_cast(cx.key_max?, field.data_type()),
                Col::File => matches!(
                    field.data_type(),
                    DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                ),
            };
            lossless.then_some(inner)
        }
        _ => None,
    }
}

/// Whether every key converts exactly to `to`, keeping their order (the comparison in `to`
/// then equals the comparison of the numbers).
fn lossless_key_cast(key_max: u64, to: &DataType) -> bool {
    let small = key_max <= u32::MAX as u64;
    match to {
        DataType::UInt64 | DataType::Decimal128(20.., 0) => true,
        DataType::UInt32 | DataType::Int64 | DataType::Float64 | DataType::Decimal128(10.., 0) => {
            small
        }
        _ => false,
    }
}

/// A literal number: an exact fraction `num / 10^scale`, or a float.
#[derive(Clone, Copy, Debug)]
enum Num {
    Dec(i128, u32),
    Float(f64),
}

fn number(v: &ScalarValue) -> Option<Option<Num>> {
    use ScalarValue as S;
    let int = |x: Option<i128>| Some(x.map(|x| Num::Dec(x, 0)));
    match v {
        S::Int8(x) => int(x.map(i128::from)),
        S::Int16(x) => int(x.map(i128::from)),
        S::Int32(x) => int(x.map(i128::from)),
        S::Int64(x) => int(x.map(i128::from)),
        S::UInt8(x) => int(x.map(i128::from)),
        S::UInt16(x) => int(x.map(i128::from)),
        S::UInt32(x) => int(x.map(i128::from)),
        S::UInt64(x) => int(x.map(i128::from)),
        S::Float32(x) => Some(x.map(|x| Num::Float(x as f64))),
        S::Float64(x) => Some(x.map(Num::Float)),
        S::Decimal128(x, _, s) if (0..=38).contains(s) => Some(x.map(|x| Num::Dec(x, *s as u32))),
        S::Null => Some(None),
        _ => None,
    }
}

/// The smallest integer `>= n` and the largest `<= n` (NaN is refused earlier).
fn bounds(n: Num) -> (Option<i128>, Option<i128>) {
    match n {
        Num::Dec(x, s) => {
            let d = 10i128.pow(s);
            let fl = x.div_euclid(d);
            let ce = if x.rem_euclid(d) == 0 { fl } else { fl + 1 };
            (Some(ce), Some(fl))
        }
        Num::Float(f) => {
            // Keys are below 2^64: clamping beyond them (infinities included) keeps every
            // comparison's answer.
            let conv = |g: f64| Some(g.clamp(-1.0e38, 1.0e38) as i128);
            let (ce, fl) = (conv(f.ceil()), conv(f.floor()));
            (ce, fl)
        }
    }
}

/// `key op n` as a key set within `[0, max]`.
fn key_cmp(op: Operator, n: Num, max: u64) -> Option<Ivs> {
    let (ce, fl) = bounds(n);
    let m = max as i128;
    // Keys in [lo, hi] clamped to the domain.
    let set = |lo: i128, hi: i128| -> Ivs {
        let (lo, hi) = (lo.max(0), hi.min(m));
        if lo > hi {
            Ivs::none()
        } else {
            Ivs(vec![(lo as u64, hi as u64)])
        }
    };
    // An exact integer when the smallest integer >= n is also <= n.
    let int = match (ce, fl) {
        (Some(c), Some(f)) if c == f => Some(c),
        _ => None,
    };
    Some(match op {
        Operator::Eq => int.map_or(Ivs::none(), |v| set(v, v)),
        Operator::NotEq => int.map_or(Ivs::all(max), |v| set(v, v).complement(max)),
        // key > n: key >= the smallest integer > n.
        Operator::Gt => match (int, ce) {
            (Some(v), _) => set(v.checked_add(1)?, m),
            (None, Some(c)) => set(c, m),
            (None, None) => return None,
        },
        Operator::GtEq => set(ce?, m),
        Operator::Lt => match (int, fl) {
            (Some(v), _) => set(0, v.checked_sub(1)?),
            (None, Some(f)) => set(0, f),
            (None, None) => return None,
        },
        Operator::LtEq => set(0, fl?),
        _ => return None,
    })
}

fn swapped(op: Operator) -> Option<Operator> {
    Some(match op {
        Operator::Eq => Operator::Eq,
        Operator::NotEq => Operator::NotEq,
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        _ => return None,
    })
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        Expr::Alias(a) => literal(&a.expr),
        _ => None,
    }
}

/// `l op r` with a column on one side and a literal on the other.
fn compare(l: &Expr, op: Operator, r: &Expr, cx: &KeyCtx<'_>, max: u64) -> Option<Tri> {
    let (col, op, lit) = match (column(l, cx), column(r, cx)) {
        (Some(c), None) => (c, op, literal(r)?),
        (None, Some(c)) => (c, swapped(op)?, literal(l)?),
        _ => return None,
    };
    swapped(op)?; // only the six comparisons
    match col {
        Col::Key => match number(lit)? {
            None => Some(Tri::unknown()),
            Some(Num::Float(f)) if f.is_nan() => None, // Arrow orders NaN above every float
            Some(n) => Some(Tri::exact(key_cmp(op, n, max)?, max)),
        },
        Col::File => {
            let s = match lit {
                ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s) => s,
                _ => return None,
            };
            let Some(s) = s else {
                return Some(Tri::unknown());
            };
            let Some(file) = cx.file else {
                return Some(Tri::unknown()); // only asked whether it translates
            };
            let holds = match op {
                Operator::Eq => file == s,
                Operator::NotEq => file != s,
                Operator::Lt => file < s.as_str(),
                Operator::LtEq => file <= s.as_str(),
                Operator::Gt => file > s.as_str(),
                Operator::GtEq => file >= s.as_str(),
                _ => return None,
            };
            Some(if holds { Tri::all(max) } else { Tri::none(max) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn cx() -> KeyCtx<'static> {
        KeyCtx {
            key_max: Some(u32::MAX as u64),
            file_col: Some("file"),
            file: Some("b"),
        }
    }

    fn t(e: Expr) -> Vec<(u64, u64)> {
        translate(&e, &cx()).expect("translates").t.0
    }

    #[test]
    fn comparisons_and_logic() {
        let m = u32::MAX as u64;
        assert_eq!(t(col("key").gt(lit(10u32))), [(11, m)]);
        assert_eq!(t(lit(10i64).gt(col("key"))), [(0, 9)]);
        assert_eq!(t(col("key").gt(lit(2.5f64))), [(3, m)]);
        assert_eq!(t(col("key").lt_eq(lit(2.5f64))), [(0, 2)]);
        assert_eq!(t(col("key").eq(lit(2.5f64))), []);
        assert_eq!(t(col("key").lt(lit(0i64))), []);
        assert_eq!(t(col("key").gt_eq(lit(-5i64))), [(0, m)]);
        assert_eq!(t(col("key").gt(lit(1e300))), []);
        assert_eq!(
            t(!col("key").between(lit(5u32), lit(9u32))),
            [(0, 4), (10, m)]
        );
        assert_eq!(
            t(col("key")
                .gt(lit(10u32))
                .and(col("key").in_list(vec![lit(15u32), lit(20u32)], true))),
            [(11, 14), (16, 19), (21, m)]
        );
        assert_eq!(
            t(col("key").eq(lit(3u32)).or(col("key").eq(lit(4u32)))),
            [(3, 4)]
        );
    }

    #[test]
    fn nulls_follow_three_valued_logic() {
        let null = lit(ScalarValue::UInt32(None));
        // NOT IN with a NULL selects nothing; IN with a NULL still selects its values.
        assert_eq!(
            t(col("key").in_list(vec![lit(1u32), null.clone()], true)),
            []
        );
        assert_eq!(
            t(col("key").in_list(vec![lit(1u32), null.clone()], false)),
            [(1, 1)]
        );
        assert_eq!(t(!col("key").eq(null.clone())), []);
        assert_eq!(
            t(col("key").eq(null).or(col("key").eq(lit(7u32)))),
            [(7, 7)]
        );
    }

    #[test]
    fn file_atoms_hold_for_a_whole_file() {
        let m = u32::MAX as u64;
        assert_eq!(t(col("file").eq(lit("b"))), [(0, m)]);
        assert_eq!(t(col("file").eq(lit("a"))), []);
        assert_eq!(
            t(col("file").eq(lit("a")).or(col("key").lt(lit(3u32)))),
            [(0, 2)]
        );
    }

    #[test]
    fn other_predicates_are_not_translated() {
        assert!(translate(&col("record").gt(lit(1u32)), &cx()).is_none());
        assert!(translate(&col("key").gt(col("key")), &cx()).is_none());
        assert!(translate(&col("key").gt(lit(f64::NAN)), &cx()).is_none());
        let bytes = KeyCtx {
            key_max: None,
            ..cx()
        };
        assert!(translate(&col("key").gt(lit(1u32)), &bytes).is_none());
    }

    #[test]
    fn set_operations() {
        let a = Ivs(vec![(0, 5), (10, 20)]);
        let b = Ivs(vec![(3, 12), (19, 30)]);
        assert_eq!(a.intersect(&b).0, [(3, 5), (10, 12), (19, 20)]);
        assert_eq!(a.union(&b).0, [(0, 30)]);
        assert_eq!(a.complement(25).0, [(6, 9), (21, 25)]);
        assert_eq!(Ivs::all(u64::MAX).complement(u64::MAX).0, []);
        assert!(a.contains(10) && !a.contains(7));
    }
}
