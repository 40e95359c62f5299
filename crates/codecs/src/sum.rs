//! Exact sum of `u32` keys as `u64`: the SUM aggregate's inner loop over a decoded block.
//! The AVX2 kernel widens eight keys at a time to 64-bit lanes; the scalar twin is the reference
//! (and the path on other CPUs).

use crate::isa::Isa;

/// Scalar reference.
pub fn sum_u32_scalar(keys: &[u32]) -> u64 {
    keys.iter().map(|&k| k as u64).sum()
}

/// Scalar reference of [`sum_le_u32`].
pub fn sum_le_u32_scalar(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64)
        .sum()
}

/// The best level this CPU supports (not capped by `TERSEDB_ISA`), probed once.
#[inline]
fn cpu_max() -> Isa {
    static MAX: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| *Isa::available().last().unwrap_or(&Isa::Scalar))
}

/// Exact sum of `keys` with the kernel of `isa` (capped at what the CPU has).
#[inline]
pub fn sum_u32_with(isa: Isa, keys: &[u32]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if isa.min(cpu_max()) >= Isa::Avx2 {
            // SAFETY: AVX2 is supported (checked above); the kernel reads only `keys`.
            return unsafe { crate::simd::sum_avx2::sum_u32(keys) };
        }
    }
    let _ = isa;
    sum_u32_scalar(keys)
}

/// Exact sum of `keys` on the detected ISA.
#[inline]
pub fn sum_u32(keys: &[u32]) -> u64 {
    sum_u32_with(Isa::detect(), keys)
}

/// Exact sum of the `bytes.len() / 4` little-endian u32 values at the start of `bytes` (any
/// alignment; trailing bytes short of a value are ignored), with the kernel of `isa`.
#[inline]
pub fn sum_le_u32_with(isa: Isa, bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if isa.min(cpu_max()) >= Isa::Avx2 {
            // SAFETY: AVX2 is supported (checked above); the kernel reads only `bytes`.
            return unsafe { crate::simd::sum_avx2::sum_le_u32(bytes) };
        }
    }
    let _ = isa;
    sum_le_u32_scalar(bytes)
}

/// [`sum_le_u32_with`] on the detected ISA: SUM over a plain leaf's key array.
#[inline]
pub fn sum_le_u32(bytes: &[u8]) -> u64 {
    sum_le_u32_with(Isa::detect(), bytes)
}

/// Exact sum of all keys of a block without materialising them, where the format allows: SIMD
/// FOR stores offsets from the start key, so the sum is `count * start + sum(offsets)`, and the
/// fused kernel's wrapping 32-bit sum of 128 offsets of `b <= 25` bits cannot wrap; BP128 sums
/// its deltas' moments in registers; PFOR and PFOR-DELTA sum their codes' moments and correct
/// at the exceptions (`pfor::sum`); Rice's complement mode is the sum of `[start, last]` minus
/// the missing values (`rice::Rice::block_sum`; its present mode sums as it decodes). `None` when this shortcut does not apply (other codecs,
/// wider offsets, a block that does not parse): decode and use [`sum_u32`].
#[inline]
pub fn block_sum(codec: crate::CodecId, d: &crate::Descriptor, payload: &[u8]) -> Option<u64> {
    block_sum_with(Isa::detect(), codec, d, payload)
}

/// [`block_sum`] with the kernels of `isa`. The scalar twin of BP128's is
/// [`bp128_sum_scalar`].
#[inline]
pub fn block_sum_with(
    isa: Isa,
    codec: crate::CodecId,
    d: &crate::Descriptor,
    payload: &[u8],
) -> Option<u64> {
    BlockSum::new(isa, codec)?.sum(d, payload)
}

/// [`block_sum`] with the codec and the kernel level chosen once: loops over many blocks (every
/// block of a leaf inside a SUM range) pay no per-block dispatch.
#[derive(Clone, Copy, Debug)]
pub struct BlockSum {
    kind: Kind,
    /// `isa` capped at what the CPU has.
    isa: Isa,
}

/// The codecs with a block sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bp128,
    SimdFor,
    Pfor,
    PforDelta,
    Rice,
}

