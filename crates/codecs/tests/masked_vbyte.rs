//! The shared model-based suite for MaskedVByte, plus MaskedVByte-specific format and kernel tests.

mod common;

codec_suite!(masked_vbyte, tersedb_codecs::masked_vbyte::MaskedVByte);

use tersedb_codecs::{BlockCodec, Descriptor, Isa, Result};

type DecodeFn = fn(Isa, &Descriptor, &[u8], &mut [u32]) -> Result<usize>;
type SelectFn = fn(Isa, &Descriptor, &[u8], usize) -> Result<u32>;
type LowerBoundFn = fn(Isa, &Descriptor, &[u8], u32) -> Result<(usize, Option<u32>)>;

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

/// Every SIMD level agrees with scalar on `d`/`p`: the same success or failure, the same keys.
fn same_on_every_isa(
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
fn kernels_match_scalar<C: BlockCodec>(f: (DecodeFn, SelectFn, LowerBoundFn)) {
    let mut rng = fastrand::Rng::with_seed(seed());
    for n in 0..=C::MAX_KEYS {
        for b in 0..=32 {
            let start = if rng.bool() {
                rng.u32(..1000)
            } else {
                u32::MAX - rng.u32(..1 << 20)
            };
            let start = if b > 20 { start % 1000 } else { start };
            let keys = common::keys_with_width(&mut rng, n, b, start);
            let (d, mut p) = common::encode_vec::<C>(&keys);
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

#[test]
fn kernels_match_scalar_on_every_isa() {
    use tersedb_codecs::masked_vbyte;
    kernels_match_scalar::<masked_vbyte::MaskedVByte>((
        masked_vbyte::decode_with,
        masked_vbyte::select_with,
        masked_vbyte::lower_bound_with,
    ));
}

/// Masked VByte writes exactly VByte's bytes, and each decodes the other's.
#[test]
fn same_bytes_as_vbyte() {
    use tersedb_codecs::{masked_vbyte::MaskedVByte, vbyte::VByte};
    let mut rng = fastrand::Rng::with_seed(seed());
    for n in 0..=257 {
        let b = rng.u32(0..=32);
        let s = rng.u32(..1000);
        let keys = common::keys_with_width(&mut rng, n, b, s);
        let (d1, p1) = common::encode_vec::<VByte>(&keys);
        let (d2, p2) = common::encode_vec::<MaskedVByte>(&keys);
        assert_eq!(
            (d1, &p1[..d1.size as usize]),
            (d2, &p2[..d2.size as usize]),
            "n={n} b={b}"
        );
        let mut out = vec![0u32; keys.len()];
        MaskedVByte::decode(&d1, &p1, &mut out).unwrap();
        assert_eq!(out, keys);
    }
}
