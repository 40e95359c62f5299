//! Cursor edge cases: empty database, single key, moving past both ends (the cursor stays on
//! the end key), exact and lower-bound seeks, erase at cursor including the last key, and
//! walking across many leaves both ways on small pages.

mod common;

use common::mem_env;
use tersedb::{DbConfig, KeyType, RecordType};

#[test]
fn empty_and_single_key() {
    let (env, _) = mem_env(512);
    let mut w = env.begin_write().unwrap();
    let d = w.create_db("d", DbConfig::u32_set()).unwrap();
    {
        let mut c = w.cursor(&d).unwrap();
        assert!(!c.first().unwrap());
        assert!(!c.last().unwrap());
        assert!(!c.next().unwrap());
        assert!(!c.prev().unwrap());
        assert!(!c.lower_bound(0u32).unwrap());
        assert!(!c.seek(0u32).unwrap());
        assert_eq!(c.key(), None);
        assert_eq!(c.value().unwrap(), None);
    }
    w.insert(&d, 42u32, &[]).unwrap();
    let mut c = w.cursor(&d).unwrap();
    assert!(c.first().unwrap());
    assert_eq!(c.key_u32(), Some(42));
    assert!(!c.next().unwrap());
    assert_eq!(c.key_u32(), Some(42), "stays on the last key");
    assert!(!c.prev().unwrap());
    assert_eq!(c.key_u32(), Some(42), "stays on the first key");
    assert!(c.lower_bound(0u32).unwrap());
    assert_eq!(c.key_u32(), Some(42));
    assert!(!c.lower_bound(43u32).unwrap());
    assert!(!c.seek(41u32).unwrap());
    assert!(c.seek(42u32).unwrap());
    assert_eq!(c.value().unwrap(), Some(vec![]));
}

#[test]
fn walk_across_leaves_both_ways() {
    let (env, _) = mem_env(512);
    let mut w = env.begin_write().unwrap();
    let d = w
        .create_db("d", DbConfig::raw(KeyType::U64, RecordType::Fixed(16)))
        .unwrap();
    let n = 5000u64;
    for i in 0..n {
        w.insert(&d, i * 2, &[i as u8; 16]).unwrap();
    }
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    assert!(r.stats(&d).unwrap().height >= 3);
    let mut c = r.cursor(&d).unwrap();
    assert!(c.first().unwrap());
    for i in 1..n {
        assert!(c.next().unwrap());
        assert_eq!(c.key().unwrap().as_u64(), Some(i * 2));
    }
    assert!(!c.next().unwrap());
    for i in (0..n - 1).rev() {
        assert!(c.prev().unwrap());
        assert_eq!(c.key().unwrap().as_u64(), Some(i * 2));
        assert_eq!(c.value().unwrap(), Some(vec![i as u8; 16]));
    }
    assert!(!c.prev().unwrap());
    assert!(c.lower_bound(1001u64).unwrap());
    assert_eq!(c.key().unwrap().as_u64(), Some(1002));
    assert!(c.prev().unwrap());
    assert_eq!(c.key().unwrap().as_u64(), Some(1000));
}

#[test]
fn erase_at_cursor() {
    let (env, _) = mem_env(512);
    let mut w = env.begin_write().unwrap();
    let d = w
        .create_db("d", DbConfig::raw(KeyType::VarBinary, RecordType::Variable))
        .unwrap();
    for i in 0..1000u32 {
        w.insert(&d, format!("{i:04}").as_str(), b"v").unwrap();
    }
    {
        let mut c = w.cursor_mut(&d).unwrap();
        assert!(!c.erase().unwrap(), "unpositioned erase does nothing");
        assert!(c.seek("0500").unwrap());
        assert!(c.erase().unwrap());
        assert_eq!(c.key().unwrap().as_bytes(), Some(&b"0501"[..]));
        assert!(c.last().unwrap());
        assert!(
            !c.erase().unwrap(),
            "erasing the last key leaves the cursor unpositioned"
        );
        assert_eq!(c.key(), None);
        // Erase everything from the start.
        assert!(c.first().unwrap());
        while c.erase().unwrap() {}
    }
    assert_eq!(w.len(&d).unwrap(), 0);
    assert!(w.iter(&d).unwrap().next().is_none());
    w.commit().unwrap();
    let rep = env.check().unwrap();
    assert!(rep.is_clean(), "{rep}");
    assert_eq!(rep.dbs[0].stats.leaf_pages, 0);
}

#[test]
fn ranges_run_both_ways_and_meet_in_the_middle() {
    let (env, _) = mem_env(512);
    let mut w = env.begin_write().unwrap();
    let d = w.create_db("d", DbConfig::u32_set()).unwrap();
    for k in (0..3000u32).step_by(3) {
        w.insert(&d, k, &[]).unwrap();
    }
    let keys = |it: &mut dyn Iterator<Item = tersedb::Result<(tersedb::KeyBuf, Vec<u8>)>>| {
        it.map(|x| x.unwrap().0.as_key().as_u32().unwrap())
            .collect::<Vec<u32>>()
    };
    assert_eq!(
        keys(&mut w.range(&d, 10u32..20).unwrap().rev()),
        [18, 15, 12]
    );
    assert_eq!(
        keys(&mut w.range(&d, 10u32..=18).unwrap().rev()),
        [18, 15, 12]
    );
    assert_eq!(
        keys(&mut w.range(&d, 13u32..14).unwrap().rev()),
        Vec::<u32>::new()
    );
    assert_eq!(
        keys(&mut w.range(&d, 5000u32..).unwrap().rev()),
        Vec::<u32>::new()
    );
    assert_eq!(keys(&mut w.range(&d, ..4u32).unwrap().rev()), [3, 0]);
    let all = keys(&mut w.iter(&d).unwrap().rev());
    assert_eq!(all.len(), 1000);
    assert!(all.windows(2).all(|p| p[0] > p[1]));
    // Alternate ends: every key exactly once.
    let mut it = w.range(&d, 100u32..200).unwrap();
    let mut seen = Vec::new();
    loop {
        let a = it.next().map(|x| x.unwrap().0);
        let b = it.next_back().map(|x| x.unwrap().0);
        if a.is_none() && b.is_none() {
            break;
        }
        seen.extend(a.into_iter().chain(b).map(|k| k.as_key().as_u32().unwrap()));
    }
    seen.sort();
    let want: Vec<u32> = (102..200).step_by(3).collect();
    assert_eq!(seen, want);
}
