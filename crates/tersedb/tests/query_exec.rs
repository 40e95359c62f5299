//! The query executor on hand-picked cases: empty database, single key, ranges beyond
//! u32::MAX, conditions that select nothing or everything, seed 000's Fig. 10 query as one
//! statement, exact sums, NULL rules, type errors that name the column, and the zone map's
//! promise: a COUNT over a key range decodes at most the two boundary blocks.

use tersedb::query::{AggFunc, Column, QueryError, Value};
use tersedb::{
    CodecId, Db, DbConfig, Env, EnvOptions, Error, KeyType, Query, RecordType, ValueType,
};

fn env(page_size: usize) -> Env {
    Env::in_memory(&EnvOptions::default().page_size(page_size)).unwrap()
}

fn fill(
    env: &Env,
    name: &str,
    cfg: DbConfig,
    rows: impl IntoIterator<Item = (u64, Vec<u8>)>,
) -> Db {
    let mut w = env.begin_write().unwrap();
    let db = w.create_db(name, cfg).unwrap();
    for (k, v) in rows {
        match cfg.key_type {
            KeyType::U32 => w.upsert(&db, k as u32, &v).unwrap(),
            _ => w.upsert(&db, k, &v).unwrap(),
        };
    }
    w.commit().unwrap();
    db
}

fn q(env: &Env, text: &str) -> Vec<Value> {
    let r = env.begin_read().unwrap();
    match r.query_str(text) {
        Ok(res) => res.values,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn int(v: i128) -> Value {
    Value::Int(v)
}

#[test]
fn empty_database_defines_every_aggregate() {
    let e = env(4096);
    fill(&e, "e", DbConfig::u32_set(), []);
    assert_eq!(
        q(&e, "SELECT COUNT(*), COUNT(key), COUNT(DISTINCT key), SUM(key), AVG(key), MIN(key), MAX(key), TOP(3), BOTTOM(2) FROM e"),
        vec![int(0), int(0), int(0), int(0), Value::Null, Value::Null, Value::Null, Value::List(vec![]), Value::List(vec![])]
    );
    // A subquery over the empty database is NULL; comparing with NULL selects nothing, and so
    // does its negation.
    fill(&e, "f", DbConfig::u32_set(), (0..10).map(|k| (k, vec![])));
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM f WHERE key > (SELECT MAX(key) FROM e) / 2"
        ),
        vec![int(0)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM f WHERE NOT (key > (SELECT MAX(key) FROM e))"
        ),
        vec![int(0)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM f WHERE key < 3 OR key = (SELECT MIN(key) FROM e)"
        ),
        vec![int(3)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM f WHERE key NOT IN (1, (SELECT MIN(key) FROM e))"
        ),
        vec![int(0)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM f WHERE key = (SELECT COUNT(*) FROM e)"
        ),
        vec![int(1)]
    );
}

#[test]
fn single_key() {
    for ps in [512, 16384] {
        let e = env(ps);
        fill(
            &e,
            "one",
            DbConfig::raw(KeyType::U64, RecordType::None),
            [(u64::MAX, vec![])],
        );
        let m = u64::MAX as i128;
        assert_eq!(
            q(&e, "SELECT COUNT(*), SUM(key), AVG(key), MIN(key), MAX(key), TOP(2), BOTTOM(2) FROM one"),
            vec![int(1), int(m), Value::Float(u64::MAX as f64), int(m), int(m), Value::List(vec![int(m)]), Value::List(vec![int(m)])]
        );
        assert_eq!(
            q(
                &e,
                "SELECT COUNT(*) FROM one WHERE key = 18446744073709551615"
            ),
            vec![int(1)]
        );
        assert_eq!(
            q(
                &e,
                "SELECT COUNT(*) FROM one WHERE key > 18446744073709551615"
            ),
            vec![int(0)]
        );
        assert_eq!(
            q(&e, "SELECT COUNT(*) FROM one WHERE key < 0"),
            vec![int(0)]
        );
    }
}

