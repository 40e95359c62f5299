//! Named databases: create, list, open with config check, rename, drop (which frees every page,
//! so the file does not grow when databases come and go).

mod common;

use common::mem_env;
use tersedb::{DbConfig, Error, KeyType, RecordType};

#[test]
fn create_list_open_rename_drop() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w.create_db("alpha", DbConfig::u32_set()).unwrap();
    let cfg_b = DbConfig::raw(KeyType::VarBinary, RecordType::Variable);
    let b = w.create_db("beta", cfg_b).unwrap();
    assert!(matches!(
        w.create_db("alpha", cfg_b),
        Err(Error::DbExists(_))
    ));
    assert!(matches!(
        w.create_db("", cfg_b),
        Err(Error::InvalidArgument(_))
    ));
    w.insert(&a, 1u32, &[]).unwrap();
    w.insert(&b, "k", b"v").unwrap();
    w.commit().unwrap();

    let r = env.begin_read().unwrap();
    assert_eq!(
        r.list_dbs().unwrap(),
        vec![
            // Stored as effective: auto's blocks hold 129 keys (the largest every candidate
            // codec takes), head-tail's default split range is 17%.
            (
                "alpha".to_string(),
                DbConfig::u32_set().with_block_size(129)
            ),
            ("beta".to_string(), cfg_b.with_split_range(17))
        ]
    );
    assert!(matches!(r.open_db("gamma"), Err(Error::DbNotFound(_))));
    assert!(matches!(
        r.open_db_with("alpha", DbConfig::raw(KeyType::U64, RecordType::None)),
        Err(Error::ConfigMismatch { .. })
    ));
    let b2 = r.open_db_with("beta", cfg_b).unwrap();
    assert_eq!(r.get(&b2, "k").unwrap(), Some(b"v".to_vec()));
    drop(r);

    let mut w = env.begin_write().unwrap();
    w.rename_db("beta", "gamma").unwrap();
    assert!(matches!(w.get(&b, "k"), Err(Error::DbNotFound(_))));
    assert!(matches!(
        w.rename_db("gamma", "alpha"),
        Err(Error::DbExists(_))
    ));
    assert!(matches!(
        w.rename_db("nope", "x"),
        Err(Error::DbNotFound(_))
    ));
    let g = w.open_db("gamma").unwrap();
    assert_eq!(w.get(&g, "k").unwrap(), Some(b"v".to_vec()));
    w.drop_db("alpha").unwrap();
    assert!(matches!(w.drop_db("alpha"), Err(Error::DbNotFound(_))));
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    let names: Vec<String> = r.list_dbs().unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(names, ["gamma"]);
    assert!(env.check().unwrap().is_clean());
}

#[test]
fn a_handle_with_another_config_is_rejected() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w.create_db("a", DbConfig::u32_set()).unwrap();
    // Used first, so that the transaction has found this handle's config equal once.
    w.insert(&a, 7u32, &[]).unwrap();
    w.drop_db("a").unwrap();
    let b = w
        .create_db("a", DbConfig::raw(KeyType::U64, RecordType::None))
        .unwrap();
    // The old handle's config no longer matches the stored one.
    assert!(matches!(
        w.insert(&a, 1u32, &[]),
        Err(Error::ConfigMismatch { .. })
    ));
    w.insert(&b, 2u64, &[]).unwrap();
    assert!(matches!(
        w.insert(&a, 3u32, &[]),
        Err(Error::ConfigMismatch { .. })
    ));
    w.commit().unwrap();
}

#[test]
fn dropping_databases_frees_their_pages() {
    let (env, _) = mem_env(4096);
    let mut sizes = Vec::new();
    for round in 0..6 {
        let mut w = env.begin_write().unwrap();
        let d = w
            .create_db("d", DbConfig::raw(KeyType::U32, RecordType::Variable))
            .unwrap();
        for i in 0..3000u32 {
            let v = vec![round as u8; if i % 100 == 0 { 10_000 } else { 20 }];
            w.insert(&d, i, &v).unwrap();
        }
        w.commit().unwrap();
        let mut w = env.begin_write().unwrap();
        w.drop_db("d").unwrap();
        w.commit().unwrap();
        let rep = env.check().unwrap();
        assert!(rep.is_clean(), "{rep}");
        sizes.push(rep.total_pages);
    }
    // After the first rounds the freed pages are reused: the file stops growing.
    assert_eq!(sizes[3], sizes[5], "file grows: {sizes:?}");
}

#[test]
fn a_snapshot_rejects_a_later_handle_with_another_config() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w.create_db("a", DbConfig::u32_set()).unwrap();
    w.insert(&a, 1u32, &[]).unwrap();
    w.commit().unwrap();
    let old = env.begin_read().unwrap();
    // The snapshot has looked the database up (and cached its entry) for this handle.
    assert!(old.contains(&a, 1u32).unwrap());
    let mut w = env.begin_write().unwrap();
    w.drop_db("a").unwrap();
    let b = w
        .create_db("a", DbConfig::raw(KeyType::U64, RecordType::None))
        .unwrap();
    w.insert(&b, 1u64, &[]).unwrap();
    w.commit().unwrap();
    // A handle of the new database does not fit the old snapshot's database of that name.
    assert!(matches!(
        old.contains(&b, 1u64),
        Err(Error::ConfigMismatch { .. })
    ));
    assert!(old.contains(&a, 1u32).unwrap());
    assert!(env.begin_read().unwrap().contains(&b, 1u64).unwrap());
}

#[test]
fn a_snapshot_serves_many_handles_of_one_database() {
    let (env, _) = mem_env(4096);
    let mut w = env.begin_write().unwrap();
    let a = w.create_db("a", DbConfig::u32_set()).unwrap();
    w.insert(&a, 5u32, &[]).unwrap();
    // Distinct handles (each open makes a new one), more than a snapshot keeps checked.
    let handles: Vec<_> = (0..600).map(|_| w.open_db("a").unwrap()).collect();
    w.commit().unwrap();
    let r = env.begin_read().unwrap();
    for round in 0..2 {
        for h in &handles {
            assert!(r.contains(h, 5u32).unwrap(), "round {round}");
            assert!(!r.contains(h, 6u32).unwrap(), "round {round}");
        }
    }
}
