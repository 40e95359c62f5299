//! StreamVByte decoding with AVX-512 (F, BW): four control bytes (sixteen values) per step, the
//! prefix sum over the sixteen lanes fused (see [`crate::streamvbyte`]). Four equal control bytes
//! that give all sixteen values the same width (the norm for deltas of uniform width) take a fast
//! path: one load and a fixed widening (`vpmovzx` or, for three bytes, VBMI `vpermb`).

use core::arch::x86_64::*;

use crate::search::{Pad, Seek};
use crate::streamvbyte::{GROUP_LEN, GROUP_SHUFFLE};

/// Inclusive prefix sum of sixteen u32 lanes: four shift-and-add steps across the whole register
/// (`valignd` with zeros shifts lanes up by 1, 2, 4, 8).
#[inline]
#[target_feature(enable = "avx512f")]
fn prefix16(x: __m512i) -> __m512i {
    let z = _mm512_setzero_si512();
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<15>(x, z));
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<14>(x, z));
    let x = _mm512_add_epi32(x, _mm512_alignr_epi32::<12>(x, z));
    _mm512_add_epi32(x, _mm512_alignr_epi32::<8>(x, z))
}

/// Byte width of the sixteen values of four control bytes when they all have the same one.
#[inline]
fn uniform_width(c4: u32) -> Option<usize> {
    match c4 {
        0 => Some(1),
        0x5555_5555 => Some(2),
        0xAAAA_AAAA => Some(3),
        0xFFFF_FFFF => Some(4),
        _ => None,
    }
}

/// `vpermb` pattern for sixteen 3-byte values: lane i takes bytes 3i, 3i + 1, 3i + 2 (its top
/// byte is zeroed by the mask).
static WIDEN3: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 16 {
        t[4 * i] = 3 * i as u8;
        t[4 * i + 1] = 3 * i as u8 + 1;
        t[4 * i + 2] = 3 * i as u8 + 2;
        i += 1;
    }
    t
};

/// Decodes sixteen-value steps while four control bytes code width `W` for all values and the
/// loads fit in `data`. Returns the new group index, data position and running key vector.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI. `out.len() >= 4 * ctrl.len()`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn run<const W: usize>(
    ctrl: &[u8],
    data: &[u8],
    out: &mut [u32],
    mut g: usize,
    mut pos: usize,
    mut acc: __m512i,
) -> (usize, usize, __m512i) {
    let code = [0u32, 0x5555_5555, 0xAAAA_AAAA, 0xFFFF_FFFF][W - 1];
    let last = _mm512_set1_epi32(15);
    // SAFETY: WIDEN3 is 64 bytes.
    let widen3 = unsafe { _mm512_loadu_si512(WIDEN3.as_ptr() as *const _) };
    // Width 3 loads 64 bytes for its 48.
    let span = if W == 3 { 64 } else { 16 * W };
    while let Some(&c4) = ctrl.get(g..g + 4).and_then(|c| c.first_chunk::<4>()) {
        if u32::from_le_bytes(c4) != code || pos + span > data.len() {
            break;
        }
        let at = data.as_ptr().wrapping_add(pos);
        // SAFETY: pos + span <= data.len(): every load below ends inside `data`.
        let x = unsafe {
            match W {
                1 => _mm512_cvtepu8_epi32(_mm_loadu_si128(at as *const __m128i)),
                2 => _mm512_cvtepu16_epi32(_mm256_loadu_si256(at as *const __m256i)),
                3 => _mm512_maskz_permutexvar_epi8(
                    0x7777_7777_7777_7777,
                    widen3,
                    _mm512_loadu_si512(at as *const _),
                ),
                _ => _mm512_loadu_si512(at as *const _),
            }
        };
        let x = prefix16(x);
        // SAFETY: g + 4 <= ctrl.len() and out.len() >= 4 * ctrl.len(): out[4g..4g + 16] exists.
        unsafe {
            _mm512_storeu_si512(
                out.as_mut_ptr().add(4 * g) as *mut _,
                _mm512_add_epi32(x, acc),
            )
        };
        acc = _mm512_add_epi32(acc, _mm512_permutexvar_epi32(last, x));
        pos += 16 * W;
        g += 4;
    }
    (g, pos, acc)
}

