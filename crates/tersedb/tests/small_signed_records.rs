//! i32 and i16 records (`ValueType::I32`, `ValueType::I16`: records of 4 and 2 bytes), plain
//! and compressed, through the typed API (`Table<u64, i32>`, `Table<u64, i16>`) against a
//! `BTreeMap`: random-order inserts in batches, upserts, erases of most keys and a reopen, with
//! the extremes (MIN, MAX, 0, -1) mixed into small values. After every step: the contents,
//! point reads, and COUNT/SUM/MIN/MAX of `record` over random key ranges and under record
//! predicates (`record < 0`: the compressed list's zone maps order signed records of their own
//! width). SUM widens: a sum far past the type's range is exact. And the size the time-series
//! issue asks for: small-range values cost far less than their raw 2 or 4 bytes.

mod common;
mod query_common;

use common::{assert_clean, mem_env, reopen_mem, seed};
use proptest::prelude::*;
use query_common::runner;
use std::collections::BTreeMap;
use tersedb::query::Value;
use tersedb::{
    CodecId, DbConfig, Env, KeyType, ReadTxn, RecordType, Table, TableDef, TableValue, ValueType,
};

/// The two record types under test, as numbers the model sums in i128.
trait Small: for<'a> TableValue<Ref<'a> = Self, Owned = Self> + Copy {
    const VT: ValueType;
    const MIN: i64;
    const MAX: i64;
    fn from_i64(v: i64) -> Self;
    fn to_i128(self) -> i128;
}

impl Small for i32 {
    const VT: ValueType = ValueType::I32;
    const MIN: i64 = i32::MIN as i64;
    const MAX: i64 = i32::MAX as i64;
    fn from_i64(v: i64) -> Self {
        v as i32
    }
    fn to_i128(self) -> i128 {
        self as i128
    }
}

impl Small for i16 {
    const VT: ValueType = ValueType::I16;
    const MIN: i64 = i16::MIN as i64;
    const MAX: i64 = i16::MAX as i64;
    fn from_i64(v: i64) -> Self {
        v as i16
    }
    fn to_i128(self) -> i128 {
        self as i128
    }
}

/// A record from random bits: mostly small values around zero (what compresses), the
/// extremes and 0/-1, sometimes any value of the type.
fn value<V: Small>(bits: u64) -> V {
    let small = ((bits >> 8) % 200) as i64 - 100;
    V::from_i64(match bits % 20 {
        0 => V::MIN,
        1 => V::MAX,
        2 => 0,
        3 => -1,
        4 => V::MIN + ((bits >> 16) % 3) as i64,
        5 => (bits >> 16) as i64 % (V::MAX + 1),
        _ => small,
    })
}

#[derive(Clone, Debug)]
struct Case {
    page: usize,
    /// Key codec: `None` raw keys, `Some(None)` auto, `Some(Some(c))` codec `c`.
    keys: Option<Option<CodecId>>,
    compressed: bool,
    /// Keys in insertion (random) order, distinct.
    order: Vec<u64>,
    bits: Vec<u64>,
    /// Key ranges for the aggregates (inclusive, possibly empty or past the data).
    ranges: Vec<(u64, u64)>,
}

fn case() -> impl Strategy<Value = Case> {
    let keys = prop_oneof![
        Just(None),
        Just(Some(None)),
        Just(Some(Some(CodecId::Bp128))),
        Just(Some(Some(CodecId::PforDelta))),
    ];
    (
        prop::sample::select(vec![1024usize, 4096]),
        keys,
        any::<bool>(),
        1u64..5000,
        0usize..2500,
    )
        .prop_flat_map(|(page, keys, compressed, span, n)| {
            let key = prop_oneof![
                30 => 0..span * 4,
                1 => prop::sample::select(vec![0u64, u64::MAX, u64::MAX - 1]),
            ];
            (
                Just((page, keys, compressed)),
                prop::collection::vec(key, n),
                prop::collection::vec(any::<u64>(), 5000),
                prop::collection::vec((0..span * 5, 0..span * 2), 12),
            )
        })
        .prop_map(|((page, keys, compressed), drawn, bits, r)| {
            // Distinct keys in the order drawn (random).
            let mut seen = std::collections::HashSet::new();
            let order = drawn.into_iter().filter(|k| seen.insert(*k)).collect();
            Case {
                page,
                keys,
                compressed,
                order,
                bits,
                ranges: r.into_iter().map(|(a, len)| (a, a + len)).collect(),
            }
        })
}

