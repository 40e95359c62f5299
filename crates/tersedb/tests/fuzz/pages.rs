//! Fuzz harness `pages`: node and page parsing for every leaf list kind, on damaged files.
//!
//! A small database of one list kind is built once per kind (u32 and u64 uncompressed, u32 under
//! each codec, fixed-length byte keys, byte-string keys under each scheme; records none, fixed or
//! variable with overflow values), then the fuzz input patches bytes of its pages, the pages are
//! re-sealed (so the checksums pass and the parsers see the damage) and the file is opened.
//! `check`, `dump` (`describe_page`), lookups, cursors both ways, ranges, folds and queries (also
//! conditions on the record, which read the record chunks' bounds), and
//! optionally a write transaction, must return errors or answers: nothing may panic, hang or
//! allocate by a count read from disk. When `check` calls the file clean, a full scan must give
//! strictly ascending keys, as many as the catalog says.
//!
//! Input: `[kind u8][records u8][flags u8]` then patches `[page u8][offset u16 LE][len u8][bytes]`
//! (page and offset taken modulo the file; a short last patch is cut). Flags: bit 0 = do not
//! re-seal, bit 1 = open writable and run a write transaction, bit 2 = patch XORs instead of
//! overwriting.
//!
//! Shared by the cargo-fuzz target `pages` (crates/tersedb/fuzz) and tests/fuzz_replay.rs.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use tersedb::storage::{meta, MemStorage};
use tersedb::{
    CodecId, DbConfig, Env, EnvOptions, KeyBuf, KeyScheme, KeyType, RecordType, ValueType,
};

pub const PAGE: usize = 1024;
/// List kinds: u32, u64, Binary(6), then 9 codecs, then 8 string schemes, then the 9 codecs on
/// u64 keys, then `auto` on u32 and on u64 keys.
pub const KINDS: u8 = 3 + 9 + 8 + 9 + 2;
/// Record kinds: none, u32, variable, then compressed f64, compressed u32 and compressed i16
/// status codes (one value nine times in ten: PDICT chunks).
pub const RECORDS: u8 = 6;
/// Most steps any scan or cursor walk takes (the templates hold fewer keys).
const MAX_STEPS: usize = 5000;

fn config(kind: u8, records: u8) -> DbConfig {
    let rec = match records % RECORDS {
        0 => RecordType::None,
        1 | 4 => RecordType::Fixed(4),
        2 => RecordType::Variable,
        5 => RecordType::Fixed(2),
        _ => RecordType::Fixed(8),
    };
    let cfg = match kind % KINDS {
        0 => DbConfig::raw(KeyType::U32, rec),
        1 => DbConfig::raw(KeyType::U64, rec),
        2 => DbConfig::raw(KeyType::Binary(6), rec),
        k @ 3..=11 => DbConfig::raw(KeyType::U32, rec)
            .with_codec(Some(CodecId::ALL[usize::from(k - 3)]))
            .with_block_size(if k % 2 == 0 { 0 } else { 24 }),
        k @ 12..=19 => DbConfig::raw(KeyType::VarBinary, rec)
            .with_key_scheme(KeyScheme::ALL[usize::from(k - 12)]),
        k @ 20..=28 => DbConfig::raw(KeyType::U64, rec)
            .with_codec(Some(CodecId::ALL[usize::from(k - 20)]))
            .with_block_size(if k % 2 == 0 { 0 } else { 24 }),
        29 => DbConfig::raw(KeyType::U32, rec).with_auto_codec(true),
        _ => DbConfig::raw(KeyType::U64, rec).with_auto_codec(true),
    };
    match records % RECORDS {
        1 => cfg.with_value_type(ValueType::U32),
        3 => cfg
            .with_value_type(ValueType::F64)
            .with_compressed_records(true),
        4 => cfg
            .with_value_type(ValueType::U32)
            .with_compressed_records(true),
        5 => cfg
            .with_value_type(ValueType::I16)
            .with_compressed_records(true),
        _ => cfg,
    }
}

/// The `i`-th key of a template, as the key type needs it.
pub fn key_bytes(kt: KeyType, i: u32) -> Vec<u8> {
    // Gaps of varying width so the codecs see several bit widths and exceptions.
    let v = i * 5 + (i % 7) * (i % 3) + if i % 97 == 0 { 40_000 } else { 0 } + (i / 97) * 40_000;
    match kt {
        KeyType::U32 => v.to_le_bytes().to_vec(),
        KeyType::U64 => (u64::from(v) << 20 | u64::from(i)).to_le_bytes().to_vec(),
        KeyType::Binary(n) => {
            let mut k = format!("{v:0>w$}", w = usize::from(n)).into_bytes();
            k.truncate(usize::from(n));
            k
        }
        KeyType::VarBinary => {
            let tail = "x".repeat((i % 13) as usize);
            format!("user/{:03}/item/{v:07}{tail}", i % 11).into_bytes()
        }
    }
}

