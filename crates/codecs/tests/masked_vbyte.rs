//! The shared model-based suite for Masked VByte, its SIMD kernels against the scalar twin, and
//! its bytes against VByte's.

mod common;

use common::byte_parity::{every_slot_and_key_on_every_isa, kernels_match_scalar, seed, Kernels};
use tersedb_codecs::masked_vbyte::{self, MaskedVByte};
use tersedb_codecs::BlockCodec;

codec_suite!(model, tersedb_codecs::masked_vbyte::MaskedVByte);

const KERNELS: Kernels = (
    masked_vbyte::decode_with,
    masked_vbyte::select_with,
    masked_vbyte::lower_bound_with,
);

#[test]
fn kernels_match_scalar_on_every_isa() {
    kernels_match_scalar::<MaskedVByte>(KERNELS);
}

/// Masked VByte writes exactly VByte's bytes, and each decodes the other's.
#[test]
fn same_bytes_as_vbyte() {
    use tersedb_codecs::vbyte::VByte;
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

#[test]
fn every_slot_and_key_on_every_isa_match_the_model() {
    every_slot_and_key_on_every_isa::<MaskedVByte>(KERNELS);
}