#[test]
fn ranges_beyond_u32_max_and_exact_sums() {
    let e = env(512);
    let keys: Vec<u64> = (0..5000u64).map(|i| u32::MAX as u64 - i * 3).collect();
    fill(
        &e,
        "k",
        DbConfig::u32_set(),
        keys.iter().map(|&k| (k, vec![])),
    );
    let sum: i128 = keys.iter().map(|&k| k as i128).sum();
    assert!(sum > u64::MAX as i128 / 1_000_000); // far beyond a u32, exact
    assert_eq!(
        q(&e, "SELECT SUM(key), COUNT(*) FROM k"),
        vec![int(sum), int(5000)]
    );
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key > 4294967295"),
        vec![int(0)]
    );
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key <= 5000000000"),
        vec![int(5000)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM k WHERE key BETWEEN 4294967295 AND 99999999999999999999"
        ),
        vec![int(1)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM k WHERE key BETWEEN -99999999999 AND -1"
        ),
        vec![int(0)]
    );
    // Everything and nothing.
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key >= 0 OR key < 0"),
        vec![int(5000)]
    );
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key >= 0 AND key < 0"),
        vec![int(0)]
    );
    assert_eq!(
        q(
            &e,
            "SELECT COUNT(*) FROM k WHERE NOT (key = key2)"
                .replace("key2", "4294967295")
                .as_str()
        ),
        vec![int(4999)]
    );
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key IN ()"),
        vec![int(0)]
    );
    assert_eq!(
        q(&e, "SELECT COUNT(*) FROM k WHERE key NOT IN ()"),
        vec![int(5000)]
    );
    // TOP/BOTTOM across many leaves.
    assert_eq!(
        q(&e, "SELECT TOP(2), BOTTOM(2, key) FROM k"),
        vec![
            Value::List(vec![int(u32::MAX as i128), int(u32::MAX as i128 - 3)]),
            Value::List(vec![int(keys[4999] as i128), int(keys[4998] as i128)])
        ]
    );
}

