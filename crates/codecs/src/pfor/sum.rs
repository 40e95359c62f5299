//! The sum of a PFOR or PFOR-DELTA block's keys without decoding it: from the moments of the
//! packed codes, corrected at the exceptions (the list walk of the paper's LOOP2, Zukowski et
//! al., "Super-Scalar RAM-CPU Cache Compression", section 3.1, without the patching).
//!
//! A frame codes `n` values; slot `i` holds code `c[i]` (for an exception, the link to the next
//! one). With `S = sum(c[i])`, `J = sum(i * c[i])` over all slots and `e[p]` the exception at `p`:
//!
//! ```text
//! PFOR        key[i+1] = start + base + c[i]          (e[p] replaces base + c[p])
//!             sum = (n+1)*start + n*base + S           + sum_p (e[p] - base - c[p])
//! PFOR-DELTA  key[k]   = start + sum_{i<k} (base + c[i]) (e[p] replaces base + c[p])
//!             sum = (n+1)*start + base*n(n+1)/2 + n*S - J + sum_p (n-p) * (e[p] - base - c[p])
//! ```
//!
//! All in wrapping `u64`. A frame whose window wraps past `u32::MAX` (`base + 2^b - 1` above
//! it, where the decoder's `base + c` would wrap) is declined; the encoder writes such windows
//! only for keys near the top of the range. Otherwise the sum is exact for every block that
//! validates (its keys ascend, so no running sum wrapped); a forged block gives a wrong sum,
//! never a panic or a read out of bounds.

use super::Frame;
use crate::bits;
use crate::{Descriptor, Isa};

/// `(S, J)`: the sum of the first `n` codes of width `b` in `data` and their index-weighted sum
/// `sum(i * c[i])`. `None` when `data` is shorter than `ceil(n * b / 8)`, `b > 32` or
/// `n > 128`. The AVX2 kernels take `1 <= b <= 8` (`simd::pfor_avx2::moments_narrow`, 16 codes
/// per step) and `9 <= b <= 24` (`simd::pfor_avx2::moments`, 8 per step); the scalar twin
/// every width.
#[inline]
pub fn moments(isa: Isa, data: &[u8], b: u32, n: usize) -> Option<(u64, u64)> {
    if b == 0 && n <= super::FRAME {
        // No code bits (every value is the base or an exception).
        return Some((0, 0));
    }
    #[cfg(target_arch = "x86_64")]
    if isa >= Isa::Avx2 && super::usable(isa) >= Isa::Avx2 {
        use crate::simd::pfor_avx2::{moments_narrow, MOMENTS_MAX_B, NARROW_MAX_B};
        if b <= NARROW_MAX_B {
            // SAFETY: this CPU supports AVX2 (`usable`); the kernel bounds its reads by `data`.
            return unsafe { moments_narrow(data, b, n) };
        }
        if b <= MOMENTS_MAX_B {
            // SAFETY: as above.
            return unsafe { crate::simd::pfor_avx2::moments(data, b, n) };
        }
    }
    let _ = isa;
    moments_scalar(data, b, n)
}

/// Scalar twin of [`moments`]: unpack, then add up.
pub fn moments_scalar(data: &[u8], b: u32, n: usize) -> Option<(u64, u64)> {
    if b > 32 || n > super::FRAME {
        return None;
    }
    let mut buf = [0u32; super::FRAME];
    let codes = &mut buf[..n];
    bits::unpack(data, b, codes)?;
    Some(
        codes
            .iter()
            .enumerate()
            .fold((0u64, 0u64), |(s, j), (i, &c)| {
                (s + c as u64, j + i as u64 * c as u64)
            }),
    )
}

