//! BP128 and SIMD FOR decode take a short path for the usual block (2..=129 keys, a well-formed
//! descriptor, an output with room for 129 keys) straight into the kernel, and the checked path
//! otherwise. Pins that both paths give the same keys on every level, for every width 0..=32,
//! block sizes around the frame boundary and keys up to u32::MAX; that the short path writes
//! nothing past slot 129; and that malformed descriptors get the same error on both paths.
//! SIMD FOR `select` has the same split (short path for the usual block and slot).

mod common;

use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::simd_for::SimdFor;
use tersedb_codecs::{BlockCodec, Descriptor, Isa, Result};

type DecodeWith = fn(Isa, &Descriptor, &[u8], &mut [u32]) -> Result<usize>;

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

/// Key sets of every width and shape: counts around 0, 1 and the 128-value frame, starts at 0,
/// random and so that the last key is u32::MAX.
fn cases(rng: &mut fastrand::Rng) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for b in 0..=32u32 {
        for n in [0usize, 1, 2, 3, 4, 5, 8, 9, 64, 127, 128, 129] {
            for shape in 0..3 {
                let start = match shape {
                    0 => 0,
                    _ => rng.u32(..1 << 20),
                };
                let mut keys = common::keys_with_width(rng, n, b, start);
                if shape == 2 {
                    if let Some(&last) = keys.last() {
                        let up = u32::MAX - last;
                        keys.iter_mut().for_each(|k| *k += up);
                    }
                }
                out.push(keys);
            }
        }
    }
    out
}

fn both_paths_agree<C: BlockCodec>(decode_with: DecodeWith) {
    let mut rng = fastrand::Rng::with_seed(seed());
    for keys in cases(&mut rng) {
        let mut p = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
        let d = C::encode(&keys, &mut p).expect("encode");
        let n = keys.len();
        for isa in Isa::available() {
            let mut exact = vec![0u32; n];
            assert_eq!(decode_with(isa, &d, &p, &mut exact), Ok(n), "{isa} n={n}");
            assert_eq!(exact, keys, "checked path {isa} n={n} b={}", d.bits);
            for len in [C::MAX_KEYS, 300] {
                let mut roomy = vec![0xDEAD_BEEFu32; len];
                assert_eq!(decode_with(isa, &d, &p, &mut roomy), Ok(n), "{isa} n={n}");
                assert_eq!(
                    &roomy[..n],
                    &keys[..],
                    "short path {isa} n={n} b={}",
                    d.bits
                );
                assert!(
                    roomy[C::MAX_KEYS..].iter().all(|&x| x == 0xDEAD_BEEF),
                    "wrote past slot 129: {isa} n={n}"
                );
            }
            // The detected-level entry point takes the same paths.
            let mut roomy = vec![0u32; C::MAX_KEYS];
            assert_eq!(C::decode(&d, &p, &mut roomy), Ok(n));
            assert_eq!(&roomy[..n], &keys[..]);
        }
    }
}

fn malformed_fail_alike<C: BlockCodec>(decode_with: DecodeWith) {
    let mut rng = fastrand::Rng::with_seed(seed());
    let keys = common::keys_with_width(&mut rng, 100, 12, 5);
    let mut p = vec![0u8; C::max_payload_len(C::MAX_KEYS)];
    let good = C::encode(&keys, &mut p).expect("encode");
    let b = good.bits as u32;
    let bad = [
        Descriptor { bits: 0, ..good },
        Descriptor { bits: 33, ..good },
        Descriptor { bits: 255, ..good },
        Descriptor {
            size: good.size + 16,
            ..good
        },
        Descriptor {
            bits: good.bits + 1,
            ..good
        },
        Descriptor { count: 130, ..good },
        Descriptor {
            count: u32::MAX,
            ..good
        },
        Descriptor {
            last: good.start,
            ..good
        },
        Descriptor { count: 1, ..good },
        Descriptor { count: 0, ..good },
    ];
    for isa in Isa::available() {
        for d in bad {
            let mut exact = vec![0u32; (d.count as usize).min(400)];
            let mut roomy = vec![0u32; 400];
            let a = decode_with(isa, &d, &p, &mut exact);
            let r = decode_with(isa, &d, &p, &mut roomy);
            assert!(r.is_err(), "{isa} {d:?} accepted");
            if d.count as usize <= 400 {
                assert_eq!(a, r, "{isa} {d:?}");
            }
        }
        // A payload shorter than the frame is refused on the short path too.
        let short = &p[..16 * b as usize - 1];
        assert!(decode_with(isa, &good, short, &mut [0u32; 129]).is_err());
        assert!(decode_with(isa, &good, short, &mut [0u32; 100]).is_err());
    }
}

#[test]
fn bp128_paths_agree() {
    both_paths_agree::<Bp128>(Bp128::decode_with);
}

#[test]
fn simd_for_paths_agree() {
    both_paths_agree::<SimdFor>(SimdFor::decode_with);
}

#[test]
fn bp128_malformed_fail_alike() {
    malformed_fail_alike::<Bp128>(Bp128::decode_with);
}

#[test]
fn simd_for_malformed_fail_alike() {
    malformed_fail_alike::<SimdFor>(SimdFor::decode_with);
}

#[test]
fn simd_for_select_every_slot_and_malformed() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for keys in cases(&mut rng) {
        let mut p = vec![0u8; SimdFor::max_payload_len(SimdFor::MAX_KEYS)];
        let d = SimdFor::encode(&keys, &mut p).expect("encode");
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(
                SimdFor::select(&d, &p, i),
                Ok(k),
                "slot {i} of {}",
                keys.len()
            );
        }
        for i in [keys.len(), keys.len() + 1, usize::MAX] {
            assert!(SimdFor::select(&d, &p, i).is_err(), "slot {i} past the end");
        }
        if keys.len() >= 2 {
            let b = d.bits as u32;
            let short = &p[..16 * b as usize - 1];
            assert!(SimdFor::select(&d, short, 1).is_err());
            for bad in [
                Descriptor { bits: 0, ..d },
                Descriptor { bits: 33, ..d },
                Descriptor {
                    size: d.size + 16,
                    ..d
                },
                Descriptor { count: 130, ..d },
                Descriptor { last: d.start, ..d },
            ] {
                assert!(SimdFor::select(&bad, &p, 1).is_err(), "{bad:?}");
            }
        }
    }
}
