//! Record value types (`DbConfig::value_type`): validated against the record type at creation,
//! stored in the catalog (entry byte 28), given back on open and checked by `open_db_with`.

mod common;

use common::{mem_env, reopen_mem};
use tersedb::{DbConfig, Error, KeyType, RecordType, ValueType};

fn cfg(rt: RecordType, vt: ValueType) -> DbConfig {
    DbConfig::raw(KeyType::U64, rt).with_value_type(vt)
}

#[test]
fn value_type_must_fit_the_record_type() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    for (rt, vt, ok) in [
        (RecordType::Fixed(4), ValueType::U32, true),
        (RecordType::Fixed(8), ValueType::U64, true),
        (RecordType::Fixed(8), ValueType::I64, true),
        (RecordType::Fixed(8), ValueType::F64, true),
        (RecordType::Fixed(4), ValueType::I32, true),
        (RecordType::Fixed(2), ValueType::I16, true),
        (RecordType::Fixed(3), ValueType::Bytes, true),
        (RecordType::Variable, ValueType::Bytes, true),
        (RecordType::Fixed(8), ValueType::U32, false),
        (RecordType::Fixed(4), ValueType::F64, false),
        (RecordType::Variable, ValueType::U64, false),
        (RecordType::None, ValueType::I64, false),
        (RecordType::Fixed(8), ValueType::I32, false),
        (RecordType::Fixed(4), ValueType::I16, false),
        (RecordType::Fixed(2), ValueType::I32, false),
    ] {
        let name = format!("{rt:?}-{vt:?}");
        let r = w.create_db(&name, cfg(rt, vt));
        match r {
            Ok(db) => {
                assert!(ok, "{name} was accepted");
                assert_eq!(db.value_type(), vt);
                assert_eq!(db.config().value_type, vt);
            }
            Err(Error::InvalidArgument(msg)) => {
                assert!(!ok, "{name} was refused: {msg}");
                assert!(msg.contains(vt.name()), "{msg}");
            }
            Err(e) => panic!("{name}: unexpected error {e}"),
        }
    }
}

#[test]
fn value_type_is_stored_and_checked_on_open() {
    let (env, store) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("ts", cfg(RecordType::Fixed(8), ValueType::F64))
        .unwrap();
    w.insert(&db, 1u64, &2.5f64.to_le_bytes()).unwrap();
    w.create_db("raw", cfg(RecordType::Fixed(8), ValueType::Bytes))
        .unwrap();
    w.commit().unwrap();
    drop(env);

    let env = reopen_mem(&store, 4096);
    let r = env.begin_read().unwrap();
    let db = r.open_db("ts").unwrap();
    assert_eq!(db.value_type(), ValueType::F64);
    assert_eq!(
        r.get(&db, 1u64).unwrap(),
        Some(2.5f64.to_le_bytes().to_vec())
    );
    assert_eq!(r.open_db("raw").unwrap().value_type(), ValueType::Bytes);
    let listed = r.list_dbs().unwrap();
    assert_eq!(listed[1].1.value_type, ValueType::F64);
    // Same record type, other interpretation: a mismatch.
    assert!(matches!(
        r.open_db_with("ts", cfg(RecordType::Fixed(8), ValueType::I64)),
        Err(Error::ConfigMismatch { .. })
    ));
    assert!(r
        .open_db_with("ts", cfg(RecordType::Fixed(8), ValueType::F64))
        .is_ok());
}

#[test]
fn names_and_ids_round_trip() {
    for vt in ValueType::ALL {
        assert_eq!(ValueType::from_id(vt.id()), Some(vt));
        assert_eq!(ValueType::from_name(vt.name()), Some(vt));
    }
    // Files written before i32 and i16 keep their ids 0-4; the new types take 5 and 6.
    assert_eq!(ValueType::I64.id(), 3);
    assert_eq!(ValueType::F64.id(), 4);
    assert_eq!(ValueType::I32.id(), 5);
    assert_eq!(ValueType::I16.id(), 6);
    assert_eq!(ValueType::from_id(7), None);
    assert_eq!(ValueType::from_name("u16"), None);
}
