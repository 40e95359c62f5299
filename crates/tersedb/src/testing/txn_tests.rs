//! Transaction-layer tests over the in-memory pager stand-in: catalog operations, config checks,
//! commit/abort visibility, write cursor erase.

use super::mem_pages::MemPager;
use crate::storage::Page;
use crate::txn::{ReadTxn, WriteTxn};
use crate::{DbConfig, Durability, Error, Key, KeyBuf, KeyType, RecordType};

fn w(p: &std::sync::Arc<MemPager>) -> WriteTxn {
    WriteTxn::new(Box::new(p.write()), Durability::None)
}
fn r(p: &std::sync::Arc<MemPager>) -> ReadTxn {
    ReadTxn::new(Box::new(p.read()))
}

#[test]
fn catalog_create_list_rename_drop() {
    let p = MemPager::new(512);
    let mut t = w(&p);
    let a = t.create_db("a", DbConfig::u32_set()).unwrap();
    let b = t
        .create_db("b", DbConfig::raw(KeyType::VarBinary, RecordType::Variable))
        .unwrap();
    assert!(matches!(
        t.create_db("a", DbConfig::u32_set()),
        Err(Error::DbExists(_))
    ));
    for i in 0..2000u32 {
        t.insert(&a, i, &[]).unwrap();
        t.insert(&b, format!("k{i}").as_str(), &vec![7u8; (i % 300) as usize])
            .unwrap();
    }
    t.commit().unwrap();
    let rt = r(&p);
    let names: Vec<String> = rt.list_dbs().unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(rt.len(&a).unwrap(), 2000);
    assert!(matches!(
        rt.open_db_with("a", DbConfig::raw(KeyType::U64, RecordType::None)),
        Err(Error::ConfigMismatch { .. })
    ));
    let mut t = w(&p);
    t.rename_db("a", "c").unwrap();
    assert!(matches!(t.len(&a), Err(Error::DbNotFound(_))));
    let c = t.open_db("c").unwrap();
    assert_eq!(t.len(&c).unwrap(), 2000);
    assert!(matches!(t.rename_db("b", "c"), Err(Error::DbExists(_))));
    t.drop_db("b").unwrap();
    t.commit().unwrap();
    // The old snapshot still sees everything.
    assert_eq!(rt.get(&b, "k5").unwrap(), Some(vec![7u8; 5]));
    let rt2 = r(&p);
    let names: Vec<String> = rt2.list_dbs().unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(names, ["c"]);
    assert!(rt2.contains(&c, 1999u32).unwrap());
    // Dropping the last database frees everything but the catalog.
    let mut t = w(&p);
    t.drop_db("c").unwrap();
    t.commit().unwrap();
    assert!(r(&p).list_dbs().unwrap().is_empty());
}

#[test]
fn abort_leaves_nothing() {
    let p = MemPager::new(4096);
    let mut t = w(&p);
    let d = t.create_db("d", DbConfig::u32_set()).unwrap();
    t.insert(&d, 1u32, &[]).unwrap();
    t.commit().unwrap();
    let mut t = w(&p);
    t.insert(&d, 2u32, &[]).unwrap();
    t.create_db("e", DbConfig::u32_set()).unwrap();
    t.abort();
    let rt = r(&p);
    assert_eq!(rt.len(&d).unwrap(), 1);
    assert!(!rt.contains(&d, 2u32).unwrap());
    assert!(matches!(rt.open_db("e"), Err(Error::DbNotFound(_))));
}

