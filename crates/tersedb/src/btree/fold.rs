//! Aggregates over a key range computed inside the tree (seed 000's closing recommendation):
//! the descent visits only the subtrees whose separators overlap the range, and each leaf is
//! folded in place, never copied out through a cursor. In a compressed leaf the block index is a
//! zone map: a block wholly inside the range answers COUNT, MIN and MAX from its descriptor, SUM
//! is folded by the codec through a small buffer that stays in L1, and only the (at most two)
//! boundary blocks of the range are searched.

use super::node::Layout;
use super::packed::Packed;
use super::slots::{le_u32, le_u64};
use super::{Key, KeyList, Spec, MAX_DEPTH};
use crate::error::{PageId, Result};
use crate::storage::PageSource;

/// Slots per block of a plain (uncompressed) leaf, as scans and folds count blocks.
pub const PLAIN_BLOCK: usize = 256;

/// COUNT, SUM, MIN and MAX of the keys in a range. SUM is exact (128 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyFold {
    pub count: u64,
    /// Exact sum of the keys; only meaningful when the fold was asked for it.
    pub sum: u128,
    pub min: Option<u64>,
    pub max: Option<u64>,
    /// Blocks whose keys were decoded, summed or searched (plain leaves count in 256-slot
    /// blocks, as [`crate::btree::scan`] lists them).
    pub blocks_decoded: u64,
    /// Blocks answered from the index alone (COUNT/MIN/MAX only).
    pub blocks_skipped: u64,
}

impl KeyFold {
    fn add(&mut self, count: u64, sum: u128, min: u64, max: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.sum += sum;
        self.min = Some(self.min.map_or(min, |m| m.min(min)));
        self.max = Some(self.max.map_or(max, |m| m.max(max)));
    }
}

/// What to compute: with `sum == false`, blocks wholly in the range are not decoded.
#[derive(Clone, Copy, Debug)]
pub struct FoldSpec {
    pub lo: u64,
    /// Inclusive upper bound.
    pub hi: u64,
    pub sum: bool,
}

/// Folds the u32 or u64 keys in `[lo, hi]` of the tree at `root`.
pub fn fold_keys<S: PageSource + ?Sized>(
    src: &S,
    spec: &Spec,
    root: PageId,
    fs: FoldSpec,
) -> Result<KeyFold> {
    let mut out = KeyFold::default();
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
    out: &mut KeyFold,
) -> Result<()> {
    if depth >= MAX_DEPTH {
        return Err(super::node::corrupt(id, "tree too deep"));
    }
    let page = src.page(id)?;
    let l = Layout::read(&page, id, spec)?;
    if l.leaf {
        return leaf(&page, &l, fs, out);
    }
    // Children i covers [key i-1, key i): visit those overlapping [lo, hi].
    let int = |i: usize| -> Result<u64> {
        l.key(&page, i)?
            .as_u64()
            .ok_or_else(|| super::node::corrupt(id, "fold over non-integer keys"))
    };
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
    match l.keys {
        KeyList::Packed(p) => packed_leaf(page, l, p, fs, out),
        KeyList::U32 | KeyList::U64 => {
            let w = if let KeyList::U32 = l.keys { 4 } else { 8 };
            let keys = l
                .kregion(page)
                .get(..w * l.count)
                .ok_or_else(|| l.err(super::slots::Fault("key list longer than its region")))?;
            let at = |i: usize| {
                if w == 4 {
                    le_u32(&keys[4 * i..]) as u64
                } else {
                    le_u64(&keys[8 * i..])
                }
            };
            // A leaf whose ends lie in the range (every inner leaf of a long range) needs no
            // search.
            let n = l.count;
            let a = if n == 0 || at(0) >= fs.lo {
                0
            } else {
                partition(n, |i| at(i) < fs.lo)
            };
            let b = if n == 0 || at(n - 1) <= fs.hi {
                n
            } else {
                partition(n, |i| at(i) <= fs.hi)
            };
            if a < b {
                let bytes = &keys[w * a..w * b];
                let sum: u128 = if !fs.sum {
                    0
                } else if w == 4 {
                    // A leaf holds far fewer than 2^32 keys: the sum fits a u64.
                    tersedb_codecs::sum::sum_le_u32(bytes) as u128
                } else {
                    bytes.chunks_exact(8).map(|c| le_u64(c) as u128).sum()
                };
                out.add((b - a) as u64, sum, at(a), at(b - 1));
                // In 256-slot blocks: the partly covered ones are searched; whole ones are
                // summed, or answered from the slot array's ends.
                let (c0, c1) = (a / PLAIN_BLOCK, (b - 1) / PLAIN_BLOCK);
                let whole =
                    |c: usize| c * PLAIN_BLOCK >= a && ((c + 1) * PLAIN_BLOCK).min(l.count) <= b;
                let chunks = (c1 - c0 + 1) as u64;
                let partial = if c0 == c1 {
                    u64::from(!whole(c0))
                } else {
                    u64::from(!whole(c0)) + u64::from(!whole(c1))
                };
                if fs.sum {
                    out.blocks_decoded += chunks;
                } else {
                    out.blocks_decoded += partial;
                    out.blocks_skipped += chunks - partial;
                }
            }
            Ok(())
        }
        _ => {
            for i in 0..l.count {
                if let Some(k) = l.key(page, i)?.as_u64() {
                    if k >= fs.lo && k <= fs.hi {
                        out.add(1, k as u128, k, k);
                    }
                }
            }
            Ok(())
        }
    }
}

