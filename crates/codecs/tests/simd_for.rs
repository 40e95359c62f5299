//! The shared model-based suite for `tersedb_codecs::simd_for::SimdFor`: every operation against a sorted
//! Vec, full and no-room paths, and untrusted descriptors/payloads.
//! Also: every instruction-set level encodes and decodes alike, and validation catches corruption.

mod common;
codec_suite!(simd_for, tersedb_codecs::simd_for::SimdFor);

use tersedb_codecs::simd_for::SimdFor;
use tersedb_codecs::vertical;
use tersedb_codecs::{BlockCodec, Descriptor, Isa};

/// Encode and decode agree on every level; validate catches bad padding, order and widths.
#[test]
fn every_level_agrees_and_validate_detects_corruption() {
    let mut rng = fastrand::Rng::with_seed(5);
    for b in 1..=32u32 {
        for n in [2usize, 5, 64, 129] {
            let s = rng.u32(..1000);
            let keys = common::keys_with_width(&mut rng, n, b.min(24), s);
            let mut p = vec![0u8; 512];
            let d = SimdFor::encode_with(Isa::Scalar, &keys, &mut p).unwrap();
            for isa in Isa::available() {
                let mut q = vec![0u8; 512];
                assert_eq!(SimdFor::encode_with(isa, &keys, &mut q).unwrap(), d);
                assert_eq!(p, q, "{isa}");
                let mut out = vec![0u32; keys.len()];
                SimdFor::decode_with(isa, &d, &p, &mut out).unwrap();
                assert_eq!(out, keys, "{isa}");
            }
        }
    }
    let keys: Vec<u32> = (0..40u32).map(|i| 10 + i * 5).collect();
    let (d, p) = common::encode_vec::<SimdFor>(&keys);
    SimdFor::validate(&d, &p).unwrap();
    let bw = d.bits as u32;
    let mut pad = p.clone();
    vertical::set(&mut pad, bw, 90, 1);
    assert!(SimdFor::validate(&d, &pad).is_err(), "padding");
    let mut order = p.clone();
    vertical::set(&mut order, bw, 4, 1);
    assert!(SimdFor::validate(&d, &order).is_err(), "order");
    let wide = Descriptor {
        bits: d.bits + 1,
        size: d.size + 16,
        ..d
    };
    assert!(SimdFor::validate(&wide, &p).is_err(), "width");
}

/// lower_bound counts offsets in registers on SIMD levels and binary-searches on scalar: both
/// must agree with the model (a partition point) for every width, block size and probe key,
/// including keys at, between, below and above the block's keys and at u32::MAX.
#[test]
fn lower_bound_matches_model_on_every_level() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    for b in 0..=32u32 {
        for n in [1usize, 2, 3, 5, 8, 9, 63, 64, 100, 127, 128, 129] {
            let s = if rng.bool() {
                rng.u32(..1000)
            } else {
                u32::MAX - rng.u32(..1 << 20)
            };
            let s = if b > 12 { s % 1000 } else { s };
            let keys = common::keys_with_width(&mut rng, n, b.min(24), s);
            let (d, p) = common::encode_vec::<SimdFor>(&keys);
            let mut probes: Vec<u32> = keys
                .iter()
                .flat_map(|&k| [k, k.wrapping_add(1), k.wrapping_sub(1)])
                .collect();
            probes.extend([0, u32::MAX, rng.u32(..)]);
            for key in probes {
                let pos = keys.partition_point(|&k| k < key);
                let want = (pos, keys.get(pos).copied());
                for isa in Isa::available() {
                    assert_eq!(
                        SimdFor::lower_bound_with(isa, &d, &p, key).unwrap(),
                        want,
                        "isa={isa} b={b} n={} key={key}",
                        keys.len()
                    );
                }
            }
        }
    }
}

/// `rank_near` (lower_bound's interpolated window) on every level: whenever it answers, the
/// answer is the full scan's, for every width 1..=32, frame fill, guess and target (at, between,
/// below and above the offsets, u32::MAX); and a guess at the true rank always answers.
#[test]
fn rank_near_agrees_with_rank_on_every_level() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    for b in 1..=32u32 {
        for n in [1usize, 2, 3, 4, 5, 7, 8, 9, 12, 63, 64, 100, 126, 127, 128] {
            let mut vals = [0u32; 128];
            let top = if b == 32 { u32::MAX } else { (1u32 << b) - 1 };
            let mut v: Vec<u32> = (0..n).map(|_| rng.u32(1..=top.max(1))).collect();
            v.sort_unstable();
            v.dedup();
            if rng.bool() {
                *v.last_mut().unwrap() = top;
            }
            v.dedup();
            let n = v.len();
            vals[..n].copy_from_slice(&v);
            let mut frame = vec![0u8; vertical::frame_len(b)];
            vertical::pack_scalar(&vals, b, &mut frame);
            let mut targets: Vec<u32> = v
                .iter()
                .flat_map(|&x| [x, x.wrapping_add(1), x.wrapping_sub(1)])
                .collect();
            targets.extend([0, 1, u32::MAX, rng.u32(..)]);
            for t in targets {
                let want = vertical::rank_scalar(&frame, b, n, t).unwrap();
                for guess in [0, want, want + 1, rng.usize(..200), n, 200] {
                    for isa in Isa::available() {
                        let got = vertical::rank_near(isa, &frame, b, n, t, guess);
                        if let Some((r, x)) = got {
                            assert_eq!(r, want, "isa={isa} b={b} n={n} t={t} guess={guess}");
                            assert_eq!(x, if r < n { v[r] } else { 0 });
                        }
                        if guess == want + 1 {
                            assert!(got.is_some(), "isa={isa} b={b} n={n} t={t}");
                        }
                    }
                }
            }
        }
    }
}