/// Decodes `out.len()` values whose control bytes are `ctrl` (`ceil(out.len() / 4)` of them; in
/// a last partial byte only the codes of present values count) from `data[pos..]`, prefix-summed
/// from `prev`. Returns the data position after the values; a position beyond `data.len()` means
/// the control bytes ask for more data than there is (the caller reports corruption; the bytes
/// past the end were read as zeros, never from memory).
///
/// Whole sixteen-value steps run while their loads fit in `data`; the rest (at most a few steps)
/// uses masked loads and a masked store, so there is no scalar or narrower-ISA tail.
///
/// # Safety
/// The CPU must support AVX-512 F, BW, VL and VBMI (and AVX2).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2,sse4.1,ssse3")]
pub unsafe fn decode(
    ctrl: &[u8],
    data: &[u8],
    mut pos: usize,
    prev: u32,
    out: &mut [u32],
) -> usize {
    assert!(ctrl.len() == out.len().div_ceil(4));
    let mut acc = _mm512_set1_epi32(prev as i32);
    let last = _mm512_set1_epi32(15);
    let full = out.len() / 4;
    let mut g = 0;
    while g + 4 <= full {
        let c4 = u32::from_le_bytes([ctrl[g], ctrl[g + 1], ctrl[g + 2], ctrl[g + 3]]);
        if let Some(width) = uniform_width(c4) {
            // A run of sixteen-value steps of one byte width: a loop specialised per width.
            // SAFETY: AVX-512 F/BW/VBMI are enabled here; `run` keeps g + 4 <= full and its
            // loads in `data`.
            let (g2, p2, a2) = unsafe {
                match width {
                    1 => run::<1>(&ctrl[..full], data, out, g, pos, acc),
                    2 => run::<2>(&ctrl[..full], data, out, g, pos, acc),
                    3 => run::<3>(&ctrl[..full], data, out, g, pos, acc),
                    _ => run::<4>(&ctrl[..full], data, out, g, pos, acc),
                }
            };
            if g2 == g {
                break; // not even one step fits before the end of `data`
            }
            (g, pos, acc) = (g2, p2, a2);
            continue;
        }
        let c = c4.to_le_bytes().map(usize::from);
        let p1 = pos + GROUP_LEN[c[0]] as usize;
        let p2 = p1 + GROUP_LEN[c[1]] as usize;
        let p3 = p2 + GROUP_LEN[c[2]] as usize;
        if p3 + 16 > data.len() {
            break;
        }
        let row = |k: usize| GROUP_SHUFFLE[c[k]].as_ptr() as *const __m128i;
        let at = |p: usize| data.as_ptr().wrapping_add(p) as *const __m128i;
        // Two 256-bit halves (128-bit inserts into ymm are cheaper than into zmm here).
        // SAFETY: pos <= p1 <= p2 <= p3 and p3 + 16 <= data.len(): the four 16-byte loads are
        // inside `data`; shuffle rows are 16 bytes.
        let (lo, hi) = unsafe {
            let lo = _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(at(p1), at(pos)),
                _mm256_loadu2_m128i(row(1), row(0)),
            );
            let hi = _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(at(p3), at(p2)),
                _mm256_loadu2_m128i(row(3), row(2)),
            );
            (lo, hi)
        };
        pos = p3 + GROUP_LEN[c[3]] as usize;
        let x = prefix16(_mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi));
        // SAFETY: g + 4 <= full = out.len() / 4: out[4g..4g + 16] exists.
        unsafe {
            _mm512_storeu_si512(
                out.as_mut_ptr().add(4 * g) as *mut _,
                _mm512_add_epi32(x, acc),
            )
        };
        // The loop-carried chain is this one add.
        acc = _mm512_add_epi32(acc, _mm512_permutexvar_epi32(last, x));
        g += 4;
    }
    // The tail: up to sixteen values per step, loads masked to the bytes of `data`, the store
    // masked to the slots of `out`.
    let mut v = 4 * g;
    while v < out.len() {
        let n = (out.len() - v).min(16);
        // The codes of the (up to) sixteen values, those past the end cleared.
        let mut c4 = 0u32;
        for k in 0..n.div_ceil(4) {
            c4 |= (ctrl[v / 4 + k] as u32) << (8 * k);
        }
        let present = if n == 16 {
            u32::MAX
        } else {
            (1u32 << (2 * n)) - 1
        };
        let c4 = c4 & present;
        let width = [0u32, 0x5555_5555, 0xAAAA_AAAA, 0xFFFF_FFFF]
            .iter()
            .position(|&code| c4 == code & present)
            .map(|w| w + 1);
        if let Some(width) = width {
            // All present values have one width: a masked load of exactly their bytes.
            let avail = data.len().saturating_sub(pos).min(n * width);
            let at = data.as_ptr().wrapping_add(pos);
            let bytes = if avail == 64 {
                u64::MAX
            } else {
                (1u64 << avail) - 1
            };
            // SAFETY: each mask covers only bytes pos..pos + avail, inside `data`; masked
            // lanes are neither read nor faulted on, and read as zero.
            let x = unsafe {
                match width {
                    1 => _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(
                        bytes as __mmask16,
                        at as *const i8,
                    )),
                    2 => _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi8(
                        bytes as __mmask32,
                        at as *const i8,
                    )),
                    3 => _mm512_maskz_permutexvar_epi8(
                        0x7777_7777_7777_7777,
                        _mm512_loadu_si512(WIDEN3.as_ptr() as *const _),
                        _mm512_maskz_loadu_epi8(bytes, at as *const i8),
                    ),
                    _ => _mm512_maskz_loadu_epi8(bytes, at as *const i8),
                }
            };
            pos += n * width;
            let x = prefix16(x);
            let keep = ((1u32 << n) - 1) as __mmask16;
            // SAFETY: the store mask covers out[v..v + n], inside `out`.
            unsafe {
                _mm512_mask_storeu_epi32(
                    out.as_mut_ptr().add(v) as *mut _,
                    keep,
                    _mm512_add_epi32(x, acc),
                )
            };
            acc = _mm512_add_epi32(
                acc,
                _mm512_permutexvar_epi32(_mm512_set1_epi32(n as i32 - 1), x),
            );
            v += n;
            continue;
        }
        let mut c = [0usize; 4];
        let mut p = [0usize; 4];
        let mut q = pos;
        for k in 0..4 {
            p[k] = q;
            let present = n.saturating_sub(4 * k).min(4);
            if present > 0 {
                // Codes of values past the end do not count, whatever their bits.
                c[k] = ctrl[v / 4 + k] as usize & ((1usize << (2 * present)) - 1);
                q += GROUP_LEN[c[k]] as usize - (4 - present);
            }
        }
        pos = q;
        let load = |q: usize| {
            let avail = data.len().saturating_sub(q).min(16);
            let mask = ((1u32 << avail) - 1) as __mmask16;
            // SAFETY: the mask covers only bytes q..q + avail, which are inside `data`; masked
            // lanes are not read (and are zero).
            unsafe { _mm_maskz_loadu_epi8(mask, data.as_ptr().wrapping_add(q) as *const i8) }
        };
        let row = |k: usize| {
            // SAFETY: shuffle rows are 16 bytes.
            unsafe { _mm_loadu_si128(GROUP_SHUFFLE[c[k]].as_ptr() as *const __m128i) }
        };
        let vv = _mm512_inserti32x4::<3>(
            _mm512_inserti32x4::<2>(
                _mm512_inserti32x4::<1>(_mm512_castsi128_si512(load(p[0])), load(p[1])),
                load(p[2]),
            ),
            load(p[3]),
        );
        let ss = _mm512_inserti32x4::<3>(
            _mm512_inserti32x4::<2>(
                _mm512_inserti32x4::<1>(_mm512_castsi128_si512(row(0)), row(1)),
                row(2),
            ),
            row(3),
        );
        let x = prefix16(_mm512_shuffle_epi8(vv, ss));
        let keep = ((1u32 << n) - 1) as __mmask16;
        // SAFETY: the store mask covers out[v..v + n], inside `out`; masked lanes are not written.
        unsafe {
            _mm512_mask_storeu_epi32(
                out.as_mut_ptr().add(v) as *mut _,
                keep,
                _mm512_add_epi32(x, acc),
            )
        };
        acc = _mm512_add_epi32(
            acc,
            _mm512_permutexvar_epi32(_mm512_set1_epi32(n as i32 - 1), x),
        );
        v += n;
    }
    pos
}