impl BlockSum {
    /// The block sum of `codec` on the kernels of `isa`; `None` for codecs without one.
    pub fn new(isa: Isa, codec: crate::CodecId) -> Option<BlockSum> {
        let kind = match codec {
            crate::CodecId::Bp128 => Kind::Bp128,
            crate::CodecId::SimdFor => Kind::SimdFor,
            crate::CodecId::Pfor => Kind::Pfor,
            crate::CodecId::PforDelta => Kind::PforDelta,
            crate::CodecId::Rice => Kind::Rice,
            _ => return None,
        };
        Some(BlockSum {
            kind,
            isa: isa.min(cpu_max()),
        })
    }

    /// The sum of the block `d` with payload `payload`; `None` when the shortcut does not apply
    /// to this block (see [`block_sum`]). Always inlined: it runs once per block in the fold.
    #[inline(always)]
    pub fn sum(&self, d: &crate::Descriptor, payload: &[u8]) -> Option<u64> {
        if let Some(s) = few_keys_sum(d) {
            return Some(s);
        }
        let count = d.count as usize;
        match self.kind {
            Kind::Bp128 => return self.bp128_sum(d, payload),
            Kind::Rice => return crate::rice::Rice::block_sum(d, payload),
            Kind::SimdFor => {}
            Kind::Pfor | Kind::PforDelta => {
                if count > crate::pfor::MAX_KEYS {
                    return None;
                }
                let shape = count as u64 | (d.bits as u64) << 16 | (d.size as u64) << 32;
                return self.pfor_by_value(d.start, d.last, shape, payload);
            }
        }
        if count > crate::vertical::MAX_KEYS || d.bits == 0 || d.bits > 25 {
            return None;
        }
        let b = d.bits as u32;
        if payload.len() < crate::vertical::frame_len(b)
            || d.size as usize != crate::vertical::frame_len(b)
        {
            return None;
        }
        let offs = crate::vertical::sum_prefix(self.isa, payload, b, count - 1)?;
        Some(count as u64 * d.start as u64 + offs as u64)
    }

    /// `pfor::sum::block_sum` out of line, with the descriptor passed by value in registers
    /// (`shape` = count | bits << 16 | size << 32, `count <= 129`): the block sum is inlined
    /// into loops over many blocks, where a descriptor whose address escapes to a call must be
    /// kept in memory on every block, and a call with arguments on the stack cost BP128's
    /// blocks in the same loop 5% more instructions (3% as here).
    #[inline(never)]
    fn pfor_by_value(self, start: u32, last: u32, shape: u64, payload: &[u8]) -> Option<u64> {
        let d = crate::Descriptor {
            start,
            count: shape as u16 as u32,
            last,
            size: (shape >> 32) as u32,
            bits: (shape >> 16) as u8,
        };
        if self.kind == Kind::PforDelta {
            crate::pfor::sum::block_sum::<true>(self.isa, &d, payload)
        } else {
            crate::pfor::sum::block_sum::<false>(self.isa, &d, payload)
        }
    }

    /// A BP128 block (`count >= 2`): `start + T - (128 - n) * last`, where `T` sums the 128
    /// decoded slots (the padding slots repeat the last key), or from the deltas' moments.
    #[inline(always)]
    fn bp128_sum(&self, d: &crate::Descriptor, payload: &[u8]) -> Option<u64> {
        #[cfg(target_arch = "x86_64")]
        if self.isa >= Isa::Avx2 {
            let (b, n) = vertical_frame(d, payload)?;
            if b <= 24 {
                let kernel = crate::simd::vertical_avx2::MOMENTS[b as usize];
                // SAFETY: AVX2 is supported (`new` capped the level at the CPU's); the kernel
                // reads the 16*b bytes of the frame, which `vertical_frame` checked are inside
                // `payload`.
                let m = unsafe { kernel(payload.as_ptr()) };
                return Some(bp128_from_moments(d.start, n, m));
            }
            // SAFETY: AVX2 is supported (`new` capped the level at the CPU's); `vertical_frame`
            // checked the frame's 16*b bytes are inside `payload`.
            return Some(unsafe { bp128_wide_avx2(d, b, n, payload) });
        }
        bp128_scalar_by_value(d.start, d.count, d.last, d.size, d.bits, payload)
    }

