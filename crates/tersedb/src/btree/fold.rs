//! Aggregates over a key range computed inside the tree (seed 000's closing recommendation):
//! the descent visits only the subtrees whose separators overlap the range, and each leaf is
//! folded in place, never copied out through a cursor. In a compressed leaf the block index is a
//! zone map: a block wholly inside the range answers COUNT, MIN and MAX from its descriptor, SUM
//! is folded by the codec through a small buffer that stays in L1, and only the (at most two)
//! boundary blocks of the range are searched.

use super::node::Layout;
use super::{Key, Spec, MAX_DEPTH};
use crate::error::{PageId, Result};
use crate::storage::PageSource;

pub use super::zone::{FoldSpec, KeyFold, PLAIN_BLOCK};

/// Folds the u32 or u64 keys in `[lo, hi]` of the tree at `root`.
pub fn fold_keys<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    fs: FoldSpec,
) -> Result<KeyFold> {
    fold_keys_counted(src, spec, root, fs).map(|f| f.keys)
}

/// A fold with the number of leaves it visited (the query executor's statistics).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Folded {
    pub keys: KeyFold,
    pub leaves: u64,
}

/// [`fold_keys`] counting the leaves visited: one descent, the query executor's path for key
/// aggregates over one interval.
pub(crate) fn fold_keys_counted<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    fs: FoldSpec,
) -> Result<Folded> {
    let mut out = Folded::default();
    if root != 0 && fs.lo <= fs.hi {
        node(src, spec, root, 0, fs, &mut out)?;
    }
    Ok(out)
}

fn node<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    id: PageId,
    depth: usize,
    fs: FoldSpec,
    out: &mut Folded,
) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(super::node::corrupt(id, "tree too deep"));
    }
    let page = src.page(id)?;
    let l = Layout::open(&page, id, spec)?;
    if l.leaf {
        out.leaves += 1;
        return leaf(&page, &l, fs, &mut out.keys);
    }
    // Children i covers [key i-1, key i): visit those overlapping [lo, hi].
    let int = |i: usize| l.int_key(&page, i);
    let first = match l.search(&page, &probe(spec, fs.lo))? {
        Ok(i) => i + 1,
        Err(i) => i,
    };
    for c in first..=l.count {
        if c > 0 && int(c - 1)? > fs.hi {
            break;
        }
        node(src, spec, l.child(&page, c)?, depth + 1, fs, out)?;
    }
    Ok(())
}

fn probe(spec: &Spec, v: u64) -> Key<'static> {
    match spec.key_type {
        super::KeyType::U32 => Key::U32(v.min(u32::MAX as u64) as u32),
        _ => Key::U64(v),
    }
}

/// Folds one leaf's keys in `[fs.lo, fs.hi]` into `out` (also the query executor's path for
/// leaves that need no per-row work).
pub(crate) fn leaf(page: &[u8], l: &Layout, fs: FoldSpec, out: &mut KeyFold) -> Result<()> {
    l.keys
        .fold_range(l.kregion(page), l.count, fs, out)
        .map_err(|f| l.err(f))
}
