//! The shared model-based suite for VByte, plus VByte-specific format and kernel tests.

mod common;

codec_suite!(vbyte, tersedb_codecs::vbyte::VByte);

use integer_encoding::VarInt;
use tersedb_codecs::vbyte::VByte;
use tersedb_codecs::BlockCodec;

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

/// The payload is the concatenation of protobuf varints (the `integer-encoding` crate) of the
/// deltas, and those bytes decode back through our decoder.
#[test]
fn bytes_are_protobuf_varints_of_the_deltas() {
    let mut rng = fastrand::Rng::with_seed(seed());
    for n in [0usize, 1, 2, 3, 15, 16, 17, 100, 256, 257] {
        for b in 0..=32 {
            let s = rng.u32(..1000);
            let keys = common::keys_with_width(&mut rng, n, b, s);
            let mut reference = Vec::new();
            for w in keys.windows(2) {
                reference.extend_from_slice(&(w[1] - w[0]).encode_var_vec());
            }
            let (d, p) = common::encode_vec::<VByte>(&keys);
            assert_eq!(&p[..d.size as usize], &reference[..], "n={n} b={b}");
            // And back: the reference bytes, given as our payload, decode to the keys.
            let mut out = vec![0u32; keys.len()];
            VByte::decode(&d, &reference, &mut out).unwrap();
            assert_eq!(out, keys);
            let mut pos = 0;
            for w in keys.windows(2) {
                let (v, l) = u32::decode_var(&p[pos..]).unwrap();
                assert_eq!(v, w[1] - w[0]);
                pos += l;
            }
            assert_eq!(pos, d.size as usize);
        }
    }
}

/// A worked example from the LEB128 definition.
#[test]
fn known_bytes() {
    let keys = [7u32, 8, 8 + 300, 8 + 300 + (1 << 28)];
    let (d, p) = common::encode_vec::<VByte>(&keys);
    assert_eq!(
        &p[..d.size as usize],
        &[0x01, 0xAC, 0x02, 0x80, 0x80, 0x80, 0x80, 0x01]
    );
    assert_eq!((d.start, d.count, d.last, d.size), (7, 4, keys[3], 8));
}
