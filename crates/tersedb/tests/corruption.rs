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
    sweep(512, DbConfig::raw(KeyType::U32, RecordType::Variable));
}

/// The same sweep over files whose leaves hold compressed blocks.
#[test]
fn every_flipped_byte_of_compressed_leaves() {
    for codec in [CodecId::VByte, CodecId::Bp128, CodecId::PforDelta] {
        let cfg = DbConfig::raw(KeyType::U32, RecordType::Variable)
            .with_codec(Some(codec))
            .with_block_size(16);
        sweep(1024, cfg);
    }
}

/// The same sweep over files of byte-string keys, for every compression scheme.
#[test]
fn every_flipped_byte_of_compressed_string_keys() {
    for scheme in KeyScheme::ALL {
        let cfg = DbConfig::raw(KeyType::VarBinary, RecordType::Variable).with_key_scheme(scheme);
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

// ---------------------------------------------------------------------------------------------
// Damage behind a valid checksum. The sweep above almost never reaches a parser: the page
// checksum rejects the flip first. Here every damaged page is sealed again (XXH3-64 of bytes
// 8.. seeded with the page id), so the parsers of every page kind see the damaged bytes: meta,
// free list, catalog, overflow, and the leaves and branches of every key list (plain u32, u64,
// fixed and variable keys, every codec, every string scheme). Sealed damage may legitimately
// change a value, so answers are not compared with the model; what must hold is: no panic, no
// hang, every call returns Ok or a `Corrupted` error (a damaged meta page may also be
// `BadFormat`, a damaged catalog entry may rename the database or change its key or record
// type), and no read returns a key out of order or outside its leaf's fence: cursors forward
// and backward and row queries (the block scan) give ascending keys, and every key they give is
// found by a lookup, which descends by the separators (a key outside its leaf's fence is not).
// Sampled (seeded, `SEED=n`; half the flips on leaves, so that forged codec blocks reach the
// read paths); every byte of every file with `TERSEDB_LONG=1`. One case again:
// `CONFIG=i FLIP=page,byte,mask` (mask in decimal).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tersedb::storage::meta::seal;
use tersedb::storage::PageKind;
use tersedb::Error;

/// A file of database `d` (keys of `cfg`, small records, one overflow chain, some erased and
/// updated in a second commit so that the free list has pages) and a second database `e`.
fn sealed_file(page_size: usize, cfg: DbConfig) -> Vec<u8> {
    let store = MemStorage::new();
    let opts = EnvOptions::default().page_size(page_size);
    let env = Env::create_with_storage(Box::new(store.clone()), &opts).unwrap();
    let key = |k: u32| match cfg.key_type {
        KeyType::VarBinary => {
            KeyBuf::Bytes(format!("user/{:06}/{}", k, "\u{ff}".repeat(k as usize % 3)).into_bytes())
        }
        KeyType::Binary(w) => {
            let mut b = vec![0x80u8; w as usize];
            b[..4].copy_from_slice(&k.to_be_bytes());
            KeyBuf::Bytes(b)
        }
        // Above 2^40, 7,000 apart with jumps (several keys per u64 codec block).
        KeyType::U64 => KeyBuf::U64((1 << 40) + (k * 7 + (k / 40) * 1000) as u64 * 1000),
        KeyType::U32 => KeyBuf::U32(k * 7 + (k / 40) * 1000),
    };
    let rec = |k: u32| match cfg.record_type {
        RecordType::None => Vec::new(),
        // Compressed records: values that code in a few bits.
        RecordType::Fixed(n) if cfg.compress_records => {
            (k as u64 / 3).to_le_bytes()[..n as usize].to_vec()
        }
        RecordType::Fixed(n) => vec![k as u8; n as usize],
        RecordType::Variable => vec![k as u8; k as usize % 30],
    };
    let mut w = env.begin_write().unwrap();
    let d = w.create_db("d", cfg).unwrap();
    let e = w
        .create_db("e", DbConfig::raw(KeyType::U64, RecordType::Fixed(4)))
        .unwrap();
    for k in 0..600u32 {
        w.insert(&d, &key(k), &rec(k)).unwrap();
    }
    if cfg.record_type == RecordType::Variable {
        w.upsert(&d, &key(3), &[0x5a; 1500]).unwrap();
    }
    for k in 0..20u64 {
        w.insert(&e, k, &[1, 2, 3, 4]).unwrap();
    }
    w.commit().unwrap();
    let mut w = env.begin_write().unwrap();
    for k in (0..600u32).filter(|k| k % 3 == 1) {
        w.erase(&d, &key(k)).unwrap();
    }
    if cfg.record_type == RecordType::Variable {
        // The first overflow chain is freed, a new one written.
        w.upsert(&d, &key(3), &[0xa5; 1300]).unwrap();
    }
    w.commit().unwrap();
    drop(env);
    store.snapshot()
}

/// The kinds of the file's pages (the kind byte of each page).
fn kinds(file: &[u8], page_size: usize) -> Vec<Option<PageKind>> {
    file.chunks(page_size)
        .map(|p| PageKind::from_u8(p[8]))
        .collect()
}

/// Errors a damaged file may give: a damaged catalog entry may rename the database or change
/// its key or record type, and then a key or record of the old type is refused as such.
fn allowed(e: &Error) -> bool {
    matches!(
        e,
        Error::Corrupted { .. }
            | Error::BadFormat(_)
            | Error::DbNotFound(_)
            | Error::InvalidKey(_)
            | Error::InvalidRecord(_)
    )
}

/// Notes an error unless a damaged file may give it. Every page the file wrote is sealed, so
/// a checksum error means a flip no parser saw, unless it names a page the file holds but
/// never wrote (`blank`: pages a transaction took from the end of the file and freed again;
/// a flipped child id may point there).
fn note(faults: &mut Vec<String>, blank: &[u64], what: &str, e: &Error) {
    if !allowed(e) {
        faults.push(format!("{what}: unexpected error {e:?}"));
    } else if e.to_string().contains("checksum mismatch")
        && !matches!(e, Error::Corrupted { page, .. } if blank.contains(page))
    {
        faults.push(format!("{what}: checksum mismatch on a sealed page"));
    }
}

/// Runs every operation on the damaged file; returns the faults found (empty when it held).
fn probe(bad: Vec<u8>, page_size: usize, cfg: DbConfig) -> Vec<String> {
    let mut faults = Vec::new();
    let blank: Vec<u64> = (bad.chunks(page_size).enumerate())
        .filter(|(_, p)| p.iter().all(|&b| b == 0))
        .map(|(i, _)| i as u64)
        .collect();
    let opts = EnvOptions::default().page_size(page_size);
    let env = match Env::open_with_storage(Box::new(MemStorage::from_bytes(bad)), &opts, false) {
        Ok(env) => env,
        Err(e) => {
            note(&mut faults, &blank, "open", &e);
            return faults;
        }
    };
    if let Err(e) = env.check() {
        note(&mut faults, &blank, "check", &e);
    }
    let r = match env.begin_read() {
        Ok(r) => r,
        Err(e) => {
            note(&mut faults, &blank, "begin_read", &e);
            return faults;
        }
    };
    let db = match r.open_db("d") {
        Ok(db) => db,
        Err(e) => {
            note(&mut faults, &blank, "open_db", &e);
            return faults;
        }
    };
    // Cursors: forward strictly ascending, backward strictly descending, bounded. When a pass
    // reads the whole database without an error, a lookup finds every key it gave: the keys
    // were in order and each between the separators that lead to its leaf, which is where the
    // lookup looks. (A pass that stops at an error may have given keys of a leaf whose other
    // keys hide them from a search.)
    let bound = 4 * 600 + 100;
    let mut given: Vec<KeyBuf> = Vec::new();
    for back in [false, true] {
        match r.iter(&db) {
            Ok(it) => {
                let mut prev: Option<KeyBuf> = None;
                let mut it: Box<dyn Iterator<Item = _>> = if back {
                    Box::new(it.rev())
                } else {
                    Box::new(it)
                };
                let mut pass = Vec::new();
                for _ in 0..bound {
                    match it.next() {
                        None => {
                            given.append(&mut pass);
                            break;
                        }
                        Some(Ok((k, _))) => {
                            if let Some(p) = &prev {
                                if (back && k >= *p) || (!back && k <= *p) {
                                    faults.push(format!(
                                        "cursor {}: {k} after {p}",
                                        if back { "backward" } else { "forward" }
                                    ));
                                    break;
                                }
                            }
                            pass.push(k.clone());
                            prev = Some(k);
                        }
                        Some(Err(e)) => {
                            note(&mut faults, &blank, "cursor", &e);
                            break;
                        }
                    }
                }
            }
            Err(e) => note(&mut faults, &blank, "iter", &e),
        }
    }
    // Row queries read keys through the block scan (integer keys only).
    if matches!(cfg.key_type, KeyType::U32 | KeyType::U64) {
        for q in [
            "SELECT key FROM d",
            "SELECT key FROM d WHERE key > 2000 AND key < 3000000000000",
        ] {
            match r.query_str(q) {
                Ok(res) => {
                    let keys: Vec<i128> = res
                        .rows
                        .iter()
                        .filter_map(|row| row.first().and_then(|v| v.as_int()))
                        .collect();
                    if let Some(w) = keys.windows(2).find(|w| w[0] >= w[1]) {
                        faults.push(format!("rows of {q:?}: {} after {}", w[1], w[0]));
                    }
                    given.extend(keys.iter().map(|&k| match cfg.key_type {
                        KeyType::U32 => KeyBuf::U32(k as u32),
                        _ => KeyBuf::U64(k as u64),
                    }));
                }
                Err(Error::Query(_)) => {}
                Err(e) => note(&mut faults, &blank, "row query", &e),
            }
        }
    }
    given.sort();
    given.dedup();
    // Not PkB: its lookups steer by the offsets and partial keys beside each full key, which a
    // forged page can make disagree with the full keys a cursor reads: the lookup then misses
    // a key that is there (a wrong answer, which sealed damage may give; the keys read are
    // still in order and inside their fences).
    if cfg.key_scheme == KeyScheme::Pkb {
        given.clear();
    }
    for k in &given {
        // Integer keys: the leaf the separators lead to, read whole. (A lookup searches the
        // block index, whose empty blocks a forged page may leave out of order: that makes
        // a lookup miss a key, a wrong answer, but not a read give one outside its leaf.)
        let int = match *k {
            KeyBuf::U32(v) => Some(v as u64),
            KeyBuf::U64(v) => Some(v),
            _ => None,
        };
        if let Some(v) = int {
            match in_leaf_of(&r, &db, v) {
                Ok(true) => {}
                Ok(false) => {
                    faults.push(format!(
                        "key {k} given by a read is not in its leaf's fence"
                    ));
                    break;
                }
                Err(e) => {
                    note(&mut faults, &blank, "descent to a given key", &e);
                    break;
                }
            }
            continue;
        }
        match r.get(&db, k) {
            Ok(Some(_)) => {}
            Ok(None) => {
                faults.push(format!("key {k} given by a read is not found by a lookup"));
                break;
            }
            Err(e) => {
                note(&mut faults, &blank, "get of a given key", &e);
                break;
            }
        }
    }
    for k in [0u32, 7, 299, 300, 5000] {
        let key = match cfg.key_type {
            KeyType::VarBinary => KeyBuf::Bytes(format!("user/{k:06}/").into_bytes()),
            KeyType::Binary(w) => KeyBuf::Bytes(vec![0x80; w as usize]),
            KeyType::U64 => KeyBuf::U64((1 << 40) + k as u64 * 7000),
            KeyType::U32 => KeyBuf::U32(k),
        };
        if let Err(e) = r.get(&db, &key) {
            note(&mut faults, &blank, "get", &e);
        }
    }
    if cfg.key_type == KeyType::U32 {
        if let Err(e) = r.fold_keys(&db, 100, 3000, true) {
            note(&mut faults, &blank, "fold_keys", &e);
        }
        match r.query_str("SELECT COUNT(*), SUM(key) FROM d WHERE key > 100 AND key != 707") {
            Ok(_) | Err(Error::Query(_)) => {}
            Err(e) => note(&mut faults, &blank, "query", &e),
        }
    }
    drop(r);
    // Writes fail cleanly or work; after the first failure the transaction is dropped.
    if let Ok(mut w) = env.begin_write() {
        if let Ok(db) = w.open_db("d") {
            let k = match cfg.key_type {
                KeyType::VarBinary => KeyBuf::Bytes(b"user/000300/".to_vec()),
                KeyType::Binary(w) => KeyBuf::Bytes(vec![0x81; w as usize]),
                KeyType::U64 => KeyBuf::U64(5),
                KeyType::U32 => KeyBuf::U32(5),
            };
            let v = match cfg.record_type {
                RecordType::Fixed(n) => vec![1; n as usize],
                RecordType::None => Vec::new(),
                RecordType::Variable => vec![1; 3],
            };
            let ok = match w.upsert(&db, &k, &v).and_then(|_| w.erase(&db, &k)) {
                Ok(_) => true,
                Err(e) => {
                    note(&mut faults, &blank, "write", &e);
                    false
                }
            };
            if ok {
                if let Err(e) = w.commit() {
                    note(&mut faults, &blank, "commit", &e);
                }
            }
        }
    }
    faults
}

/// Whether the leaf that the separators lead `k` to holds it: every block of the leaf decoded.
fn in_leaf_of(r: &tersedb::ReadTxn, db: &tersedb::Db, k: u64) -> tersedb::Result<bool> {
    let mut found = false;
    let mut blocks = tersedb::scan::Blocks::default();
    let mut buf = tersedb::scan::KeyBuffer::default();
    r.scan_leaves(db, &[(k, k)], false, &mut |leaf, _| {
        leaf.blocks(&mut blocks, 0, u64::MAX)?;
        for b in blocks.iter() {
            let keys = leaf.keys(&b, &mut buf)?;
            found |= (0..keys.len()).any(|i| keys.get(i) == Some(k));
        }
        Ok(true)
    })?;
    Ok(found)
}

/// A failure without its numbers, for the summary.
fn summary_key(ci: usize, kind: Option<PageKind>, fault: &str) -> String {
    let f: String = fault.chars().filter(|c| !c.is_ascii_digit()).collect();
    format!("config {ci:2} {kind:?}: {f}")
}

fn sealed_configs() -> Vec<(usize, DbConfig)> {
    let mut v = vec![
        (512, DbConfig::raw(KeyType::U32, RecordType::Variable)),
        (512, DbConfig::raw(KeyType::U64, RecordType::Fixed(8))),
        (512, DbConfig::raw(KeyType::Binary(12), RecordType::None)),
        (512, DbConfig::raw(KeyType::VarBinary, RecordType::None)),
    ];
    for codec in CodecId::ALL {
        v.push((
            1024,
            DbConfig::raw(KeyType::U32, RecordType::Variable)
                .with_codec(Some(codec))
                .with_block_size(16),
        ));
    }
    for scheme in KeyScheme::ALL {
        v.push((
            512,
            DbConfig::raw(KeyType::VarBinary, RecordType::Variable).with_key_scheme(scheme),
        ));
    }
    // u64 keys in codec blocks, a codec per block, compressed records, the defaults.
    for codec in [CodecId::Bp128, CodecId::StreamVByte, CodecId::For] {
        v.push((
            1024,
            DbConfig::raw(KeyType::U64, RecordType::Variable)
                .with_codec(Some(codec))
                .with_block_size(16),
        ));
    }
    v.push((
        1024,
        DbConfig::raw(KeyType::U32, RecordType::Variable).with_auto_codec(true),
    ));
    v.push((
        1024,
        DbConfig::raw(KeyType::U64, RecordType::Fixed(4)).with_auto_codec(true),
    ));
    v.push((
        1024,
        DbConfig::raw(KeyType::U32, RecordType::Fixed(8))
            .with_codec(Some(CodecId::Bp128))
            .with_compressed_records(true),
    ));
    v.push((1024, DbConfig::new(KeyType::U64, RecordType::Fixed(8))));
    v
}

#[test]
fn sealed_damage_reaches_every_parser() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={seed}");
    let long = std::env::var("TERSEDB_LONG").is_ok();
    let only = std::env::var("CONFIG")
        .ok()
        .and_then(|c| c.parse::<usize>().ok());
    // A watchdog: a trial that runs for a minute is a hang; name it and abort. It stops when
    // this test ends (the guard below, also on a panic): left running, it would abort the test
    // binary a minute later while other tests still run.
    let beat = Arc::new(AtomicU64::new(0));
    let current = Arc::new(Mutex::new(String::new()));
    let done = Arc::new(AtomicBool::new(false));
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop = StopOnDrop(done.clone());
    {
        let (beat, current) = (beat.clone(), current.clone());
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            loop {
                std::thread::sleep(std::time::Duration::from_secs(60));
                if done.load(Ordering::Relaxed) {
                    return;
                }
                let now = beat.load(Ordering::Relaxed);
                if now == last {
                    eprintln!("hang: {}", current.lock().unwrap());
                    std::process::abort();
                }
                last = now;
            }
        });
    }
    let mut failures = Vec::new();
    let mut trials = 0usize;
    for (ci, (page_size, cfg)) in sealed_configs().into_iter().enumerate() {
        if only.is_some_and(|o| o != ci) {
            continue;
        }
        // One generator per configuration, so that `CONFIG=i` with the same seed repeats it.
        let mut rng =
            fastrand::Rng::with_seed(seed ^ (ci as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let good = sealed_file(page_size, cfg);
        let kinds = kinds(&good, page_size);
        for k in [
            PageKind::Meta,
            PageKind::FreeList,
            PageKind::Branch,
            PageKind::Leaf,
        ] {
            assert!(
                kinds.contains(&Some(k)),
                "config {ci} {cfg:?}: no {k:?} page"
            );
        }
        if cfg.record_type == RecordType::Variable {
            assert!(kinds.contains(&Some(PageKind::Overflow)), "config {ci}");
        }
        let pages = kinds.len();
        // (page, byte, xor mask): every byte twice when long, else a sample biased to the
        // headers, counts and offsets at the start of each page.
        let one = std::env::var("FLIP").ok().map(|f| {
            let v: Vec<usize> = f.split(',').map(|x| x.parse().unwrap()).collect();
            (v[0], v[1], v[2] as u8)
        });
        let flips: Vec<(usize, usize, u8)> = if let Some(one) = one {
            vec![one]
        } else if long {
            (0..pages)
                .flat_map(|p| (8..page_size).flat_map(move |b| [(p, b, 0x01), (p, b, 0xff)]))
                .collect()
        } else {
            let leaves: Vec<usize> = (0..pages)
                .filter(|&p| kinds[p] == Some(PageKind::Leaf))
                .collect();
            (0..240)
                .map(|i| {
                    let p = if i % 4 < 2 {
                        leaves[rng.usize(0..leaves.len())]
                    } else {
                        rng.usize(0..pages)
                    };
                    let b = if i % 2 == 0 {
                        rng.usize(8..64)
                    } else {
                        rng.usize(8..page_size)
                    };
                    (p, b, rng.u8(1..))
                })
                .collect()
        };
        for (p, b, mask) in flips {
            let mut bad = good.clone();
            let page = &mut bad[p * page_size..(p + 1) * page_size];
            page[b] ^= mask;
            seal(p as u64, page);
            let what = format!(
                "config {ci} ({cfg:?}, {page_size} B pages), page {p} ({:?}), byte {b} ^ {mask:#04x}",
                kinds[p]
            );
            *current.lock().unwrap() = what.clone();
            beat.fetch_add(1, Ordering::Relaxed);
            trials += 1;
            match catch_unwind(AssertUnwindSafe(|| probe(bad, page_size, cfg))) {
                Ok(faults) => {
                    for f in faults {
                        failures.push((summary_key(ci, kinds[p], &f), format!("{what}: {f}")));
                    }
                }
                Err(e) => {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    let f = format!("panic: {msg}");
                    failures.push((summary_key(ci, kinds[p], &f), format!("{what}: {f}")));
                }
            }
        }
    }
    eprintln!("{trials} sealed flips, {} failures", failures.len());
    // A summary by configuration, page kind and kind of fault (numbers dropped), then examples.
    let mut summary: BTreeMap<String, usize> = BTreeMap::new();
    for (key, _) in &failures {
        *summary.entry(key.clone()).or_default() += 1;
    }
    for (k, n) in &summary {
        eprintln!("{n:6} x {k}");
    }
    for (_, f) in failures.iter().take(40) {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "SEED={seed}: {} failures",
        failures.len()
    );
}
