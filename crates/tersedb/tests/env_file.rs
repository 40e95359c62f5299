//! Pins the environment over real files and the real pager: data written and committed is there
//! after reopening, aborted work is not, `check` is clean, the file is locked against a second
//! writer, and the file does not grow without bound under insert/erase churn.

use tersedb::{DbConfig, Durability, Env, EnvOptions, Error, KeyType, RecordType};

fn temp_path(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tersedb-test-{}-{name}.tdb", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn file_round_trip_reopen_and_check() {
    let path = temp_path("roundtrip");
    let opts = EnvOptions::default().page_size(4096);
    {
        let env = Env::create(&path, &opts).unwrap();
        let mut w = env.begin_write().unwrap();
        let db = w.create_db("events", DbConfig::u32_set()).unwrap();
        let kv = w
            .create_db("kv", DbConfig::raw(KeyType::U64, RecordType::Variable))
            .unwrap();
        for k in 0..20_000u32 {
            w.insert(&db, k * 3, &[]).unwrap();
        }
        for k in 0..500u64 {
            w.insert(&kv, k << 20, format!("value {k}").as_bytes())
                .unwrap();
        }
        w.commit().unwrap();
        let mut w = env.begin_write().unwrap();
        w.insert(&db, 1u32, &[]).unwrap();
        w.abort();
        match Env::open(&path, &opts) {
            Err(Error::Locked { holder }) => {
                assert!(holder.contains("this process"), "{holder}")
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
    let env = Env::open(&path, &opts).unwrap();
    let r = env.begin_read().unwrap();
    let db = r.open_db("events").unwrap();
    let kv = r.open_db("kv").unwrap();
    assert_eq!(r.len(&db).unwrap(), 20_000);
    assert!(r.contains(&db, 2999u32 * 3).unwrap());
    assert!(!r.contains(&db, 1u32).unwrap());
    assert_eq!(
        r.get(&kv, 7u64 << 20).unwrap().as_deref(),
        Some(&b"value 7"[..])
    );
    let mut c = r.cursor(&db).unwrap();
    assert!(c.last().unwrap());
    assert_eq!(c.key_u32(), Some(19_999 * 3));
    let report = env.check().unwrap();
    assert!(report.faults.is_empty(), "{:?}", report.faults);
    drop(r);
    drop(env);
    let ro = Env::open_read_only(&path, &opts).unwrap();
    assert!(matches!(ro.begin_write(), Err(Error::ReadOnly)));
    drop(ro);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn churn_keeps_the_file_bounded() {
    let path = temp_path("churn");
    let opts = EnvOptions::default()
        .page_size(1024)
        .durability(Durability::None);
    let env = Env::create(&path, &opts).unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w
        .create_db("d", DbConfig::raw(KeyType::U32, RecordType::Fixed(8)))
        .unwrap();
    w.commit().unwrap();
    let mut sizes = Vec::new();
    for round in 0..40u32 {
        let mut w = env.begin_write().unwrap();
        for k in 0..2000u32 {
            w.upsert(&db, k, &(round as u64).to_le_bytes()).unwrap();
        }
        if round % 2 == 1 {
            for k in (0..2000u32).step_by(2) {
                w.erase(&db, k).unwrap();
            }
        }
        w.commit().unwrap();
        sizes.push(std::fs::metadata(&path).unwrap().len());
    }
    let (early, late) = (sizes[10], *sizes.last().unwrap());
    assert!(
        late <= early * 2,
        "file grew from {early} to {late}: {sizes:?}"
    );
    let report = env.check().unwrap();
    assert!(report.faults.is_empty(), "{:?}", report.faults);
    drop(env);
    let _ = std::fs::remove_file(&path);
}
