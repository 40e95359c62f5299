//! Fuzz harness `query`: any text either fails to parse with an error or parses to a tree that
//! prints back to text parsing to the same tree; parsed queries run against a small database (u64
//! keys at the edges, i64 records) without panicking (overflow checks are on).
//!
//! Shared by the cargo-fuzz target `query` (crates/tersedb/fuzz) and tests/fuzz_replay.rs.

use std::sync::OnceLock;
use tersedb::{DbConfig, Env, EnvOptions, KeyType, Query, RecordType, ValueType};

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let env = Env::in_memory(&EnvOptions::default().page_size(512)).unwrap();
        let mut w = env.begin_write().unwrap();
        let cfg = DbConfig::raw(KeyType::U64, RecordType::Fixed(8)).with_value_type(ValueType::I64);
        let db = w.create_db("db", cfg).unwrap();
        let keys =
            (0..300u64).chain([u32::MAX as u64, u32::MAX as u64 + 1, u64::MAX - 1, u64::MAX]);
        for (i, k) in keys.enumerate() {
            let v: i64 = match i % 5 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => i as i64 - 150,
            };
            w.insert(&db, k, &v.to_le_bytes()).unwrap();
        }
        w.commit().unwrap();
        env
    })
}

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(q) = Query::parse(&text) {
        let printed = q.to_string();
        let again = Query::parse(&printed).expect("a printed query parses");
        assert_eq!(again, q, "{printed}");
        let _ = env().begin_read().unwrap().query(&q);
    }
}
