//! Scalar horizontal bit packing, shared by FOR and the PFOR family.
//!
//! Value `i` of width `b` occupies bits `[i*b, (i+1)*b)` of a little-endian bit stream:
//!
//! ```text
//! byte:   0        1        2
//! bits:   76543210 76543210 76543210
//! b = 3:  11000000 ........             v0 = bits 0..3, v1 = bits 3..6, v2 = bits 6..9, ...
//!           ^^^ v1
//! ```
//!
//! For 32 values this is the same as packing into `b` little-endian `u32` words, LSB first (the
//! layout of scalar frame-of-reference libraries). Width 0 stores nothing; width 32 is a plain
//! little-endian array.

/// Mask of the low `b` bits (`b <= 32`).
#[inline]
pub fn mask(b: u32) -> u32 {
    if b >= 32 {
        u32::MAX
    } else {
        (1u32 << b) - 1
    }
}

/// Bits needed to store `v`: 0 for 0, else `32 - leading_zeros`.
#[inline]
pub fn width(v: u32) -> u32 {
    32 - v.leading_zeros()
}

/// Bytes used by `n` values of width `b`.
#[inline]
pub fn packed_len(n: usize, b: u32) -> usize {
    (n * b as usize).div_ceil(8)
}

/// Packs `values` (each `< 2^b`; higher bits are masked off) into `out[..packed_len(n, b)]`,
/// overwriting those bytes. Panics if `out` is too short (callers check lengths first).
pub fn pack(values: &[u32], b: u32, out: &mut [u8]) {
    let len = packed_len(values.len(), b);
    let out = &mut out[..len];
    if b == 0 {
        return;
    }
    // Whole groups of 32 values fill 4b bytes each: fixed-width kernels (b <= 32).
    let groups = if b <= 32 { values.len() / 32 } else { 0 };
    let gl = 4 * b as usize;
    let f = PACK32[b.min(32) as usize];
    for g in 0..groups {
        f(&values[32 * g..32 * g + 32], &mut out[gl * g..gl * g + gl]);
    }
    pack_tail(&values[32 * groups..], b, &mut out[gl * groups..]);
}

fn pack_tail(values: &[u32], b: u32, out: &mut [u8]) {
    let m = mask(b) as u64;
    let mut acc: u64 = 0;
    let mut nbits = 0u32;
    let mut pos = 0;
    for &v in values {
        acc |= (v as u64 & m) << nbits;
        nbits += b;
        while nbits >= 8 {
            out[pos] = acc as u8;
            pos += 1;
            acc >>= 8;
            nbits -= 8;
        }
    }
    if nbits > 0 {
        out[pos] = acc as u8;
    }
}

type Pack32 = fn(&[u32], &mut [u8]);
type Unpack32 = fn(&[u8], &mut [u32]);

/// `[$f::<0>, ..., $f::<32>]`.
macro_rules! table33 {
    ($f:ident) => {
        [
            $f::<0>, $f::<1>, $f::<2>, $f::<3>, $f::<4>, $f::<5>, $f::<6>, $f::<7>, $f::<8>,
            $f::<9>, $f::<10>, $f::<11>, $f::<12>, $f::<13>, $f::<14>, $f::<15>, $f::<16>,
            $f::<17>, $f::<18>, $f::<19>, $f::<20>, $f::<21>, $f::<22>, $f::<23>, $f::<24>,
            $f::<25>, $f::<26>, $f::<27>, $f::<28>, $f::<29>, $f::<30>, $f::<31>, $f::<32>,
        ]
    };
}

static PACK32: [Pack32; 33] = table33!(pack32);
static UNPACK32: [Unpack32; 33] = table33!(unpack32);

