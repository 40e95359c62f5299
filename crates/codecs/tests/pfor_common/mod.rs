//! Checks shared by `tests/pfor.rs` and `tests/pfor_delta.rs`: an independent reader of the
//! PFOR frame layout of docs/FORMAT.md, a reference for the seed 004 choice of b, and SIMD-level
//! comparisons against the scalar kernels.

#![allow(dead_code)]

use super::common::{encode_vec, keys_with_width};
use tersedb_codecs::pfor::{prefix_sum, prefix_sum_scalar, unpack_add, unpack_add_scalar};
use tersedb_codecs::{BlockCodec, Descriptor, Isa};

/// The test's seed: `SEED` from the environment, else `default`; printed for re-runs.
pub fn seed(default: u64) -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    eprintln!("SEED={s}");
    s
}

/// The values a frame codes: offsets from the start key, or deltas.
pub fn values(keys: &[u32], delta: bool) -> Vec<u32> {
    (1..keys.len())
        .map(|i| keys[i] - if delta { keys[i - 1] } else { keys[0] })
        .collect()
}

/// What the reference reader found in a payload.
#[derive(Debug)]
pub struct Parsed {
    pub base: u32,
    pub codes: Vec<u32>,
    /// Exception positions in list order.
    pub exceptions: Vec<usize>,
    pub values: Vec<u32>,
}

/// Reads a payload bit by bit as FORMAT.md describes it; panics on any deviation.
pub fn read_reference(d: &Descriptor, p: &[u8]) -> Parsed {
    let n = d.count as usize - 1;
    let b = d.bits as usize;
    let x = p[0] as usize;
    let mut at = 1;
    let mut first = 0;
    if x > 0 {
        first = p[1] as usize;
        at = 2;
    }
    let mut base = 0u64;
    let mut shift = 0;
    loop {
        let byte = p[at];
        at += 1;
        base |= ((byte & 0x7f) as u64) << shift;
        shift += 7;
        if byte < 0x80 {
            break;
        }
    }
    let base = u32::try_from(base).unwrap();
    let codes: Vec<u32> = (0..n)
        .map(|i| {
            (0..b).fold(0u32, |c, k| {
                let bit = i * b + k;
                c | (((p[at + bit / 8] >> (bit % 8)) & 1) as u32) << k
            })
        })
        .collect();
    let clen = (n * b).div_ceil(8);
    let exc_at = at + clen;
    assert_eq!(d.size as usize, exc_at + 4 * x, "size");
    let mut exceptions = Vec::new();
    let mut pos = first;
    for j in 0..x {
        exceptions.push(pos);
        if j + 1 < x {
            pos += codes[pos] as usize + 1;
        } else {
            assert_eq!(codes[pos], 0, "last link is 0");
        }
    }
    let mut values: Vec<u32> = codes.iter().map(|&c| base + c).collect();
    for (j, &q) in exceptions.iter().enumerate() {
        let e = &p[exc_at + 4 * j..exc_at + 4 * j + 4];
        values[q] = u32::from_le_bytes(e.try_into().unwrap());
    }
    Parsed {
        base,
        codes,
        exceptions,
        values,
    }
}

