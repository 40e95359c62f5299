//! The shared model-based suite for `tersedb_codecs::bp128::Bp128`: every operation against a sorted
//! Vec, full and no-room paths, and untrusted descriptors/payloads.
//! Also: every vertical-layout kernel against its scalar twin on every level, BP128 validation
//! and the remove-may-grow path.

mod common;
codec_suite!(bp128, tersedb_codecs::bp128::Bp128);

use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::vertical::{self, FRAME};
use tersedb_codecs::{BlockCodec, Isa};

/// Random rounds per width: `TERSEDB_LONG=1` runs 50 times more.
fn rounds(default: usize) -> usize {
    if std::env::var_os("TERSEDB_LONG").is_some() {
        default * 50
    } else {
        default
    }
}

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

fn mask(b: u32) -> u32 {
    if b == 32 {
        u32::MAX
    } else {
        (1 << b) - 1
    }
}

/// Random values of width `b`, with runs of 0 and of the maximum.
fn values(rng: &mut fastrand::Rng, b: u32) -> [u32; FRAME] {
    let shape = rng.u8(..4);
    std::array::from_fn(|i| match (shape, i % 3) {
        (0, _) => mask(b),
        (1, 0) => 0,
        _ => rng.u32(..) & mask(b),
    })
}

/// Every vertical-layout kernel (both modes) on every level against the scalar twin: bytes,
/// values, prefix sums and seeks, and no write past the frame.
#[test]
fn vertical_kernels_match_scalar() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for b in 0..=32u32 {
        for _ in 0..rounds(12) {
            let vals = values(&mut rng, b);
            let base = if rng.bool() {
                u32::MAX - rng.u32(..4)
            } else {
                rng.u32(..)
            };
            let mut packed = vec![0u8; 16 * b as usize];
            vertical::pack_scalar(&vals, b, &mut packed);
            let mut back = [0u32; FRAME];
            vertical::unpack_scalar(&packed, b, &mut back).unwrap();
            assert_eq!(back, vals, "scalar round trip b={b}");
            for (i, &v) in vals.iter().enumerate() {
                assert_eq!(vertical::get(&packed, b, i), Some(v), "get b={b} i={i}");
            }
            // Keys of both modes (wrapping, as the kernels compute them).
            let mut acc = base;
            let d1: [u32; FRAME] = std::array::from_fn(|i| {
                acc = acc.wrapping_add(vals[i]);
                acc
            });
            let fo: [u32; FRAME] = std::array::from_fn(|i| base.wrapping_add(vals[i]));
            for isa in Isa::available() {
                for (delta, keys) in [(true, &d1), (false, &fo)] {
                    let mut out = vec![0xA5u8; 16 * b as usize + 32];
                    vertical::pack(isa, keys, base, delta, b, &mut out[..16 * b as usize]);
                    assert_eq!(
                        &out[..16 * b as usize],
                        &packed[..],
                        "pack b={b} {isa} d={delta}"
                    );
                    assert!(
                        out[16 * b as usize..].iter().all(|&x| x == 0xA5),
                        "pack overrun"
                    );
                    let mut dec = [0u32; FRAME];
                    vertical::unpack(isa, &packed, b, base, delta, &mut dec).unwrap();
                    assert_eq!(&dec, keys, "unpack b={b} {isa} d={delta}");
                }
                for n in [0usize, 1, 2, 3, 4, 5, 63, 64, 65, 127, 128] {
                    let want = vals[..n].iter().fold(0u32, |a, &v| a.wrapping_add(v));
                    assert_eq!(
                        vertical::sum_prefix(isa, &packed, b, n),
                        Some(want),
                        "sum b={b} n={n} {isa}"
                    );
                    let key = match rng.u8(..3) {
                        0 => d1[rng.usize(..FRAME)],
                        1 => d1[rng.usize(..FRAME)].wrapping_add(1),
                        _ => rng.u32(..),
                    }
                    .max(1);
                    let want = match d1[..n].iter().position(|&k| k >= key) {
                        Some(i) => (i, Some(d1[i])),
                        None => (n, None),
                    };
                    assert_eq!(
                        vertical::seek_delta(isa, &packed, b, base, n, key),
                        Some(want),
                        "seek b={b} n={n} key={key} {isa}"
                    );
                }
            }
        }
        // Frames shorter than 16*b are refused, never read.
        if b > 0 {
            let short = vec![0u8; 16 * b as usize - 1];
            let mut out = [0u32; FRAME];
            for isa in Isa::available() {
                assert!(vertical::unpack(isa, &short, b, 0, true, &mut out).is_none());
                assert!(vertical::sum_prefix(isa, &short, b, 5).is_none());
                assert!(vertical::seek_delta(isa, &short, b, 0, 5, 9).is_none());
            }
            assert!(vertical::get(&short, b, 0).is_none());
        }
    }
}