fn config<V: Small>(c: &Case) -> DbConfig {
    let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(V::VT.width().unwrap()))
        .with_value_type(V::VT)
        .with_compressed_records(c.compressed);
    match c.keys {
        None => cfg,
        Some(None) => cfg.with_auto_codec(true),
        Some(Some(codec)) => cfg.with_codec(Some(codec)),
    }
}

fn int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Null => None,
        other => panic!("not an integer: {other:?}"),
    }
}

/// COUNT, SUM, MIN, MAX of the model's records under `keep`.
fn model_aggs<V: Small>(
    m: &BTreeMap<u64, V>,
    keep: impl Fn(u64, i128) -> bool,
) -> [Option<i128>; 4] {
    let (mut n, mut sum, mut lo, mut hi) = (0i128, 0i128, None::<i128>, None::<i128>);
    for (&k, &v) in m {
        let v = v.to_i128();
        if keep(k, v) {
            n += 1;
            sum += v;
            lo = Some(lo.map_or(v, |x| x.min(v)));
            hi = Some(hi.map_or(v, |x| x.max(v)));
        }
    }
    [Some(n), Some(sum), lo, hi]
}

fn engine_aggs(r: &ReadTxn, filter: &str) -> [Option<i128>; 4] {
    let q = format!("SELECT COUNT(*), SUM(record), MIN(record), MAX(record) FROM t {filter}");
    let res = r.query_str(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let v: Vec<Option<i128>> = res.values.iter().map(int).collect();
    // SUM and COUNT alone take another path: whole compressed chunks answer from their stored
    // sums, partial ones sum offsets without decoding records.
    let q = format!("SELECT SUM(record), COUNT(record) FROM t {filter}");
    let res = r.query_str(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let alone: Vec<Option<i128>> = res.values.iter().map(int).collect();
    assert_eq!(alone, [v[1], v[0]], "{q}");
    v.try_into().unwrap()
}

/// Contents, point reads and aggregates of the table against the model.
fn check<V: Small + PartialEq + std::fmt::Debug>(
    env: &Env,
    t: &Table<u64, V>,
    m: &BTreeMap<u64, V>,
    c: &Case,
    when: &str,
) -> Result<(), TestCaseError> {
    let r = env.begin_read().unwrap();
    let got: Vec<(u64, V)> = t.iter(&r).unwrap().map(|x| x.unwrap()).collect();
    let want: Vec<(u64, V)> = m.iter().map(|(&k, &v)| (k, v)).collect();
    prop_assert_eq!(got, want, "{}: contents", when);
    prop_assert_eq!(t.len(&r).unwrap(), m.len() as u64);
    for (i, &k) in c.order.iter().enumerate().step_by(7) {
        let probe = if i % 2 == 0 { k } else { k.wrapping_add(1) };
        prop_assert_eq!(
            t.get(&r, probe).unwrap(),
            m.get(&probe).copied(),
            "{}: get {}",
            when,
            probe
        );
    }
    for &(a, b) in &c.ranges {
        prop_assert_eq!(
            engine_aggs(&r, &format!("WHERE key >= {a} AND key <= {b}")),
            model_aggs(m, |k, _| (a..=b).contains(&k)),
            "{}: keys {}..={}",
            when,
            a,
            b
        );
    }
    prop_assert_eq!(engine_aggs(&r, ""), model_aggs(m, |_, _| true), "{}", when);
    for (filter, keep) in [
        ("WHERE record < 0", (|_, v| v < 0) as fn(u64, i128) -> bool),
        ("WHERE record >= -1", |_, v| v >= -1),
        ("WHERE record > 100", |_, v| v > 100),
        ("WHERE record = -1", |_, v| v == -1),
    ] {
        prop_assert_eq!(
            engine_aggs(&r, filter),
            model_aggs(m, keep),
            "{}: {}",
            when,
            filter
        );
    }
    Ok(())
}

fn run<V: Small + PartialEq + std::fmt::Debug>(c: &Case) -> Result<(), TestCaseError> {
    let def: TableDef<u64, V> = TableDef::new("t");
    let (env, store) = mem_env(c.page);
    {
        let mut w = env.begin_write().unwrap();
        w.create_db("t", config::<V>(c)).unwrap();
        w.commit().unwrap();
    }
    let mut m = BTreeMap::new();
    let mut bits = c.bits.iter().cycle();
    // Inserts in random order, three commits.
    for batch in c.order.chunks(c.order.len() / 3 + 1) {
        let mut w = env.begin_write().unwrap();
        let t = w.open_table(def).unwrap();
        for &k in batch {
            let v = value::<V>(*bits.next().unwrap());
            t.insert_new(&mut w, k, v).unwrap();
            m.insert(k, v);
        }
        w.commit().unwrap();
    }
    let r = env.begin_read().unwrap();
    let t = r.open_table(def).unwrap();
    drop(r);
    check(&env, &t, &m, c, "after inserts")?;
    // Updates of a third of the keys (a chunk may change layout or split).
    {
        let mut w = env.begin_write().unwrap();
        for &k in c.order.iter().step_by(3) {
            let v = value::<V>(*bits.next().unwrap());
            t.put(&mut w, k, v).unwrap();
            m.insert(k, v);
        }
        w.commit().unwrap();
    }
    assert_clean(&env);
    check(&env, &t, &m, c, "after updates")?;
    // Erases of most keys (four in five), in another random order.
    {
        let mut w = env.begin_write().unwrap();
        for (i, &k) in c.order.iter().rev().enumerate() {
            if i % 5 != 0 {
                prop_assert_eq!(t.remove(&mut w, k).unwrap(), m.remove(&k));
            }
        }
        w.commit().unwrap();
    }
    assert_clean(&env);
    check(&env, &t, &m, c, "after erases")?;
    drop(env);
    let env = reopen_mem(&store, c.page);
    assert_clean(&env);
    let r = env.begin_read().unwrap();
    let t = r.open_table(def).unwrap();
    let stored = t.db().config();
    prop_assert_eq!(
        (
            stored.record_type,
            stored.value_type,
            stored.compress_records
        ),
        (
            RecordType::Fixed(V::VT.width().unwrap()),
            V::VT,
            c.compressed
        )
    );
    drop(r);
    check(&env, &t, &m, c, "after reopen")
}

#[test]
fn i32_records_match_a_model() {
    runner(12)
        .run(&case(), |c| run::<i32>(&c))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn i16_records_match_a_model() {
    runner(12)
        .run(&case(), |c| run::<i16>(&c))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// SUM of i16 and i32 records widens as for i64: sums of thousands of extremes are exact,
/// whether folded record by record or from the compressed chunks' stored sums.
#[test]
fn sums_of_extremes_do_not_overflow() {
    fn sums<V: Small>(compressed: bool) {
        let (env, _store) = mem_env(4096);
        let def: TableDef<u64, V> = TableDef::new("t");
        let n = 20_000u64;
        let mut w = env.begin_write().unwrap();
        let cfg = DbConfig::new(KeyType::U64, RecordType::Fixed(V::VT.width().unwrap()))
            .with_value_type(V::VT)
            .with_compressed_records(compressed);
        w.create_db("t", cfg).unwrap();
        let t = w.open_table(def).unwrap();
        for k in 0..n {
            let v = if k < n / 2 { V::MAX } else { V::MIN };
            t.append(&mut w, k, V::from_i64(v)).unwrap();
        }
        w.commit().unwrap();
        let r = env.begin_read().unwrap();
        let half = (n / 2) as i128;
        let what = format!("{:?} compressed={compressed}", V::VT);
        for (filter, want) in [
            (format!("WHERE key < {}", n / 2), half * V::MAX as i128),
            (format!("WHERE key >= {}", n / 2), half * V::MIN as i128),
            (String::new(), half * (V::MAX as i128 + V::MIN as i128)),
        ] {
            let [count, sum, ..] = engine_aggs(&r, &filter);
            assert_eq!(sum, Some(want), "{what} {filter}");
            assert!(count.unwrap() > 0);
        }
        let res = r
            .query_str(&format!("SELECT AVG(record) FROM t WHERE key < {}", n / 2))
            .unwrap();
        assert_eq!(res.values, [Value::Float(V::MAX as f64)], "{what}");
    }
    for compressed in [false, true] {
        sums::<i32>(compressed);
        sums::<i16>(compressed);
    }
}

/// Small-range i16 and i32 records (sensor deltas, temperatures in tenths) cost a fraction of
/// their raw bytes; measured against the raw layout in the same run.
#[test]
fn small_signed_records_are_small() {
    fn per_record<V: Small>(compressed: bool, spread: i64, rng: &mut fastrand::Rng) -> f64 {
        let (env, _store) = mem_env(4096);
        let n = 50_000u64;
        let mut w = env.begin_write().unwrap();
        let cfg = DbConfig::new(KeyType::U64, RecordType::Fixed(V::VT.width().unwrap()))
            .with_value_type(V::VT)
            .with_compressed_records(compressed);
        let db = w.create_db("t", cfg).unwrap();
        let t = w.open_table(TableDef::<u64, V>::new("t")).unwrap();
        for i in 0..n {
            let v = V::from_i64(rng.i64(-spread..spread));
            t.append(&mut w, 1_764_000_000_000 + i * 1000, v).unwrap();
        }
        let s = w.stats(&db).unwrap();
        w.commit().unwrap();
        s.leaf_record_bytes as f64 / n as f64
    }
    let mut rng = fastrand::Rng::with_seed(seed());
    // (raw bytes, compressed bytes at most): offsets of 6 bits (i16, -20..20) and of 11 bits
    // (i32, -1000..1000) plus chunk headers; stored raw they would take 2 and 4 bytes.
    let i16_raw = per_record::<i16>(false, 20, &mut rng);
    let i16_packed = per_record::<i16>(true, 20, &mut rng);
    let i32_raw = per_record::<i32>(false, 1000, &mut rng);
    let i32_packed = per_record::<i32>(true, 1000, &mut rng);
    eprintln!("i16: {i16_raw:.3} raw, {i16_packed:.3} compressed bytes per record");
    eprintln!("i32: {i32_raw:.3} raw, {i32_packed:.3} compressed bytes per record");
    assert!(
        (i16_raw - 2.0).abs() < 0.01,
        "raw i16 records take {i16_raw}"
    );
    assert!(
        (i32_raw - 4.0).abs() < 0.01,
        "raw i32 records take {i32_raw}"
    );
    assert!(i16_packed < 1.0, "compressed i16 records take {i16_packed}");
    assert!(i32_packed < 2.0, "compressed i32 records take {i32_packed}");
}

/// `open_table` creates i32 and i16 tables with compressed records of 4 and 2 bytes, stores
/// the numbers little-endian, and refuses to read one signed width as another.
#[test]
fn typed_tables_create_and_check_their_width() {
    let (env, _store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w.open_table(TableDef::<u64, i32>::new("a")).unwrap();
    let b = w.open_table(TableDef::<u32, i16>::new("b")).unwrap();
    a.put(&mut w, 5, -70_000).unwrap();
    b.put(&mut w, 5, -300).unwrap();
    let (ca, cb) = (a.db().config(), b.db().config());
    assert_eq!(
        (ca.record_type, ca.value_type),
        (RecordType::Fixed(4), ValueType::I32)
    );
    assert_eq!(
        (cb.record_type, cb.value_type),
        (RecordType::Fixed(2), ValueType::I16)
    );
    assert!(ca.compress_records && cb.compress_records);
    assert_eq!(
        w.get(a.db(), 5u64).unwrap().unwrap(),
        (-70_000i32).to_le_bytes()
    );
    assert_eq!(
        w.get(b.db(), 5u32).unwrap().unwrap(),
        (-300i16).to_le_bytes()
    );
    assert_eq!(a.get(&w, 5).unwrap(), Some(-70_000));
    let e = w.open_table(TableDef::<u64, i16>::new("a")).unwrap_err();
    assert!(
        e.to_string().contains("values: stored i32, requested i16"),
        "{e}"
    );
    let e = w.open_table(TableDef::<u32, i64>::new("b")).unwrap_err();
    assert!(
        e.to_string().contains("values: stored i16, requested i64"),
        "{e}"
    );
    assert!(w.open_table(TableDef::<u32, u32>::new("b")).is_err());
}
