//! Pins the BP128 and SIMD FOR frame format to the reference: the `bitpacking` crate's
//! `BitPacker4x` (simdcomp's 4-lane layout). For every bit width 0..=32 and every instruction-set
//! level this CPU runs, our frames are byte-identical to `compress_sorted` (BP128) and `compress`
//! of the offsets (SIMD FOR), and each side decodes the other's bytes.

use bitpacking::{BitPacker, BitPacker4x};
use tersedb_codecs::bp128::Bp128;
use tersedb_codecs::simd_for::SimdFor;
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

/// 128 non-decreasing keys from `start` whose deltas use exactly `b` bits (some at the max).
fn sorted_frame(rng: &mut fastrand::Rng, start: u32, b: u32) -> [u32; FRAME] {
    let m = if b == 32 { u32::MAX } else { (1u32 << b) - 1 };
    let mut keys = [0u32; FRAME];
    let mut cur = start;
    for (i, k) in keys.iter_mut().enumerate() {
        let d = match i % 7 {
            0 => m,
            1 => 0,
            _ => rng.u32(..) & m,
        };
        cur = cur.wrapping_add(d);
        *k = cur;
    }
    keys
}

#[test]
fn bp128_frames_match_bitpacker4x_compress_sorted() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let bp = BitPacker4x::new();
    for b in 0..=32u32 {
        for round in 0..rounds(20) {
            let start = if round % 2 == 0 { rng.u32(..) } else { 0 };
            let keys = sorted_frame(&mut rng, start, b);
            let mut theirs = vec![0u8; 16 * b as usize];
            let len = bp.compress_sorted(start, &keys, &mut theirs, b as u8);
            assert_eq!(len, 16 * b as usize);
            let mut back = [0u32; FRAME];
            bp.decompress_sorted(start, &theirs, &mut back, b as u8);
            assert_eq!(back, keys, "bitpacking round trip b={b}");
            for isa in Isa::available() {
                let mut ours = vec![0u8; 16 * b as usize];
                vertical::pack(isa, &keys, start, true, b, &mut ours);
                assert_eq!(ours, theirs, "bytes b={b} isa={isa}");
                let mut dec = [0u32; FRAME];
                vertical::unpack(isa, &theirs, b, start, true, &mut dec).unwrap();
                assert_eq!(dec, keys, "we decode theirs b={b} isa={isa}");
                let mut dec2 = [0u32; FRAME];
                bp.decompress_sorted(start, &ours, &mut dec2, b as u8);
                assert_eq!(dec2, keys, "they decode ours b={b} isa={isa}");
            }
        }
    }
}

#[test]
fn simd_for_frames_match_bitpacker4x_compress_of_offsets() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let bp = BitPacker4x::new();
    for b in 0..=32u32 {
        let m = if b == 32 { u32::MAX } else { (1u32 << b) - 1 };
        for _ in 0..rounds(20) {
            let start = rng.u32(..);
            let offs: Vec<u32> = (0..FRAME)
                .map(|i| if i % 5 == 0 { m } else { rng.u32(..) & m })
                .collect();
            let keys: [u32; FRAME] = std::array::from_fn(|i| start.wrapping_add(offs[i]));
            let mut theirs = vec![0u8; 16 * b as usize];
            assert_eq!(bp.compress(&offs, &mut theirs, b as u8), 16 * b as usize);
            for isa in Isa::available() {
                let mut ours = vec![0u8; 16 * b as usize];
                vertical::pack(isa, &keys, start, false, b, &mut ours);
                assert_eq!(ours, theirs, "bytes b={b} isa={isa}");
                let mut dec = [0u32; FRAME];
                vertical::unpack(isa, &theirs, b, start, false, &mut dec).unwrap();
                assert_eq!(dec, keys, "we decode theirs b={b} isa={isa}");
            }
        }
    }
}

/// A whole block's payload is the reference frame of `keys[1..]` padded with repeats of the last
/// key (BP128) or with the start key (SIMD FOR).
#[test]
fn block_payloads_are_reference_frames() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let bp = BitPacker4x::new();
    for n in [2usize, 3, 5, 64, 128, 129] {
        let mut keys: Vec<u32> = (0..n).map(|_| rng.u32(..1 << 30)).collect();
        keys.sort_unstable();
        keys.dedup();
        let (start, last) = (keys[0], *keys.last().unwrap());
        let mut padded = [last; FRAME];
        padded[..keys.len() - 1].copy_from_slice(&keys[1..]);
        let mut p = vec![0u8; 512];
        let d = Bp128::encode(&keys, &mut p).unwrap();
        assert_eq!(d.bits, bp.num_bits_sorted(start, &padded));
        let mut theirs = vec![0u8; 512];
        let len = bp.compress_sorted(start, &padded, &mut theirs, d.bits);
        assert_eq!(&p[..d.size as usize], &theirs[..len], "bp128 n={n}");

        let offs: Vec<u32> = (0..FRAME)
            .map(|i| keys.get(i + 1).map_or(0, |k| k - start))
            .collect();
        let d = SimdFor::encode(&keys, &mut p).unwrap();
        assert_eq!(d.bits, bp.num_bits(&offs));
        let len = bp.compress(&offs, &mut theirs, d.bits);
        assert_eq!(&p[..d.size as usize], &theirs[..len], "simd-for n={n}");
    }
}