/// `set` changes exactly one value.
#[test]
fn vertical_set_touches_one_value() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for b in 1..=32u32 {
        let mut vals = values(&mut rng, b);
        let mut packed = vec![0u8; 16 * b as usize];
        vertical::pack_scalar(&vals, b, &mut packed);
        for _ in 0..64 {
            let i = rng.usize(..FRAME);
            let v = rng.u32(..) & mask(b);
            vertical::set(&mut packed, b, i, v);
            vals[i] = v;
            let mut back = [0u32; FRAME];
            vertical::unpack_scalar(&packed, b, &mut back).unwrap();
            assert_eq!(back, vals, "b={b} i={i}");
        }
    }
}

/// BP128 operations give the same answers on every level.
#[test]
fn bp128_every_level_agrees() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for b in 1..=32u32 {
        for n in [1usize, 2, 5, 64, 128, 129] {
            let s = rng.u32(..1000);
            let keys = common::keys_with_width(&mut rng, n, b, s);
            let mut p = vec![0u8; 512];
            let d = Bp128::encode_with(Isa::Scalar, &keys, &mut p).unwrap();
            for isa in Isa::available() {
                let mut q = vec![0u8; 512];
                assert_eq!(Bp128::encode_with(isa, &keys, &mut q).unwrap(), d);
                assert_eq!(p, q, "encode b={b} n={n} {isa}");
                let mut out = vec![0u32; keys.len()];
                Bp128::decode_with(isa, &d, &p, &mut out).unwrap();
                assert_eq!(out, keys);
                for (i, &k) in keys.iter().enumerate() {
                    assert_eq!(Bp128::select_with(isa, &d, &p, i).unwrap(), k);
                    for probe in [k, k.wrapping_add(1), k.wrapping_sub(1)] {
                        let pos = keys.partition_point(|&x| x < probe);
                        assert_eq!(
                            Bp128::lower_bound_with(isa, &d, &p, probe).unwrap(),
                            (pos, keys.get(pos).copied()),
                            "lower_bound({probe}) {isa}"
                        );
                    }
                }
            }
        }
    }
}

/// Validate catches duplicates (zero deltas), overflow, a wrong width and nonzero padding.
#[test]
fn bp128_validate_detects_corruption() {
    let keys: Vec<u32> = (0..40u32).map(|i| i * 3 + 10).collect();
    let mut p = vec![0u8; 512];
    let d = Bp128::encode(&keys, &mut p).unwrap();
    Bp128::validate(&d, &p).unwrap();
    let b = d.bits as u32;
    let mut dup = p.clone();
    vertical::set(&mut dup, b, 7, 0);
    assert!(Bp128::validate(&d, &dup).is_err(), "zero delta");
    let mut pad = p.clone();
    vertical::set(&mut pad, b, 100, 1);
    assert!(Bp128::validate(&d, &pad).is_err(), "padding");
    let near_max = tersedb_codecs::Descriptor {
        start: u32::MAX - 100,
        last: u32::MAX,
        ..d
    };
    assert!(Bp128::validate(&near_max, &p).is_err(), "overflow");
    let wide = tersedb_codecs::Descriptor {
        bits: d.bits + 1,
        size: d.size + 16,
        ..d
    };
    assert!(Bp128::validate(&wide, &p).is_err(), "wider than needed");
    let wrong_last = tersedb_codecs::Descriptor {
        last: d.last + 1,
        ..d
    };
    assert!(Bp128::validate(&wrong_last, &p).is_err(), "last");
}

/// Removing a key merges two deltas: the width may rise and the block grow, which `remove`
/// reports; without the room it refuses and leaves the block as it was.
#[test]
fn bp128_remove_may_grow() {
    use tersedb_codecs::RemoveOutcome;
    let keys = [100u32, 108, 116, 124];
    let mut p = vec![0u8; 512];
    let mut d = Bp128::encode(&keys, &mut p).unwrap();
    assert_eq!((d.bits, d.size), (4, 64));
    // Exactly the current size as capacity: the wider block does not fit.
    let mut tight = p[..64].to_vec();
    let before = (d, tight.clone());
    assert_eq!(
        Bp128::remove(&mut d, &mut tight, 1).unwrap(),
        RemoveOutcome::NoRoom
    );
    assert_eq!((d, tight), before);
    assert_eq!(
        Bp128::remove(&mut d, &mut p, 1).unwrap(),
        RemoveOutcome::Removed { grew: true }
    );
    assert_eq!((d.bits, d.size, d.count), (5, 80, 3));
    let mut out = [0u32; 3];
    Bp128::decode(&d, &p, &mut out).unwrap();
    assert_eq!(out, [100, 116, 124]);
    // Removing the start key drops a delta: never grows.
    assert_eq!(
        Bp128::remove(&mut d, &mut p, 0).unwrap(),
        RemoveOutcome::Removed { grew: false }
    );
    assert_eq!((d.start, d.count, d.bits), (116, 2, 4));
}
