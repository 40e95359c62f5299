//! Corruption at pager level: flip every byte of a small database file (meta pages, chain
//! pages, free-list pages) and open it read-write and read-only, then read the root chain and
//! the free list. Each must return an error or a correct answer — the last commit, or the one
//! before when a meta page was hit — and never panic.

mod storage_common;

use storage_common::{read_chain, write_chain};
use tersedb::storage::{Durability, MemStorage, Pager, PagerOptions};
use tersedb::Error;

const PAGE: usize = 512;

fn opts(read_only: bool) -> PagerOptions {
    PagerOptions {
        page_size: PAGE,
        cache_bytes: 0,
        read_only,
    }
}

fn small_file() -> (Vec<u8>, Vec<u64>, Vec<u64>) {
    let mem = MemStorage::new();
    let pager = Pager::create(Box::new(mem.clone()), &opts(false)).unwrap();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &(0..70).collect::<Vec<u64>>()); // frees 70 pages below: 2 list pages
    w.commit(Durability::Immediate).unwrap();
    let previous: Vec<u64> = (100..104).collect();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &previous);
    w.commit(Durability::Immediate).unwrap();
    let last: Vec<u64> = (200..205).collect();
    let mut w = pager.begin_write().unwrap();
    write_chain(&mut w, &last);
    w.commit(Durability::Immediate).unwrap();
    let m = pager.meta();
    assert!(m.freelist_pages >= 2, "{m:?}");
    drop(pager);
    (mem.to_bytes(), last, previous)
}

/// Opens `bytes` and reads everything; Ok(chain) or the first error.
fn read_all(bytes: Vec<u8>, read_only: bool) -> tersedb::Result<Vec<u64>> {
    let pager = Pager::open(Box::new(MemStorage::from_bytes(bytes)), &opts(read_only))?;
    let r = pager.begin_read()?;
    let chain = read_chain(&r, r.root())?;
    let space = r.space()?;
    assert_eq!(space.page_count, r.page_count());
    Ok(chain)
}

#[test]
fn flip_every_byte() {
    let (file, last, previous) = small_file();
    assert_eq!(read_all(file.clone(), false).unwrap(), last);
    let mut errors = 0;
    let mut fallbacks = 0;
    for at in 0..file.len() {
        for mask in [0x01u8, 0xFF] {
            let mut bad = file.clone();
            bad[at] ^= mask;
            for read_only in [false, true] {
                match read_all(bad.clone(), read_only) {
                    Ok(chain) if chain == last => {}
                    Ok(chain) if chain == previous && at < 2 * PAGE => fallbacks += 1,
                    Ok(chain) => panic!("byte {at} ^ {mask:#x}: wrong answer {chain:?}"),
                    Err(Error::Corrupted { .. }) | Err(Error::BadFormat(_)) => errors += 1,
                    Err(e) => panic!("byte {at} ^ {mask:#x}: unexpected error {e:?}"),
                }
            }
        }
    }
    // Sanity: the sweep did hit live pages and the current meta page.
    assert!(errors > 1000, "{errors}");
    assert!(fallbacks > 100, "{fallbacks}");
}

#[test]
fn truncated_and_foreign_files() {
    let (file, last, _) = small_file();
    for len in [
        0,
        1,
        100,
        PAGE,
        2 * PAGE - 1,
        2 * PAGE,
        file.len() - PAGE,
        file.len() - 1,
    ] {
        let r = read_all(file[..len].to_vec(), true);
        assert!(
            matches!(r, Err(Error::Corrupted { .. }) | Err(Error::BadFormat(_))) || r.is_ok(),
            "len {len}: {r:?}"
        );
        if let Ok(chain) = r {
            assert_eq!(chain, last, "len {len}");
        }
    }
    assert!(matches!(
        read_all(vec![0; 8192], false),
        Err(Error::BadFormat(_))
    ));
    assert!(matches!(
        read_all(b"SQLite format 3\0".repeat(100), false),
        Err(Error::BadFormat(_))
    ));
    // Both meta pages damaged: Corrupted, not BadFormat.
    let mut bad = file.clone();
    bad[40] ^= 1;
    bad[PAGE + 40] ^= 1;
    assert!(matches!(read_all(bad, true), Err(Error::Corrupted { .. })));
}