/// Repeats `$body` 32 times with `$j` bound to the constants 0..32 (so shifts and word
/// indices are constants and bounds checks fold away).
macro_rules! unroll32 {
    ($j:ident, $body:block) => {{
        let $j: usize = 0;
        $body
    }
    {
        let $j: usize = 1;
        $body
    }
    {
        let $j: usize = 2;
        $body
    }
    {
        let $j: usize = 3;
        $body
    }
    {
        let $j: usize = 4;
        $body
    }
    {
        let $j: usize = 5;
        $body
    }
    {
        let $j: usize = 6;
        $body
    }
    {
        let $j: usize = 7;
        $body
    }
    {
        let $j: usize = 8;
        $body
    }
    {
        let $j: usize = 9;
        $body
    }
    {
        let $j: usize = 10;
        $body
    }
    {
        let $j: usize = 11;
        $body
    }
    {
        let $j: usize = 12;
        $body
    }
    {
        let $j: usize = 13;
        $body
    }
    {
        let $j: usize = 14;
        $body
    }
    {
        let $j: usize = 15;
        $body
    }
    {
        let $j: usize = 16;
        $body
    }
    {
        let $j: usize = 17;
        $body
    }
    {
        let $j: usize = 18;
        $body
    }
    {
        let $j: usize = 19;
        $body
    }
    {
        let $j: usize = 20;
        $body
    }
    {
        let $j: usize = 21;
        $body
    }
    {
        let $j: usize = 22;
        $body
    }
    {
        let $j: usize = 23;
        $body
    }
    {
        let $j: usize = 24;
        $body
    }
    {
        let $j: usize = 25;
        $body
    }
    {
        let $j: usize = 26;
        $body
    }
    {
        let $j: usize = 27;
        $body
    }
    {
        let $j: usize = 28;
        $body
    }
    {
        let $j: usize = 29;
        $body
    }
    {
        let $j: usize = 30;
        $body
    }
    {
        let $j: usize = 31;
        $body
    }};
}

/// Packs exactly 32 values into `4 * B` bytes (`B` constant: shifts are immediates).
fn pack32<const B: u32>(values: &[u32], out: &mut [u8]) {
    let values: &[u32; 32] = values.try_into().expect("32 values");
    let out = &mut out[..4 * B as usize];
    if B == 0 {
        return;
    }
    let m = mask(B);
    let mut acc: u64 = 0;
    unroll32!(i, {
        let bit = i * B as usize;
        let (k, s) = (bit / 32, bit % 32);
        acc |= ((values[i] & m) as u64) << s;
        if s + B as usize >= 32 {
            out[4 * k..4 * k + 4].copy_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
        }
    });
    let _ = acc;
}

/// Unpacks exactly 32 values from `4 * B` bytes.
fn unpack32<const B: u32>(data: &[u8], out: &mut [u32]) {
    let out: &mut [u32; 32] = out.try_into().expect("32 slots");
    if B == 0 {
        out.fill(0);
        return;
    }
    let data = &data[..4 * B as usize];
    let w = |k: usize| u32::from_le_bytes(data[4 * k..4 * k + 4].try_into().expect("4 bytes"));
    unroll32!(i, {
        let bit = i * B as usize;
        let (k, s) = (bit / 32, bit % 32);
        let mut v = w(k) >> s;
        if s + B as usize > 32 {
            v |= w(k + 1) << (32 - s);
        }
        out[i] = v & mask(B);
    });
}

/// Reads value `i` of width `b`. Returns `None` when it would read past `data`.
#[inline]
pub fn get(data: &[u8], b: u32, i: usize) -> Option<u32> {
    if b == 0 {
        return Some(0);
    }
    let bit = i * b as usize;
    let byte = bit / 8;
    let shift = (bit % 8) as u32;
    // A value spans at most 5 bytes from `byte` (shift <= 7, b <= 32): one 8-byte read.
    if let Some(w) = data.get(byte..byte + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        return Some(((w >> shift) as u32) & mask(b));
    }
    let end_byte = (bit + b as usize).div_ceil(8);
    if end_byte > data.len() {
        return None;
    }
    let mut buf = [0u8; 8];
    let take = (data.len() - byte).min(8);
    buf[..take].copy_from_slice(&data[byte..byte + take]);
    Some(((u64::from_le_bytes(buf) >> shift) as u32) & mask(b))
}

/// Overwrites value `i` of width `b` with `v` (masked to `b` bits). Panics if out of bounds.
#[inline]
pub fn set(data: &mut [u8], b: u32, i: usize, v: u32) {
    if b == 0 {
        return;
    }
    let bit = i * b as usize;
    let byte = bit / 8;
    let shift = (bit % 8) as u32;
    let end_byte = (bit + b as usize).div_ceil(8);
    assert!(end_byte <= data.len(), "bits::set out of bounds");
    let m = (mask(b) as u64) << shift;
    let val = ((v & mask(b)) as u64) << shift;
    // One 8-byte read-modify-write where the slice has the bytes (`shift + b <= 39` bits):
    // the bytes past the value are written back unchanged. Byte by byte, the set was 37
    // instructions of each PFOR-DELTA append (issue 21, callgrind).
    if let Some(w) = data.get_mut(byte..).and_then(|d| d.first_chunk_mut::<8>()) {
        *w = ((u64::from_le_bytes(*w) & !m) | val).to_le_bytes();
        return;
    }
    for (k, slot) in data[byte..end_byte].iter_mut().enumerate() {
        let mk = (m >> (8 * k)) as u8;
        let vk = (val >> (8 * k)) as u8;
        *slot = (*slot & !mk) | vk;
    }
}

