//! The query language's parser: documented examples parse to the trees built in code, keywords
//! are case-insensitive, errors name what and the column, printed trees parse back to equal
//! trees, and no input (random text, mutated queries, deep nesting) makes it panic.

mod query_common;

use proptest::prelude::*;
use query_common::runner;
use tersedb::query::{AggFunc, ArithOp, CmpOp, Column, Expr, Pred, Query, QueryError};

fn err_col(text: &str) -> (u32, String) {
    match Query::parse(text) {
        Err(e) => (e.column().unwrap_or(0), e.to_string()),
        Ok(q) => panic!("{text:?} parsed as {q}"),
    }
}

#[test]
fn fig10_query_parses_to_the_tree_built_in_code() {
    let text = "SELECT AVG(key) FROM db WHERE key > (SELECT MAX(key) FROM db) / 2";
    let want = Query::from_db("db")
        .select(AggFunc::Avg(Column::Key))
        .filter(Pred::cmp(
            Column::Key,
            CmpOp::Gt,
            Expr::bin(
                ArithOp::Div,
                Expr::subquery(Query::from_db("db").select(AggFunc::Max(Column::Key))),
                Expr::Int(2),
            ),
        ));
    assert_eq!(Query::parse(text).unwrap(), want);
    assert_eq!(Query::parse(&want.to_string()).unwrap(), want);
}

#[test]
fn every_aggregate_and_operator() {
    let q = Query::parse(
        "select count(*), Count(key), COUNT(DISTINCT record), sum(record), avg(key), min(key), \
         max(record), top(3, record), bottom(2), TOP(1) from \"my db\" where \
         not (key between 1 and 10) and (record in (1, 2, -3) or key not in ()) \
         and key != 5 and key <> 6 and 7 <= key and record >= -2.5e3 and key < 1 + 2 * 3 % 4 \
         or key not between 0 and -(5 - 8)",
    )
    .unwrap();
    assert_eq!(q.db, "my db");
    let funcs: Vec<AggFunc> = q.aggregates.iter().map(|a| a.func).collect();
    assert_eq!(
        funcs,
        [
            AggFunc::CountStar,
            AggFunc::Count(Column::Key),
            AggFunc::CountDistinct(Column::Record),
            AggFunc::Sum(Column::Record),
            AggFunc::Avg(Column::Key),
            AggFunc::Min(Column::Key),
            AggFunc::Max(Column::Record),
            AggFunc::Top(3, Column::Record),
            AggFunc::Bottom(2, Column::Key),
            AggFunc::Top(1, Column::Key),
        ]
    );
    // `7 <= key` is stored as `key >= 7`; precedence: * and % before +, AND before OR.
    let p = Query::parse("SELECT COUNT(*) FROM d WHERE 7 <= key OR key < 1 + 2 * 3 AND key > 0")
        .unwrap()
        .filter
        .unwrap();
    let want = Pred::cmp(Column::Key, CmpOp::Ge, Expr::Int(7)).or(Pred::cmp(
        Column::Key,
        CmpOp::Lt,
        Expr::bin(
            ArithOp::Add,
            Expr::Int(1),
            Expr::bin(ArithOp::Mul, Expr::Int(2), Expr::Int(3)),
        ),
    )
    .and(Pred::cmp(Column::Key, CmpOp::Gt, Expr::Int(0))));
    assert_eq!(p, want);
    let reprinted = Query::parse(&q.to_string()).unwrap();
    assert_eq!(reprinted, q);
}

#[test]
fn literals_at_the_edges() {
    let p = |t: &str| Query::parse(&format!("SELECT COUNT(*) FROM d WHERE key = {t}"));
    let v = |t: &str| match p(t).unwrap().filter.unwrap() {
        Pred::Cmp { value, .. } => value,
        other => panic!("{other}"),
    };
    assert_eq!(v(&i128::MAX.to_string()), Expr::Int(i128::MAX));
    assert_eq!(v(&i128::MIN.to_string()), Expr::Int(i128::MIN));
    assert!(p(&(i128::MAX as u128 + 1).to_string()).is_err());
    assert!(p("340282366920938463463374607431768211456").is_err()); // 2^128
    assert_eq!(v("-0.0"), Expr::Float(-0.0));
    assert_eq!(v("1e300"), Expr::Float(1e300));
    assert!(p("1e999").is_err());
    assert_eq!(
        v("-(3)"),
        Expr::bin(ArithOp::Sub, Expr::Int(0), Expr::Int(3))
    );
}