fn key_count(cfg: &DbConfig) -> u32 {
    match (cfg.key_type, cfg.key_codec) {
        (KeyType::U32, Some(_)) => 900,
        (KeyType::VarBinary, _) => 250,
        _ => 350,
    }
}

fn value(i: u32, rec: RecordType) -> Vec<u8> {
    match rec {
        RecordType::None => vec![],
        // f64 readings with two decimals, every 17th a full-precision double (an exception).
        RecordType::Fixed(8) if i % 17 == 0 => f64::from(i).sqrt().to_le_bytes().to_vec(),
        RecordType::Fixed(8) => (f64::from(i % 5000) / 100.0).to_le_bytes().to_vec(),
        // Status codes, 200 nine times in ten, some negative.
        RecordType::Fixed(2) => match i % 10 {
            3 => [404i16, -500, 301][(i / 10 % 3) as usize],
            _ => 200,
        }
        .to_le_bytes()
        .to_vec(),
        RecordType::Fixed(n) => {
            let mut v = i.to_le_bytes().to_vec();
            v.resize(n as usize, 0);
            v
        }
        RecordType::Variable if i % 50 == 7 => vec![(i % 251) as u8; 1200], // overflow chain
        RecordType::Variable => vec![(i % 251) as u8; (i % 9) as usize],
    }
}

