//! From a WHERE condition to a scan plan: constants (and scalar subqueries) are evaluated, the
//! condition is brought into negation normal form over *atoms*, and the key intervals that can
//! hold a selected entry are extracted.
//!
//! ```text
//! Pred --eval constants, push NOT down--> Bound (And / Or over atoms)
//!   atom on key or an integer record:  a sorted set of disjoint inclusive intervals [lo, hi]
//!   atom on an f64 record:             (op, constant, negated)   -- NaN compares false
//!   a comparison with NULL:            false (SQL's UNKNOWN; NOT UNKNOWN is UNKNOWN, and
//!                                      without a NOT above it, UNKNOWN selects nothing)
//! Bound --cover--> (key intervals, exact?)  exact: the intervals are the whole condition;
//!                                           else every row in them is tested (residual)
//! ```
//!
//! Integer columns compare exactly with float constants (`key > 2.5` is `key >= 3`); f64
//! records compare with integer constants converted to f64.

use super::ast::{ArithOp, At, CmpOp, Column, Expr, Pred};
use super::error::QueryError;
use crate::error::Result;
use smallvec::{smallvec, SmallVec};

/// Inclusive intervals, sorted and disjoint (not even adjacent). Up to two inline: a range,
/// a point or `!=` plan without a heap allocation.
pub type Ivs = SmallVec<[(i128, i128); 2]>;

/// A constant: the value of an expression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
    Null,
}

/// A condition in negation normal form.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    Const(bool),
    Key(Ivs),
    /// Integer record (u32, u64, i16, i32, i64).
    RecInt(Ivs),
    /// f64 record: `negated` applies after the IEEE comparison.
    RecF64 {
        op: CmpOp,
        c: f64,
        negated: bool,
    },
    And(Vec<Bound>),
    Or(Vec<Bound>),
}

/// What the binder needs to know about the database and how to run subqueries.
pub trait Binder {
    /// The key domain.
    fn key_domain(&self) -> (i128, i128);
    /// The record domain: `Some(Ok(range))` for integer records, `Some(Err(()))` for f64,
    /// `None` when the records are not numbers (then `what` explains, for the error).
    fn record_domain(&self) -> std::result::Result<RecordDomain, String>;
    /// Runs a scalar subquery.
    fn subquery(&mut self, q: &super::ast::Query) -> Result<Num>;
}

/// The kind of numbers a database's records are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordDomain {
    Int(i128, i128),
    F64,
}

fn arith(at: At, what: String) -> crate::Error {
    QueryError::Arithmetic { at: at.0, what }.into()
}

/// Evaluates a constant expression.
pub fn eval(e: &Expr, b: &mut dyn Binder) -> Result<Num> {
    Ok(match e {
        Expr::Int(v) => Num::Int(*v),
        Expr::Float(v) => {
            if !v.is_finite() {
                return Err(arith(At(None), format!("{v} is not a finite number")));
            }
            Num::Float(*v)
        }
        Expr::Str(v) => {
            return Err(type_err(
                At(None),
                format!(
                    "{} is a string; keys and records of this database are numbers",
                    super::ast::quote_str(v)
                ),
            ))
        }
        Expr::Subquery(q) => b.subquery(q)?,
        Expr::Bin { op, l, r, at } => {
            let (x, y) = (eval(l, b)?, eval(r, b)?);
            match (x, y) {
                (Num::Null, _) | (_, Num::Null) => Num::Null,
                (Num::Int(x), Num::Int(y)) => {
                    let v = match op {
                        ArithOp::Add => x.checked_add(y),
                        ArithOp::Sub => x.checked_sub(y),
                        ArithOp::Mul => x.checked_mul(y),
                        ArithOp::Div | ArithOp::Rem if y == 0 => {
                            return Err(arith(*at, format!("division by zero in {e}")))
                        }
                        ArithOp::Div => x.checked_div(y),
                        ArithOp::Rem => x.checked_rem(y),
                    };
                    Num::Int(
                        v.ok_or_else(|| arith(*at, format!("{e} overflows 128-bit integers")))?,
                    )
                }
                (x, y) => {
                    let f = |n: Num| match n {
                        Num::Int(v) => v as f64,
                        Num::Float(v) => v,
                        Num::Null => f64::NAN,
                    };
                    let (x, y) = (f(x), f(y));
                    if y == 0.0 && matches!(op, ArithOp::Div | ArithOp::Rem) {
                        return Err(arith(*at, format!("division by zero in {e}")));
                    }
                    let v = match op {
                        ArithOp::Add => x + y,
                        ArithOp::Sub => x - y,
                        ArithOp::Mul => x * y,
                        ArithOp::Div => x / y,
                        ArithOp::Rem => x % y,
                    };
                    if !v.is_finite() {
                        return Err(arith(*at, format!("{e} is not a finite number")));
                    }
                    Num::Float(v)
                }
            }
        }
    })
}

fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// `x op c` over the integers of `[dlo, dhi]`.
pub fn compile(op: CmpOp, c: Num, (dlo, dhi): (i128, i128)) -> Ivs {
    let mk = |lo: i128, hi: i128| -> Ivs {
        let (lo, hi) = (lo.max(dlo), hi.min(dhi));
        if lo <= hi {
            smallvec![(lo, hi)]
        } else {
            Ivs::new()
        }
    };
    // Float constants become integer bounds: x < 2.5 is x <= 2, x >= 2.5 is x >= 3.
    const LIM: f64 = 1.0e30; // beyond every domain, well inside i128
    let (fl, ce, integral) = match c {
        Num::Int(v) => (v, v, true),
        Num::Float(f) => {
            let cl = |x: f64| x.clamp(-LIM, LIM) as i128;
            (cl(f.floor()), cl(f.ceil()), f == f.floor())
        }
        Num::Null => return Ivs::new(),
    };
    match op {
        CmpOp::Eq if integral => mk(fl, fl),
        CmpOp::Eq => Ivs::new(),
        CmpOp::Ne if integral => {
            let mut v = mk(dlo, fl.saturating_sub(1));
            v.extend(mk(fl.saturating_add(1), dhi));
            v
        }
        CmpOp::Ne => mk(dlo, dhi),
        CmpOp::Lt => mk(dlo, ce.saturating_sub(1)),
        CmpOp::Le => mk(dlo, fl),
        CmpOp::Gt => mk(fl.saturating_add(1), dhi),
        CmpOp::Ge => mk(ce, dhi),
    }
}

/// Union of two interval sets.
pub fn union(a: &[(i128, i128)], b: &[(i128, i128)]) -> Ivs {
    let mut all: Ivs = a.iter().chain(b.iter()).copied().collect();
    all.sort_unstable();
    let mut out = Ivs::with_capacity(all.len());
    for (lo, hi) in all {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Intersection of many interval sets, pairwise in rounds (a long `NOT IN` list is thousands
/// of two-interval sets: folding them one by one would be quadratic). `None` for no sets.
pub fn intersect_all(mut sets: Vec<Ivs>) -> Option<Ivs> {
    while sets.len() > 1 {
        let mut next = Vec::with_capacity(sets.len().div_ceil(2));
        let mut it = sets.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => intersect(&a, &b),
                None => a,
            });
        }
        sets = next;
    }
    sets.pop()
}

