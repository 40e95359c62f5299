//! Tree-level model tests over [`MemSink`]: random insert/upsert/append/erase/get/cursor/commit
//! sequences against a `BTreeMap`, for every key and record type, on small and default pages.
//! Also checks page accounting: the live pages are exactly the pages reachable from the root.
//! Seeded: prints the seed; re-run one with `SEED=n`.

use super::cursor::RawCursor;
use super::tree::{self, AppendHint, PutMode};
use super::*;
use crate::error::{Error, PageId};
use crate::testing::mem_pages::MemSink;
use std::collections::{BTreeMap, BTreeSet};

struct H {
    sink: MemSink,
    spec: Spec,
    root: PageId,
    hint: Option<AppendHint>,
    model: BTreeMap<KeyBuf, Vec<u8>>,
    rng: fastrand::Rng,
}

impl H {
    fn new(page_size: usize, kt: KeyType, rt: RecordType, seed: u64) -> H {
        H {
            sink: MemSink::new(page_size),
            spec: Spec::new(page_size, kt, rt).unwrap(),
            root: 0,
            hint: None,
            model: BTreeMap::new(),
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    fn key(&mut self, spread: u64) -> KeyBuf {
        let r = &mut self.rng;
        match self.spec.key_type {
            KeyType::U32 => KeyBuf::U32(r.u64(0..spread) as u32),
            KeyType::U64 => KeyBuf::U64(r.u64(0..spread) * 0x1_0000_0001),
            KeyType::Binary(w) => {
                let v = r.u64(0..spread);
                let mut b = vec![0u8; w as usize];
                for (i, x) in b.iter_mut().enumerate().take(8) {
                    *x = (v >> (8 * (7 - i.min(7)))) as u8;
                }
                KeyBuf::Bytes(b)
            }
            KeyType::VarBinary => {
                let len = if r.u8(0..20) == 0 {
                    self.spec.limits.max_key_len
                } else {
                    r.usize(0..12)
                };
                KeyBuf::Bytes((0..len).map(|_| r.u8(b'a'..b'e')).collect())
            }
        }
    }

    fn value(&mut self) -> Vec<u8> {
        let r = &mut self.rng;
        match self.spec.record_type {
            RecordType::None => vec![],
            RecordType::Fixed(n) => (0..n).map(|_| r.u8(..)).collect(),
            RecordType::Variable => {
                let len = match r.u8(0..10) {
                    0 => self.spec.limits.max_inline_record + r.usize(0..3 * self.spec.page_size),
                    1 => self.spec.limits.max_inline_record,
                    _ => r.usize(0..20),
                };
                (0..len).map(|_| r.u8(..)).collect()
            }
        }
    }

    fn check_all(&mut self) {
        // Full scan both ways equals the model.
        let mut c = RawCursor::new();
        let mut got = Vec::new();
        let mut ok = c.first(&self.sink, &self.spec, self.root).unwrap();
        while ok {
            let k = c.key().unwrap().unwrap().to_owned();
            let v = c.value(&self.sink, &self.spec).unwrap().unwrap();
            got.push((k, v));
            ok = c.next(&self.sink, &self.spec).unwrap();
        }
        let want: Vec<_> = self
            .model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "forward scan differs from the model");
        let mut back = Vec::new();
        let mut ok = c.last(&self.sink, &self.spec, self.root).unwrap();
        while ok {
            back.push(c.key().unwrap().unwrap().to_owned());
            ok = c.prev(&self.sink, &self.spec).unwrap();
        }
        back.reverse();
        assert!(back == want.iter().map(|x| x.0.clone()).collect::<Vec<_>>());
        // Accounting: live pages == reachable pages, each reached once; keys ascending.
        let seen = std::cell::RefCell::new(BTreeSet::new());
        let mut leaf_depth = None;
        tree::walk(
            &self.sink,
            &self.spec,
            self.root,
            &mut |id, depth, _, l| {
                assert!(seen.borrow_mut().insert(id), "page {id} reached twice");
                if l.leaf {
                    assert_eq!(
                        *leaf_depth.get_or_insert(depth),
                        depth,
                        "leaves at different depths"
                    );
                }
                Ok(())
            },
            &mut |id| {
                assert!(
                    seen.borrow_mut().insert(id),
                    "overflow page {id} reached twice"
                );
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(seen.into_inner(), self.sink.live(), "page accounting");
    }

    fn step(&mut self, spread: u64) {
        let op = self.rng.u8(0..100);
        let spec = self.spec;
        match op {
            0..=34 => {
                let k = self.key(spread);
                let v = self.value();
                let r = tree::put(
                    &mut self.sink,
                    &spec,
                    &mut self.root,
                    &k.as_key(),
                    &v,
                    PutMode::Insert,
                    &mut self.hint,
                );
                match r {
                    Ok(true) => assert!(self.model.insert(k, v).is_none()),
                    Err(Error::KeyExists) => assert!(self.model.contains_key(&k)),
                    other => panic!("insert: {other:?}"),
                }
            }
            35..=49 => {
                let k = self.key(spread);
                let v = self.value();
                let new = tree::put(
                    &mut self.sink,
                    &spec,
                    &mut self.root,
                    &k.as_key(),
                    &v,
                    PutMode::Upsert,
                    &mut self.hint,
                )
                .unwrap();
                assert_eq!(new, self.model.insert(k, v).is_none());
            }
            50..=57 => {
                // Append: a key above the max succeeds; anything else is rejected.
                let k = self.key(spread);
                let v = self.value();
                let above = self.model.keys().next_back().is_none_or(|m| &k > m);
                let r = tree::put(
                    &mut self.sink,
                    &spec,
                    &mut self.root,
                    &k.as_key(),
                    &v,
                    PutMode::Append,
                    &mut self.hint,
                );
                match r {
                    Ok(true) => {
                        assert!(above);
                        self.model.insert(k, v);
                    }
                    Err(Error::InvalidKey(_)) => assert!(!above),
                    other => panic!("append: {other:?}"),
                }
            }
            58..=84 => {
                let k = self.key(spread);
                let r = tree::erase(
                    &mut self.sink,
                    &spec,
                    &mut self.root,
                    &k.as_key(),
                    &mut self.hint,
                )
                .unwrap();
                assert_eq!(r, self.model.remove(&k).is_some());
            }
            85..=94 => {
                let k = self.key(spread);
                let got = tree::get(&self.sink, &spec, self.root, &k.as_key()).unwrap();
                assert_eq!(got.as_ref(), self.model.get(&k));
                // Lower-bound seek.
                let mut c = RawCursor::new();
                let ok = c
                    .seek(
                        &self.sink,
                        &spec,
                        self.root,
                        &spec.probe(&k.as_key()).unwrap(),
                        false,
                    )
                    .unwrap();
                let want = self.model.range(k.clone()..).next().map(|x| x.0.clone());
                assert_eq!(ok, want.is_some());
                assert_eq!(c.key().unwrap().map(|k| k.to_owned()), want);
            }
            _ => {
                self.sink.commit();
                self.hint = None;
            }
        }
    }
}

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("SEED={s}");
    s
}

fn run(page_size: usize, kt: KeyType, rt: RecordType, steps: usize, spread: u64) {
    let seed = seed();
    let mut h = H::new(page_size, kt, rt, seed);
    for i in 0..steps {
        h.step(spread);
        if i % 500 == 499 {
            h.check_all();
        }
    }
    h.check_all();
    // Erase everything: the tree becomes empty and every page is freed.
    let keys: Vec<KeyBuf> = h.model.keys().cloned().collect();
    for k in keys {
        let spec = h.spec;
        assert!(tree::erase(&mut h.sink, &spec, &mut h.root, &k.as_key(), &mut h.hint).unwrap());
        h.model.remove(&k);
    }
    // Local balancing may leave empty leaves behind; every node must be empty now, and
    // dropping the tree frees every page.
    let spec = h.spec;
    tree::walk(
        &h.sink,
        &spec,
        h.root,
        &mut |_, _, _, l| {
            assert!(!l.leaf || l.count == 0);
            Ok(())
        },
        &mut |_| Ok(()),
    )
    .unwrap();
    tree::drop_tree(&mut h.sink, &spec, h.root).unwrap();
    h.root = 0;
    assert!(h.sink.live().is_empty());
    h.check_all();
}

const TYPES: [(KeyType, RecordType); 7] = [
    (KeyType::U32, RecordType::None),
    (KeyType::U32, RecordType::Fixed(8)),
    (KeyType::U64, RecordType::Variable),
    (KeyType::Binary(12), RecordType::None),
    (KeyType::Binary(5), RecordType::Variable),
    (KeyType::VarBinary, RecordType::Variable),
    (KeyType::VarBinary, RecordType::Fixed(3)),
];

#[test]
fn model_small_pages_every_type() {
    for (kt, rt) in TYPES {
        eprintln!("{kt:?} {rt:?}");
        run(512, kt, rt, 4000, 600);
    }
}

#[test]
fn model_default_pages_every_type() {
    for (kt, rt) in TYPES {
        eprintln!("{kt:?} {rt:?}");
        run(16384, kt, rt, 3000, 5000);
    }
}

#[test]
fn ascending_append_fills_leaves() {
    let spec = Spec::new(4096, KeyType::U32, RecordType::None).unwrap();
    let mut sink = MemSink::new(4096);
    let (mut root, mut hint) = (0, None);
    let n = 100_000u32;
    for k in 0..n {
        tree::put(
            &mut sink,
            &spec,
            &mut root,
            &Key::U32(k),
            &[],
            PutMode::Insert,
            &mut hint,
        )
        .unwrap();
    }
    let per_leaf = (4096 - LEAF_HEADER) / 4;
    let leaves = (n as usize).div_ceil(per_leaf);
    // Leaves are full; a handful of branches on top.
    assert!(
        sink.live().len() <= leaves + 3,
        "{} pages for {leaves} leaves",
        sink.live().len()
    );
    for k in (0..n).step_by(997) {
        assert!(tree::contains(&sink, &spec, root, &Key::U32(k)).unwrap());
    }
}