pub fn with_key<R>(kt: KeyType, k: &[u8], f: impl FnOnce(tersedb::Key<'_>) -> R) -> R {
    match kt {
        KeyType::U32 => f(u32::from_le_bytes(k.try_into().unwrap_or([0; 4])).into()),
        KeyType::U64 => f(u64::from_le_bytes(k.try_into().unwrap_or([0; 8])).into()),
        _ => f(k.into()),
    }
}

fn opts() -> EnvOptions {
    EnvOptions::default().page_size(PAGE)
}

/// The template file of a kind: two commits (inserts, then erases and updates), so it has a
/// free list and both meta pages in use.
pub fn template(kind: u8, records: u8) -> Vec<u8> {
    type Templates = Mutex<HashMap<(u8, u8), Vec<u8>>>;
    static CACHE: OnceLock<Templates> = OnceLock::new();
    let key = (kind % KINDS, records % RECORDS);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(img) = cache.lock().unwrap().get(&key) {
        return img.clone();
    }
    let cfg = config(key.0, key.1);
    let disk = MemStorage::new();
    let env = Env::create_with_storage(Box::new(disk.clone()), &opts()).unwrap();
    let n = key_count(&cfg);
    let mut w = env.begin_write().unwrap();
    let db = w.create_db("d", cfg).unwrap();
    for i in 0..n {
        let k = key_bytes(cfg.key_type, i);
        with_key(cfg.key_type, &k, |k| {
            w.upsert(&db, k, &value(i, cfg.record_type))
        })
        .unwrap();
    }
    w.commit().unwrap();
    let mut w = env.begin_write().unwrap();
    let db = w.open_db("d").unwrap();
    for i in (0..n).step_by(17) {
        let k = key_bytes(cfg.key_type, i);
        with_key(cfg.key_type, &k, |k| w.erase(&db, k)).unwrap();
    }
    for i in (3..n).step_by(31) {
        let k = key_bytes(cfg.key_type, i);
        with_key(cfg.key_type, &k, |k| {
            w.upsert(&db, k, &value(i + 1, cfg.record_type))
        })
        .unwrap();
    }
    w.commit().unwrap();
    drop(env);
    let img = disk.snapshot();
    cache.lock().unwrap().insert(key, img.clone());
    img
}

fn keybuf_bytes(k: &KeyBuf) -> Vec<u8> {
    match k {
        KeyBuf::U32(v) => v.to_be_bytes().to_vec(),
        KeyBuf::U64(v) => v.to_be_bytes().to_vec(),
        KeyBuf::Bytes(b) => b.clone(),
    }
}

pub fn run(data: &[u8]) {
    let [kind, records, flags, rest @ ..] = data else {
        return;
    };
    let cfg = config(*kind, *records);
    let mut img = template(*kind, *records);
    let pages = img.len() / PAGE;
    let mut touched = Vec::new();
    let mut rest = rest;
    while let [page, o0, o1, len, tail @ ..] = rest {
        let page = usize::from(*page) % pages;
        let off = usize::from(u16::from_le_bytes([*o0, *o1])) % PAGE;
        let len = usize::from(*len).min(tail.len()).min(PAGE - off);
        let (bytes, next) = tail.split_at(len);
        let dst = &mut img[page * PAGE + off..page * PAGE + off + len];
        if flags & 4 != 0 {
            dst.iter_mut().zip(bytes).for_each(|(d, b)| *d ^= b);
        } else {
            dst.copy_from_slice(bytes);
        }
        touched.push(page);
        rest = next;
    }
    if flags & 1 == 0 {
        for &p in &touched {
            meta::seal(p as u64, &mut img[p * PAGE..(p + 1) * PAGE]);
        }
    }
    let writable = flags & 2 != 0;
    let Ok(env) = Env::open_with_storage(Box::new(MemStorage::from_bytes(img)), &opts(), !writable)
    else {
        return;
    };
    let clean = matches!(env.check(), Ok(r) if r.is_clean());
    // `dump` of the damaged pages (it walks the trees to find each page's owner: not all pages).
    touched.dedup();
    for &p in touched.iter().take(4) {
        let _ = env.describe_page(p as u64);
    }
    read_all(&env, &cfg, clean);
    if writable {
        write_some(&env, &cfg, data);
        let _ = env.check();
        read_all(&env, &cfg, false);
    }
}

fn read_all(env: &Env, cfg: &DbConfig, clean: bool) {
    let Ok(r) = env.begin_read() else { return };
    let _ = r.list_dbs();
    let Ok(db) = r.open_db("d") else { return };
    let kt = cfg.key_type;
    let n = key_count(cfg);
    for i in (0..n + 3).step_by(7) {
        let k = key_bytes(kt, i);
        let _ = with_key(kt, &k, |k| r.get(&db, k));
    }
    // A full scan; when check passed it must be in order and complete.
    if let Ok(it) = r.iter(&db) {
        let mut prev: Option<Vec<u8>> = None;
        let mut seen = 0u64;
        let mut failed = false;
        for item in it.take(MAX_STEPS) {
            match item {
                Ok((k, _)) => {
                    let b = keybuf_bytes(&k);
                    if clean {
                        assert!(
                            prev.as_ref().is_none_or(|p| *p < b),
                            "check clean but scan out of order"
                        );
                    }
                    prev = Some(b);
                    seen += 1;
                }
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if clean {
            assert!(!failed, "check clean but the scan failed");
            if let Ok(len) = r.len(&db) {
                assert_eq!(
                    len, seen,
                    "check clean but the catalog count differs from the scan"
                );
            }
        }
    }
    if let Ok(it) = r.iter(&db) {
        let _ = it.rev().take(300).take_while(|i| i.is_ok()).count();
    }
    let (lo, hi) = (key_bytes(kt, n / 4), key_bytes(kt, n / 2));
    let _ = with_key(kt, &lo, |lo| {
        with_key(kt, &hi, |hi| {
            r.range(&db, lo..hi)
                .map(|it| it.take(MAX_STEPS).take_while(|i| i.is_ok()).count())
        })
    });
    if let Ok(mut c) = r.cursor(&db) {
        let _ = with_key(kt, &lo, |k| c.lower_bound(k));
        for _ in 0..50 {
            if !matches!(c.next(), Ok(true)) {
                break;
            }
            let _ = c.value();
        }
        let _ = c.last();
        for _ in 0..50 {
            if !matches!(c.prev(), Ok(true)) {
                break;
            }
        }
    }
    if matches!(kt, KeyType::U32 | KeyType::U64) {
        let _ = r.fold_keys(&db, 0, u64::MAX, true);
        let _ = r.fold_keys(&db, 1000, 60_000, false);
        for q in [
            "SELECT COUNT(*), SUM(key), MIN(key), MAX(key), TOP(3), BOTTOM(3) FROM d",
            "SELECT COUNT(*), AVG(key) FROM d WHERE key BETWEEN 100 AND 90000",
            "SELECT COUNT(DISTINCT key), SUM(record) FROM d WHERE key > 5000",
            // The record zone map: chunk bounds read from damaged chunk headers.
            "SELECT COUNT(*), SUM(record), MIN(record), MAX(record) FROM d WHERE record > 30",
            "SELECT SUM(key), TOP(2, record) FROM d WHERE key > 2000 AND NOT record <= 200",
        ] {
            let _ = r.query_str(q);
        }
    }
    let _ = r.stats(&db);
}

fn write_some(env: &Env, cfg: &DbConfig, data: &[u8]) {
    let Ok(mut w) = env.begin_write() else { return };
    let Ok(db) = w.open_db("d") else { return };
    let kt = cfg.key_type;
    for (j, b) in data.iter().enumerate().take(64) {
        let i = u32::from(*b) * 7 + j as u32;
        let k = key_bytes(kt, i);
        let r = if b % 3 == 0 {
            with_key(kt, &k, |k| w.erase(&db, k)).map(drop)
        } else {
            with_key(kt, &k, |k| w.upsert(&db, k, &value(i, cfg.record_type))).map(drop)
        };
        if r.is_err() {
            return; // the transaction is dropped (aborted)
        }
    }
    let _ = w.commit();
}