fn varint_len(v: u32) -> usize {
    (32 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reference for the seed 004 rule: for every b, the first longest window of the sorted values
/// whose range fits in b bits, exceptions outside it plus compulsory ones; smallest payload.
pub fn best_size(v: &[u32]) -> usize {
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = v.len();
    (0..=32u32)
        .map(|b| {
            let range = if b == 32 { u64::MAX } else { (1u64 << b) - 1 };
            let (mut best_lo, mut best_len) = (0, 0);
            for lo in 0..n {
                let len = s[lo..]
                    .iter()
                    .take_while(|&&x| (x - s[lo]) as u64 <= range)
                    .count();
                if len > best_len {
                    (best_lo, best_len) = (lo, len);
                }
            }
            let base = s[best_lo];
            let outside = |x: u32| x < base || (x - base) as u64 > range;
            // Build the list position by position.
            let mut x = 0;
            let mut last: Option<usize> = None;
            for (i, &val) in v.iter().enumerate() {
                if outside(val) {
                    if let Some(mut q) = last {
                        while (i - q) as u64 > range + 1 {
                            q += 1usize << b;
                            x += 1;
                        }
                    }
                    x += 1;
                    last = Some(i);
                }
            }
            1 + (x > 0) as usize + varint_len(base) + (n * b as usize).div_ceil(8) + 4 * x
        })
        .min()
        .unwrap()
}

/// Random key sets over every width, with and without outliers.
fn samples(rng: &mut fastrand::Rng) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for b in 0..=32u32 {
        for n in [2usize, 3, 17, 64, 100, 128, 129] {
            let s = rng.u32(..1 << 20);
            out.push(keys_with_width(rng, n, b, s));
            // a few outliers among small deltas
            let mut k = vec![rng.u32(..1000)];
            for i in 1..n {
                let d = if rng.u32(..16) == 0 {
                    rng.u32(1..1 << 24)
                } else {
                    rng.u32(1..=(1u32 << b.min(10)))
                };
                match k[i - 1].checked_add(d) {
                    Some(x) => k.push(x),
                    None => break,
                }
            }
            out.push(k);
        }
    }
    out
}

pub fn check_layout<C: BlockCodec>(delta: bool) {
    let mut rng = fastrand::Rng::with_seed(seed(31));
    for keys in samples(&mut rng) {
        let (d, p) = encode_vec::<C>(&keys);
        if keys.len() < 2 {
            continue;
        }
        let r = read_reference(&d, &p);
        assert_eq!(r.values, values(&keys, delta), "keys {keys:?}");
        // Every value outside the window is on the list; list positions strictly increase and
        // consecutive ones are at most 2^b apart.
        let b = d.bits as u32;
        for (i, &v) in r.values.iter().enumerate() {
            let fits = v >= r.base && ((v - r.base) as u64) < 1u64 << b;
            if !fits {
                assert!(r.exceptions.contains(&i), "value {i} outside the window");
            } else if !r.exceptions.contains(&i) {
                assert_eq!(r.codes[i], v - r.base);
            }
        }
        for w in r.exceptions.windows(2) {
            assert!(w[0] < w[1] && ((w[1] - w[0]) as u64) <= 1u64 << b);
        }
    }
}

pub fn check_cost_rule<C: BlockCodec>(delta: bool) {
    let mut rng = fastrand::Rng::with_seed(seed(32));
    for keys in samples(&mut rng) {
        let (d, _) = encode_vec::<C>(&keys);
        assert_eq!(
            d.size as usize,
            best_size(&values(&keys, delta)),
            "keys {keys:?}"
        );
    }
}

pub fn check_compulsory<C: BlockCodec>(delta: bool) {
    // Deltas 1/2 with outliers at positions 0 and 100: at b = 1 the list needs compulsory
    // exceptions every 2 positions, at b = 2 every 4; PFOR-DELTA picks one of them and the
    // reference reader sees a connected list. (PFOR sees the same keys as offsets.)
    let mut v = vec![1u32; 128];
    for (i, x) in v.iter_mut().enumerate() {
        *x = 1 + (i as u32 % 2);
    }
    v[0] = 1 << 20;
    v[100] = 1 << 20;
    let mut keys = vec![7u32];
    for (i, &x) in v.iter().enumerate() {
        keys.push(keys[i] + x);
    }
    let (d, p) = encode_vec::<C>(&keys);
    let r = read_reference(&d, &p);
    assert_eq!(r.values, values(&keys, delta));
    if delta {
        assert!(r.exceptions.len() > 2, "compulsory exceptions present");
        assert!(r.exceptions.contains(&0) && r.exceptions.contains(&100));
    }
    assert_eq!(d.size as usize, best_size(&r.values));
}

/// Every SIMD level's unpack and prefix sum against the scalar twins: every width 0..=32, frame
/// sizes around the 8- and 16-value steps, data exactly as long as needed and with slack.
pub fn check_kernels() {
    let mut rng = fastrand::Rng::with_seed(seed(33));
    for isa in Isa::available() {
        for b in 0..=32u32 {
            for n in [
                0usize, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 127, 128,
            ] {
                for slack in [0usize, 1, 5, 40] {
                    let len = (n * b as usize).div_ceil(8) + slack;
                    let data: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
                    let add = [0, 1, u32::MAX, rng.u32(..)][rng.usize(..4)];
                    let mut want = vec![0u32; n];
                    let mut got = vec![0xdead_beefu32; n];
                    assert!(unpack_add_scalar(&data, b, add, &mut want).is_some());
                    assert!(unpack_add(isa, &data, b, add, &mut got).is_some());
                    assert_eq!(got, want, "{isa} b={b} n={n} slack={slack}");
                    if n > 0 && slack == 0 && b > 0 {
                        assert!(unpack_add(isa, &data[..len - 1], b, add, &mut got).is_none());
                    }
                }
            }
        }
        for n in 0..=130usize {
            let step = [0, 1, u32::MAX, rng.u32(..)][rng.usize(..4)];
            let vals: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
            let mut want = vals.clone();
            let mut got = vals.clone();
            if n > 0 {
                prefix_sum_scalar(step, &mut want);
            }
            prefix_sum(isa, step, &mut got);
            assert_eq!(got, want, "{isa} prefix sum n={n}");
        }
    }
}

/// `decode_with` on every level equals scalar.
pub fn check_decode_levels<C: BlockCodec>(delta: bool) {
    let mut rng = fastrand::Rng::with_seed(seed(34));
    for keys in samples(&mut rng) {
        let (d, p) = encode_vec::<C>(&keys);
        let mut want = vec![0u32; keys.len()];
        let decode = |isa: Isa, out: &mut [u32]| {
            if delta {
                tersedb_codecs::pfor::PforDelta::decode_with(isa, &d, &p, out)
            } else {
                tersedb_codecs::pfor::Pfor::decode_with(isa, &d, &p, out)
            }
        };
        decode(Isa::Scalar, &mut want).unwrap();
        assert_eq!(want, keys);
        for isa in Isa::available() {
            let mut got = vec![0u32; keys.len()];
            decode(isa, &mut got).unwrap();
            assert_eq!(got, keys, "{isa}");
        }
    }
}
