//! SIMD-against-scalar checks shared by the byte-oriented codecs' tests (StreamVByte, VarIntGB,
//! Masked VByte): every ISA level must give the scalar twin's answers, failures included.

use tersedb_codecs::{BlockCodec, Descriptor, Isa, Result};

pub type DecodeFn = fn(Isa, &Descriptor, &[u8], &mut [u32]) -> Result<usize>;
pub type SelectFn = fn(Isa, &Descriptor, &[u8], usize) -> Result<u32>;
pub type LowerBoundFn = fn(Isa, &Descriptor, &[u8], u32) -> Result<(usize, Option<u32>)>;

pub fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

/// Every SIMD level agrees with scalar on `d`/`p`: the same success or failure, the same keys.
pub fn same_on_every_isa(
    d: &Descriptor,
    p: &[u8],
    rng: &mut fastrand::Rng,
    f: (DecodeFn, SelectFn, LowerBoundFn),
) {
    let (dec, sel, lb) = f;
    let mut want = vec![0u32; 300];
    let r0 = dec(Isa::Scalar, d, p, &mut want);
    let i = rng.usize(..300);
    let key = if rng.bool() {
        rng.u32(..)
    } else {
        want[i].wrapping_add(rng.u32(..3))
    };
    for isa in Isa::available() {
        let mut out = vec![0u32; 300];
        let r = dec(isa, d, p, &mut out);
        assert_eq!(r.is_ok(), r0.is_ok(), "decode outcome isa={isa} {d:?}");
        if let Ok(n) = r {
            assert_eq!(r0.as_ref().ok(), Some(&n));
            assert_eq!(&out[..n], &want[..n], "decode isa={isa} {d:?}");
        }
        assert_eq!(
            sel(isa, d, p, i).ok(),
            sel(Isa::Scalar, d, p, i).ok(),
            "select({i}) isa={isa}"
        );
        assert_eq!(
            lb(isa, d, p, key).ok(),
            lb(Isa::Scalar, d, p, key).ok(),
            "lower_bound({key}) isa={isa}"
        );
    }
}

/// SIMD kernels against the scalar twin: every block size 0..=MAX_KEYS, delta widths 0..=32,
/// keys up to u32::MAX, then corrupted and random payloads.
pub fn kernels_match_scalar<C: BlockCodec>(f: (DecodeFn, SelectFn, LowerBoundFn)) {
    let mut rng = fastrand::Rng::with_seed(seed());
    for n in 0..=C::MAX_KEYS {
        for b in 0..=32 {
            let start = if rng.bool() {
                rng.u32(..1000)
            } else {
                u32::MAX - rng.u32(..1 << 20)
            };
            let start = if b > 20 { start % 1000 } else { start };
            let keys = super::keys_with_width(&mut rng, n, b, start);
            let (d, mut p) = super::encode_vec::<C>(&keys);
            same_on_every_isa(&d, &p, &mut rng, f);
            // padding after `size` must not matter
            let size = d.size as usize;
            p[size..].fill(0xFF);
            same_on_every_isa(&d, &p, &mut rng, f);
            if size > 0 {
                let at = rng.usize(..size);
                p[at] ^= 1 << rng.u32(..8);
                same_on_every_isa(&d, &p, &mut rng, f);
            }
        }
    }
    // TERSEDB_LONG=1: 50 times as many random payloads.
    let rounds = if std::env::var("TERSEDB_LONG").as_deref() == Ok("1") {
        100_000
    } else {
        2000
    };
    for _ in 0..rounds {
        let count = rng.u32(..=C::MAX_KEYS as u32 + 1);
        let p: Vec<u8> = (0..rng.usize(..1200))
            .map(|_| {
                if rng.u8(..4) == 0 {
                    rng.u8(..)
                } else {
                    rng.u8(..4)
                }
            })
            .collect();
        let start = rng.u32(..1000);
        let d = Descriptor {
            start,
            count,
            last: start.wrapping_add(rng.u32(..)),
            size: rng.u32(..=p.len() as u32),
            bits: 0,
        };
        same_on_every_isa(&d, &p, &mut rng, f);
    }
}

/// The ISA-explicit entry points of one codec.
pub type Kernels = (DecodeFn, SelectFn, LowerBoundFn);

/// Runs of values of one byte width (the kernels' fast paths), switching width at random points.
pub fn uniform_width_runs_match_scalar<C: BlockCodec>(f: Kernels) {
    let mut rng = fastrand::Rng::with_seed(seed());
    let rounds = if std::env::var("TERSEDB_LONG").as_deref() == Ok("1") {
        15_000
    } else {
        300
    };
    for _ in 0..rounds {
        let n = rng.usize(1..=C::MAX_KEYS);
        let mut keys = vec![rng.u32(..1000)];
        let mut w = rng.u32(1..=4);
        while keys.len() < n {
            if rng.u8(..40) == 0 {
                w = rng.u32(1..=4);
            }
            let lo = if w == 1 { 1 } else { 1u64 << (8 * (w - 1)) };
            let d = (lo + rng.u64(..lo.min(1 << 16))) as u32;
            match keys.last().unwrap().checked_add(d) {
                Some(k) => keys.push(k),
                None => break,
            }
        }
        let (d, p) = super::encode_vec::<C>(&keys);
        same_on_every_isa(&d, &p, &mut rng, f);
        let mut out = vec![0u32; keys.len()];
        for isa in Isa::available() {
            (f.0)(isa, &d, &p, &mut out).unwrap();
            assert_eq!(out, keys, "isa={isa}");
        }
    }
}

/// select at every slot and lower_bound at every key, its neighbours, and keys outside the
/// block, against the model on every ISA level: blocks of every size 0..=MAX_KEYS at widths
/// that exercise each path (one-byte runs, mixed widths, four-byte values, u32::MAX at the end),
/// so both ends of the bidirectional seeks and the SIMD steps and scalar edges all answer.
#[allow(dead_code)]
pub fn every_slot_and_key_on_every_isa<C: BlockCodec>(f: Kernels) {
    let (_, sel, lb) = f;
    let mut rng = fastrand::Rng::with_seed(seed());
    for n in 0..=C::MAX_KEYS {
        for b in [1u32, 7, 8, 12, 17, 24, 32] {
            let start = if b >= 24 {
                rng.u32(..1000)
            } else {
                rng.u32(..)
            };
            let mut keys = super::keys_with_width(&mut rng, n, b, start);
            if n > 1 && rng.bool() {
                // mixed widths: a few keys moved down towards their predecessor
                for i in 1..keys.len() - 1 {
                    if rng.u8(..4) == 0 {
                        keys[i] = keys[i - 1] + 1 + (keys[i] - keys[i - 1] - 1) / 1000;
                    }
                }
            }
            let (d, p) = super::encode_vec::<C>(&keys);
            let mut probes: Vec<u32> = keys
                .iter()
                .flat_map(|&k| [k, k.wrapping_sub(1), k.wrapping_add(1)])
                .collect();
            probes.extend([0, u32::MAX]);
            for isa in Isa::available() {
                for (i, &k) in keys.iter().enumerate() {
                    assert_eq!(
                        sel(isa, &d, &p, i),
                        Ok(k),
                        "select({i}) isa={isa} n={n} b={b}"
                    );
                }
                for &key in &probes {
                    let pos = keys.partition_point(|&k| k < key);
                    assert_eq!(
                        lb(isa, &d, &p, key),
                        Ok((pos, keys.get(pos).copied())),
                        "lower_bound({key}) isa={isa} n={n} b={b}"
                    );
                }
            }
        }
    }
}