#[test]
fn write_cursor_erases_and_moves_on() {
    let p = MemPager::new(512);
    let mut t = w(&p);
    let d = t
        .create_db("d", DbConfig::raw(KeyType::U64, RecordType::Fixed(4)))
        .unwrap();
    for i in 0..500u64 {
        t.append(&d, i, &(i as u32).to_le_bytes()).unwrap();
    }
    assert!(matches!(
        t.append(&d, 3u64, &[0; 4]),
        Err(Error::InvalidKey(_))
    ));
    {
        let mut c = t.cursor_mut(&d).unwrap();
        assert!(c.first().unwrap());
        // Erase every even key.
        loop {
            let k = c.key().unwrap().as_u64().unwrap();
            if k % 2 == 0 {
                if !c.erase().unwrap() {
                    break;
                }
            } else if !c.next().unwrap() {
                break;
            }
        }
    }
    assert_eq!(t.len(&d).unwrap(), 250);
    let got: Vec<KeyBuf> = t.iter(&d).unwrap().map(|x| x.unwrap().0).collect();
    let want: Vec<KeyBuf> = (0..500u64)
        .filter(|k| k % 2 == 1)
        .map(KeyBuf::U64)
        .collect();
    assert_eq!(got, want);
    let r: Vec<u64> = t
        .range(&d, 100u64..=111)
        .unwrap()
        .map(|x| x.unwrap().0.as_key().as_u64().unwrap())
        .collect();
    assert_eq!(r, [101, 103, 105, 107, 109, 111]);
    let r: Vec<u64> = t
        .range(
            &d,
            (
                std::ops::Bound::Excluded(101u64),
                std::ops::Bound::Excluded(107u64),
            ),
        )
        .unwrap()
        .map(|x| x.unwrap().0.as_key().as_u64().unwrap())
        .collect();
    assert_eq!(r, [103, 105]);
    assert_eq!(
        t.get(&d, Key::U64(7)).unwrap(),
        Some(7u32.to_le_bytes().to_vec())
    );
    t.commit().unwrap();
}

#[test]
fn check_finds_clean_trees_and_broken_order() {
    use crate::check::{check_trees, CheckReport, Owners};
    use crate::txn::Snapshot;
    let p = MemPager::new(512);
    let mut t = w(&p);
    let d = t
        .create_db("d", DbConfig::raw(KeyType::U32, RecordType::Variable))
        .unwrap();
    for i in 0..3000u32 {
        let v = vec![1u8; if i % 97 == 0 { 2000 } else { 3 }];
        t.insert(&d, i * 7, &v).unwrap();
    }
    t.commit().unwrap();
    let snap = p.read();
    let mut owners = Owners::default();
    let mut rep = CheckReport::default();
    check_trees(&snap, snap.root(), &mut owners, &mut rep);
    assert!(rep.is_clean(), "{rep}");
    assert_eq!(rep.dbs[0].stats.key_count, 3000);
    assert!(rep.dbs[0].stats.height >= 3);
    assert!(rep.dbs[0].stats.overflow_pages > 0);
    let live: Vec<_> = p.state.lock().unwrap().pages.keys().copied().collect();
    assert!(live.iter().all(|id| owners.contains(*id)));
    assert_eq!(
        live.len() as u64,
        rep.catalog_pages + rep.dbs[0].stats.bytes / 512
    );

    // Swap the first two keys of some leaf: check names that page.
    let mut st = (**p.state.lock().unwrap()).clone();
    let (&victim, page) = st
        .pages
        .iter()
        .find(|(_, pg)| {
            pg[8] == 4 && u32::from_le_bytes(pg[12..16].try_into().unwrap()) > 2 && pg[9] == 1
        })
        .unwrap();
    let mut bytes = page.to_vec();
    let (a, b) = (bytes[16..20].to_vec(), bytes[20..24].to_vec());
    bytes[16..20].copy_from_slice(&b);
    bytes[20..24].copy_from_slice(&a);
    st.pages.insert(victim, Page::new(bytes.into()));
    *p.state.lock().unwrap() = std::sync::Arc::new(st);
    let snap = p.read();
    let mut rep = CheckReport::default();
    check_trees(&snap, snap.root(), &mut Owners::default(), &mut rep);
    assert!(rep.faults.iter().any(|f| f.page == Some(victim)), "{rep}");
    assert!(matches!(rep.into_result(), Err(Error::Corrupted { page, .. }) if page == victim));
}

