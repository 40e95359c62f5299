//! The typed tables (`TableDef<K, V>`, `Table<K, V>`) against a `BTreeMap`: random sequences
//! of put (returns the old value), insert_new (refuses present keys with `DuplicateKey`),
//! get / get_ref, remove (returns the value), range (both directions), first / last, reads
//! through the write transaction, commit and abort, on every key type (u32, u64, &[u8], &str)
//! and value type (u32, u64, i64, f64, &[u8], &str, ()), on 512-byte pages (deep trees, large
//! values in overflow pages) and 1 KiB pages (integer keys compressed). Also the errors: they name the key and the database.
//!
//! Seeded: prints the proptest seed; re-run with `SEED=n`. More cases with `TERSEDB_LONG=1`.

mod common;

use common::{mem_env, reopen_mem};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::collections::BTreeMap;
use std::ops::Bound;
use tersedb::{
    DbConfig, Env, EnvOptions, Error, KeyType, RecordType, Table, TableDef, TableKey, TableValue,
    ValueType,
};

/// A test's view of a key or value type: owned values from a number, borrowed back.
trait Gen: Sized {
    type O: Clone + Ord + std::fmt::Debug;
    fn make(n: u64) -> Self::O;
}

trait KeyGen: TableKey + Gen<O = <Self as TableKey>::Owned> {
    fn r(o: &Self::O) -> Self::Ref<'_>;
}

trait ValGen: TableValue {
    fn make(n: u64) -> Self::Owned;
    fn r(o: &Self::Owned) -> Self::Ref<'_>;
    /// Equality for the model (f64 compared bitwise).
    fn same(a: &Self::Owned, b: &Self::Owned) -> bool {
        a == b
    }
}

macro_rules! int_key {
    ($t:ty) => {
        impl Gen for $t {
            type O = $t;
            fn make(n: u64) -> $t {
                n as $t
            }
        }
        impl KeyGen for $t {
            fn r(o: &$t) -> $t {
                *o
            }
        }
    };
}
int_key!(u32);
int_key!(u64);

/// Byte-string keys that sort differently from their numbers, some sharing long prefixes.
fn bytes_key(n: u64) -> Vec<u8> {
    let mut b = format!("k{:03}", n % 1000).into_bytes();
    if n % 3 == 0 {
        b.extend_from_slice(b"/a-long-shared-tail-to-fill-pages");
    }
    b
}

impl Gen for &[u8] {
    type O = Vec<u8>;
    fn make(n: u64) -> Vec<u8> {
        let mut b = bytes_key(n);
        b.push(0xff);
        b
    }
}
impl KeyGen for &[u8] {
    fn r(o: &Vec<u8>) -> &[u8] {
        o
    }
}
impl Gen for &str {
    type O = String;
    fn make(n: u64) -> String {
        String::from_utf8(bytes_key(n)).unwrap() + "é"
    }
}
impl KeyGen for &str {
    fn r(o: &String) -> &str {
        o
    }
}

macro_rules! num_val {
    ($t:ty, $f:expr) => {
        impl ValGen for $t {
            fn make(n: u64) -> $t {
                $f(n)
            }
            fn r(o: &$t) -> $t {
                *o
            }
        }
    };
}
num_val!(u32, |n: u64| (n * 2_654_435_761) as u32);
num_val!(u64, |n: u64| n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
num_val!(i64, |n: u64| (n as i64 - 500) * 1_000_003);

impl ValGen for f64 {
    fn make(n: u64) -> f64 {
        n as f64 / 7.0 - 50.0
    }
    fn r(o: &f64) -> f64 {
        *o
    }
    fn same(a: &f64, b: &f64) -> bool {
        a.to_bits() == b.to_bits()
    }
}
impl ValGen for () {
    fn make(_: u64) {}
    fn r(_: &()) {}
}
impl ValGen for &[u8] {
    /// Mostly short values; every 7th is larger than a 512-byte page (overflow pages).
    fn make(n: u64) -> Vec<u8> {
        let len = if n % 7 == 0 { 1500 } else { (n % 40) as usize };
        (0..len).map(|i| (i as u64 ^ n) as u8).collect()
    }
    fn r(o: &Vec<u8>) -> &[u8] {
        o
    }
}
impl ValGen for &str {
    fn make(n: u64) -> String {
        "ü".repeat((n % 13) as usize) + &n.to_string()
    }
    fn r(o: &String) -> &str {
        o
    }
}

#[derive(Clone, Debug)]
enum Op {
    Put(u64, u64),
    InsertNew(u64, u64),
    Append(u64, u64),
    Get(u64),
    Remove(u64),
    Range(u64, u64, bool),
    Commit,
    Abort,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u64..300;
    prop_oneof![
        6 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::Put(k, v % 10_000)),
        3 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::InsertNew(k, v % 10_000)),
        1 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::Append(k, v % 10_000)),
        3 => k.clone().prop_map(Op::Get),
        3 => k.clone().prop_map(Op::Remove),
        2 => (k.clone(), k, any::<bool>()).prop_map(|(a, b, rev)| Op::Range(a, b, rev)),
        1 => Just(Op::Commit),
        1 => Just(Op::Abort),
    ]
}