#[test]
fn fig10_query_runs_as_one_statement() {
    let e = env(16384);
    let keys: Vec<u64> = (0..100_000u64).map(|i| i * 9 / 8 + (i % 7)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    fill(
        &e,
        "db",
        DbConfig::u32_set().with_codec(Some(CodecId::ALL[0])),
        sorted.iter().map(|&k| (k, vec![])),
    );
    let max = *sorted.last().unwrap();
    let sel: Vec<u64> = sorted.iter().copied().filter(|&k| k > max / 2).collect();
    let avg = sel.iter().map(|&k| k as u128).sum::<u128>() as f64 / sel.len() as f64;
    assert_eq!(
        q(
            &e,
            "SELECT AVG(key) FROM db WHERE key > (SELECT MAX(key) FROM db) / 2"
        ),
        vec![Value::Float(avg)]
    );
}

#[test]
fn count_reads_at_most_two_blocks_per_range() {
    let mut configs = vec![(DbConfig::u32_set(), 4096)];
    for c in CodecId::ALL {
        configs.push((DbConfig::u32_set().with_codec(Some(c)), 4096));
    }
    for (cfg, ps) in configs {
        let e = env(ps);
        fill(&e, "c", cfg, (0..200_000u64).map(|k| (k * 3, vec![])));
        let r = e.begin_read().unwrap();
        for (lo, hi) in [(1000, 2000), (7, 500_000), (0, 599_997), (123_456, 123_456)] {
            let text = format!(
                "SELECT COUNT(*), MIN(key), MAX(key) FROM c WHERE key BETWEEN {lo} AND {hi}"
            );
            let res = r.query_str(&text).unwrap();
            let want = (lo..=hi).filter(|k| k % 3 == 0).count() as i128;
            assert_eq!(res.values[0], int(want), "{cfg:?} {text}");
            assert!(
                res.stats.blocks_decoded <= 2,
                "{cfg:?} {text}: {:?}",
                res.stats
            );
            assert!(res.stats.leaves >= 1);
            // SUM decodes (or folds) every block it overlaps, and no block outside.
            let sum = r.query_str(&text.replace("COUNT(*)", "SUM(key)")).unwrap();
            let s = sum.stats;
            let c = res.stats;
            assert_eq!(
                s.blocks_decoded,
                c.blocks_decoded + c.blocks_from_index,
                "{cfg:?}"
            );
            let want_sum: i128 = (lo..=hi).filter(|k| k % 3 == 0).map(|k| k as i128).sum();
            assert_eq!(sum.values[0], int(want_sum));
        }
        // An IN list: one interval per value, each at most one block.
        let res = r
            .query_str("SELECT COUNT(*) FROM c WHERE key IN (3, 30000, 300000, 4)")
            .unwrap();
        assert_eq!(res.values[0], int(3));
        assert!(res.stats.blocks_decoded <= 4, "{:?}", res.stats);
    }
}

/// Key aggregates over one interval take the fold's own descent, over several the block scan:
/// both give the same answers and visit the same leaves (the second form's extra interval lies
/// past every key, in the last leaf at most).
#[test]
fn one_interval_and_several_agree() {
    let mut configs = vec![
        DbConfig::raw(KeyType::U32, RecordType::None),
        DbConfig::u32_set(),
        DbConfig::new(KeyType::U64, RecordType::None),
    ];
    for c in [CodecId::Bp128, CodecId::PforDelta, CodecId::SimdFor] {
        configs.push(DbConfig::u32_set().with_codec(Some(c)));
    }
    let mut rng = fastrand::Rng::with_seed(7);
    for cfg in configs {
        let e = env(4096);
        let keys: Vec<u64> = (0..60_000u64).map(|k| k * 5 + k % 3).collect();
        fill(&e, "c", cfg, keys.iter().map(|&k| (k, vec![])));
        let r = e.begin_read().unwrap();
        let top = *keys.last().unwrap();
        for _ in 0..40 {
            let lo = rng.u64(0..top + 10);
            let hi = lo + rng.u64(0..top / 4);
            let sel: Vec<u64> = keys
                .iter()
                .copied()
                .filter(|k| (lo..=hi).contains(k))
                .collect();
            let want = [
                int(sel.len() as i128),
                int(sel.iter().map(|&k| k as i128).sum()),
                sel.first().map_or(Value::Null, |&k| int(k as i128)),
                sel.last().map_or(Value::Null, |&k| int(k as i128)),
            ];
            let one = format!(
                "SELECT COUNT(*), SUM(key), MIN(key), MAX(key) FROM c WHERE key BETWEEN {lo} AND {hi}"
            );
            let two = format!("{one} OR key = {}", top + 1_000_000);
            let (a, b) = (r.query_str(&one).unwrap(), r.query_str(&two).unwrap());
            assert_eq!(a.values, want, "{cfg:?} {one}");
            assert_eq!(b.values, want, "{cfg:?} {two}");
            assert!(
                a.stats.leaves <= b.stats.leaves && b.stats.leaves <= a.stats.leaves + 1,
                "{cfg:?} {one}: {:?} against {:?}",
                a.stats,
                b.stats
            );
            assert!(a.stats.leaves >= 1, "{cfg:?} {one}: {:?}", a.stats);
        }
    }
}

/// TOP(k)/MAX alone walk the selection from its top end and BOTTOM(k)/MIN alone from its bottom
/// end, stopping as soon as they have their answer: a few leaves, whatever the range's size.
/// Mixed with other aggregates they read the whole selection. Answers match the model, also
/// with a residual filter and ranges that hold fewer than k keys.
#[test]
fn top_and_bottom_stop_early() {
    let ints = |v: &[u64]| Value::List(v.iter().map(|&k| int(k as i128)).collect());
    // Records: the key's parity, so `record = 1` is a residual filter (not a key range).
    let base = DbConfig::raw(KeyType::U32, RecordType::Fixed(4)).with_value_type(ValueType::U32);
    let mut configs = vec![(base, 512)];
    for c in [CodecId::Bp128, CodecId::VByte] {
        configs.push((base.with_codec(Some(c)), 1024));
    }
    for (cfg, ps) in configs {
        let e = env(ps);
        let keys: Vec<u64> = (0..100_000u64).map(|k| k * 5 + k % 3).collect();
        fill(
            &e,
            "t",
            cfg,
            keys.iter()
                .map(|&k| (k, ((k % 2) as u32).to_le_bytes().to_vec())),
        );
        let r = e.begin_read().unwrap();
        let sel = |lo: u64, hi: u64, odd: bool| -> Vec<u64> {
            keys.iter()
                .copied()
                .filter(|&k| lo <= k && k <= hi && (!odd || k % 2 == 1))
                .collect()
        };
        for (lo, hi) in [(0, u64::MAX), (1000, 400_000), (77, 90), (250_000, 250_001)] {
            for odd in [false, true] {
                let w = format!(
                    "key BETWEEN {lo} AND {} {}",
                    hi.min(u32::MAX as u64),
                    if odd { "AND record = 1" } else { "" }
                );
                let want = sel(lo, hi, odd);
                let top: Vec<u64> = want.iter().rev().take(4).copied().collect();
                let bottom: Vec<u64> = want.iter().take(4).copied().collect();
                let res = r
                    .query_str(&format!("SELECT TOP(4), MAX(key) FROM t WHERE {w}"))
                    .unwrap_or_else(|e| panic!("{w}: {e}"));
                assert_eq!(res.values[0], ints(&top), "{cfg:?} {w}");
                let max = want.last().map_or(Value::Null, |&m| int(m as i128));
                assert_eq!(res.values[1], max);
                if !odd {
                    assert!(res.stats.leaves <= 3, "{cfg:?} {w}: {:?}", res.stats);
                }
                let res = r
                    .query_str(&format!("SELECT BOTTOM(4), MIN(key) FROM t WHERE {w}"))
                    .unwrap();
                assert_eq!(res.values[0], ints(&bottom), "{cfg:?} {w}");
                if !odd {
                    assert!(res.stats.leaves <= 3, "{cfg:?} {w}: {:?}", res.stats);
                }
                // With COUNT the whole selection is read; the answers are the same.
                let res = r
                    .query_str(&format!(
                        "SELECT TOP(4), BOTTOM(4), COUNT(*) FROM t WHERE {w}"
                    ))
                    .unwrap();
                assert_eq!(
                    res.values,
                    vec![ints(&top), ints(&bottom), int(want.len() as i128)]
                );
            }
        }
    }
}

#[test]
fn numeric_records() {
    let e = env(4096);
    let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(8)).with_value_type(ValueType::I64);
    let rows: Vec<(u64, i64)> = (0..3000u64)
        .map(|k| (k * 1000, (k as i64 - 1500) * 7))
        .collect();
    fill(
        &e,
        "ts",
        cfg,
        rows.iter().map(|&(k, v)| (k, v.to_le_bytes().to_vec())),
    );
    let sel: Vec<i64> = rows
        .iter()
        .filter(|r| r.1 > 0 && r.0 >= 100_000)
        .map(|r| r.1)
        .collect();
    assert_eq!(
        q(&e, "SELECT COUNT(*), SUM(record), MIN(record), MAX(record), TOP(2, record), COUNT(DISTINCT record) FROM ts WHERE record > 0 AND key >= 100000"),
        vec![
            int(sel.len() as i128),
            int(sel.iter().map(|&v| v as i128).sum()),
            int(*sel.iter().min().unwrap() as i128),
            int(*sel.iter().max().unwrap() as i128),
            Value::List(vec![int(1499 * 7), int(1498 * 7)]),
            int(sel.len() as i128),
        ]
    );
    let f = env(4096);
    let cfg = DbConfig::raw(KeyType::U32, RecordType::Fixed(8)).with_value_type(ValueType::F64);
    fill(
        &f,
        "t",
        cfg,
        (0..100u64).map(|k| (k, (k as f64 / 4.0).to_le_bytes().to_vec())),
    );
    assert_eq!(
        q(
            &f,
            "SELECT SUM(record), AVG(record), MAX(record), COUNT(*) FROM t WHERE record >= 24.5"
        ),
        vec![
            Value::Float(24.5 + 24.75),
            Value::Float((24.5 + 24.75) / 2.0),
            Value::Float(24.75),
            int(2)
        ]
    );
}