/// Intersection of two interval sets.
pub fn intersect(a: &[(i128, i128)], b: &[(i128, i128)]) -> Ivs {
    if let ([(alo, ahi)], [(blo, bhi)]) = (a, b) {
        // Two bounds of one range (`key >= a AND key <= b`, BETWEEN).
        let (lo, hi) = ((*alo).max(*blo), (*ahi).min(*bhi));
        return if lo <= hi {
            smallvec![(lo, hi)]
        } else {
            Ivs::new()
        };
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Ivs::new();
    while let (Some(&(alo, ahi)), Some(&(blo, bhi))) = (a.get(i), b.get(j)) {
        let (lo, hi) = (alo.max(blo), ahi.min(bhi));
        if lo <= hi {
            out.push((lo, hi));
        }
        if ahi < bhi {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn type_err(at: At, what: String) -> crate::Error {
    QueryError::Type { at: at.0, what }.into()
}

fn atom(
    col: Column,
    op: CmpOp,
    c: Num,
    negated: bool,
    at: At,
    b: &mut dyn Binder,
) -> Result<Bound> {
    let rd = match col {
        Column::Key => None,
        Column::Record => Some(b.record_domain().map_err(|w| type_err(at, w))?),
    };
    if c == Num::Null {
        return Ok(Bound::Const(false));
    }
    let op2 = if negated { negate(op) } else { op };
    Ok(match rd {
        None => Bound::Key(compile(op2, c, b.key_domain())),
        Some(RecordDomain::Int(lo, hi)) => {
            let s = compile(op2, c, (lo, hi));
            if s.is_empty() {
                Bound::Const(false)
            } else if s[..] == [(lo, hi)] {
                Bound::Const(true)
            } else {
                Bound::RecInt(s)
            }
        }
        Some(RecordDomain::F64) => Bound::RecF64 {
            op,
            c: match c {
                Num::Int(v) => v as f64,
                Num::Float(v) => v,
                Num::Null => f64::NAN,
            },
            negated,
        },
    })
}

/// `l AND r` (`and`) or `l OR r`; two key conditions become one interval set at once (the
/// common `key BETWEEN a AND b` then needs no work in [`simplify`]).
fn both(and: bool, l: Bound, r: Bound) -> Bound {
    match (l, r) {
        (Bound::Key(x), Bound::Key(y)) if and => Bound::Key(intersect(&x, &y)),
        (Bound::Key(x), Bound::Key(y)) => Bound::Key(union(&x, &y)),
        (l, r) if and => Bound::And(vec![l, r]),
        (l, r) => Bound::Or(vec![l, r]),
    }
}

/// Binds a condition (negated when `negated`), evaluating its constants.
pub fn bind(p: &Pred, negated: bool, b: &mut dyn Binder) -> Result<Bound> {
    Ok(match p {
        Pred::And(x, y) | Pred::Or(x, y) => {
            let l = bind(x, negated, b)?;
            let r = bind(y, negated, b)?;
            // De Morgan: a negated AND is an OR of negations.
            both(matches!(p, Pred::And(..)) != negated, l, r)
        }
        Pred::Not(x) => bind(x, !negated, b)?,
        Pred::Cmp { col, op, value, at } => {
            let c = eval(value, b)?;
            atom(*col, *op, c, negated, *at, b)?
        }
        Pred::Between { col, lo, hi, at } => {
            let lo = eval(lo, b)?;
            let hi = eval(hi, b)?;
            let a = atom(*col, CmpOp::Ge, lo, negated, *at, b)?;
            let z = atom(*col, CmpOp::Le, hi, negated, *at, b)?;
            both(!negated, a, z)
        }
        Pred::Like { at, .. } => {
            return Err(type_err(
                *at,
                "LIKE needs string keys (this database's keys are numbers)".into(),
            ))
        }
        Pred::In { col, list, at } => {
            let mut items = Vec::with_capacity(list.len());
            for e in list {
                let c = eval(e, b)?;
                items.push(atom(*col, CmpOp::Eq, c, negated, *at, b)?);
            }
            if list.is_empty() {
                // Checks the column's type even for an empty list.
                atom(*col, CmpOp::Eq, Num::Null, negated, *at, b)?;
            }
            if negated {
                Bound::And(items)
            } else {
                Bound::Or(items)
            }
        }
    })
}

/// The key intervals of a condition made of key comparisons with literal numbers alone
/// (`key BETWEEN 10 AND 20`, `key >= 5 AND NOT key = 7`, ...), in one walk that builds no
/// [`Bound`]: what `cover(&simplify(bind(p)))` returns for such a condition, always exact.
/// `None` when the condition reads the record, calls a subquery, computes, or lists (`IN`):
/// then the general path runs.
pub fn literal_key_ivs(p: &Pred, negated: bool, domain: (i128, i128)) -> Option<Ivs> {
    let lit = |e: &Expr| match *e {
        Expr::Int(v) => Some(Num::Int(v)),
        Expr::Float(v) if v.is_finite() => Some(Num::Float(v)),
        _ => None,
    };
    let op = |op: CmpOp| if negated { negate(op) } else { op };
    if let (
        false,
        Pred::Between {
            col: Column::Key,
            lo: Expr::Int(a),
            hi: Expr::Int(z),
            ..
        },
    ) = (negated, p)
    {
        // The commonest condition, `key BETWEEN a AND b` of integers: one interval, cut to the
        // domain (what the general arm below computes, without its two interval sets).
        let (lo, hi) = ((*a).max(domain.0), (*z).min(domain.1));
        return Some(if lo <= hi {
            smallvec![(lo, hi)]
        } else {
            Ivs::new()
        });
    }
    Some(match p {
        Pred::And(x, y) | Pred::Or(x, y) => {
            let l = literal_key_ivs(x, negated, domain)?;
            let r = literal_key_ivs(y, negated, domain)?;
            if matches!(p, Pred::And(..)) != negated {
                intersect(&l, &r)
            } else {
                union(&l, &r)
            }
        }
        Pred::Not(x) => literal_key_ivs(x, !negated, domain)?,
        Pred::Cmp {
            col: Column::Key,
            op: o,
            value,
            ..
        } => compile(op(*o), lit(value)?, domain),
        Pred::Between {
            col: Column::Key,
            lo,
            hi,
            ..
        } => {
            let a = compile(op(CmpOp::Ge), lit(lo)?, domain);
            let z = compile(op(CmpOp::Le), lit(hi)?, domain);
            if negated {
                union(&a, &z)
            } else {
                intersect(&a, &z)
            }
        }
        _ => return None,
    })
}

/// Simplifies: merges key-only and integer-record-only branches into one interval set, folds
/// constants.
pub fn simplify(p: Bound) -> Bound {
    match p {
        Bound::And(items) => {
            let mut out = Vec::new();
            let mut sets: Vec<Ivs> = Vec::new();
            for it in items.into_iter().map(simplify) {
                match it {
                    Bound::Const(true) => {}
                    Bound::Const(false) => return Bound::Const(false),
                    Bound::Key(s) => sets.push(s),
                    Bound::And(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            if let Some(k) = intersect_all(sets) {
                if k.is_empty() {
                    return Bound::Const(false);
                }
                out.push(Bound::Key(k));
            }
            match out.len() {
                0 => Bound::Const(true),
                1 => out.pop().unwrap_or(Bound::Const(true)),
                _ => Bound::And(out),
            }
        }
        Bound::Or(items) => {
            let mut out = Vec::new();
            // Every key interval of the OR, merged once at the end (IN lists can be long).
            let mut keys = Ivs::new();
            let mut any_keys = false;
            for it in items.into_iter().map(simplify) {
                match it {
                    Bound::Const(false) => {}
                    Bound::Const(true) => return Bound::Const(true),
                    Bound::Key(s) => {
                        any_keys = true;
                        keys.extend(s);
                    }
                    Bound::Or(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            if any_keys {
                let k = union(&keys, &[]);
                if !k.is_empty() {
                    out.push(Bound::Key(k));
                }
            }
            match out.len() {
                0 => Bound::Const(false),
                1 => out.pop().unwrap_or(Bound::Const(false)),
                _ => Bound::Or(out),
            }
        }
        Bound::RecInt(s) if s.is_empty() => Bound::Const(false),
        other => other,
    }
}

/// The key intervals that can hold a selected entry, and whether they are the whole condition.
pub fn cover(p: &Bound, domain: (i128, i128)) -> (Ivs, bool) {
    let all: Ivs = smallvec![domain];
    match p {
        Bound::Const(true) => (all, true),
        Bound::Const(false) => (Ivs::new(), true),
        Bound::Key(s) => (s.clone(), true),
        Bound::RecInt(s) if s.is_empty() => (Ivs::new(), true),
        Bound::RecInt(_) => (all, false),
        Bound::RecF64 { .. } => (all, false),
        Bound::And(items) => {
            let mut acc = all;
            let mut exact = true;
            for it in items {
                let (s, e) = cover(it, domain);
                acc = intersect(&acc, &s);
                exact &= e;
            }
            (acc, exact)
        }
        Bound::Or(items) => {
            let mut acc = Ivs::new();
            let mut exact = true;
            for it in items {
                let (s, e) = cover(it, domain);
                acc = union(&acc, &s);
                exact &= e;
            }
            (acc, exact)
        }
    }
}

/// Whether a value of an integer column lies in `s`.
#[inline]
pub fn contains(s: &[(i128, i128)], v: i128) -> bool {
    let i = s.partition_point(|iv| iv.1 < v);
    s.get(i).is_some_and(|iv| iv.0 <= v)
}

/// A row's values, for the residual test.
#[derive(Clone, Copy, Debug)]
pub enum RecVal {
    Int(i128),
    F64(f64),
    /// Not read (the condition does not use the record).
    None,
}

/// Evaluates the condition on one row.
pub fn test(p: &Bound, key: u64, rec: RecVal) -> bool {
    match p {
        Bound::Const(v) => *v,
        Bound::Key(s) => contains(s, key as i128),
        Bound::RecInt(s) => match rec {
            RecVal::Int(v) => contains(s, v),
            _ => false,
        },
        Bound::RecF64 { op, c, negated } => {
            let r = match rec {
                RecVal::F64(v) => v,
                _ => return false,
            };
            let t = match op {
                CmpOp::Eq => r == *c,
                CmpOp::Ne => r != *c,
                CmpOp::Lt => r < *c,
                CmpOp::Le => r <= *c,
                CmpOp::Gt => r > *c,
                CmpOp::Ge => r >= *c,
            };
            t != *negated
        }
        Bound::And(items) => items.iter().all(|i| test(i, key, rec)),
        Bound::Or(items) => items.iter().any(|i| test(i, key, rec)),
    }
}

/// Whether the condition reads the record.
pub fn uses_record(p: &Bound) -> bool {
    match p {
        Bound::RecInt(_) | Bound::RecF64 { .. } => true,
        Bound::And(items) | Bound::Or(items) => items.iter().any(uses_record),
        _ => false,
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn float_bounds_are_exact_on_integers() {
        let d = (0, 100);
        assert_eq!(compile(CmpOp::Lt, Num::Float(2.5), d).as_slice(), [(0, 2)]);
        assert_eq!(compile(CmpOp::Lt, Num::Float(2.0), d).as_slice(), [(0, 1)]);
        assert_eq!(compile(CmpOp::Le, Num::Float(2.5), d).as_slice(), [(0, 2)]);
        assert_eq!(
            compile(CmpOp::Gt, Num::Float(2.5), d).as_slice(),
            [(3, 100)]
        );
        assert_eq!(
            compile(CmpOp::Ge, Num::Float(2.5), d).as_slice(),
            [(3, 100)]
        );
        assert_eq!(compile(CmpOp::Eq, Num::Float(2.5), d).as_slice(), []);
        assert_eq!(
            compile(CmpOp::Ne, Num::Float(2.5), d).as_slice(),
            [(0, 100)]
        );
        assert_eq!(compile(CmpOp::Ne, Num::Int(0), d).as_slice(), [(1, 100)]);
        assert_eq!(
            compile(CmpOp::Gt, Num::Float(-1e300), d).as_slice(),
            [(0, 100)]
        );
        assert_eq!(compile(CmpOp::Lt, Num::Int(i128::MIN), d).as_slice(), []);
        assert_eq!(compile(CmpOp::Gt, Num::Int(i128::MAX), d).as_slice(), []);
    }

    #[test]
    fn union_and_intersection() {
        assert_eq!(
            union(&[(0, 3), (10, 12)], &[(4, 5), (11, 20)]).as_slice(),
            [(0, 5), (10, 20)]
        );
        assert_eq!(
            intersect(&[(0, 5), (10, 20)], &[(3, 12)]).as_slice(),
            [(3, 5), (10, 12)]
        );
        assert!(contains(&[(0, 5), (10, 20)], 10));
        assert!(!contains(&[(0, 5), (10, 20)], 7));
    }

    struct Domains;
    impl Binder for Domains {
        fn key_domain(&self) -> (i128, i128) {
            (0, 60)
        }
        fn record_domain(&self) -> std::result::Result<RecordDomain, String> {
            Ok(RecordDomain::Int(0, 60))
        }
        fn subquery(&mut self, _: &crate::query::Query) -> Result<Num> {
            Ok(Num::Int(7))
        }
    }

    fn gen_expr(rng: &mut fastrand::Rng) -> Expr {
        match rng.u8(0..10) {
            0 => Expr::Float(rng.i32(-10..80) as f64 / 2.0),
            1 => Expr::bin(ArithOp::Add, Expr::Int(rng.i128(-5..70)), Expr::Int(1)),
            2 => Expr::Int(i128::MAX - rng.i128(0..2)),
            3 => Expr::Float(f64::INFINITY),
            _ => Expr::Int(rng.i128(-5..70)),
        }
    }

    fn gen_pred(rng: &mut fastrand::Rng, depth: u32) -> Pred {
        let col = if rng.u8(0..8) == 0 {
            Column::Record
        } else {
            Column::Key
        };
        let ops = [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ];
        match rng.u8(0..if depth == 0 { 3 } else { 7 }) {
            0 => Pred::Cmp {
                col,
                op: ops[rng.usize(0..6)],
                value: gen_expr(rng),
                at: At(None),
            },
            1 => Pred::Between {
                col,
                lo: gen_expr(rng),
                hi: gen_expr(rng),
                at: At(None),
            },
            2 => Pred::In {
                col,
                list: (0..rng.usize(0..3)).map(|_| gen_expr(rng)).collect(),
                at: At(None),
            },
            3 | 4 => Pred::And(
                Box::new(gen_pred(rng, depth - 1)),
                Box::new(gen_pred(rng, depth - 1)),
            ),
            5 => Pred::Or(
                Box::new(gen_pred(rng, depth - 1)),
                Box::new(gen_pred(rng, depth - 1)),
            ),
            _ => Pred::Not(Box::new(gen_pred(rng, depth - 1))),
        }
    }

    /// The one-walk plan of literal key conditions is exactly what the general planner
    /// covers, and it declines everything else.
    #[test]
    fn literal_key_plan_matches_the_general_planner() {
        let mut rng = fastrand::Rng::with_seed(6);
        let mut taken = 0;
        for _ in 0..20_000 {
            let p = gen_pred(&mut rng, 4);
            let general = bind(&p, false, &mut Domains).map(simplify);
            match literal_key_ivs(&p, false, Domains.key_domain()) {
                Some(fast) => {
                    taken += 1;
                    let general = general.expect("literal key conditions bind without errors");
                    let (ivs, exact) = cover(&general, Domains.key_domain());
                    assert!(exact, "{p}");
                    assert_eq!(fast, ivs, "{p}");
                }
                None => {
                    let literal = |e: &Expr| {
                        matches!(e, Expr::Int(_)) || matches!(e, Expr::Float(f) if f.is_finite())
                    };
                    if let Pred::Cmp {
                        col: Column::Key,
                        value,
                        ..
                    } = &p
                    {
                        assert!(!literal(value), "{p}");
                    }
                }
            }
        }
        assert!(taken > 2_000, "{taken}");
    }
}
