//! PFOR and PFOR-DELTA frames over any `u32` values (a column, not keys): the key codecs' frame
//! format, encoder and two-loop decoder (see the parent module) without the key checks, so that
//! values may repeat, fall or wrap. `tersedb bench pfor` measures the patched-FOR paper (Zukowski
//! et al., "Super-Scalar RAM-CPU Cache Compression") with these, the production kernels.
//!
//! A frame holds `1..=128` values. PFOR codes the values themselves (frame of reference `base`);
//! PFOR-DELTA codes the differences `v[i] - v[i-1]` (wrapping), `v[-1]` being the `prev` the
//! caller passes to both sides. The caller keeps each frame's value count and bit width, as a
//! block descriptor does for the key codecs.

use super::{
    choose, decode_values, longest_window, mask, parse_frame, sort_small, window_start,
    write_coded, write_frame, FRAME,
};
use crate::{CodecError, Isa, Result};

/// What [`encode`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// Bit width of the codes.
    pub bits: u32,
    /// Frame of reference (smallest coded value).
    pub base: u32,
    /// Exceptions, compulsory ones included.
    pub exceptions: usize,
    /// Bytes written.
    pub size: usize,
}

/// Most bytes a frame of `n` values takes at any width (header, codes, exceptions); a frame of
/// the chosen width takes at most `7 + 4n`, a forced width may code and except every value.
pub fn max_len(n: usize) -> usize {
    super::MAX_HEADER + 8 * n
}

fn check_len(n: usize) -> Result<()> {
    if n == 0 || n > FRAME {
        return Err(CodecError::InvalidInput {
            what: "a frame has 1..=128 values",
        });
    }
    Ok(())
}

/// The window the paper's `PFOR_ANALYZE_BITS` picks for a given width `b`: the longest stretch
/// of the sorted values whose range fits in `b` bits; returns its smallest value (the base).
pub fn window_base(v: &[u32], b: u32) -> Result<u32> {
    check_len(v.len())?;
    if b > 32 {
        return Err(CodecError::InvalidInput {
            what: "bit width above 32",
        });
    }
    let mut buf = [0u32; FRAME];
    let s = &mut buf[..v.len()];
    s.copy_from_slice(v);
    sort_small(s);
    let m = mask(b);
    let len = longest_window(Isa::detect(), s, m, 1).unwrap_or(1);
    Ok(s[window_start(s, len, m)])
}

/// Encodes `v` as one frame into `out`: with `bits = None` the width and base the key codecs
/// choose (smallest frame), with `Some(b)` width `b` and [`window_base`].
pub fn encode(v: &[u32], bits: Option<u32>, out: &mut [u8]) -> Result<FrameInfo> {
    check_len(v.len())?;
    let (b, size, base) = match bits {
        None => {
            let (b, base) = choose(v, false);
            let (b2, size) = write_frame(v, false, out)?;
            debug_assert_eq!(b, b2);
            (b2, size, base)
        }
        Some(b) => {
            let base = window_base(v, b)?;
            (b, write_coded(v, b, base, out)?, base)
        }
    };
    Ok(FrameInfo {
        bits: b,
        base,
        exceptions: out[0] as usize,
        size,
    })
}

/// Encodes `v` as one frame of width `b` and frame of reference `base` (no search): the
/// production encoder's LOOP1 and LOOP2, the subject of the paper's compression figure.
#[inline]
pub fn encode_with(v: &[u32], b: u32, base: u32, out: &mut [u8]) -> Result<FrameInfo> {
    check_len(v.len())?;
    if b > 32 {
        return Err(CodecError::InvalidInput {
            what: "bit width above 32",
        });
    }
    let size = write_coded(v, b, base, out)?;
    Ok(FrameInfo {
        bits: b,
        base,
        exceptions: out[0] as usize,
        size,
    })
}

