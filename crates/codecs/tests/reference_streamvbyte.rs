//! StreamVByte is byte-identical to the reference C library (Debian's `libstreamvbyte-dev`):
//! `streamvbyte_delta_encode(keys[1..], n, out, keys[0])` produces our payload, its
//! `streamvbyte_delta_decode` reads our payload, and we read its output, for every block size
//! 0..=256 and a range of delta widths. Compiled only when `build.rs` found the library.
//! `TERSEDB_LONG=1` repeats the sweep 20 times.
//! Seeded: re-run with `SEED=<n>`.

#![cfg(has_libstreamvbyte)]

use tersedb_codecs::streamvbyte::{self, StreamVByte};
use tersedb_codecs::{BlockCodec, Isa};

#[link(name = "streamvbyte", kind = "static")]
extern "C" {
    fn streamvbyte_delta_encode(input: *const u32, length: u32, out: *mut u8, prev: u32) -> usize;
    fn streamvbyte_delta_decode(input: *const u8, out: *mut u32, length: u32, prev: u32) -> usize;
}

/// Slack given to the C functions beyond the exact sizes, in case they read or write ahead.
const SLACK: usize = 64;

fn reference_encode(keys: &[u32]) -> Vec<u8> {
    let n = keys.len() - 1;
    let mut out = vec![0u8; n.div_ceil(4) + 4 * n + SLACK];
    // SAFETY: `keys[1..]` holds `n` u32s; `out` holds the library's worst case (n/4 control
    // bytes plus 4 bytes per value) plus slack.
    let size = unsafe {
        streamvbyte_delta_encode(keys[1..].as_ptr(), n as u32, out.as_mut_ptr(), keys[0])
    };
    out.truncate(size);
    out
}

fn reference_decode(payload: &[u8], n: usize, start: u32) -> (Vec<u32>, usize) {
    let mut input = payload.to_vec();
    input.resize(payload.len() + SLACK, 0);
    let mut out = vec![0u32; n + SLACK];
    // SAFETY: `out` has room for `n` values plus slack; `input` is the payload plus zero slack for
    // any read-ahead.
    let read =
        unsafe { streamvbyte_delta_decode(input.as_ptr(), out.as_mut_ptr(), n as u32, start) };
    out.truncate(n);
    (out, read)
}

fn seed() -> u64 {
    let s = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("SEED={s}");
    s
}

/// Sorted keys: `n + 1` of them with deltas of up to `b` bits (`b = 0`: a mix of widths), each
/// delta capped so the rest still fits below `u32::MAX`.
fn keys(rng: &mut fastrand::Rng, n: usize, b: u32) -> Vec<u32> {
    let mut k = vec![rng.u32(..1 << 20)];
    while k.len() < n + 1 {
        let w = if b == 0 { rng.u32(1..=24) } else { b };
        let m = if w >= 32 { u32::MAX } else { (1 << w) - 1 };
        let last = *k.last().unwrap();
        let cap = ((u32::MAX - last) / (n + 1 - k.len()) as u32).max(1);
        k.push(last + (rng.u32(..) & m) % cap + 1);
    }
    k
}

#[test]
fn both_directions_every_size_and_width() {
    let mut rng = fastrand::Rng::with_seed(seed());
    // TERSEDB_LONG=1: 20 sweeps instead of one.
    let sweeps = if std::env::var("TERSEDB_LONG").as_deref() == Ok("1") {
        20
    } else {
        1
    };
    for n in (0..sweeps).flat_map(|_| 0..=256usize) {
        for b in [0u32, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32] {
            let keys = keys(&mut rng, n, b);
            let mut ours = vec![0u8; StreamVByte::max_payload_len(keys.len())];
            let d = StreamVByte::encode(&keys, &mut ours).unwrap();
            let ours = &ours[..d.size as usize];
            let theirs = reference_encode(&keys);
            assert_eq!(ours, &theirs[..], "encode n={n} b={b}");

            let (decoded, read) = reference_decode(ours, n, keys[0]);
            assert_eq!(read, ours.len(), "reference read size n={n} b={b}");
            assert_eq!(decoded, &keys[1..], "reference decode n={n} b={b}");

            for isa in Isa::available() {
                let mut out = vec![0u32; keys.len()];
                let got = streamvbyte::decode_with(isa, &d, &theirs, &mut out).unwrap();
                assert_eq!(got, keys.len());
                assert_eq!(
                    out, keys,
                    "our decode of the reference bytes n={n} b={b} isa={isa}"
                );
            }
            StreamVByte::validate(&d, &theirs).unwrap();
        }
    }
}
