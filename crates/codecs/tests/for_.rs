//! The shared model-based suite for `tersedb_codecs::for_::For`: every operation against a sorted
//! Vec, full and no-room paths, and untrusted descriptors/payloads.
//! Also pins the payload to the horizontal layout of FORMAT.md, validation of corrupt blocks and
//! the in-place append.

mod common;
codec_suite!(for_, tersedb_codecs::for_::For);

use tersedb_codecs::bits;
use tersedb_codecs::for_::For;
use tersedb_codecs::{AppendOutcome, BlockCodec, Descriptor};

/// The payload is exactly the offsets from the start key packed LSB first at width(last - start)
/// bits, ceil(n*b/8) bytes, with zero bits after the last offset.
#[test]
fn payload_is_horizontally_packed_offsets() {
    let mut rng = fastrand::Rng::with_seed(11);
    for n in [2usize, 3, 32, 33, 64, 100, 257] {
        for b in [1u32, 5, 8, 13, 24, 31] {
            let s = rng.u32(..1 << 20);
            let keys = common::keys_with_width(&mut rng, n, b, s);
            let (d, p) = common::encode_vec::<For>(&keys);
            let offs: Vec<u32> = keys[1..].iter().map(|k| k - keys[0]).collect();
            let w = bits::width(*offs.last().unwrap());
            assert_eq!(d.bits as u32, w);
            assert_eq!(d.size as usize, (offs.len() * w as usize).div_ceil(8));
            // Reference packing, written out here: value i at bits i*w.., LSB first.
            let mut want = vec![0u8; d.size as usize];
            for (i, &o) in offs.iter().enumerate() {
                for bit in 0..w as usize {
                    if o >> bit & 1 == 1 {
                        let at = i * w as usize + bit;
                        want[at / 8] |= 1 << (at % 8);
                    }
                }
            }
            assert_eq!(&p[..d.size as usize], &want[..], "n={n} b={b}");
        }
    }
}

#[test]
fn validate_detects_corruption() {
    let keys: Vec<u32> = (0..45u32).map(|i| 1000 + i * 7).collect();
    let (d, p) = common::encode_vec::<For>(&keys);
    For::validate(&d, &p).unwrap();
    let used = 44 * d.bits as usize;
    assert_ne!(used % 8, 0, "the test needs a partial last byte");
    let mut tail = p.clone();
    tail[d.size as usize - 1] |= 0x80;
    assert!(
        For::validate(&d, &tail).is_err(),
        "bits after the last offset"
    );
    let mut order = p.clone();
    bits::set(&mut order, d.bits as u32, 3, 0);
    assert!(For::validate(&d, &order).is_err(), "offsets not increasing");
    let wide = Descriptor {
        bits: d.bits + 1,
        ..d
    };
    assert!(
        For::validate(&wide, &p).is_err(),
        "bits not width(last - start)"
    );
    let size = Descriptor {
        size: d.size + 1,
        ..d
    };
    assert!(For::validate(&size, &p).is_err(), "size");
}

/// Append writes in place while the offset fits and grows the payload by whole bytes only.
#[test]
fn append_in_place_keeps_the_format() {
    let keys: Vec<u32> = (0..10u32).map(|i| 50 + i * 3).collect();
    let mut p = vec![0xFFu8; 1024];
    let mut d = For::encode(&keys, &mut p).unwrap();
    let mut model = keys.clone();
    for k in [79u32, 80, 81, 82, 200, 201, 100_000] {
        assert_eq!(
            For::append(&mut d, &mut p, k).unwrap(),
            AppendOutcome::Appended
        );
        model.push(k);
        For::validate(&d, &p).unwrap();
        let (d2, p2) = common::encode_vec::<For>(&model);
        assert_eq!(d, d2);
        assert_eq!(&p[..d.size as usize], &p2[..d2.size as usize]);
    }
}
