//! Table 4 of the patched-FOR paper on generated inverted lists: PFOR-DELTA against VByte,
//! StreamVByte and BP128 (tersedb's block codecs, blocks of each codec's `MAX_KEYS` document ids,
//! the first id of a block in its 32-bit descriptor start), and a semi-static Huffman code of the
//! d-gaps as the size reference (the paper's `shuff`).
//!
//! Posting lists: term `r` (1-based rank) occurs in `ceil(C / r^1.1)` documents of a collection of
//! `D = 2^22` (Zipf list lengths), at random positions (geometric d-gaps), seeded; lists shorter
//! than 8 postings are dropped (they are stored inline by real indexes).

use super::{Cell, Options, Scale, Table};
use crate::bench::timing::ops_per_sec;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;
use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::pfor::PforDelta;
use tersedb_codecs::streamvbyte::StreamVByte;
use tersedb_codecs::vbyte::VByte;
use tersedb_codecs::{BlockCodec, Descriptor};

const DOCS: u32 = 1 << 22;

/// Posting lists with about `total` postings in all.
pub(crate) fn posting_lists(rng: &mut fastrand::Rng, total: usize) -> Vec<Vec<u32>> {
    // Length of rank r: ceil(c / r^1.1) for ranks while the list has 8+ postings; c is chosen
    // so that the lengths sum to about `total` (capped at DOCS / 2).
    let lengths = |c: f64| -> Vec<usize> {
        (1..)
            .map(|r: u32| (c / (r as f64).powf(1.1)).ceil().min(DOCS as f64 / 2.0) as usize)
            .take_while(|&l| l >= 8)
            .collect()
    };
    let (mut lo, mut hi) = (8.0f64, DOCS as f64);
    for _ in 0..40 {
        let mid = (lo * hi).sqrt();
        if lengths(mid).iter().sum::<usize>() < total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lengths(lo)
        .into_iter()
        .map(|len| {
            // Geometric gaps with mean DOCS / len, clamped into the collection.
            let mean = DOCS as f64 / len as f64;
            let mut doc = 0u32;
            let mut list = Vec::with_capacity(len);
            for _ in 0..len {
                let u = 1.0 - rng.f64();
                let gap = 1 + (-u.ln() * (mean - 1.0).max(0.0)) as u32;
                doc = doc.saturating_add(gap);
                if doc >= DOCS {
                    break;
                }
                list.push(doc);
            }
            list
        })
        .filter(|l| l.len() >= 8)
        .collect()
}

/// Code lengths of a Huffman code for these symbol counts.
pub(crate) fn huffman_lengths(counts: &[u64]) -> Vec<u32> {
    if counts.len() == 1 {
        return vec![1];
    }
    // Tree nodes: leaves 0..n, internal nodes after; parent links give each leaf's depth.
    let n = counts.len();
    let mut parent = vec![usize::MAX; 2 * n - 1];
    let mut heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| std::cmp::Reverse((c, i)))
        .collect();
    let mut next = n;
    while heap.len() > 1 {
        let std::cmp::Reverse((a, i)) = heap.pop().unwrap_or(std::cmp::Reverse((0, 0)));
        let std::cmp::Reverse((b, j)) = heap.pop().unwrap_or(std::cmp::Reverse((0, 0)));
        parent[i] = next;
        parent[j] = next;
        heap.push(std::cmp::Reverse((a + b, next)));
        next += 1;
    }
    // Depths top-down: internal nodes were created in increasing order, so a parent's index is
    // always larger than its children's.
    let mut depth = vec![0u32; 2 * n - 1];
    for v in (0..2 * n - 2).rev() {
        depth[v] = depth[parent[v]] + 1;
    }
    depth.truncate(n);
    depth
}

/// Bits of a semi-static Huffman code of all d-gaps (first gap: the first id + 1): the codes, and
/// the model (each distinct gap as a 32-bit value and its 6-bit code length).
pub(crate) fn huffman_bits(lists: &[Vec<u32>]) -> (u64, u64) {
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for l in lists {
        let mut prev = u32::MAX; // first gap = id + 1 (wrapping)
        for &d in l {
            *counts.entry(d.wrapping_sub(prev)).or_default() += 1;
            prev = d;
        }
    }
    let c: Vec<u64> = counts.values().copied().collect();
    let lens = huffman_lengths(&c);
    let codes = c.iter().zip(&lens).map(|(&c, &l)| c * l as u64).sum();
    (codes, c.len() as u64 * 38)
}

struct Encoded {
    descs: Vec<Descriptor>,
    offsets: Vec<usize>,
    bytes: Vec<u8>,
    /// Bytes (payload + 4-byte starts) and postings of the lists of `LONG`+ postings.
    long: (usize, usize),
}

/// Lists this long or longer fill most of their blocks.
const LONG: usize = 1024;

fn encode<C: BlockCodec>(lists: &[Vec<u32>]) -> Result<Encoded, String> {
    let mut e = Encoded {
        descs: Vec::new(),
        offsets: Vec::new(),
        bytes: Vec::new(),
        long: (0, 0),
    };
    let mut buf = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
    for l in lists {
        for block in l.chunks(C::MAX_KEYS) {
            let d = C::encode(block, &mut buf).map_err(|x| format!("{}: {x}", C::ID.name()))?;
            if l.len() >= LONG {
                e.long.0 += d.size as usize + 4;
            }
            e.offsets.push(e.bytes.len());
            e.bytes.extend_from_slice(&buf[..d.size as usize]);
            e.descs.push(d);
        }
    }
    e.offsets.push(e.bytes.len());
    e.long.1 = lists.iter().filter(|l| l.len() >= LONG).map(Vec::len).sum();
    Ok(e)
}