#[test]
fn errors_say_what_and_where() {
    let (c, m) = err_col("SELECT SUM(key FROM db");
    assert_eq!(c, 16, "{m}");
    assert!(m.contains("expected ')'") && m.contains("FROM"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE key >");
    assert_eq!(c, 36, "{m}");
    assert!(m.contains("end of the query"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM where");
    assert_eq!(c, 22, "{m}");
    assert!(m.contains("quoted"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE key > record");
    assert_eq!(c, 37, "{m}");
    assert!(m.contains("type error"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE 1 < 2");
    assert_eq!(c, 31, "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE key + 1 > 2");
    assert_eq!(c, 31, "{m}");
    assert!(m.contains("comparison needs a column"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE key > key + 1");
    assert_eq!(c, 37, "{m}");
    assert!(m.contains("column key"), "{m}");
    let (c, m) = err_col("SELECT COUNT(*) FROM db WHERE key = 5 AND 3");
    assert_eq!(c, 43, "{m}");
    assert!(m.contains("condition"), "{m}");
    let (c, m) = err_col("SELECT MEDIAN(key) FROM db");
    assert_eq!(c, 8, "{m}");
    let (c, _) = err_col("SELECT COUNT(*) FROM db WHERE key = 5 extra");
    assert_eq!(c, 39);
    let (c, _) = err_col("SELECT COUNT(*) FROM db WHERE key = 5 # comment");
    assert_eq!(c, 39);
    let (c, _) = err_col("SELECT COUNT(*) FROM \"unterminated");
    assert_eq!(c, 22);
    let (c, _) = err_col("SELECT TOP(x) FROM db");
    assert_eq!(c, 12);
    assert!(matches!(
        Query::parse(""),
        Err(QueryError::Syntax { at: 1, .. })
    ));
    // Columns count characters, not bytes.
    let (c, _) = err_col("SELECT COUNT(*) FROM \"ü\" WHERE ?");
    assert_eq!(c, 32);
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for (prefix, open) in [
        ("key = ", "("),
        ("", "NOT "),
        ("key = ", "- "),
        ("", "("),
        ("", "key = (SELECT COUNT(*) FROM d WHERE "),
    ] {
        let text = format!(
            "SELECT COUNT(*) FROM d WHERE {prefix}{}1",
            open.repeat(100_000)
        );
        let e = Query::parse(&text).unwrap_err();
        assert!(e.to_string().contains("nested"), "{open}: {e}");
    }
    // Long flat chains build deep trees too: refused past the limit, never a stack overflow.
    for (join, item) in [
        (" OR ", "key = 1"),
        (" AND ", "NOT key = 1"),
        (" + ", "1"),
        (" * ", "(1)"),
    ] {
        let chain = vec![item; 100_000].join(join);
        let text = format!("SELECT COUNT(*) FROM d WHERE key > 0 AND ({chain}) > 0");
        let text = if join.contains('O') || join.contains('A') {
            format!("SELECT COUNT(*) FROM d WHERE {chain}")
        } else {
            text.replace("key > 0 AND (", "key > (")
                .replace(") > 0", ")")
        };
        let e = Query::parse(&text).unwrap_err();
        assert!(e.to_string().contains("deeper than"), "{join}: {e}");
        let short = vec![item; 200].join(join);
        let text = if join.contains('O') || join.contains('A') {
            format!("SELECT COUNT(*) FROM d WHERE {short}")
        } else {
            format!("SELECT COUNT(*) FROM d WHERE key > {short}")
        };
        let q = Query::parse(&text).unwrap();
        assert_eq!(Query::parse(&q.to_string()).unwrap(), q);
    }
    let ok = format!(
        "SELECT COUNT(*) FROM d WHERE key = {}1{}",
        "(".repeat(30),
        ")".repeat(30)
    );
    assert!(Query::parse(&ok).is_ok());
}

/// Found by the `query` fuzz target (fuzz/regressions/query/unary-minus-chain-prints-too-deep):
/// text within the nesting limit whose printed form (every operation in parentheses) was not.
/// Now every query that parses prints as text that parses back equal, at every depth of the
/// shapes that print deeper than they are written, and those past the limit are refused.
#[test]
fn queries_that_print_deeper_than_written_round_trip_or_are_refused() {
    let crash = include_str!("../fuzz/regressions/query/unary-minus-chain-prints-too-deep");
    let e = Query::parse(crash).unwrap_err();
    assert!(
        e.to_string()
            .contains("once every operation is in parentheses"),
        "{e}"
    );
    let shapes: [(&str, &str, &str); 4] = [
        ("key IN (9 - ", "- ", "1)"),       // unary minus: (0 - x) once printed
        ("key = 1 + ", "2 * (3 + ", "4"),   // precedence: 1 + (2 * (3 + ...)) printed
        ("", "NOT key = 1 OR ", "key = 2"), // NOT binds tighter than OR
        ("key > (SELECT COUNT(*) FROM d WHERE key < 3 - ", "- ", "1)"),
    ];
    for (head, step, tail) in shapes {
        let mut accepted = 0;
        for n in 1..140 {
            let closing = ")".repeat(step.matches('(').count() * n);
            let text = format!(
                "SELECT COUNT(*) FROM d WHERE {head}{}{tail}{closing}",
                step.repeat(n)
            );
            let Ok(q) = Query::parse(&text) else { continue };
            accepted = n;
            let printed = q.to_string();
            let again = Query::parse(&printed).unwrap_or_else(|e| panic!("{text}\n{printed}\n{e}"));
            assert_eq!(again, q, "{text}");
        }
        assert!(
            accepted >= 20,
            "{head}{step}: only {accepted} levels accepted"
        );
    }
}

#[test]
fn printed_trees_parse_back_equal() {
    runner(400)
        .run(&query_common::query("events", 1000, true), |q| {
            let text = q.to_string();
            let back =
                Query::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(&back, &q, "{}", text);
            // and again, through the printed form of the re-parsed tree
            prop_assert_eq!(back.to_string(), text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn odd_database_names_round_trip() {
    for name in ["select", "a b", "x\"y", "", "ünï", "_ok9", "9lives", "KEY"] {
        let q = Query::from_db(name).select(AggFunc::CountStar);
        assert_eq!(Query::parse(&q.to_string()).unwrap(), q, "{name}");
    }
}

const VOCAB: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "BETWEEN",
    "IN",
    "COUNT",
    "DISTINCT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "TOP",
    "BOTTOM",
    "key",
    "record",
    "db",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "0",
    "1",
    "42",
    "2.5",
    "1e3",
    "-7",
    "\"q\"",
    "18446744073709551616",
];

#[test]
fn random_text_never_panics() {
    let words = prop::collection::vec(prop::sample::select(VOCAB), 0..40).prop_map(|w| w.join(" "));
    let chars = "\\PC{0,80}";
    runner(3000)
        .run(&prop_oneof![words, chars.prop_map(|s: String| s)], |text| {
            if let Ok(q) = Query::parse(&text) {
                // Whatever parses prints to something that parses to the same tree.
                let again = Query::parse(&q.to_string()).expect("printed query parses");
                prop_assert_eq!(again, q);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn mutated_queries_never_panic() {
    let base = (
        query_common::query("db", 100, true),
        any::<u64>(),
        1usize..6,
    );
    runner(1500)
        .run(&base, |(q, seed, n)| {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut text: Vec<char> = q.to_string().chars().collect();
            for _ in 0..n {
                let pos = rng.usize(0..=text.len());
                match rng.u8(0..3) {
                    0 if pos < text.len() => {
                        text.remove(pos);
                    }
                    1 => text.insert(
                        pos,
                        *rng.choice(&['(', ')', '-', '"', '9', ' ', 'é', ','])
                            .unwrap(),
                    ),
                    _ if pos < text.len() => {
                        let j = rng.usize(0..text.len());
                        text.swap(pos, j);
                    }
                    _ => {}
                }
            }
            let text: String = text.into_iter().collect();
            if let Ok(q) = Query::parse(&text) {
                prop_assert_eq!(Query::parse(&q.to_string()).expect("reprint parses"), q);
            }
            Ok(())
        })
        .unwrap();
}