    /// The totals of a run of blocks: `run.next` yields each block (descriptor, payload, base)
    /// from the cursor `at` on until `None`; each is summed as [`BlockSum::sum`] sums it or,
    /// where that declines, by `run.decline` (a decode), and its `base` times its count added.
    /// Gives back the cursor where the run stopped. For BP128 and SIMD FOR on AVX2 the whole
    /// loop is compiled with AVX2 enabled and each width's kernel inlined into it
    /// ([`moments_inline`], [`sum_inline`]): no call per block, so the loop's state stays in
    /// registers, where a call through the kernels' table spilled it on every block.
    ///
    /// [`moments_inline`]: crate::simd::vertical_avx2::moments_inline
    /// [`sum_inline`]: crate::simd::vertical_avx2::sum_inline
    #[inline(always)]
    pub fn run<'p, R: BlockRun<'p>>(
        &self,
        run: &R,
        at: R::Cursor,
    ) -> Result<(RunTotal, R::Cursor), R::Error> {
        #[cfg(target_arch = "x86_64")]
        if self.isa >= Isa::Avx2 {
            match self.kind {
                // SAFETY: AVX2 is supported (`new` capped the level at the CPU's).
                Kind::Bp128 => return unsafe { bp128_run_avx2(run, at) },
                // SAFETY: AVX2 is supported (`new` capped the level at the CPU's).
                Kind::SimdFor => return unsafe { simd_for_run_avx2(run, at) },
                Kind::Pfor | Kind::PforDelta | Kind::Rice => {}
            }
        }
        let (mut t, mut at) = (RunTotal::default(), at);
        while let Some(blk) = run.next(&mut at)? {
            let s = match self.sum(&blk.desc, blk.payload) {
                Some(s) => s,
                None => run.decline(blk.desc, blk.payload)?,
            };
            t.add(&blk, s);
        }
        Ok((t, at))
    }
}

/// A run of blocks for [`BlockSum::run`]: the caller's walk over its block index. Its state
/// is a small `Copy` cursor the loop keeps in registers (a walk behind a reference, or passed
/// by value as a larger struct, stayed in memory: every field loaded and stored on every
/// block); `self` holds what does not change. A trait rather than closures, so that the
/// implementation marks `next` `#[inline(always)]` (a closure left out of the AVX2 loop
/// returned every block through memory: 40% more instructions).
pub trait BlockRun<'p> {
    type Error;
    /// Where the walk stands (e.g. the index entries not yet read).
    type Cursor: Copy;
    /// The block at `at`, `at` moved past it; `None` at the run's end.
    fn next(&self, at: &mut Self::Cursor) -> Result<Option<RunBlock<'p>>, Self::Error>;
    /// The sum of a block the shortcut declined (decoded and added up).
    fn decline(&self, d: crate::Descriptor, payload: &[u8]) -> Result<u64, Self::Error>;
}

/// One block of a [`BlockRun`].
#[derive(Clone, Copy, Debug)]
pub struct RunBlock<'p> {
    pub desc: crate::Descriptor,
    pub payload: &'p [u8],
    /// What the block's keys are offsets from (0 when they are the keys themselves).
    pub base: u64,
}

/// What [`BlockSum::run`] adds up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunTotal {
    /// The exact sum of the keys (each block's `base` included).
    pub sum: u128,
    pub keys: u64,
    /// Blocks summed.
    pub blocks: u64,
}

impl RunTotal {
    /// Adds block `blk`, whose keys (offsets from its base) sum to `s`.
    #[inline(always)]
    pub fn add(&mut self, blk: &RunBlock<'_>, s: u64) {
        let n = blk.desc.count as u64;
        self.sum += s as u128 + blk.base as u128 * n as u128;
        self.keys += n;
        self.blocks += 1;
    }
}

/// A BP128 block's sum from its deltas' moments `(D, J)` ([`MOMENTS`]), `n` keys after the
/// start: `n*start + sum((n - j) * v[j]) = n*start + n*D - J` (the padding values are zero).
/// Wrapping: exact for a valid frame; a corrupt one gives a wrong sum, not a panic.
///
/// [`MOMENTS`]: crate::simd::vertical_avx2::MOMENTS
#[inline(always)]
fn bp128_from_moments(start: u32, n: usize, (dsum, jsum): (u64, u64)) -> u64 {
    let n = n as u64;
    (start as u64)
        .wrapping_mul(n + 1)
        .wrapping_add(n.wrapping_mul(dsum))
        .wrapping_sub(jsum)
}