fn runner(cases: u32) -> TestRunner {
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

type Model<K, V> = BTreeMap<<K as Gen>::O, <V as TableValue>::Owned>;

fn same_opt<V: ValGen>(a: &Option<V::Owned>, b: &Option<V::Owned>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => V::same(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn same_items<K: KeyGen, V: ValGen>(got: &[(K::O, V::Owned)], want: &[(K::O, V::Owned)]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(a, b)| a.0 == b.0 && V::same(&a.1, &b.1))
}

/// Runs `ops` on a fresh table and checks every answer against the model (`committed` is the
/// state of the last commit, `model` the write transaction's).
fn run<K: KeyGen, V: ValGen>(page: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let (env, store) = mem_env(page);
    let def: TableDef<K, V> = TableDef::new("t");
    let mut committed: Model<K, V> = BTreeMap::new();
    let mut model = committed.clone();
    let mut w = env.begin_write().unwrap();
    let mut t = w.open_table(def).unwrap();
    for op in ops {
        match *op {
            Op::Put(k, v) => {
                let (k, v) = (K::make(k), V::make(v));
                let old = t.put(&mut w, K::r(&k), V::r(&v)).unwrap();
                let want = model.insert(k, v);
                prop_assert!(same_opt::<V>(&old, &want), "{op:?}: {old:?} != {want:?}");
            }
            Op::InsertNew(k, v) => {
                let (k, v) = (K::make(k), V::make(v));
                match t.insert_new(&mut w, K::r(&k), V::r(&v)) {
                    Ok(()) => {
                        prop_assert!(!model.contains_key(&k));
                        model.insert(k, v);
                    }
                    Err(Error::DuplicateKey { db, key }) => {
                        prop_assert!(model.contains_key(&k));
                        prop_assert_eq!(db, "t");
                        prop_assert!(!key.is_empty());
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("{op:?}: {e}"))),
                }
            }
            Op::Append(k, v) => {
                let (k, v) = (K::make(k), V::make(v));
                let above = model.keys().next_back().is_none_or(|last| k > *last);
                match t.append(&mut w, K::r(&k), V::r(&v)) {
                    Ok(()) => {
                        prop_assert!(above, "{op:?} accepted a key not above the last");
                        model.insert(k, v);
                    }
                    Err(Error::InvalidKey(what)) => {
                        prop_assert!(!above, "{op:?}: {what}");
                        prop_assert!(what.contains("\"t\""), "{what}");
                    }
                    Err(e) => return Err(TestCaseError::fail(format!("{op:?}: {e}"))),
                }
            }
            Op::Get(k) => {
                let k = K::make(k);
                let want = model.get(&k).cloned();
                let got = t.get(&w, K::r(&k)).unwrap();
                prop_assert!(same_opt::<V>(&got, &want), "{op:?} in the writer");
                let lent = t
                    .get_ref(&w, K::r(&k))
                    .unwrap()
                    .map(|g| V::to_owned(g.value()));
                prop_assert!(same_opt::<V>(&lent, &want), "{op:?} lent");
                prop_assert_eq!(t.contains(&w, K::r(&k)).unwrap(), want.is_some());
                // A snapshot sees the last commit only.
                let r = env.begin_read().unwrap();
                let old = committed.get(&k).cloned();
                if let Ok(rt) = r.open_table(def) {
                    let got = rt.get(&r, K::r(&k)).unwrap();
                    prop_assert!(same_opt::<V>(&got, &old), "{op:?} in a snapshot");
                } else {
                    prop_assert!(old.is_none());
                }
            }
            Op::Remove(k) => {
                let k = K::make(k);
                let got = t.remove(&mut w, K::r(&k)).unwrap();
                let want = model.remove(&k);
                prop_assert!(same_opt::<V>(&got, &want), "{op:?}");
            }
            Op::Range(a, b, rev) => {
                let (a, b) = (K::make(a), K::make(b));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let bounds = (Bound::Included(K::r(&lo)), Bound::Excluded(K::r(&hi)));
                let it = t.range(&w, bounds).unwrap();
                let got: Vec<_> = if rev {
                    it.rev().collect::<Result<_, _>>().unwrap()
                } else {
                    it.collect::<Result<_, _>>().unwrap()
                };
                let mut want: Vec<_> = model
                    .range((Bound::Included(&lo), Bound::Excluded(&hi)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if rev {
                    want.reverse();
                }
                prop_assert!(
                    same_items::<K, V>(&got, &want),
                    "{op:?}: {got:?} != {want:?}"
                );
                let first = t.first(&w).unwrap();
                let want_first = model.iter().next().map(|(k, v)| (k.clone(), v.clone()));
                prop_assert_eq!(first.map(|x| x.0), want_first.map(|x| x.0));
                let last = t.last(&w).unwrap();
                let want_last = model
                    .iter()
                    .next_back()
                    .map(|(k, v)| (k.clone(), v.clone()));
                prop_assert_eq!(last.map(|x| x.0), want_last.map(|x| x.0));
            }
            Op::Commit => {
                w.commit().unwrap();
                committed = model.clone();
                w = env.begin_write().unwrap();
            }
            Op::Abort => {
                w.abort();
                model = committed.clone();
                w = env.begin_write().unwrap();
                // The table may be gone (its creation was aborted): open it again.
                t = w.open_table(def).unwrap();
            }
        }
        prop_assert_eq!(t.len(&w).unwrap(), model.len() as u64);
    }
    w.commit().unwrap();
    // Everything again after a real reopen.
    let env = reopen_mem(&store, page);
    let r = env.begin_read().unwrap();
    let t = r.open_table(def).unwrap();
    let got: Vec<_> = t.iter(&r).unwrap().collect::<Result<_, _>>().unwrap();
    let want: Vec<_> = model.into_iter().collect();
    prop_assert!(same_items::<K, V>(&got, &want), "after reopen");
    prop_assert!(env.check().unwrap().is_clean());
    Ok(())
}

/// Page sizes: 512 bytes (deep trees, overflow values; integer keys uncompressed) and 1 KiB
/// (integer keys compressed, codecs chosen per block).
fn check<K: KeyGen, V: ValGen>(cases: u32) {
    for page in [512, 1024] {
        eprintln!(
            "{} -> {}, {page}-byte pages",
            std::any::type_name::<K>(),
            std::any::type_name::<V>()
        );
        runner(cases)
            .run(&prop::collection::vec(op(), 1..300), |ops| {
                run::<K, V>(page, &ops)
            })
            .unwrap();
    }
}

#[test]
fn u32_keys_every_value_type() {
    check::<u32, u32>(16);
    check::<u32, i64>(16);
    check::<u32, ()>(16);
    check::<u32, &[u8]>(16);
}

#[test]
fn u64_keys_every_value_type() {
    check::<u64, u64>(16);
    check::<u64, f64>(16);
    check::<u64, &str>(16);
}

#[test]
fn byte_string_keys() {
    check::<&[u8], &[u8]>(16);
    check::<&[u8], u64>(16);
    check::<&str, f64>(16);
    check::<&str, ()>(16);
}

fn env() -> Env {
    Env::in_memory(&EnvOptions::default()).unwrap()
}

#[test]
fn duplicate_key_error_names_key_and_database() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    let ids = w.open_table(TableDef::<u64, ()>::new("ids")).unwrap();
    ids.insert_new(&mut w, 42, ()).unwrap();
    let e = ids.insert_new(&mut w, 42, ()).unwrap_err();
    assert!(matches!(&e, Error::DuplicateKey { db, key } if db == "ids" && key == "42"));
    assert_eq!(
        e.to_string(),
        "key 42 is already in database \"ids\" (`put` overwrites, `insert_new` refuses)"
    );
    // Not fatal: the transaction goes on and commits.
    ids.put(&mut w, 42, ()).unwrap();
    let names = w.open_table(TableDef::<&str, u32>::new("names")).unwrap();
    names.put(&mut w, "ada", 1).unwrap();
    let e = names.insert_new(&mut w, "ada", 2).unwrap_err();
    assert!(
        e.to_string()
            .contains("key \"ada\" is already in database \"names\""),
        "{e}"
    );
    // The byte API says the same.
    let e = w
        .insert(names.db(), "ada", &7u32.to_le_bytes())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("key \"ada\" is already in database \"names\""),
        "{e}"
    );
    w.commit().unwrap();
}

#[test]
fn key_errors_name_key_and_database() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("fixed", DbConfig::raw(KeyType::Binary(4), RecordType::None))
        .unwrap();
    let e = w.insert(&db, b"toolong", &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid key: key \"toolong\" of database \"fixed\": key has 7 bytes, the database's \
         fixed key length is 4"
    );
    let e = w.get(&db, 5u32).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid key: key 5 is a u32 key, database \"fixed\" has binary(4) keys"
    );
    let e = w
        .range(&db, b"x".as_slice()..b"wrong".as_slice())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("invalid key: key \"x\" of database \"fixed\": key has 1 bytes"),
        "{e}"
    );
    let nums = w.open_table(TableDef::<u32, u32>::new("nums")).unwrap();
    let e = w.insert(nums.db(), 9u32, b"abc").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid record: key 9 of database \"nums\": record has 3 bytes, the database's fixed \
         record size is 4"
    );
    nums.append(&mut w, 10, 1).unwrap();
    let e = nums.append(&mut w, 3, 1).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("invalid key: key 3 of database \"nums\": append"),
        "{e}"
    );
    // A binary key longer than 64 bytes is cut in the message.
    let long = w
        .create_db("long", DbConfig::raw(KeyType::VarBinary, RecordType::None))
        .unwrap();
    let e = w.insert(&long, &[b'x'; 5000][..], &[]).unwrap_err();
    assert!(e.to_string().contains("(first 64 of 5000 bytes)"), "{e}");
}