/// The sixteen values of control bytes `c` whose data start at `p`, prefix-summed (no
/// carry-in). `None` if a position is past the data.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
fn quad(data: &[u8], pad: &Pad, c: [usize; 4], p: [usize; 4]) -> Option<__m512i> {
    let a = [
        pad.at(data, p[0])?,
        pad.at(data, p[1])?,
        pad.at(data, p[2])?,
        pad.at(data, p[3])?,
    ];
    let row = |k: usize| GROUP_SHUFFLE[c[k]].as_ptr() as *const __m128i;
    // SAFETY: `Pad::at` gives 16 readable bytes at each address; shuffle rows are 16 bytes.
    let (lo, hi) = unsafe {
        (
            _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(a[1] as *const __m128i, a[0] as *const __m128i),
                _mm256_loadu2_m128i(row(1), row(0)),
            ),
            _mm256_shuffle_epi8(
                _mm256_loadu2_m128i(a[3] as *const __m128i, a[2] as *const __m128i),
                _mm256_loadu2_m128i(row(3), row(2)),
            ),
        )
    };
    Some(prefix16(_mm512_inserti64x4::<1>(
        _mm512_castsi256_si512(lo),
        hi,
    )))
}

/// Lane `k` of `x`.
#[inline]
#[target_feature(enable = "avx512f")]
fn lane(x: __m512i, k: u32) -> u32 {
    _mm_cvtsi128_si32(_mm512_castsi512_si128(_mm512_permutexvar_epi32(
        _mm512_set1_epi32(k as i32),
        x,
    ))) as u32
}

