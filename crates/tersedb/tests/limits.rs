//! Key and record limits: key types are checked, keys up to the documented length work and
//! longer ones are `Error::InvalidKey`; records match their type; values up to 64 MiB round-trip
//! through overflow chains and larger ones are `Error::InvalidRecord`.

mod common;

use common::mem_env;
use tersedb::{DbConfig, Error, Key, KeyType, Limits, RecordType};

#[test]
fn key_limits_follow_the_page_size() {
    for ps in [512usize, 4096, 16384, 65536] {
        let (env, _) = mem_env(ps);
        let limits = Limits::for_page_size(ps);
        let mut w = env.begin_write().unwrap();
        let d = w
            .create_db("v", DbConfig::raw(KeyType::VarBinary, RecordType::Variable))
            .unwrap();
        assert_eq!(d.limits(), limits);
        // Many maximal keys with maximal inline values: nodes still split and hold them.
        for i in 0..200u32 {
            let mut k = vec![b'k'; limits.max_key_len];
            k[..4].copy_from_slice(&i.to_be_bytes());
            w.insert(&d, &k, &vec![1u8; limits.max_inline_record])
                .unwrap();
        }
        let long = vec![0u8; limits.max_key_len + 1];
        assert!(matches!(
            w.insert(&d, &long, b""),
            Err(Error::InvalidKey(_))
        ));
        assert!(matches!(w.get(&d, &long), Err(Error::InvalidKey(_))));
        assert!(matches!(w.insert(&d, 5u32, b""), Err(Error::InvalidKey(_))));
        assert!(w.insert(&d, b"", b"empty key").is_ok());
        assert_eq!(w.get(&d, b"").unwrap(), Some(b"empty key".to_vec()));
        w.commit().unwrap();
        assert!(env.check().unwrap().is_clean());
    }
}

#[test]
fn key_and_record_types_are_checked() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let f = w
        .create_db("f", DbConfig::raw(KeyType::Binary(4), RecordType::Fixed(2)))
        .unwrap();
    assert!(matches!(
        w.insert(&f, b"abc", b"xy"),
        Err(Error::InvalidKey(_))
    ));
    assert!(matches!(
        w.insert(&f, b"abcd", b"x"),
        Err(Error::InvalidRecord(_))
    ));
    w.insert(&f, b"abcd", b"xy").unwrap();
    let s = w.create_db("s", DbConfig::u32_set()).unwrap();
    assert!(matches!(
        w.insert(&s, 1u32, b"x"),
        Err(Error::InvalidRecord(_))
    ));
    assert!(matches!(w.insert(&s, 1u64, b""), Err(Error::InvalidKey(_))));
    let u = w
        .create_db("u", DbConfig::raw(KeyType::U64, RecordType::None))
        .unwrap();
    // A u32 probe widens for u64 keys.
    w.insert(&u, Key::U64(7), b"").unwrap();
    assert!(w.contains(&u, 7u32).unwrap());
    assert!(matches!(
        w.create_db(
            "big",
            DbConfig::raw(KeyType::U32, RecordType::Fixed(100_000))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        w.create_db("zero", DbConfig::raw(KeyType::Binary(0), RecordType::None)),
        Err(Error::InvalidArgument(_))
    ));
    w.commit().unwrap();
}

#[test]
fn sixty_four_mib_value_round_trips_and_larger_is_rejected() {
    let (env, _) = mem_env(65536);
    let mut w = env.begin_write().unwrap();
    let d = w
        .create_db("blobs", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    let big: Vec<u8> = (0..tersedb::db::MAX_RECORD_LEN)
        .map(|i| (i % 251) as u8)
        .collect();
    w.insert(&d, 1u32, &big).unwrap();
    w.insert(&d, 2u32, b"small").unwrap();
    let mut too_big = big;
    too_big.push(0);
    assert!(matches!(
        w.insert(&d, 3u32, &too_big),
        Err(Error::InvalidRecord(_))
    ));
    too_big.pop();
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let got = r.get(&d, 1u32).unwrap().unwrap();
    assert!(got == too_big);
    drop(got);
    // Overwrite with a small value, then erase: the chain's pages are freed and reused.
    let mut w = env.begin_write().unwrap();
    assert!(!w.upsert(&d, 1u32, b"now small").unwrap());
    w.commit().unwrap();
    drop(r);
    let rep = env.check().unwrap();
    assert!(rep.is_clean(), "{rep}");
    assert!(rep.free_pages >= 1024, "{rep}");
}