#[test]
fn opening_with_other_types_says_what_differs_in_words() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    w.open_table(TableDef::<u64, f64>::new("series")).unwrap();
    let e = w
        .open_table(TableDef::<u32, f64>::new("series"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "database \"series\" was created with a different configuration (key type: stored u64, \
         requested u32 (u32)); open it with the stored configuration, or drop it and create it \
         anew"
    );
    let e = w
        .open_table(TableDef::<u64, i64>::new("series"))
        .unwrap_err();
    assert!(
        e.to_string().contains("values: stored f64, requested i64"),
        "{e}"
    );
    // The byte API's configuration check speaks the same words (no `DbConfig { .. }` dumps).
    let want = DbConfig::raw(KeyType::U64, RecordType::Fixed(8)).with_value_type(ValueType::I64);
    let e = w.open_db_with("series", want).unwrap_err().to_string();
    assert!(e.contains("values: stored f64, requested i64"), "{e}");
    assert!(
        e.contains("key compression: stored auto, requested none"),
        "{e}"
    );
    assert!(!e.contains("DbConfig"), "{e}");
    // Any compression opens: only the types must agree.
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let def = TableDef::<u64, f64>::new("series").uncompressed();
    assert!(r.open_table(def).is_ok());
    assert!(matches!(
        r.open_table(TableDef::<u64, f64>::new("nope")),
        Err(Error::DbNotFound(n)) if n == "nope"
    ));
}

