//! SIMD FOR: frame of reference in the 4-lane vertical layout of simdcomp (see
//! [`crate::vertical`] for the bit layout).
//!
//! ```text
//! Descriptor { start, count <= 129, last, bits = b, size = 16 * b }
//! payload[0..16b]   one frame: o[i] = keys[i+1] - start for i < count - 1, then zeros
//! ```
//!
//! The frame is simdcomp's `simdpackFOR(start, keys[1..129], out, b)` layout (the same bits as
//! packing the offsets with `BitPacker4x::compress`); a partial frame is padded with zero offsets
//! and still takes `16b` bytes. `b = width(last - start)`; blocks of 0 or 1 key have no payload
//! and `b = 0`.
//!
//! Decode is unpack plus one add per vector (no prefix sum). `select(i)` reads one value straight
//! from the packed bits; `lower_bound` compares the eight offsets around the position
//! interpolated from the first and last key (two value vectors, one SIMD compare) and, when they
//! do not bracket the key, counts the offsets below it over the frame (AVX2) or binary-searches
//! them (scalar), without decoding. `append` writes one offset in place while it fits in `b`;
//! insert and remove decode, modify and re-encode (offsets only shrink on remove, so the block
//! never grows).

use crate::isa::Isa;
use crate::vertical;
use crate::{
    AppendOutcome, BlockCodec, CodecError, CodecId, Descriptor, Fold, InsertOutcome, RemoveOutcome,
    Result,
};

/// The SIMD FOR codec (zero-sized; see the module docs for the format).
#[derive(Clone, Copy, Debug, Default)]
pub struct SimdFor;

const FRAME_ERR: CodecError = CodecError::Corrupt { what: "frame" };

impl SimdFor {
    /// [`BlockCodec::encode`] on an explicit instruction-set level (unsupported levels fall back).
    #[doc(hidden)]
    pub fn encode_with(isa: Isa, keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        vertical::encode(isa, false, keys, out)
    }

    /// [`BlockCodec::decode`] on an explicit instruction-set level.
    #[doc(hidden)]
    #[inline]
    pub fn decode_with(isa: Isa, d: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        vertical::decode(isa, false, d, payload, out)
    }

    /// [`BlockCodec::lower_bound`] on an explicit instruction-set level: the first offset
    /// `>= key - start`, found on the packed bits (see the module docs).
    #[doc(hidden)]
    #[inline]
    pub fn lower_bound_with(
        isa: Isa,
        desc: &Descriptor,
        payload: &[u8],
        key: u32,
    ) -> Result<(usize, Option<u32>)> {
        let isa = vertical::usable(isa);
        #[cfg(target_arch = "x86_64")]
        if isa >= Isa::Avx2 {
            // SAFETY: AVX2 is supported at this level (`effective`).
            return unsafe { crate::simd::vertical_avx2::simd_for_lower_bound(desc, payload, key) };
        }
        lower_bound_body::<false>(isa, desc, payload, key)
    }
}

/// `SimdFor::lower_bound_with`'s body; `AVX2` says it is being compiled inside an AVX2 kernel
/// (`simd::vertical_avx2::simd_for_lower_bound`), whose window compare it then inlines.
#[inline(always)]
pub(crate) fn lower_bound_body<const AVX2: bool>(
    isa: Isa,
    desc: &Descriptor,
    payload: &[u8],
    key: u32,
) -> Result<(usize, Option<u32>)> {
    let (b, n) = vertical::check(desc, payload)?;
    let count = desc.count as usize;
    if count == 0 || key > desc.last {
        return Ok((count, None));
    }
    if key <= desc.start {
        return Ok((0, Some(desc.start)));
    }
    if payload.len() < vertical::frame_len(b) {
        return Err(FRAME_ERR);
    }
    // First offset >= target among o[0..n], found on the packed bits: first the eight offsets
    // around the interpolated position (offsets run from o[0] > 0 to o[n-1] = last - start),
    // then, if they do not bracket it, a scan of the frame.
    let target = key - desc.start;
    let range = desc.last - desc.start;
    let near = if AVX2 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: AVX2 is enabled in the caller; b is 1..=32 (`check`) and the frame's 16*b
            // bytes are in `payload` (checked above).
            unsafe {
                crate::simd::vertical_avx2::rank_near_body(payload.as_ptr(), b, n, target, range)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    } else {
        let guess = (target as u64 * n as u64 / range.max(1) as u64) as usize;
        vertical::rank_near(Isa::Scalar, payload, b, n, target, guess)
    };
    if let Some((lo, o)) = near {
        if lo >= n {
            return Ok((count, None));
        }
        return Ok((lo + 1, Some(desc.start.wrapping_add(o))));
    }
    let lo = vertical::rank(isa, payload, b, n, target).ok_or(FRAME_ERR)?;
    if lo >= n {
        return Ok((count, None));
    }
    let o = vertical::get(payload, b, lo).ok_or(FRAME_ERR)?;
    Ok((lo + 1, Some(desc.start.wrapping_add(o))))
}