/// Forward seek (see [`crate::search`]) over the whole groups `ctrl`, sixteen values per step,
/// from `(v, pos, key(v - 1))` with `v` a multiple of 4. Stops with [`Seek::Next`] (group
/// index, position, running key) when fewer than four groups remain or a position leaves the
/// data (the scalar twin finishes and reports it).
///
/// # Safety
/// The CPU must support AVX-512 F and BW (and AVX2).
#[target_feature(enable = "avx512f,avx512bw,avx2,bmi1")]
pub(crate) unsafe fn seek_fwd(
    ctrl: &[u8],
    data: &[u8],
    pad: &Pad,
    (v, mut pos, acc): (usize, usize, u32),
    target: u32,
    stop: usize,
) -> Seek {
    let mut g = v / 4;
    let t = _mm512_set1_epi32(target as i32);
    let mut acc = _mm512_set1_epi32(acc as i32);
    let last = _mm512_set1_epi32(15);
    while let Some(c4) = ctrl.get(g..g + 4) {
        let c = [c4[0], c4[1], c4[2], c4[3]].map(usize::from);
        let p1 = pos + GROUP_LEN[c[0]] as usize;
        let p2 = p1 + GROUP_LEN[c[1]] as usize;
        let p3 = p2 + GROUP_LEN[c[2]] as usize;
        let p4 = p3 + GROUP_LEN[c[3]] as usize;
        if p4 > data.len() {
            break;
        }
        let Some(x) = quad(data, pad, c, [pos, p1, p2, p3]) else {
            break;
        };
        let keys = _mm512_add_epi32(x, acc);
        // Lanes at or past `stop` count as hits.
        let rel = stop.saturating_sub(4 * g).min(16);
        let past = !((1u32 << rel) - 1) & 0xFFFF;
        let hit = _mm512_cmpge_epu32_mask(keys, t) as u32 | past;
        if hit != 0 {
            let k = hit.trailing_zeros();
            return Seek::Found(4 * g + k as usize, lane(keys, k));
        }
        acc = _mm512_permutexvar_epi32(last, keys);
        pos = p4;
        g += 4;
    }
    Seek::Next(g, pos, lane(acc, 0))
}

/// Backward seek (see [`crate::search`]) over the whole groups `ctrl[..g_end]`, sixteen values
/// per step, from `(g_end, position after group g_end - 1, key(4 * g_end - 1))`. Stops with
/// [`Seek::Next`] (group index, position, key at the end of what remains) when fewer than four
/// groups remain or a position leaves the data.
///
/// # Safety
/// The CPU must support AVX-512 F and BW (and AVX2).
#[target_feature(enable = "avx512f,avx512bw,avx2,lzcnt")]
pub(crate) unsafe fn seek_bwd(
    ctrl: &[u8],
    data: &[u8],
    pad: &Pad,
    (mut g, mut pos, key): (usize, usize, u32),
    target: u32,
    stop: usize,
) -> Seek {
    let t = _mm512_set1_epi32(target as i32);
    let mut end = key;
    while g >= 4 && g <= ctrl.len() {
        let c = [ctrl[g - 4], ctrl[g - 3], ctrl[g - 2], ctrl[g - 1]].map(usize::from);
        let l = c.map(|x| GROUP_LEN[x] as usize);
        let Some(p0) = pos.checked_sub(l[0] + l[1] + l[2] + l[3]) else {
            break;
        };
        let (p1, p2) = (p0 + l[0], p0 + l[0] + l[1]);
        let Some(x) = quad(data, pad, c, [p0, p1, p2, p2 + l[2]]) else {
            break;
        };
        let total = lane(x, 15);
        let before = end.wrapping_sub(total);
        let b = _mm512_set1_epi32(before as i32);
        let keys = _mm512_add_epi32(x, b);
        // key(v - 1) per lane: `before`, then the keys moved up one lane.
        let prev = _mm512_alignr_epi32::<15>(keys, b);
        let v0 = 4 * (g - 4);
        // Lanes at `stop` (and below, which the walk never passes) count as hits.
        let at_stop = match stop.checked_sub(v0) {
            Some(r) if r < 16 => (2u32 << r) - 1,
            Some(_) => 0xFFFF,
            None => 0,
        };
        let hit = _mm512_cmplt_epu32_mask(prev, t) as u32 | at_stop;
        if hit != 0 {
            let k = 31 - hit.leading_zeros();
            return Seek::Found(v0 + k as usize, lane(keys, k));
        }
        end = before;
        pos = p0;
        g -= 4;
    }
    Seek::Next(g, pos, end)
}