#[test]
fn numbers_are_stored_as_queries_read_them() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    let t = w.open_table(TableDef::<u32, i64>::new("t")).unwrap();
    for k in 0..100u32 {
        t.put(&mut w, k, k as i64 - 50).unwrap();
    }
    // The write transaction's queries see its own writes.
    let q = w
        .query_str("SELECT COUNT(*), SUM(record), MIN(record) FROM t")
        .unwrap();
    assert_eq!(q.values[0].as_int(), Some(100));
    assert_eq!(q.values[1].as_int(), Some(-50));
    assert_eq!(q.values[2].as_int(), Some(-50));
    assert_eq!(t.db().config().value_type, ValueType::I64);
    assert_eq!(t.db().config().record_type, RecordType::Fixed(8));
    // Bytes as the byte API sees them: little-endian.
    assert_eq!(
        w.get(t.db(), 7u32).unwrap().unwrap(),
        (-43i64).to_le_bytes().to_vec()
    );
    // A string table over bytes that are not UTF-8 says so rather than returning junk.
    let raw = w
        .create_db(
            "raw",
            DbConfig::raw(KeyType::VarBinary, RecordType::Variable),
        )
        .unwrap();
    w.insert(&raw, &[0xffu8, 0xfe][..], b"ok").unwrap();
    let s = w.open_table(TableDef::<&str, &str>::new("raw")).unwrap();
    let e = s.iter(&w).unwrap().next().unwrap().unwrap_err();
    assert!(e.to_string().contains("not valid UTF-8"), "{e}");
    let b = w.open_table(TableDef::<&[u8], &str>::new("raw")).unwrap();
    assert_eq!(b.get(&w, &[0xff, 0xfe]).unwrap().as_deref(), Some("ok"));
}

