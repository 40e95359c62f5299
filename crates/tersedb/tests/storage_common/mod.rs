//! Helpers shared by the storage tests: a chain of pages hanging off the root, written and
//! read back through the pager, and the page-accounting check.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::Arc;
use tersedb::storage::{PageKind, PageSink, PageSource, Pager, ReadPages, WritePages};

/// Writes a chain of `values.len()` leaf pages (each: next id at 16, value at 24, value bytes
/// repeated over the page) and makes its head the root. Frees the previous chain.
pub fn write_chain(w: &mut WritePages, values: &[u64]) {
    let mut old = w.root();
    while old != 0 {
        let p = w.page(old).unwrap();
        let next = u64::from_le_bytes(p[16..24].try_into().unwrap());
        w.free(old).unwrap();
        old = next;
    }
    let mut next = 0u64;
    for &v in values.iter().rev() {
        let id = w.alloc().unwrap();
        let p = w.page_mut(id).unwrap();
        p[8] = PageKind::Leaf as u8;
        p[16..24].copy_from_slice(&next.to_le_bytes());
        p[24..32].copy_from_slice(&v.to_le_bytes());
        for b in p[32..].iter_mut() {
            *b = v as u8;
        }
        next = id;
    }
    w.set_root(next);
}

pub fn read_chain(r: &dyn PageSource, root: u64) -> tersedb::Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut id = root;
    while id != 0 {
        let p = r.page(id)?;
        assert_eq!(p.len(), r.page_size());
        let v = u64::from_le_bytes(p[24..32].try_into().unwrap());
        assert!(p[32..].iter().all(|&b| b == v as u8), "page {id} content");
        out.push(v);
        id = u64::from_le_bytes(p[16..24].try_into().unwrap());
        assert!(out.len() < 100_000, "cycle");
    }
    Ok(out)
}

pub fn snapshot(pager: &Arc<Pager>) -> Vec<u64> {
    let r = pager.begin_read().unwrap();
    read_chain(&r, r.root()).unwrap()
}

/// Every page below the page count is a meta page, on the chain, free, or a free-list page.
pub fn assert_accounting(r: &ReadPages) {
    let space = r.space().unwrap();
    let mut seen = BTreeSet::from([0u64, 1]);
    let mut id = r.root();
    while id != 0 {
        assert!(seen.insert(id), "page {id} twice");
        let p = r.page(id).unwrap();
        id = u64::from_le_bytes(p[16..24].try_into().unwrap());
    }
    for &f in space.free.iter().chain(&space.freelist_pages) {
        assert!(seen.insert(f), "page {f} twice");
    }
    assert_eq!(seen.len() as u64, space.page_count, "{space:?}");
    assert_eq!(*seen.last().unwrap(), space.page_count - 1);
}

/// The seed for a randomized test: `SEED` from the environment, else `default`. Printed.
pub fn seed(default: u64) -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    eprintln!("SEED={s}");
    s
}

/// Whether long runs are enabled (`TERSEDB_LONG=1`).
pub fn long() -> bool {
    std::env::var("TERSEDB_LONG").is_ok_and(|v| v == "1")
}