#[inline(always)]
fn decode_all<C: BlockCodec>(e: &Encoded, out: &mut [u32]) -> u64 {
    let mut check = 0u64;
    for (i, d) in e.descs.iter().enumerate() {
        let p = &e.bytes[e.offsets[i]..e.offsets[i + 1]];
        match C::decode(d, p, out) {
            Ok(n) => {
                black_box(&mut out[..n]);
                check = check.wrapping_add(out[n.saturating_sub(1)] as u64);
            }
            Err(_) => return u64::MAX,
        }
    }
    check
}

const COLS: &[(&str, &str, usize)] = &[
    ("codec", "codec", 13),
    ("bits_per_int", "bits/int", 8),
    ("ratio", "ratio", 6),
    ("bits_per_int_long_lists", "long lists", 10),
    ("encode_mb_per_s", "enc MB/s", 8),
    ("decode_mb_per_s", "dec MB/s", 8),
    ("decode_mints_per_s", "dec Mint/s", 10),
];

fn measure<C: BlockCodec>(
    t: &Table,
    lists: &[Vec<u32>],
    postings: usize,
    scale: &Scale,
) -> Result<(), String> {
    let e = encode::<C>(lists)?;
    let mut out = vec![0u32; C::MAX_KEYS];
    // Check every block against the lists before timing.
    let mut i = 0;
    for l in lists {
        for block in l.chunks(C::MAX_KEYS) {
            let n = C::decode(
                &e.descs[i],
                &e.bytes[e.offsets[i]..e.offsets[i + 1]],
                &mut out,
            )
            .map_err(|x| format!("{}: {x}", C::ID.name()))?;
            if out[..n] != *block {
                return Err(format!("{}: decoded another list", C::ID.name()));
            }
            i += 1;
        }
    }
    let rate = ops_per_sec(scale.budget, postings as u64, || {
        decode_all::<C>(&e, &mut out)
    });
    let mut buf = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
    let enc = ops_per_sec(scale.budget, postings as u64, || {
        let mut check = 0u64;
        for l in lists {
            for block in l.chunks(C::MAX_KEYS) {
                check = check.wrapping_add(C::encode(block, &mut buf).map_or(0, |d| d.size as u64));
            }
        }
        check
    });
    // Payload plus the 32-bit start value each block keeps in its descriptor.
    let bits = (e.bytes.len() + 4 * e.descs.len()) as f64 * 8.0 / postings as f64;
    t.row(&[
        Cell::S(C::ID.name().into()),
        Cell::F(bits, 2),
        Cell::F(32.0 / bits, 2),
        Cell::F(e.long.0 as f64 * 8.0 / e.long.1.max(1) as f64, 2),
        Cell::F(enc * 4.0 / 1e6, 0),
        Cell::F(rate * 4.0 / 1e6, 0),
        Cell::F(rate / 1e6, 0),
    ]);
    Ok(())
}

pub fn run(opts: &Options, scale: &Scale) -> Result<(), String> {
    let t = Table {
        name: "table4",
        cols: COLS,
        json: opts.json,
    };
    let mut rng = fastrand::Rng::with_seed(opts.seed ^ 4);
    let lists = posting_lists(&mut rng, scale.postings);
    let postings: usize = lists.iter().map(Vec::len).sum();
    t.start(&format!(
        "Table 4: inverted lists ({} Zipf lists, {postings} postings over {DOCS} documents); ratio = 32 / bits per int; long lists: bits per int over lists of {LONG}+ postings; MB/s of 32-bit ids",
        lists.len()
    ));
    measure::<PforDelta>(&t, &lists, postings, scale)?;
    measure::<VByte>(&t, &lists, postings, scale)?;
    measure::<StreamVByte>(&t, &lists, postings, scale)?;
    measure::<Bp128>(&t, &lists, postings, scale)?;
    let (codes, model) = huffman_bits(&lists);
    let bits = codes as f64 / postings as f64;
    t.row(&[
        Cell::S("huffman".into()),
        Cell::F(bits, 2),
        Cell::F(32.0 / bits, 2),
        Cell::None,
        Cell::None,
        Cell::None,
        Cell::None,
    ]);
    t.note(&format!(
        "huffman: semi-static code of the d-gaps (size only); its model adds {:.2} bits per int",
        model as f64 / postings as f64
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_lengths_are_optimal_on_small_cases() {
        // counts 1,1,2,4: lengths 3,3,2,1 (cost 3+3+4+4 = 14)
        let l = huffman_lengths(&[1, 1, 2, 4]);
        let cost: u64 = [1u64, 1, 2, 4]
            .iter()
            .zip(&l)
            .map(|(c, &l)| c * l as u64)
            .sum();
        assert_eq!(cost, 14);
        // Kraft: sum 2^-l = 1 for a full binary tree.
        let kraft: f64 = l.iter().map(|&x| 2f64.powi(-(x as i32))).sum();
        assert!((kraft - 1.0).abs() < 1e-12);
        assert_eq!(huffman_lengths(&[5]), vec![1]);
        assert_eq!(huffman_lengths(&[3, 3]), vec![1, 1]);
    }

    #[test]
    fn posting_lists_are_sorted_distinct_and_zipf_sized() {
        let mut rng = fastrand::Rng::with_seed(1);
        let lists = posting_lists(&mut rng, 200_000);
        let total: usize = lists.iter().map(Vec::len).sum();
        assert!(total > 150_000 && total < 250_000, "{total}");
        assert!(lists.iter().all(|l| l.windows(2).all(|w| w[0] < w[1])));
        assert!(lists[0].len() > 10 * lists[lists.len() - 1].len());
    }
}