#[test]
fn range_items_give_u64_keys() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("d", DbConfig::raw(KeyType::U32, RecordType::None))
        .unwrap();
    for k in [1u32, 5, 9] {
        w.insert_new(&db, k, &[]).unwrap();
    }
    let keys: Vec<u64> = w
        .range(&db, 2u32..)
        .unwrap()
        .map(|e| e.unwrap().0.key_u64().unwrap())
        .collect();
    assert_eq!(keys, [5, 9]);
    let mut c = w.cursor(&db).unwrap();
    assert!(c.last().unwrap());
    assert_eq!(c.key_u64(), Some(9));
}

#[test]
fn table_handles_work_across_transactions() {
    const T: TableDef<u64, u64> = TableDef::new("t");
    let env = env();
    let mut w = env.begin_write().unwrap();
    let t: Table<u64, u64> = w.open_table(T).unwrap();
    t.put(&mut w, 1, 10).unwrap();
    w.commit().unwrap();
    let mut w = env.begin_write().unwrap();
    assert_eq!(t.put(&mut w, 1, 11).unwrap(), Some(10));
    assert_eq!(t.remove(&mut w, 1).unwrap(), Some(11));
    assert_eq!(t.remove(&mut w, 1).unwrap(), None);
    assert!(t.is_empty(&w).unwrap());
    drop(w);
    let r = env.begin_read().unwrap();
    assert_eq!(t.get(&r, 1).unwrap(), Some(10));
}

#[test]
fn text_values_that_are_not_utf8_say_so() {
    let env = env();
    let mut w = env.begin_write().unwrap();
    let raw = w
        .create_db("raw", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    w.insert(&raw, 1u32, &[0xff, 0xfe]).unwrap();
    let t = w.open_table(TableDef::<u32, &str>::new("raw")).unwrap();
    for e in [
        t.get(&w, 1).unwrap_err(),
        t.get_ref(&w, 1).unwrap_err(),
        t.iter(&w).unwrap().next().unwrap().unwrap_err(),
    ] {
        assert!(
            e.to_string().starts_with(
                "invalid record: value of key 1 in database \"raw\": the record is not UTF-8"
            ),
            "{e}"
        );
    }
}