#[test]
fn env_check_accounts_for_every_page_and_dump_describes_nodes() {
    let (env, p) = super::mem_pages::mem_env(512);
    let mut t = env.begin_write().unwrap();
    let d = t
        .create_db("d", DbConfig::raw(KeyType::VarBinary, RecordType::Variable))
        .unwrap();
    for i in 0..500u32 {
        t.insert(
            &d,
            format!("key{i:05}").as_str(),
            &vec![3u8; (i as usize * 13) % 900],
        )
        .unwrap();
    }
    t.commit().unwrap();
    let mut t = env.begin_write().unwrap();
    for i in (0..500u32).step_by(3) {
        assert!(t.erase(&d, format!("key{i:05}").as_str()).unwrap());
    }
    t.commit().unwrap();
    let rep = env.check().unwrap();
    assert!(rep.is_clean(), "{rep}");
    assert_eq!(rep.dbs[0].stats.key_count, 333);
    let st = p.state.lock().unwrap().clone();
    let (&leaf, _) = st
        .pages
        .iter()
        .find(|(_, pg)| pg[8] == 4 && pg[9] == 4)
        .unwrap();
    let s = env.describe_page(leaf).unwrap();
    assert!(
        s.contains("leaf") && s.contains("database \"d\"") || s.contains("the catalog"),
        "{s}"
    );
    // A leaked page is reported.
    let mut st2 = (*st).clone();
    st2.next += 1;
    *p.state.lock().unwrap() = std::sync::Arc::new(st2);
    let rep = env.check().unwrap();
    assert_eq!(rep.faults.len(), 1, "{rep}");
    assert!(rep.faults[0].what.contains("leaked"));
}

/// Pages are untrusted: with checksums out of the way (the stand-in pager has none), flip bytes
/// of tree pages and run reads, scans, writes and check. Every outcome must be a result — an
/// error or an answer — never a panic or a hang.
#[test]
fn flipped_bytes_never_panic() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let configs = [
        DbConfig::raw(KeyType::U32, RecordType::Variable),
        DbConfig::raw(KeyType::VarBinary, RecordType::Fixed(4)),
        DbConfig::raw(KeyType::Binary(3), RecordType::None),
    ];
    for cfg in configs {
        let (env, p) = super::mem_pages::mem_env(512);
        let mut t = env.begin_write().unwrap();
        let d = t.create_db("d", cfg).unwrap();
        for i in 0..400u32 {
            let k: KeyBuf = match cfg.key_type {
                KeyType::U32 => KeyBuf::U32(i * 5),
                KeyType::Binary(_) => KeyBuf::Bytes(i.to_be_bytes()[1..].to_vec()),
                _ => KeyBuf::Bytes(format!("k{i}").into_bytes()),
            };
            let v = match cfg.record_type {
                RecordType::Fixed(n) => vec![1u8; n as usize],
                RecordType::None => vec![],
                RecordType::Variable => vec![2u8; (i as usize * 37) % 1500],
            };
            t.insert(&d, &k, &v).unwrap();
        }
        t.commit().unwrap();
        let good = p.state.lock().unwrap().clone();
        let ids: Vec<_> = good.pages.keys().copied().collect();
        for _ in 0..300 {
            let mut st = (*good).clone();
            for _ in 0..rng.usize(1..4) {
                let id = ids[rng.usize(0..ids.len())];
                let mut b = st.pages[&id].to_vec();
                let at = rng.usize(8..b.len());
                b[at] ^= 1 << rng.u8(0..8);
                if rng.u8(0..4) == 0 {
                    b[at] = [0, 0xff, 1, 2][rng.usize(0..4)];
                }
                st.pages.insert(id, Page::new(b.into()));
            }
            *p.state.lock().unwrap() = std::sync::Arc::new(st);
            let r = env.begin_read().unwrap();
            let _ = r.len(&d);
            for _ in 0..5 {
                let k = rng.u32(0..2100);
                let _ = match cfg.key_type {
                    KeyType::U32 => r.get(&d, k),
                    KeyType::Binary(_) => r.get(&d, &k.to_be_bytes()[1..]),
                    _ => r.get(&d, format!("k{k}").as_str()),
                };
            }
            if let Ok(it) = r.iter(&d) {
                let _ = it.take(1000).count();
            }
            if let Ok(mut c) = r.cursor(&d) {
                if c.last().unwrap_or(false) {
                    for _ in 0..600 {
                        if !c.prev().unwrap_or(false) {
                            break;
                        }
                    }
                }
            }
            let _ = env.check();
            let _ = r.stats(&d);
            drop(r);
            let mut t = env.begin_write().unwrap();
            for i in 0..20u32 {
                let _ = match cfg.key_type {
                    KeyType::U32 => t.erase(&d, i * 50),
                    KeyType::Binary(_) => t.erase(&d, &(i * 10).to_be_bytes()[1..]),
                    _ => t.erase(&d, format!("k{}", i * 10).as_str()),
                };
            }
            t.abort();
        }
    }
}
