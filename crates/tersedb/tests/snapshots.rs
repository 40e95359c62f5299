//! Readers keep their snapshot while a writer commits, from several threads at once; a read
//! transaction is shared by threads (`Send + Sync`); only one write transaction at a time.

mod common;

use common::mem_env;
use std::sync::Arc;
use tersedb::{DbConfig, Error};

#[test]
fn readers_keep_their_snapshot_across_commits() {
    let (env, _) = mem_env(1024);
    let env = Arc::new(env);
    let mut w = env.begin_write().unwrap();
    let d = w.create_db("d", DbConfig::u32_set()).unwrap();
    for i in 0..2000u32 {
        w.insert(&d, i, &[]).unwrap();
    }
    w.commit().unwrap();

    let snap = Arc::new(env.begin_read().unwrap());
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let (snap, d) = (snap.clone(), d.clone());
            std::thread::spawn(move || {
                for round in 0..20 {
                    assert_eq!(snap.len(&d).unwrap(), 2000);
                    let keys: Vec<u32> = snap
                        .iter(&d)
                        .unwrap()
                        .map(|x| x.unwrap().0.as_key().as_u32().unwrap())
                        .collect();
                    assert!(keys.iter().copied().eq(0..2000), "thread {t} round {round}");
                }
            })
        })
        .collect();
    // Meanwhile the writer erases half and adds new keys, committing repeatedly.
    for round in 0..10u32 {
        let mut w = env.begin_write().unwrap();
        assert!(matches!(env.begin_write(), Err(Error::WriteTxnActive)));
        for i in (round * 100..round * 100 + 100).step_by(2) {
            w.erase(&d, i).unwrap();
        }
        for i in 0..100 {
            w.insert(&d, 10_000 + round * 100 + i, &[]).unwrap();
        }
        w.commit().unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(snap.len(&d).unwrap(), 2000);
    drop(snap);
    let now = env.begin_read().unwrap();
    assert_eq!(now.len(&d).unwrap(), 2000 - 500 + 1000);
    assert!(env.check().unwrap().is_clean());
}

#[test]
fn env_and_read_transactions_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<tersedb::Env>();
    send_sync::<tersedb::ReadTxn>();
    send_sync::<tersedb::Db>();
    send::<tersedb::WriteTxn>();
}

#[test]
fn dropping_a_write_transaction_aborts_it_and_frees_the_slot() {
    let (env, _) = mem_env(4096);
    {
        let mut w = env.begin_write().unwrap();
        w.create_db("gone", DbConfig::u32_set()).unwrap();
    }
    let mut w = env.begin_write().unwrap();
    assert!(matches!(w.open_db("gone"), Err(Error::DbNotFound(_))));
    w.commit().unwrap();
}