/// The sum of all keys of a PFOR (`DELTA = false`) or PFOR-DELTA block on the kernels of
/// `isa`; `None` when its frame does not fit its payload (see [`frame`]), its exception list
/// leaves the frame or its window wraps (see the module docs): decode it instead (the decoder
/// reports a corrupt block).
#[inline]
pub fn block_sum<const DELTA: bool>(isa: Isa, d: &Descriptor, payload: &[u8]) -> Option<u64> {
    if d.count <= 1 {
        return Some(if d.count == 1 { d.start as u64 } else { 0 });
    }
    let f = frame(d, payload)?;
    f.base.checked_add(bits::mask(f.b))?;
    // The codes and the exceptions after them: the kernel's loads may run on into those.
    let data = payload.get(f.codes_at..d.size as usize)?;
    let (s, j) = moments(isa, data, f.b, f.n)?;
    let corr = exceptions::<DELTA>(&f)?;
    let (n, start, base) = (f.n as u64, d.start as u64, f.base as u64);
    let head = (n + 1).wrapping_mul(start);
    Some(if DELTA {
        head.wrapping_add(base.wrapping_mul(n * (n + 1) / 2))
            .wrapping_add(n.wrapping_mul(s))
            .wrapping_sub(j)
            .wrapping_add(corr)
    } else {
        head.wrapping_add(n.wrapping_mul(base))
            .wrapping_add(s)
            .wrapping_add(corr)
    })
}

/// The frame of a block of at least two keys, with the checks that keep every read inside the
/// payload (count, width, size, header, the sections' lengths) but not all of the decoder's
/// (`parse` also rejects `last <= start`, a base varint not in shortest form and a first
/// exception outside the frame; the walk in [`exceptions`] declines the last): a forged block
/// that only those catch gets a wrong sum, as a forged BP128 block does, and the fold's cost
/// per block stays low (`parse`, with its errors, took a fifth of it).
#[inline(always)]
fn frame<'a>(d: &Descriptor, payload: &'a [u8]) -> Option<Frame<'a>> {
    let n = (d.count as usize).checked_sub(1)?;
    let b = d.bits as u32;
    if n == 0 || n > super::FRAME || b > 32 {
        return None;
    }
    let p = payload.get(..d.size as usize)?;
    let x = *p.first()? as usize;
    if x > n {
        return None;
    }
    let (first, at) = if x > 0 {
        (*p.get(1)? as usize, 2)
    } else {
        (0, 1)
    };
    let (base, len) = match p.get(at) {
        Some(&v) if v < 0x80 => (v as u32, 1),
        _ => crate::vbyte::get_varint(p, at).ok()?,
    };
    let codes_at = at + len;
    let clen = bits::packed_len(n, b);
    if p.len() != codes_at + clen + 4 * x {
        return None;
    }
    Some(Frame {
        n,
        b,
        base,
        x,
        first,
        codes: p.get(codes_at..codes_at + clen)?,
        exc: p.get(codes_at + clen..)?,
        codes_at,
    })
}

