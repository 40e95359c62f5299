//! Pins that a count read from a page never sizes an allocation (issue 18: a flipped leaf count
//! with its checksum re-sealed made `check` and `dump` abort on a 97 GB `Vec::with_capacity`).
//! Every leaf's entry count is forged to large values and the page re-sealed: `check` reports a
//! fault, `describe_page` (`tersedb dump`), lookups and scans return an error or the right
//! answer, and nothing aborts.

use tersedb::storage::{meta, MemStorage};
use tersedb::{CodecId, DbConfig, Env, EnvOptions, KeyType, RecordType};

const PS: usize = 1024;

fn build(cfg: DbConfig) -> (Vec<u8>, Vec<u32>) {
    let disk = MemStorage::new();
    let env =
        Env::create_with_storage(Box::new(disk.clone()), &EnvOptions::default().page_size(PS))
            .unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    let keys: Vec<u32> = (0..3000u32).map(|k| k * 7).collect();
    for &k in &keys {
        if cfg.key_type == KeyType::VarBinary {
            w.insert(&db, format!("key/{k:08}").as_bytes(), &[])
                .unwrap();
        } else {
            w.insert(&db, k, &[]).unwrap();
        }
    }
    w.commit().unwrap();
    drop(env);
    (disk.snapshot(), keys)
}

#[test]
fn forged_leaf_counts_are_faults_not_allocations() {
    for cfg in [
        DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::Bp128)),
        DbConfig::raw(KeyType::U32, RecordType::None).with_codec(Some(CodecId::VByte)),
        DbConfig::raw(KeyType::U32, RecordType::None),
        DbConfig::raw(KeyType::VarBinary, RecordType::None),
    ] {
        let (good, keys) = build(cfg);
        let mut leaves = 0;
        for page in 4..good.len() / PS {
            if good[page * PS + 8] != 4 {
                continue; // not a leaf
            }
            leaves += 1;
            for count in [u32::MAX, 0x7fff_ffff, 1 << 24, 70_000] {
                let mut bad = good.clone();
                let p = &mut bad[page * PS..(page + 1) * PS];
                p[12..16].copy_from_slice(&count.to_le_bytes());
                meta::seal(page as u64, p);
                let what = format!("{cfg:?} page {page} count {count}");
                let env = Env::open_with_storage(
                    Box::new(MemStorage::from_bytes(bad)),
                    &EnvOptions::default().page_size(PS),
                    true,
                )
                .unwrap();
                let report = env.check().unwrap();
                assert!(!report.is_clean(), "{what}: check passed a forged count");
                let _ = env.describe_page(page as u64);
                let r = env.begin_read().unwrap();
                let Ok(db) = r.open_db("d") else { continue };
                if cfg.key_type == KeyType::U32 {
                    for &k in keys.iter().step_by(97) {
                        if let Ok(found) = r.contains(&db, k) {
                            assert!(found, "{what}: lost key {k}");
                        }
                    }
                }
                if let Ok(it) = r.iter(&db) {
                    // Either an error somewhere or exactly the keys.
                    let got: Result<Vec<_>, _> = it.map(|i| i.map(|(k, _)| k)).collect();
                    if let Ok(got) = got {
                        assert_eq!(got.len(), keys.len(), "{what}: scan");
                    }
                }
            }
        }
        assert!(leaves > 0);
    }
}
