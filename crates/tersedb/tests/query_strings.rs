//! Queries on string keys against a `BTreeMap<Vec<u8>, i64>`: COUNT, MIN/MAX of keys, record
//! aggregates, ranges, IN, LIKE (prefix and general patterns), NOT, rows in both orders with
//! LIMIT/OFFSET, GROUP BY record; on every key compression scheme. Seeded: prints the seed;
//! re-run with `SEED=n`.

mod query_common;

use proptest::prelude::*;
use query_common::runner;
use std::collections::BTreeMap;
use tersedb::query::{QueryError, Value};
use tersedb::{DbConfig, Env, EnvOptions, Error, KeyScheme, KeyType, RecordType, ValueType};

fn like(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'%', rest)) => (0..=s.len()).any(|i| like(rest, &s[i..])),
        Some((&c, rest)) => s.first().is_some_and(|&d| c == b'_' || c == d) && like(rest, &s[1..]),
    }
}

fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[derive(Clone, Debug)]
enum Cond {
    Cmp(&'static str, String),
    Between(String, String),
    In(Vec<String>),
    Like(String),
    Rec(i64),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

impl Cond {
    fn text(&self) -> String {
        match self {
            Cond::Cmp(op, s) => format!("key {op} {}", q(s)),
            Cond::Between(a, b) => format!("key BETWEEN {} AND {}", q(a), q(b)),
            Cond::In(l) => format!(
                "key IN ({})",
                l.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
            ),
            Cond::Like(p) => format!("key LIKE {}", q(p)),
            Cond::Rec(v) => format!("record < {v}"),
            Cond::Not(c) => format!("NOT ({})", c.text()),
            Cond::And(a, b) => format!("({} AND {})", a.text(), b.text()),
            Cond::Or(a, b) => format!("({} OR {})", a.text(), b.text()),
        }
    }
    fn test(&self, k: &[u8], r: i64) -> bool {
        match self {
            Cond::Cmp(op, s) => {
                let s = s.as_bytes();
                match *op {
                    "=" => k == s,
                    "!=" => k != s,
                    "<" => k < s,
                    "<=" => k <= s,
                    ">" => k > s,
                    _ => k >= s,
                }
            }
            Cond::Between(a, b) => k >= a.as_bytes() && k <= b.as_bytes(),
            Cond::In(l) => l.iter().any(|s| s.as_bytes() == k),
            Cond::Like(p) => like(p.as_bytes(), k),
            Cond::Rec(v) => r < *v,
            Cond::Not(c) => !c.test(k, r),
            Cond::And(a, b) => a.test(k, r) && b.test(k, r),
            Cond::Or(a, b) => a.test(k, r) || b.test(k, r),
        }
    }
}

fn word() -> BoxedStrategy<String> {
    "[a-c]{0,4}".boxed()
}

fn cond() -> BoxedStrategy<Cond> {
    let atom = prop_oneof![
        (
            prop::sample::select(vec!["=", "!=", "<", "<=", ">", ">="]),
            word()
        )
            .prop_map(|(o, s)| Cond::Cmp(o, s)),
        (word(), word()).prop_map(|(a, b)| Cond::Between(a, b)),
        prop::collection::vec(word(), 0..4).prop_map(Cond::In),
        "[a-c%_]{0,4}".prop_map(Cond::Like),
        "[a-c]{0,3}%".prop_map(Cond::Like),
        (-5i64..60).prop_map(Cond::Rec),
    ];
    atom.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|c| Cond::Not(Box::new(c))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
        ]
    })
    .boxed()
}

fn bytes(s: &[u8]) -> Value {
    Value::Bytes(s.to_vec())
}