fn type_error(env: &Env, text: &str) -> (Option<u32>, String) {
    match env.begin_read().unwrap().query_str(text) {
        Err(Error::Query(e @ QueryError::Type { .. })) => (e.column(), e.to_string()),
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn type_errors_name_the_column() {
    let e = env(4096);
    fill(
        &e,
        "raw",
        DbConfig::raw(KeyType::U32, RecordType::Fixed(8)),
        [(1, vec![0; 8])],
    );
    fill(
        &e,
        "s",
        DbConfig::raw(KeyType::VarBinary, RecordType::None),
        [(0, vec![])].into_iter().take(0),
    );
    let (c, m) = type_error(&e, "SELECT COUNT(*), SUM(record) FROM raw");
    assert_eq!(c, Some(18), "{m}");
    assert!(m.contains("not numbers"), "{m}");
    let (c, m) = type_error(&e, "SELECT COUNT(*) FROM raw WHERE key > 1 AND record > 5");
    assert_eq!(c, Some(44), "{m}");
    // String keys: counts and MIN/MAX apply, sums do not.
    let (c, m) = type_error(&e, "SELECT COUNT(*), SUM(key) FROM s");
    assert_eq!(c, Some(18), "{m}");
    let (c, m) = type_error(
        &e,
        "SELECT COUNT(*) FROM raw WHERE key > (SELECT TOP(2) FROM raw)",
    );
    assert_eq!(c, Some(46), "{m}");
    let (c, m) = type_error(
        &e,
        "SELECT COUNT(*) FROM raw WHERE key > (SELECT MIN(key), MAX(key) FROM raw)",
    );
    assert_eq!(c, Some(56), "{m}");
    assert!(matches!(
        e.begin_read()
            .unwrap()
            .query_str("SELECT COUNT(*) FROM nope"),
        Err(Error::Query(QueryError::UnknownName { .. }))
    ));
    match e
        .begin_read()
        .unwrap()
        .query_str("SELECT COUNT(*) FROM raw WHERE key = 1 / (2 - 2)")
    {
        Err(Error::Query(QueryError::Arithmetic { at, what })) => {
            assert_eq!(at, Some(38));
            assert!(what.contains("division by zero"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    // Built in code: the same errors without a column.
    let qq = Query::from_db("raw").select(AggFunc::Avg(Column::Record));
    match e.begin_read().unwrap().query(&qq) {
        Err(Error::Query(QueryError::Type { at: None, .. })) => {}
        other => panic!("{other:?}"),
    }
    assert!(e
        .begin_read()
        .unwrap()
        .query(&Query::from_db("raw"))
        .is_err());
}

#[test]
fn long_conditions_and_in_lists() {
    let e = env(4096);
    fill(
        &e,
        "l",
        DbConfig::u32_set(),
        (0..10_000u64).map(|k| (k * 2, vec![])),
    );
    // 200 ORs (a deep tree) and a 50,000-value IN list.
    let ors = (0..200)
        .map(|i| format!("key = {}", i * 10))
        .collect::<Vec<_>>()
        .join(" OR ");
    assert_eq!(
        q(&e, &format!("SELECT COUNT(*) FROM l WHERE {ors}")),
        vec![int(200)]
    );
    let list = (0..50_000)
        .map(|i| (i * 3).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let want = (0..50_000u64)
        .filter(|v| (v * 3) % 2 == 0 && v * 3 < 20_000)
        .count() as i128;
    assert_eq!(
        q(&e, &format!("SELECT COUNT(*) FROM l WHERE key IN ({list})")),
        vec![int(want)]
    );
    assert_eq!(
        q(
            &e,
            &format!("SELECT COUNT(*) FROM l WHERE key NOT IN ({list})")
        ),
        vec![int(10_000 - want)]
    );
    let sum = "1 + ".repeat(250) + "1";
    assert_eq!(
        q(&e, &format!("SELECT COUNT(*) FROM l WHERE key < {sum}")),
        vec![int(126)]
    );
}

/// A query built in code whose SELECT list names an aggregate it does not have is a type error
/// on every shape and key type, in a subquery too: the executor looks aggregates up by index
/// and must not index past the list.
#[test]
fn select_items_naming_missing_aggregates() {
    use tersedb::query::{CmpOp, Expr, GroupBy, Item, Pred, SelectItem};
    let e = env(512);
    fill(
        &e,
        "n",
        DbConfig::raw(KeyType::U64, RecordType::Fixed(8)).with_value_type(ValueType::I64),
        (0..50u64).map(|k| (k, (k as i64 - 7).to_le_bytes().to_vec())),
    );
    let mut w = e.begin_write().unwrap();
    let cfg =
        DbConfig::raw(KeyType::VarBinary, RecordType::Fixed(8)).with_value_type(ValueType::I64);
    let s = w.create_db("s", cfg).unwrap();
    for k in ["a", "b", "c"] {
        w.upsert(&s, k.as_bytes(), &3i64.to_le_bytes()).unwrap();
    }
    w.commit().unwrap();
    let item = |item| SelectItem { item, alias: None };
    for db in ["n", "s"] {
        let one = Query::from_db(db).select(AggFunc::CountStar);
        let mut aggs = one.clone();
        aggs.select = vec![item(Item::Agg(0)), item(Item::Agg(7))];
        let mut groups = one.clone().group_by(GroupBy::Record);
        groups.select = vec![item(Item::Group), item(Item::Agg(usize::MAX))];
        let mut by_key = one.clone().group_by(GroupBy::KeyDiv(10));
        by_key.select = vec![item(Item::Agg(3))];
        let mut inner = one.clone();
        inner.select = vec![item(Item::Agg(1))];
        let sub = Query::from_db(db)
            .select(AggFunc::CountStar)
            .filter(Pred::cmp(Column::Record, CmpOp::Gt, Expr::subquery(inner)));
        let r = e.begin_read().unwrap();
        for q in [&aggs, &groups, &by_key, &sub] {
            match r.query(q) {
                Err(Error::Query(QueryError::Type { what, .. })) => {
                    assert!(what.contains("names no aggregate"), "{db}: {what}")
                }
                other => panic!("{db}: {q:?}: {other:?}"),
            }
        }
        // The valid part alone runs.
        assert_eq!(r.query(&one).unwrap().values.len(), 1);
    }
}

/// A query built in code has not been through the parser, whose tree depth limit keeps the
/// executor's recursion short: one deeper than the parser allows is refused as a query error,
/// also when it is far deeper than any stack (the measuring walk stops at the limit).
#[test]
fn code_built_queries_deeper_than_the_parser_allows_are_refused() {
    use tersedb::query::{CmpOp, Expr, Pred};
    let env = env(4096);
    fill(
        &env,
        "d",
        DbConfig::raw(KeyType::U32, RecordType::None),
        (0..100u64).map(|k| (k, Vec::new())),
    );
    let r = env.begin_read().unwrap();
    let nots = |n: usize| {
        let mut p = Pred::cmp(Column::Key, CmpOp::Gt, 10u32);
        for _ in 0..n {
            p = p.not();
        }
        Query::from_db("d").select(AggFunc::CountStar).filter(p)
    };
    // Within the limit: runs (an even number of NOTs keeps the condition).
    let ok = r.query(&nots(200)).unwrap();
    assert_eq!(ok.values, vec![Value::Int(89)]);
    for deep in [nots(300), {
        // Arithmetic nested in the value, and a subquery below it.
        let mut e = Expr::subquery(Query::from_db("d").select(AggFunc::Max(Column::Key)));
        for _ in 0..300 {
            e = Expr::bin(tersedb::query::ArithOp::Add, e, Expr::Int(0));
        }
        Query::from_db("d")
            .select(AggFunc::CountStar)
            .filter(Pred::cmp(Column::Key, CmpOp::Lt, e))
    }] {
        match r.query(&deep) {
            Err(Error::Query(QueryError::Type { what, .. })) => {
                assert!(what.contains("deeper than"), "{what}")
            }
            other => panic!("a query deeper than the parser allows ran: {other:?}"),
        }
    }
    // A million NOTs: refused, not a stack overflow. Dropping a chain of boxes that deep would
    // recurse, so the test leaks it.
    let huge = nots(1_000_000);
    assert!(matches!(r.query(&huge), Err(Error::Query(_))));
    std::mem::forget(huge);
}