/// A BP128 block of deltas wider than the moments kernels take (`b > 24`): `start + T - (128
/// - n) * last`, where `T` sums the 128 decoded slots (the padding slots repeat the last key).
///
/// # Safety
/// AVX2 must be supported; `payload` holds the frame's `16 * b` bytes (`vertical_frame`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn bp128_wide_avx2(d: &crate::Descriptor, b: u32, n: usize, payload: &[u8]) -> u64 {
    let kernel = crate::simd::vertical_avx2::SUM_KEYS_D1[b as usize];
    // SAFETY: the caller's contract (AVX2 supported, the frame's 16*b bytes in `payload`).
    let t = unsafe { kernel(payload.as_ptr(), d.start) };
    let pad = (crate::vertical::FRAME - n) as u64 * d.last as u64;
    (d.start as u64).wrapping_add(t).wrapping_sub(pad)
}

/// [`BlockSum::run`] for BP128 on AVX2.
///
/// # Safety
/// AVX2 must be supported.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bp128_run_avx2<'p, R: BlockRun<'p>>(
    run: &R,
    at: R::Cursor,
) -> Result<(RunTotal, R::Cursor), R::Error> {
    let (mut t, mut at) = (RunTotal::default(), at);
    while let Some(blk) = run.next(&mut at)? {
        let (d, p) = (blk.desc, blk.payload);
        let s = match vertical_frame(&d, p) {
            Some((b, n)) => {
                // SAFETY: AVX2 is enabled here; the frame's 16*b bytes are inside `p`
                // (`vertical_frame`).
                let m = unsafe { crate::simd::vertical_avx2::moments_inline(b, p.as_ptr()) };
                match m {
                    Some(m) => bp128_from_moments(d.start, n, m),
                    // SAFETY: AVX2 is enabled here; the frame's 16*b bytes are inside `p`.
                    None => unsafe { bp128_wide_avx2(&d, b, n, p) },
                }
            }
            None => match few_keys_sum(&d) {
                Some(s) => s,
                None => run.decline(d, p)?,
            },
        };
        t.add(&blk, s);
    }
    Ok((t, at))
}

/// [`BlockSum::run`] for SIMD FOR on AVX2: each block `count * start` plus the sum of its
/// `count - 1` offsets, as [`BlockSum::sum`] takes it, declining the same blocks.
///
/// # Safety
/// AVX2 must be supported.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn simd_for_run_avx2<'p, R: BlockRun<'p>>(
    run: &R,
    at: R::Cursor,
) -> Result<(RunTotal, R::Cursor), R::Error> {
    let (mut t, mut at) = (RunTotal::default(), at);
    while let Some(blk) = run.next(&mut at)? {
        let (d, p) = (blk.desc, blk.payload);
        let s = match vertical_frame(&d, p) {
            Some((b, n)) => {
                // SAFETY: AVX2 is enabled here; the frame's 16*b bytes are inside `p`
                // (`vertical_frame`; widths outside 1..=25 give `None`).
                match unsafe { crate::simd::vertical_avx2::sum_inline(b, p.as_ptr(), n as u32) } {
                    Some(offs) => (n as u64 + 1) * d.start as u64 + offs as u64,
                    None => run.decline(d, p)?,
                }
            }
            None => match few_keys_sum(&d) {
                Some(s) => s,
                None => run.decline(d, p)?,
            },
        };
        t.add(&blk, s);
    }
    Ok((t, at))
}

/// [`bp128_sum_scalar`] with the descriptor passed by value and out of line: the block sum is
/// inlined into loops over many blocks, where a descriptor whose address escapes to a call
/// must be kept in memory on every block (spilled around the kernel call).
#[cold]
#[inline(never)]
fn bp128_scalar_by_value(
    start: u32,
    count: u32,
    last: u32,
    size: u32,
    bits: u8,
    payload: &[u8],
) -> Option<u64> {
    let d = crate::Descriptor {
        start,
        count,
        last,
        size,
        bits,
    };
    bp128_sum_scalar(&d, payload)
}