/// The first index in `0..n` where `pred` turns false (`pred` is true then false).
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn packed_leaf(page: &[u8], l: &Layout, p: Packed, fs: FoldSpec, out: &mut KeyFold) -> Result<()> {
    let region = l.kregion(page);
    // The codec's block sum (BP128, SIMD FOR), chosen once for the leaf.
    let summer = tersedb_codecs::sum::BlockSum::new(tersedb_codecs::Isa::detect(), p.codec);
    if !fs.sum || summer.is_some() {
        // A leaf wholly in the range answers COUNT/MIN/MAX from the ends of its block index
        // and the descriptors' counts (no block walked), and SUM in one loop over the
        // descriptors.
        let range = Packed::key_range(region).map_err(|f| l.err(f))?;
        if let Some((first, last)) = range {
            if first as u64 >= fs.lo && last as u64 <= fs.hi {
                if !fs.sum {
                    let (keys, blocks) = Packed::counts(region).map_err(|f| l.err(f))?;
                    out.blocks_skipped += blocks as u64;
                    out.add(keys as u64, 0, first as u64, last as u64);
                    return Ok(());
                }
                if let Some(summer) = &summer {
                    let all = Packed::sum_all(region, summer).map_err(|f| l.err(f))?;
                    if let Some((keys, sum, blocks)) = all {
                        out.blocks_decoded += blocks;
                        out.add(keys, sum, first as u64, last as u64);
                        return Ok(());
                    }
                }
            }
        }
    }
    let mut buf = [0u32; super::packed::MAX_BLOCK_KEYS];
    // Start at the block holding `lo` (the index is searched, not walked).
    let from = if fs.lo == 0 {
        0
    } else {
        Packed::seek_block(region, fs.lo.min(u32::MAX as u64) as u32).map_err(|f| l.err(f))?
    };
    // This leaf's part, added to `out` once at the end: keys arrive in ascending order, so
    // the first key added is the minimum and the last the maximum.
    let mut part = KeyFold::default();
    let (mut min, mut max) = (0u64, 0u64);
    let mut add = |n: u64, sum: u128, first: u64, last: u64| {
        if part.count == 0 {
            min = first;
        }
        part.count += n;
        part.sum += sum;
        max = last;
    };
    let walked = Packed::walk_blocks(region, from, |_, blk| {
        let d = &blk.desc;
        if d.count == 0 {
            return Ok(true);
        }
        let (first, last) = (d.start as u64, d.last as u64);
        if last < fs.lo {
            return Ok(true);
        }
        if first > fs.hi {
            return Ok(false);
        }
        let payload = region
            .get(blk.at.clone())
            .ok_or(super::slots::Fault("compressed block outside its region"))?;
        if first >= fs.lo && last <= fs.hi {
            if !fs.sum {
                part.blocks_skipped += 1;
                add(d.count as u64, 0, first, last);
                return Ok(true);
            }
            part.blocks_decoded += 1;
            if let Some(s) = summer.as_ref().and_then(|b| b.sum(d, payload)) {
                // Summed in registers from the packed values (BP128, SIMD FOR).
                add(d.count as u64, s as u128, first, last);
                return Ok(true);
            }
            // Decode (SIMD, prefix sum fused) into the L1-resident buffer and add up.
            let n = p.decode_block_at(region, &blk, &mut buf)?;
            add(
                n as u64,
                tersedb_codecs::sum::sum_u32(&buf[..n]) as u128,
                first,
                last,
            );
            return Ok(true);
        }
        // A boundary block: decode it and take the keys in range.
        let n = p.decode_block_at(region, &blk, &mut buf)?;
        part.blocks_decoded += 1;
        let keys = &buf[..n];
        let a = keys.partition_point(|&k| (k as u64) < fs.lo);
        let e = keys.partition_point(|&k| (k as u64) <= fs.hi);
        if a < e {
            let sum = tersedb_codecs::sum::sum_u32(&keys[a..e]);
            add(
                (e - a) as u64,
                sum as u128,
                keys[a] as u64,
                keys[e - 1] as u64,
            );
        }
        Ok(true)
    })
    .map_err(|f| l.err(f));
    out.blocks_decoded += part.blocks_decoded;
    out.blocks_skipped += part.blocks_skipped;
    if part.count > 0 {
        out.add(part.count, part.sum, min, max);
    }
    walked
}