/// Encodes the differences of `v` from `prev` (PFOR-DELTA); see [`encode`].
pub fn encode_delta(v: &[u32], prev: u32, bits: Option<u32>, out: &mut [u8]) -> Result<FrameInfo> {
    check_len(v.len())?;
    let mut d = [0u32; FRAME];
    let mut p = prev;
    for (x, &y) in d.iter_mut().zip(v) {
        *x = y.wrapping_sub(p);
        p = y;
    }
    encode(&d[..v.len()], bits, out)
}

/// Decodes a PFOR frame of `out.len()` values of width `bits` from `payload` (exactly the
/// frame's bytes) with the instruction set `isa` (levels this CPU lacks fall back to scalar).
#[inline]
pub fn decode(isa: Isa, bits: u32, payload: &[u8], out: &mut [u32]) -> Result<()> {
    check_len(out.len())?;
    if bits > 32 {
        return Err(CodecError::Corrupt {
            what: "bit width above 32",
        });
    }
    let f = parse_frame(out.len(), bits, payload)?;
    decode_values::<false>(isa, &f, 0, out)
}

/// Decodes a PFOR-DELTA frame: `out[i] = prev + d[0] + .. + d[i]`; see [`decode`].
#[inline]
pub fn decode_delta(isa: Isa, bits: u32, payload: &[u8], prev: u32, out: &mut [u32]) -> Result<()> {
    check_len(out.len())?;
    if bits > 32 {
        return Err(CodecError::Corrupt {
            what: "bit width above 32",
        });
    }
    let f = parse_frame(out.len(), bits, payload)?;
    decode_values::<true>(isa, &f, prev, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values() -> impl Strategy<Value = Vec<u32>> {
        prop_oneof![
            prop::collection::vec(any::<u32>(), 1..=FRAME),
            prop::collection::vec(0u32..300, 1..=FRAME),
            (
                prop::collection::vec(0u32..256, 1..=FRAME),
                prop::collection::vec(any::<bool>(), FRAME)
            )
                .prop_map(|(mut v, ex)| {
                    for (x, e) in v.iter_mut().zip(ex) {
                        if e {
                            *x |= 1 << 30;
                        }
                    }
                    v
                }),
        ]
    }

    proptest! {
        /// Every width, chosen or forced, round-trips on every instruction set, PFOR and
        /// PFOR-DELTA, and the frame is the size the encoder reported.
        #[test]
        fn frames_round_trip(v in values(), prev in any::<u32>(), b in prop::option::of(0u32..=32)) {
            let mut buf = vec![0u8; max_len(v.len())];
            let info = encode(&v, b, &mut buf).unwrap();
            prop_assert!(info.size <= max_len(v.len()));
            if let Some(b) = b {
                prop_assert_eq!(info.bits, b);
            }
            for isa in Isa::available() {
                let mut out = vec![0u32; v.len()];
                decode(isa, info.bits, &buf[..info.size], &mut out).unwrap();
                prop_assert_eq!(&out, &v);
            }
            let info = encode_delta(&v, prev, b, &mut buf).unwrap();
            for isa in Isa::available() {
                let mut out = vec![0u32; v.len()];
                decode_delta(isa, info.bits, &buf[..info.size], prev, &mut out).unwrap();
                prop_assert_eq!(&out, &v);
            }
        }

        /// Bad widths, lengths and truncated frames are errors, never panics.
        #[test]
        fn bad_frames_are_errors(v in values(), cut in 0usize..8, b in 0u32..40) {
            let mut buf = vec![0u8; max_len(v.len())];
            let info = encode(&v, None, &mut buf).unwrap();
            let mut out = vec![0u32; v.len()];
            let short = info.size.saturating_sub(cut + 1);
            prop_assert!(decode(Isa::Scalar, info.bits, &buf[..short], &mut out).is_err());
            let _ = decode(Isa::detect(), b, &buf[..info.size], &mut out);
            prop_assert!(decode(Isa::Scalar, info.bits, &buf[..info.size], &mut []).is_err());
        }
    }
}
