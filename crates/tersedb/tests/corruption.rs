//! Pins that damaged files never panic, hang or read out of bounds: every byte of a small
//! database file is flipped in turn, and opening, point lookups, scans and `check` each return
//! an error or a correct answer: the committed data, never the older (empty) state of the file
//! (a damaged newest meta page is restored from its copy, issue 18).

use std::collections::BTreeMap;
use tersedb::storage::MemStorage;
use tersedb::{CodecId, DbConfig, Env, EnvOptions, KeyBuf, KeyScheme, KeyType, RecordType};

/// The key of number `k` in a database of `cfg` (byte strings share a prefix).
fn key_of(cfg: DbConfig, k: u32) -> KeyBuf {
    match cfg.key_type {
        KeyType::VarBinary => {
            KeyBuf::Bytes(format!("user/{k:06}/{}", "z".repeat(k as usize % 4)).into_bytes())
        }
        _ => KeyBuf::U32(k),
    }
}

fn build(page_size: usize, cfg: DbConfig) -> (Vec<u8>, BTreeMap<KeyBuf, Vec<u8>>) {
    let store = MemStorage::new();
    let opts = EnvOptions::default().page_size(page_size);
    let env = Env::create_with_storage(Box::new(store.clone()), &opts).unwrap();
    let mut model = BTreeMap::new();
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    for k in 0..120u32 {
        let v = vec![k as u8; (k as usize * 7) % 50];
        let key = key_of(cfg, k * 5);
        w.insert(&db, &key, &v).unwrap();
        model.insert(key, v);
    }
    // one large value in an overflow chain
    let key = key_of(cfg, 9999);
    w.insert(&db, &key, &[0x5a; 1500]).unwrap();
    model.insert(key, vec![0x5a; 1500]);
    w.commit().unwrap();
    drop(env);
    (store.snapshot(), model)
}

#[test]
fn every_flipped_byte_gives_an_error_or_a_correct_answer() {
    sweep(512, DbConfig::new(KeyType::U32, RecordType::Variable));
}

/// The same sweep over files whose leaves hold compressed blocks.
#[test]
fn every_flipped_byte_of_compressed_leaves() {
    for codec in [CodecId::VByte, CodecId::Bp128, CodecId::PforDelta] {
        let cfg = DbConfig::new(KeyType::U32, RecordType::Variable)
            .with_codec(Some(codec))
            .with_block_size(16);
        sweep(1024, cfg);
    }
}

/// The same sweep over files of byte-string keys, for every compression scheme.
#[test]
fn every_flipped_byte_of_compressed_string_keys() {
    for scheme in KeyScheme::ALL {
        let cfg = DbConfig::new(KeyType::VarBinary, RecordType::Variable).with_key_scheme(scheme);
        sweep(1024, cfg);
    }
}

fn sweep(page_size: usize, cfg: DbConfig) {
    let (good, model) = build(page_size, cfg);
    assert!(
        good.len() <= 18 * page_size,
        "keep the sweep small: {} bytes",
        good.len()
    );
    let opts = EnvOptions::default().page_size(page_size);
    let mut opened = 0;
    for i in 0..good.len() {
        for flip in [0x01u8, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            let Ok(env) =
                Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts, false)
            else {
                continue;
            };
            opened += 1;
            let _ = env.check();
            let Ok(r) = env.begin_read() else { continue };
            let db = match r.open_db("d") {
                Ok(db) => db,
                Err(tersedb::Error::DbNotFound(_)) => {
                    panic!("byte {i} ^ {flip:#x}: silent rollback to the empty state")
                }
                Err(_) => continue,
            };
            for (k, v) in &model {
                if let Ok(got) = r.get(&db, k) {
                    assert_eq!(
                        got.as_ref(),
                        Some(v),
                        "byte {i} ^ {flip:#x}: wrong value for {k}"
                    );
                }
            }
            if let Ok(it) = r.iter(&db) {
                // A scan either fails somewhere or returns exactly the committed data.
                let items: Result<Vec<_>, _> = it.collect();
                if let Ok(items) = items {
                    let got: BTreeMap<KeyBuf, Vec<u8>> = items.into_iter().collect();
                    assert_eq!(got, model, "byte {i} ^ {flip:#x}: scan");
                }
            }
            // Writing to a damaged file fails cleanly or works; it never panics.
            if let Ok(mut w) = env.begin_write() {
                if let Ok(db) = w.open_db("d") {
                    let _ = w.upsert(&db, &key_of(cfg, 3), b"x");
                    let _ = w.erase(&db, &key_of(cfg, 5));
                }
                let _ = w.commit();
            }
        }
    }
    assert!(opened > 0);
}
