//! Model-based test of the pager (proptest): random sequences of commits (both durabilities),
//! aborts, read snapshots taken and dropped, and reopens, against a model of the committed
//! chain. After every step each live snapshot still reads exactly what it saw when it began,
//! and the newest commit accounts for every page exactly once: meta pages, the root chain, the
//! free pages and the free-list pages together are `0..page_count`.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;
use tersedb::storage::{
    Durability, MemStorage, PageKind, PageSink, PageSource, Pager, PagerOptions, ReadPages,
    WritePages, PAGE_KIND_OFFSET,
};

const PS: usize = 512;

fn opts() -> PagerOptions {
    PagerOptions {
        page_size: PS,
        cache_bytes: 8 * PS,
        read_only: false,
        recover: false,
    }
}

#[derive(Clone, Debug)]
enum Op {
    Commit {
        len: usize,
        durable: bool,
        keep: usize,
    },
    Abort {
        len: usize,
    },
    BeginRead,
    DropRead(usize),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..90, any::<bool>(), 0usize..4)
            .prop_map(|(len, durable, keep)| Op::Commit { len, durable, keep }),
        1 => (0usize..40).prop_map(|len| Op::Abort { len }),
        2 => Just(Op::BeginRead),
        2 => (0usize..8).prop_map(Op::DropRead),
        1 => Just(Op::Reopen),
    ]
}

/// Rewrites the chain: keeps its first `keep` pages (shared with older commits), replaces the
/// rest copy-on-write or with fresh pages, and makes it `len` long. Values are `tag * 1000 + i`.
fn rewrite(w: &mut WritePages, len: usize, keep: usize, tag: u64) {
    let mut old = Vec::new();
    let mut id = w.root();
    while id != 0 {
        old.push(id);
        id = u64::from_le_bytes(w.page(id).unwrap()[16..24].try_into().unwrap());
    }
    let keep = keep.min(len).min(old.len());
    // A kept page still links to its old successor: cow the last kept one to relink.
    let mut ids: Vec<u64> = old[..keep].to_vec();
    for &o in &old[keep..] {
        w.free(o).unwrap();
    }
    while ids.len() < len {
        ids.push(w.alloc().unwrap());
    }
    if keep > 0 {
        ids[keep - 1] = w.cow(ids[keep - 1]).unwrap();
    }
    for i in (0..keep.saturating_sub(1)).rev() {
        // Every kept page before a changed successor must be copied to relink it.
        ids[i] = w.cow(ids[i]).unwrap();
    }
    for (i, &id) in ids.iter().enumerate() {
        let next = ids.get(i + 1).copied().unwrap_or(0);
        let p = w.page_mut(id).unwrap();
        p[PAGE_KIND_OFFSET] = PageKind::Leaf as u8;
        p[16..24].copy_from_slice(&next.to_le_bytes());
        if i >= keep {
            p[24..32].copy_from_slice(&(tag * 1000 + i as u64).to_le_bytes());
        }
    }
    w.set_root(ids.first().copied().unwrap_or(0));
}

fn read(src: &dyn PageSource, root: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut id = root;
    while id != 0 {
        let p = src.page(id).unwrap();
        out.push(u64::from_le_bytes(p[24..32].try_into().unwrap()));
        id = u64::from_le_bytes(p[16..24].try_into().unwrap());
        assert!(out.len() < 1000, "cycle");
    }
    out
}

fn account(pager: &Arc<Pager>) {
    let r = pager.begin_read().unwrap();
    let (free, list) = r.free_pages().unwrap();
    let [c0, c1] = r.meta().copies;
    let mut seen = BTreeSet::from([0u64, 1, c0, c1]);
    let mut id = r.root();
    while id != 0 {
        assert!(seen.insert(id), "chain page {id} twice");
        id = u64::from_le_bytes(r.page(id).unwrap()[16..24].try_into().unwrap());
    }
    for p in free.into_iter().chain(list) {
        assert!(seen.insert(p), "page {p} counted twice");
    }
    let count = r.meta().page_count;
    assert_eq!(seen.len() as u64, count, "pages leaked");
    assert_eq!(seen.last().copied(), Some(count - 1));
}

fn run(ops: Vec<Op>) {
    let disk = MemStorage::new();
    let mut pager = Pager::create(Box::new(disk.clone()), &opts()).unwrap();
    let mut model: Vec<u64> = Vec::new();
    let mut readers: Vec<(ReadPages, Vec<u64>)> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        let tag = step as u64 + 1;
        match op {
            Op::Commit { len, durable, keep } => {
                let mut w = pager.begin_write().unwrap();
                rewrite(&mut w, len, keep, tag);
                let expect = read(&w, w.root());
                let d = if durable {
                    Durability::Immediate
                } else {
                    Durability::None
                };
                w.commit(d).unwrap();
                model = expect;
            }
            Op::Abort { len } => {
                let mut w = pager.begin_write().unwrap();
                rewrite(&mut w, len, 0, tag);
                w.abort();
            }
            Op::BeginRead => {
                let r = pager.begin_read().unwrap();
                readers.push((r, model.clone()));
            }
            Op::DropRead(i) => {
                if !readers.is_empty() {
                    readers.remove(i % readers.len());
                }
            }
            Op::Reopen => {
                readers.clear();
                drop(pager);
                pager = Pager::open(Box::new(disk.clone()), &opts()).unwrap();
            }
        }
        for (r, seen) in &readers {
            assert_eq!(&read(r, r.root()), seen, "step {step}: a snapshot changed");
        }
        assert_eq!(
            read(&pager.begin_read().unwrap(), pager.meta().root),
            model,
            "step {step}"
        );
        account(&pager);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        if std::env::var("TERSEDB_LONG").is_ok_and(|v| v == "1") { 2000 } else { 96 }
    ))]
    #[test]
    fn pager_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops);
    }
}