/// Unpacks `out.len()` values of width `b` from `data`. Returns `None` when `data` is too short.
pub fn unpack(data: &[u8], b: u32, out: &mut [u32]) -> Option<()> {
    let n = out.len();
    if packed_len(n, b) > data.len() {
        return None;
    }
    if b == 0 {
        out.fill(0);
        return Some(());
    }
    // Whole groups of 32 values take 4b bytes each: fixed-width kernels (b <= 32).
    let groups = if b <= 32 { n / 32 } else { 0 };
    let gl = 4 * b as usize;
    let f = UNPACK32[b.min(32) as usize];
    for g in 0..groups {
        f(&data[gl * g..gl * g + gl], &mut out[32 * g..32 * g + 32]);
    }
    for (k, o) in out[32 * groups..].iter_mut().enumerate() {
        *o = get(data, b, 32 * groups + k)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `set` (a word write where the slice has 8 bytes from the value's first) against a
    /// byte-by-byte reference, at every width, near the end of short slices too.
    #[test]
    fn set_matches_a_bytewise_reference() {
        fn reference(data: &mut [u8], b: u32, i: usize, v: u32) {
            for j in 0..b as usize {
                let bit = i * b as usize + j;
                let on = (v >> j) & 1 == 1;
                let byte = &mut data[bit / 8];
                *byte = (*byte & !(1 << (bit % 8))) | (u8::from(on) << (bit % 8));
            }
        }
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..20_000 {
            let b = rng.u32(0..=32);
            let n = rng.usize(1..=40);
            let len = packed_len(n, b) + rng.usize(..3);
            let mut a: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let mut r = a.clone();
            let (i, v) = (rng.usize(..n), rng.u32(..));
            set(&mut a, b, i, v);
            reference(&mut r, b, i, v);
            assert_eq!(a, r, "b {b} i {i} v {v:#x} len {len}");
        }
    }

    #[test]
    fn round_trip_every_width() {
        let mut rng = fastrand::Rng::with_seed(7);
        for b in 0..=32u32 {
            for n in [0usize, 1, 7, 31, 32, 33, 128, 255, 256] {
                let vals: Vec<u32> = (0..n).map(|_| rng.u32(..) & mask(b)).collect();
                let mut buf = vec![0xAAu8; packed_len(n, b)];
                pack(&vals, b, &mut buf);
                let mut back = vec![0u32; n];
                unpack(&buf, b, &mut back).unwrap();
                assert_eq!(vals, back, "b={b} n={n}");
                for (i, &v) in vals.iter().enumerate() {
                    assert_eq!(get(&buf, b, i), Some(v), "b={b} i={i}");
                }
                // set then get, neighbours untouched
                if n > 2 {
                    let nv = rng.u32(..) & mask(b);
                    set(&mut buf, b, 1, nv);
                    assert_eq!(get(&buf, b, 0), Some(vals[0]));
                    assert_eq!(get(&buf, b, 1), Some(nv));
                    assert_eq!(get(&buf, b, 2), Some(vals[2]));
                }
                assert_eq!(
                    get(&buf, b, n + (b > 0) as usize * 64),
                    if b == 0 { Some(0) } else { None }
                );
            }
        }
    }

    #[test]
    fn matches_u32_word_layout_for_32_values() {
        // 32 values of width b fill b little-endian words, LSB first.
        let vals: Vec<u32> = (0..32).map(|i| (i * 5 + 1) & mask(6)).collect();
        let mut buf = vec![0u8; packed_len(32, 6)];
        pack(&vals, 6, &mut buf);
        let w0 = u32::from_le_bytes(buf[0..4].try_into().unwrap());
        assert_eq!(w0 & 0x3f, vals[0]);
        assert_eq!((w0 >> 6) & 0x3f, vals[1]);
        assert_eq!(
            (w0 >> 30) | ((u32::from_le_bytes(buf[4..8].try_into().unwrap()) & 0xf) << 2),
            vals[5]
        );
    }
}