#[test]
fn string_key_queries_match_the_model() {
    let strat = (
        prop::sample::select(KeyScheme::ALL.to_vec()),
        prop::collection::btree_map("[a-c]{0,5}", -5i64..50, 0..300),
        prop::collection::vec(
            (
                proptest::option::of(cond()),
                any::<bool>(),
                proptest::option::of(0u64..20),
                0u64..5,
            ),
            1..10,
        ),
    );
    let tally = std::cell::Cell::new(0u64);
    runner(128)
        .run(&strat, |(scheme, data, conds)| {
            let env = Env::in_memory(&EnvOptions::default().page_size(1024)).unwrap();
            let mut w = env.begin_write().unwrap();
            let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::Fixed(8))
                .with_key_scheme(scheme)
                .with_value_type(ValueType::I64);
            let db = w.create_db("s", cfg).unwrap();
            let model: BTreeMap<Vec<u8>, i64> =
                data.into_iter().map(|(k, v)| (k.into_bytes(), v)).collect();
            for (k, v) in &model {
                w.upsert(&db, &k[..], &v.to_le_bytes()).unwrap();
            }
            w.commit().unwrap();
            let r = env.begin_read().unwrap();
            for (c, desc, lim, off) in conds {
                let wh = c
                    .as_ref()
                    .map_or(String::new(), |c| format!(" WHERE {}", c.text()));
                let sel: Vec<(&Vec<u8>, i64)> = model
                    .iter()
                    .filter(|(k, v)| c.as_ref().is_none_or(|c| c.test(k, **v)))
                    .map(|(k, v)| (k, *v))
                    .collect();
                if !sel.is_empty() {
                    tally.set(tally.get() + 1);
                }
                // Aggregates.
                let text = format!(
                    "SELECT COUNT(*), MIN(key), MAX(key), SUM(record), MAX(record) FROM s{wh};"
                );
                let got = r
                    .query_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                let want = vec![
                    Value::Int(sel.len() as i128),
                    sel.first().map_or(Value::Null, |s| bytes(s.0)),
                    sel.last().map_or(Value::Null, |s| bytes(s.0)),
                    Value::Int(sel.iter().map(|s| s.1 as i128).sum()),
                    sel.iter()
                        .map(|s| s.1)
                        .max()
                        .map_or(Value::Null, |v| Value::Int(v as i128)),
                ];
                prop_assert_eq!(&got.values, &want, "{}", text);
                // Rows.
                let order = if desc { " ORDER BY key DESC" } else { "" };
                let limit = lim.map_or(String::new(), |n| format!(" LIMIT {n}"));
                let text = format!("SELECT * FROM s{wh}{order}{limit} OFFSET {off}");
                let got = r
                    .query_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                let mut rows: Vec<Vec<Value>> = sel
                    .iter()
                    .map(|(k, v)| vec![bytes(k), Value::Int(*v as i128)])
                    .collect();
                if desc {
                    rows.reverse();
                }
                let rows: Vec<Vec<Value>> = rows
                    .into_iter()
                    .skip(off as usize)
                    .take(lim.unwrap_or(u64::MAX) as usize)
                    .collect();
                prop_assert_eq!(&got.rows, &rows, "{}", text);
                // Groups.
                let text = format!("SELECT record, COUNT(*), MIN(key) FROM s{wh} GROUP BY record");
                let got = r
                    .query_str(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                let mut g: BTreeMap<i64, (i128, &Vec<u8>)> = BTreeMap::new();
                for (k, v) in &sel {
                    let e = g.entry(*v).or_insert((0, k));
                    e.0 += 1;
                }
                let want: Vec<Vec<Value>> = g
                    .into_iter()
                    .map(|(v, (n, k))| vec![Value::Int(v as i128), Value::Int(n), bytes(k)])
                    .collect();
                prop_assert_eq!(&got.rows, &want, "{}", text);
            }
            Ok(())
        })
        .unwrap();
    assert!(tally.get() > 50, "{}", tally.get());
}

#[test]
fn string_key_errors_name_the_problem() {
    let env = Env::in_memory(&EnvOptions::default()).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db(
            "names",
            DbConfig::raw(KeyType::VarBinary, RecordType::Variable),
        )
        .unwrap();
    w.upsert(&db, "a", b"x").unwrap();
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let err = |t: &str| match r.query_str(t) {
        Err(Error::Query(e)) => e.to_string(),
        other => panic!("{t}: {other:?}"),
    };
    assert!(err("SELECT SUM(key) FROM names").contains("strings"));
    assert!(err("SELECT COUNT(*) FROM names WHERE key > 5").contains("compare key with a string"));
    assert!(err("SELECT SUM(record) FROM names").contains("not numbers"));
    assert!(err("SELECT COUNT(*) FROM names GROUP BY key / 10").contains("integer keys"));
    assert!(err("SELECT COUNT(*) FROM nmaes").contains("did you mean \"names\""));
    assert_eq!(
        r.query_str("SELECT key, record FROM names").unwrap().rows,
        vec![vec![
            Value::Bytes(b"a".to_vec()),
            Value::Bytes(b"x".to_vec())
        ]]
    );
    assert!(matches!(
        r.query_str("SELECT COUNT(*) FROM nmaes"),
        Err(Error::Query(QueryError::UnknownName { .. }))
    ));
}