/// The exceptions' correction: `sum_p w(p) * (e[p] - base - c[p])` with `w = n - p` for
/// PFOR-DELTA and 1 for PFOR (wrapping). `None` when the list leaves the frame.
#[inline]
fn exceptions<const DELTA: bool>(f: &Frame<'_>) -> Option<u64> {
    let (n, base) = (f.n, f.base as u64);
    let mut corr = 0u64;
    let mut p = f.first;
    for k in 0..f.x {
        if p >= n {
            return None;
        }
        let c = f.code(p);
        let w = if DELTA { (n - p) as u64 } else { 1 };
        let diff = (f.exception(k) as u64)
            .wrapping_sub(base)
            .wrapping_sub(c as u64);
        corr = corr.wrapping_add(w.wrapping_mul(diff));
        p += c as usize + 1;
    }
    Some(corr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pfor::{decode_with, write_coded, FRAME, MAX_KEYS};

    fn seed() -> u64 {
        let s = std::env::var("SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(21);
        println!("SEED={s}");
        s
    }

    /// The kernels against the scalar twin on random bytes: every width, every count 0..=128,
    /// codes alone or followed by more bytes (the exceptions), all-zero and all-one codes.
    #[test]
    fn moments_kernels_match_scalar() {
        let mut rng = fastrand::Rng::with_seed(seed());
        for b in 0..=32u32 {
            for n in 0..=FRAME {
                let len = bits::packed_len(n, b);
                for (extra, fill) in [(0usize, None), (7, None), (64, None), (0, Some(0xffu8))] {
                    let bytes: Vec<u8> = (0..len + extra)
                        .map(|_| fill.unwrap_or_else(|| rng.u8(..)))
                        .collect();
                    let want = moments_scalar(&bytes, b, n).unwrap();
                    // The model: code by code.
                    let model = (0..n).fold((0u64, 0u64), |(s, j), i| {
                        let c = bits::get(&bytes, b, i).unwrap() as u64;
                        (s + c, j + i as u64 * c)
                    });
                    assert_eq!(want, model, "b={b} n={n}");
                    for isa in Isa::available() {
                        assert_eq!(
                            moments(isa, &bytes, b, n),
                            Some(want),
                            "{isa:?} b={b} n={n} extra={extra}"
                        );
                    }
                }
                if len > 0 {
                    let short = vec![0u8; len - 1];
                    for isa in Isa::available() {
                        assert_eq!(moments(isa, &short, b, n), None, "{isa:?} b={b} n={n}");
                    }
                }
            }
        }
    }

    /// Both AVX2 kernels on every width they take (the narrow one's widths included for the
    /// wide one), against the scalar twin: random bytes, every count, data exactly as long as
    /// the codes or longer (bits past the last code ignored).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn each_avx2_kernel_matches_scalar() {
        use crate::simd::pfor_avx2::{
            moments as wide, moments_narrow, MOMENTS_MAX_B, NARROW_MAX_B,
        };
        if !Isa::Avx2.is_supported() {
            return;
        }
        let mut rng = fastrand::Rng::with_seed(seed());
        for b in 1..=MOMENTS_MAX_B {
            for n in 0..=FRAME {
                for extra in [0usize, 3, 40] {
                    let len = bits::packed_len(n, b) + extra;
                    let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
                    let want = moments_scalar(&bytes, b, n);
                    // SAFETY: AVX2 is supported (checked above).
                    assert_eq!(unsafe { wide(&bytes, b, n) }, want, "wide b={b} n={n}");
                    if b <= NARROW_MAX_B {
                        // SAFETY: as above.
                        let got = unsafe { moments_narrow(&bytes, b, n) };
                        assert_eq!(got, want, "narrow b={b} n={n} extra={extra}");
                    }
                }
            }
        }
    }

    fn decoded_sum<const DELTA: bool>(d: &Descriptor, payload: &[u8]) -> u64 {
        let mut buf = [0u32; MAX_KEYS];
        let n = decode_with::<DELTA>(Isa::Scalar, d, payload, &mut buf).unwrap();
        buf[..n].iter().map(|&k| k as u64).sum()
    }

    /// A block of `keys` coded at width `b` with frame of reference `base` (any window, so
    /// that every width, no exceptions and all exceptions are reached).
    fn forced<const DELTA: bool>(keys: &[u32], b: u32, base: u32) -> (Descriptor, Vec<u8>) {
        let n = keys.len() - 1;
        let v: Vec<u32> = (0..n)
            .map(|i| keys[i + 1] - if DELTA { keys[i] } else { keys[0] })
            .collect();
        let mut out = vec![0u8; 8 * FRAME + 16];
        let size = write_coded(&v, b, base, &mut out).unwrap();
        out.truncate(size);
        let d = Descriptor {
            start: keys[0],
            count: keys.len() as u32,
            last: keys[n],
            size: size as u32,
            bits: b as u8,
        };
        (d, out)
    }

    /// The block sum equals the decoded sum, or declines a window that wraps past `u32::MAX`
    /// (`wraps`: a base above 0 at b = 32).
    fn check<const DELTA: bool>(d: &Descriptor, payload: &[u8], keys: &[u32], what: &str) {
        let want: u64 = keys.iter().map(|&k| k as u64).sum();
        assert_eq!(decoded_sum::<DELTA>(d, payload), want, "{what}");
        let wraps = crate::pfor::parse(d, payload)
            .unwrap()
            .is_some_and(|f| f.base.checked_add(bits::mask(f.b)).is_none());
        for isa in Isa::available() {
            assert_eq!(
                block_sum::<DELTA>(isa, d, payload),
                (!wraps).then_some(want),
                "{isa:?} {what}"
            );
        }
    }

    /// Random ascending keys (small steps with rare jumps, up to the top of u32), coded by the
    /// encoder's own choice and at forced widths 0..=32 with the window at the smallest value
    /// (no exceptions for wide b, all exceptions for b = 0 unless the values are equal), for
    /// counts 0, 1, 2, partial frames and the full 129: the block sum equals the decoded sum.
    #[test]
    fn block_sums_match_decode() {
        let mut rng = fastrand::Rng::with_seed(seed());
        for round in 0..40 {
            for count in [0usize, 1, 2, 3, 8, 9, 17, 64, 100, 127, 128, 129] {
                let mut keys = Vec::with_capacity(count);
                let mut k = if round % 4 == 3 {
                    u32::MAX - 200 * count as u32 - 5
                } else {
                    rng.u32(..1 << 20)
                };
                for _ in 0..count {
                    keys.push(k);
                    let step = match rng.u32(..20) {
                        0 if round % 4 != 3 => rng.u32(1..1 << 20),
                        1 => rng.u32(1..200),
                        _ => rng.u32(1..4),
                    };
                    k = k.saturating_add(step);
                }
                let what = format!("round={round} count={count}");
                let mut out = vec![0u8; 8 * FRAME + 16];
                let d = crate::pfor::encode_keys::<true>(&keys, &mut out).unwrap();
                check::<true>(&d, &out[..d.size as usize], &keys, &what);
                let d = crate::pfor::encode_keys::<false>(&keys, &mut out).unwrap();
                check::<false>(&d, &out[..d.size as usize], &keys, &what);
                if count < 2 {
                    continue;
                }
                for b in 0..=32u32 {
                    let min_delta = keys.windows(2).map(|w| w[1] - w[0]).min().unwrap();
                    let (d, p) = forced::<true>(&keys, b, min_delta);
                    check::<true>(&d, &p, &keys, &format!("{what} delta b={b}"));
                    let (d, p) = forced::<false>(&keys, b, keys[1] - keys[0]);
                    check::<false>(&d, &p, &keys, &format!("{what} pfor b={b}"));
                    // A window above every value: all exceptions.
                    let max_delta = keys.windows(2).map(|w| w[1] - w[0]).max().unwrap();
                    if let Some(base) = max_delta
                        .checked_add(1)
                        .filter(|x| x.checked_add(bits::mask(b)).is_some())
                    {
                        let (d, p) = forced::<true>(&keys, b, base);
                        check::<true>(&d, &p, &keys, &format!("{what} delta b={b} all exc"));
                    }
                    let top = keys[count - 1] - keys[0];
                    if let Some(base) = top
                        .checked_add(1)
                        .filter(|x| x.checked_add(bits::mask(b)).is_some())
                    {
                        let (d, p) = forced::<false>(&keys, b, base);
                        check::<false>(&d, &p, &keys, &format!("{what} pfor b={b} all exc"));
                    }
                    // A wrapping window is declined (the decoder adds modulo 2^32).
                    if b > 0 {
                        let (d, p) = forced::<true>(&keys, b, u32::MAX);
                        for isa in Isa::available() {
                            assert_eq!(block_sum::<true>(isa, &d, &p), None, "{what} b={b}");
                        }
                    }
                }
            }
        }
    }

    /// Forged blocks: a valid one with random bytes flipped, at every ISA, never panics and
    /// gives the scalar twin's answer.
    #[test]
    fn forged_blocks_agree_and_never_panic() {
        let mut rng = fastrand::Rng::with_seed(seed());
        for _ in 0..3000 {
            let count = rng.usize(2..=MAX_KEYS);
            let mut k = rng.u32(..1000);
            let keys: Vec<u32> = (0..count)
                .map(|_| {
                    let top = if rng.u8(..10) == 0 { 5000 } else { 9 };
                    k += rng.u32(1..top);
                    k
                })
                .collect();
            let b = rng.u32(0..=32);
            let (mut d, mut p) = forced::<true>(&keys, b, rng.u32(..4));
            for _ in 0..rng.usize(1..4) {
                let i = rng.usize(..p.len());
                p[i] = rng.u8(..);
            }
            if rng.bool() {
                d.bits = rng.u8(..=40);
            }
            if rng.u8(..4) == 0 {
                d.count = rng.u32(..=140);
            }
            let sc = (
                block_sum::<true>(Isa::Scalar, &d, &p),
                block_sum::<false>(Isa::Scalar, &d, &p),
            );
            for isa in Isa::available() {
                assert_eq!(block_sum::<true>(isa, &d, &p), sc.0, "{isa:?} {d:?}");
                assert_eq!(block_sum::<false>(isa, &d, &p), sc.1, "{isa:?} {d:?}");
            }
        }
    }
}
