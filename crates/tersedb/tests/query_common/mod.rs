//! Random query trees for the query tests (parser round trips and the executor's model test).
#![allow(dead_code)]

use proptest::prelude::*;
use tersedb::query::{AggFunc, ArithOp, CmpOp, Column, Expr, Pred, Query};

pub fn column(record: bool) -> BoxedStrategy<Column> {
    if record {
        prop_oneof![Just(Column::Key), Just(Column::Record)].boxed()
    } else {
        Just(Column::Key).boxed()
    }
}

pub fn agg(record: bool) -> BoxedStrategy<AggFunc> {
    let c = column(record);
    prop_oneof![
        Just(AggFunc::CountStar),
        c.clone().prop_map(AggFunc::Count),
        c.clone().prop_map(AggFunc::CountDistinct),
        c.clone().prop_map(AggFunc::Sum),
        c.clone().prop_map(AggFunc::Avg),
        c.clone().prop_map(AggFunc::Min),
        c.clone().prop_map(AggFunc::Max),
        (0u64..6, c.clone()).prop_map(|(k, c)| AggFunc::Top(k, c)),
        (0u64..6, c).prop_map(|(k, c)| AggFunc::Bottom(k, c)),
    ]
    .boxed()
}

/// Integer constants around `span` (the data's key range), plus the extremes.
pub fn int(span: i128) -> BoxedStrategy<i128> {
    prop_oneof![
        6 => -2i128..span + 2,
        1 => Just(0i128),
        1 => Just(u32::MAX as i128),
        1 => Just(u32::MAX as i128 + 1),
        1 => Just(u64::MAX as i128),
        1 => Just(-1i128),
        1 => Just(i64::MIN as i128),
    ]
    .boxed()
}

fn scalar_agg(record: bool) -> BoxedStrategy<AggFunc> {
    let c = column(record);
    prop_oneof![
        Just(AggFunc::CountStar),
        c.clone().prop_map(AggFunc::Sum),
        c.clone().prop_map(AggFunc::Avg),
        c.clone().prop_map(AggFunc::Min),
        c.prop_map(AggFunc::Max),
    ]
    .boxed()
}

/// Constant expressions: literals, a little arithmetic, scalar subqueries on `db`.
pub fn expr(db: &'static str, span: i128, record: bool) -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        8 => int(span).prop_map(Expr::Int),
        1 => (-1000.0f64..(span as f64 + 1000.0)).prop_map(|f| Expr::Float((f * 4.0).round() / 4.0)),
    ];
    let sub = (
        scalar_agg(record),
        proptest::option::of(simple_pred(span, record)),
    )
        .prop_map(move |(a, p)| {
            let mut q = Query::from_db(db).select(a);
            q.filter = p;
            Expr::subquery(q)
        });
    prop_oneof![
        6 => leaf.clone(),
        2 => (leaf.clone(), leaf.clone(), prop_oneof![
            Just(ArithOp::Add), Just(ArithOp::Sub), Just(ArithOp::Mul), Just(ArithOp::Div),
            Just(ArithOp::Rem)
        ])
            .prop_map(|(l, r, op)| Expr::bin(op, l, r)),
        1 => (sub, leaf, prop_oneof![Just(ArithOp::Div), Just(ArithOp::Add), Just(ArithOp::Sub)])
            .prop_map(|(l, r, op)| Expr::bin(op, l, r)),
    ]
    .boxed()
}

fn cmp_op() -> BoxedStrategy<CmpOp> {
    prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge),
    ]
    .boxed()
}

/// Atoms with literal constants only (for subqueries' own filters).
fn simple_pred(span: i128, record: bool) -> BoxedStrategy<Pred> {
    (column(record), cmp_op(), int(span))
        .prop_map(|(c, op, v)| Pred::cmp(c, op, Expr::Int(v)))
        .boxed()
}

pub fn pred(db: &'static str, span: i128, record: bool) -> BoxedStrategy<Pred> {
    let e = expr(db, span, record);
    let atom = prop_oneof![
        4 => (column(record), cmp_op(), e.clone()).prop_map(|(c, op, v)| Pred::cmp(c, op, v)),
        2 => (column(record), e.clone(), e.clone()).prop_map(|(c, a, b)| Pred::between(c, a, b)),
        // BETWEEN with a narrow window: selects something more often.
        2 => (column(record), int(span), 0i128..(span / 4 + 2))
            .prop_map(|(c, a, w)| Pred::between(c, a, a + w)),
        2 => (column(record), proptest::collection::vec(e, 0..5))
            .prop_map(|(c, l)| Pred::is_in(c, l)),
    ];
    atom.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.and(b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
            inner.prop_map(|a| a.not()),
        ]
    })
    .boxed()
}

pub fn query(db: &'static str, span: i128, record: bool) -> BoxedStrategy<Query> {
    (
        proptest::collection::vec(agg(record), 1..5),
        proptest::option::of(pred(db, span, record)),
    )
        .prop_map(move |(aggs, p)| {
            let mut q = Query::from_db(db);
            for a in aggs {
                q = q.select(a);
            }
            q.filter = p;
            q
        })
        .boxed()
}

/// A proptest runner seeded from `SEED` (printed), with more cases under `TERSEDB_LONG=1`.
pub fn runner(cases: u32) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, RngSeed, TestRunner};
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={seed}");
    let long = std::env::var("TERSEDB_LONG").is_ok();
    TestRunner::new(Config {
        cases: if long { cases * 20 } else { cases },
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    })
}