/// A vertical frame's width and keys after the first (BP128 and SIMD FOR blocks): `(b, n)`
/// when the descriptor and payload are consistent.
#[inline(always)]
fn vertical_frame(d: &crate::Descriptor, payload: &[u8]) -> Option<(u32, usize)> {
    let count = d.count as usize;
    let b = d.bits as u32;
    if !(2..=crate::vertical::MAX_KEYS).contains(&count)
        || !(1..=32).contains(&b)
        || d.size as usize != crate::vertical::frame_len(b)
        || payload.len() < crate::vertical::frame_len(b)
    {
        return None;
    }
    Some((b, count - 1))
}

/// The sum of a block of at most one key (no payload): its start key, or 0 when empty;
/// `None` for a longer block.
#[inline(always)]
fn few_keys_sum(d: &crate::Descriptor) -> Option<u64> {
    match d.count {
        0 => Some(0),
        1 => Some(d.start as u64),
        _ => None,
    }
}

/// Scalar twin of the BP128 block sum (unpack, prefix sum, add).
pub fn bp128_sum_scalar(d: &crate::Descriptor, payload: &[u8]) -> Option<u64> {
    if let Some(s) = few_keys_sum(d) {
        return Some(s);
    }
    let (b, n) = vertical_frame(d, payload)?;
    let mut vals = [0u32; crate::vertical::FRAME];
    crate::vertical::unpack_scalar(payload, b, &mut vals)?;
    let (mut k, mut s) = (d.start, d.start as u64);
    for &v in &vals[..n] {
        k = k.wrapping_add(v);
        s += k as u64;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sum_matches_decode() {
        use crate::{BlockCodec, CodecId};
        let mut rng = fastrand::Rng::with_seed(13);
        for b in 0..=32u32 {
            for n in [1usize, 2, 3, 64, 128, 129] {
                let mut k = rng.u32(..1000);
                let keys: Vec<u32> = (0..n)
                    .map(|i| {
                        if i > 0 {
                            // Steps of up to 2^(b-1): offsets from the start reach b + 7 bits.
                            let step = rng.u32(1..=1u32 << b.saturating_sub(1).min(24));
                            k = k.saturating_add(step);
                        }
                        k
                    })
                    .collect();
                let mut keys = keys;
                keys.dedup();
                let mut buf = vec![0u8; 1024];
                let d = crate::simd_for::SimdFor::encode(&keys, &mut buf).unwrap();
                let want: u64 = keys.iter().map(|&k| k as u64).sum();
                if let Some(s) = block_sum(CodecId::SimdFor, &d, &buf[..d.size as usize]) {
                    assert_eq!(s, want, "b={b} n={n}");
                } else {
                    assert!(d.bits > 25, "shortcut refused b={}", d.bits);
                }
                assert_eq!(block_sum(CodecId::VByte, &d, &buf), None);
                let mut pb = vec![0u8; 1024];
                let db = crate::bp128::Bp128::encode(&keys, &mut pb).unwrap();
                let payload = &pb[..db.size as usize];
                assert_eq!(bp128_sum_scalar(&db, payload), Some(want), "b={b} n={n}");
                for isa in Isa::available() {
                    assert_eq!(
                        block_sum_with(isa, CodecId::Bp128, &db, payload),
                        Some(want),
                        "{isa:?} b={b} n={n}"
                    );
                }
            }
        }
    }

    /// PFOR and PFOR-DELTA blocks through the public entry, on every ISA (the kernels and the
    /// exception corrections are tested against their twins in `pfor::sum`).
    #[test]
    fn pfor_block_sums_match_decode() {
        use crate::{BlockCodec, CodecId};
        let mut rng = fastrand::Rng::with_seed(21);
        for n in [0usize, 1, 2, 3, 9, 64, 128, 129] {
            for spread in [1u32, 3, 40, 1 << 12, 1 << 24] {
                let mut k = rng.u32(..1 << 20);
                let keys: Vec<u32> = (0..n)
                    .map(|_| {
                        // Mostly steps of 1..=spread, one in ten far: exceptions.
                        k += if rng.u8(..10) == 0 {
                            rng.u32(1..1 << 16)
                        } else {
                            rng.u32(1..=spread)
                        };
                        k
                    })
                    .collect();
                let want: u64 = keys.iter().map(|&k| k as u64).sum();
                let mut buf = vec![0u8; 1200];
                let d = crate::pfor::PforDelta::encode(&keys, &mut buf).unwrap();
                let p = &buf[..d.size as usize];
                let d2_buf = &mut vec![0u8; 1200];
                let d2 = crate::pfor::Pfor::encode(&keys, d2_buf).unwrap();
                let p2 = &d2_buf[..d2.size as usize];
                for isa in Isa::available() {
                    let what = format!("{isa:?} n={n} spread={spread}");
                    assert_eq!(
                        block_sum_with(isa, CodecId::PforDelta, &d, p),
                        Some(want),
                        "{what}"
                    );
                    assert_eq!(
                        block_sum_with(isa, CodecId::Pfor, &d2, p2),
                        Some(want),
                        "{what}"
                    );
                }
            }
        }
    }

    /// A run over a vector of blocks, for [`BlockSum::run`]: blocks above `hi` end it;
    /// declined blocks are answered from the model (and counted).
    struct VecRun {
        blocks: Vec<(crate::Descriptor, Vec<u8>, u64, u64)>,
        hi: u32,
        declined: std::cell::Cell<usize>,
    }

    impl<'p> BlockRun<'p> for &'p VecRun {
        type Error = String;
        type Cursor = usize;
        fn next(&self, at: &mut usize) -> Result<Option<RunBlock<'p>>, String> {
            let Some((d, p, base, _)) = self.blocks.get(*at) else {
                return Ok(None);
            };
            if d.last > self.hi {
                return Ok(None);
            }
            *at += 1;
            Ok(Some(RunBlock {
                desc: *d,
                payload: p,
                base: *base,
            }))
        }
        fn decline(&self, d: crate::Descriptor, p: &[u8]) -> Result<u64, String> {
            self.declined.set(self.declined.get() + 1);
            let found = self.blocks.iter().find(|b| b.0 == d && b.1 == p);
            found
                .map(|b| b.3)
                .ok_or_else(|| "declined an unknown block".into())
        }
    }

    /// A run's totals on every ISA and codec with a block sum (BP128's and SIMD FOR's own AVX2
    /// loops among them) against the keys' sum: every width, one- and two-key blocks, bases,
    /// blocks the shortcut declines (a forged width, an empty frame) answered by `decline`,
    /// and the stop at `hi`.
    #[test]
    fn runs_match_the_keys() {
        use crate::{BlockCodec, CodecId};
        let mut rng = fastrand::Rng::with_seed(29);
        for codec in [
            CodecId::Bp128,
            CodecId::SimdFor,
            CodecId::Pfor,
            CodecId::PforDelta,
        ] {
            let mut declined = 0;
            for round in 0..20 {
                let mut blocks = Vec::new();
                let mut k = rng.u32(..1 << 10);
                for i in 0..rng.usize(0..40) {
                    let n = [1, 2, 3, 64, 128, 129][rng.usize(0..6)];
                    let spread = 1u32 << rng.u32(0..24);
                    let keys: Vec<u32> = (0..n)
                        .map(|_| {
                            k = k.saturating_add(rng.u32(1..=spread));
                            k
                        })
                        .collect();
                    let mut keys = keys;
                    keys.dedup();
                    let mut buf = vec![0u8; 1200];
                    let mut d = match codec {
                        CodecId::Bp128 => crate::bp128::Bp128::encode(&keys, &mut buf),
                        CodecId::SimdFor => crate::simd_for::SimdFor::encode(&keys, &mut buf),
                        CodecId::Pfor => crate::pfor::Pfor::encode(&keys, &mut buf),
                        _ => crate::pfor::PforDelta::encode(&keys, &mut buf),
                    }
                    .unwrap();
                    buf.truncate(d.size as usize);
                    // Now and then a width the payload does not have, or (SIMD FOR) an empty
                    // frame of width 0: declined.
                    let forged = matches!(codec, CodecId::Bp128 | CodecId::SimdFor);
                    if forged && i % 7 == 3 && d.count > 1 {
                        d.bits = d.bits.wrapping_add(1);
                    }
                    if codec == CodecId::SimdFor && i % 11 == 5 && d.count > 1 {
                        (d.bits, d.size) = (0, 0);
                        buf.clear();
                    }
                    let base = if round % 2 == 1 {
                        rng.u64(..1 << 40)
                    } else {
                        0
                    };
                    let want: u64 = keys.iter().map(|&k| k as u64).sum();
                    blocks.push((d, buf, base, want));
                }
                let hi = if round % 3 == 0 { k / 2 } else { u32::MAX };
                let run = VecRun {
                    blocks,
                    hi,
                    declined: 0.into(),
                };
                let inside = run.blocks.iter().take_while(|b| b.0.last <= hi);
                let want = inside.clone().fold(RunTotal::default(), |mut t, b| {
                    t.sum += b.3 as u128 + b.2 as u128 * b.0.count as u128;
                    t.keys += b.0.count as u64;
                    t.blocks += 1;
                    t
                });
                for isa in Isa::available() {
                    let sm = BlockSum::new(isa, codec).unwrap();
                    let (t, at) = sm.run(&&run, 0).unwrap();
                    assert_eq!(t, want, "{codec:?} {isa:?} round {round}");
                    assert_eq!(
                        at,
                        inside.clone().count(),
                        "{codec:?} {isa:?} round {round}"
                    );
                }
                declined += run.declined.get();
            }
            // The forged widths, and SIMD FOR's offsets wider than its kernel sums.
            if matches!(codec, CodecId::Bp128 | CodecId::SimdFor) {
                assert!(declined > 0, "{codec:?}: no block declined");
            }
        }
    }

    /// BP128 sums on every bit width 1..=32 (wide deltas take the prefix-sum kernel).
    #[test]
    fn bp128_sum_every_width() {
        use crate::{BlockCodec, CodecId};
        let mut rng = fastrand::Rng::with_seed(17);
        for b in 1..=32u32 {
            for n in [2usize, 5, 128, 129] {
                let mut keys = vec![rng.u32(..1 << 8)];
                for i in 1..n {
                    // One delta of exactly b bits, the rest small, all within u32.
                    let room = (u32::MAX - keys[i - 1]) / (n - i) as u32;
                    let step = if i == 1 {
                        (1u32 << (b - 1)).min(room)
                    } else {
                        rng.u32(1..=room.min(1 << (b - 1)).max(1))
                    };
                    keys.push(keys[i - 1] + step.max(1));
                }
                let mut pb = vec![0u8; 1024];
                let d = crate::bp128::Bp128::encode(&keys, &mut pb).unwrap();
                let want: u64 = keys.iter().map(|&k| k as u64).sum();
                for isa in Isa::available() {
                    assert_eq!(
                        block_sum_with(isa, CodecId::Bp128, &d, &pb[..d.size as usize]),
                        Some(want),
                        "{isa:?} b={b} (block b={}) n={n}",
                        d.bits
                    );
                }
            }
        }
    }

    #[test]
    fn kernels_match_scalar() {
        let mut rng = fastrand::Rng::with_seed(9);
        for isa in Isa::available() {
            for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 128, 129, 257, 10_000] {
                for fill in [None, Some(0u32), Some(u32::MAX), Some(1)] {
                    let v: Vec<u32> = (0..n)
                        .map(|_| fill.unwrap_or_else(|| rng.u32(..)))
                        .collect();
                    assert_eq!(sum_u32_with(isa, &v), sum_u32_scalar(&v), "{isa:?} n={n}");
                }
            }
        }
    }

    /// The byte-slice sum at every alignment and length (trailing partial values ignored),
    /// against the scalar twin and against the u32 sum of the same values.
    #[test]
    fn le_bytes_kernels_match_scalar() {
        let mut rng = fastrand::Rng::with_seed(10);
        for isa in Isa::available() {
            for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 257, 4099] {
                for fill in [None, Some(0u32), Some(u32::MAX)] {
                    let v: Vec<u32> = (0..n)
                        .map(|_| fill.unwrap_or_else(|| rng.u32(..)))
                        .collect();
                    let want = sum_u32_scalar(&v);
                    for off in 0..4 {
                        for extra in 0..4 {
                            let mut bytes = vec![0xa5u8; off];
                            bytes.extend(v.iter().flat_map(|k| k.to_le_bytes()));
                            bytes.extend(std::iter::repeat_n(0xffu8, extra));
                            let b = &bytes[off..];
                            assert_eq!(sum_le_u32_scalar(b), want, "n={n} off={off}");
                            assert_eq!(
                                sum_le_u32_with(isa, b),
                                want,
                                "{isa:?} n={n} off={off} extra={extra}"
                            );
                        }
                    }
                }
            }
        }
    }
}