/// `SimdFor::select` for every shape: checks the descriptor and the slot, says what is wrong.
#[inline(never)]
fn select_checked(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
    let (b, _) = vertical::check(desc, payload)?;
    if i >= desc.count as usize {
        return Err(CodecError::InvalidInput {
            what: "slot out of range",
        });
    }
    if i == 0 {
        return Ok(desc.start);
    }
    let o = vertical::get(payload, b, i - 1).ok_or(FRAME_ERR)?;
    Ok(desc.start.wrapping_add(o))
}

impl BlockCodec for SimdFor {
    const ID: CodecId = CodecId::SimdFor;
    const MAX_KEYS: usize = vertical::MAX_KEYS;

    fn max_payload_len(count: usize) -> usize {
        if count <= 1 {
            0
        } else {
            vertical::frame_len(32)
        }
    }

    /// 16 bytes per bit of the widest offset from the start key (one frame).
    fn encoded_len(keys: &[u32]) -> Option<usize> {
        Some(match (keys.first(), keys.last()) {
            (Some(&start), Some(&last)) if keys.len() > 1 => {
                crate::vertical::frame_len(crate::bits::width(last.wrapping_sub(start)))
            }
            _ => 0,
        })
    }

    fn encode(keys: &[u32], out: &mut [u8]) -> Result<Descriptor> {
        vertical::encode(Isa::detect(), false, keys, out)
    }

    #[inline]
    fn decode(desc: &Descriptor, payload: &[u8], out: &mut [u32]) -> Result<usize> {
        vertical::decode_detected(false, desc, payload, out)
    }

    #[inline]
    fn select(desc: &Descriptor, payload: &[u8], i: usize) -> Result<u32> {
        // The usual case in a few branch-free compares: a block of 2..=129 keys in its only
        // well-formed shape (1 <= b <= 32, size = 16b within the payload, last > start) and a
        // slot after the start key. Anything else takes the checked path below.
        let (count, b) = (desc.count, desc.bits as u32);
        let usual = (count.wrapping_sub(2) < vertical::MAX_KEYS as u32 - 1)
            & (b.wrapping_sub(1) < 32)
            & (desc.size == 16 * b)
            & (payload.len() >= 16 * b as usize)
            & (desc.last > desc.start)
            & (i.wrapping_sub(1) < (count as usize).wrapping_sub(1));
        if usual {
            if let Some(o) = vertical::get(payload, b, i - 1) {
                return Ok(desc.start.wrapping_add(o));
            }
        }
        select_checked(desc, payload, i)
    }

    #[inline]
    fn lower_bound(desc: &Descriptor, payload: &[u8], key: u32) -> Result<(usize, Option<u32>)> {
        Self::lower_bound_with(Isa::detect(), desc, payload, key)
    }

    fn insert(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<InsertOutcome> {
        vertical::insert(Isa::detect(), false, desc, payload, key)
    }

    fn append(desc: &mut Descriptor, payload: &mut [u8], key: u32) -> Result<AppendOutcome> {
        vertical::append(Isa::detect(), false, desc, payload, key)
    }

    fn remove(desc: &mut Descriptor, payload: &mut [u8], slot: usize) -> Result<RemoveOutcome> {
        vertical::remove(Isa::detect(), false, desc, payload, slot)
    }

    fn fold(desc: &Descriptor, payload: &[u8], slots: std::ops::Range<usize>) -> Result<Fold> {
        vertical::fold(Isa::detect(), false, desc, payload, slots)
    }

    fn validate(desc: &Descriptor, payload: &[u8]) -> Result<()> {
        vertical::validate(Isa::detect(), false, desc, payload)
    }
}
