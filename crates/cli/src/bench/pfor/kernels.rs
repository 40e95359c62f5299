//! The kernels `bench pfor` compares, around the production PFOR frames of
//! `tersedb_codecs::pfor::column`:
//!
//! - [`Column`]: a column stored as production PFOR or PFOR-DELTA frames of 128 values, back to
//!   back, with a directory entry per frame (offset, bit width and, for PFOR-DELTA, the running
//!   value before the frame: the paper's entry points).
//! - [`Naive`]: the paper's NAIVE decompression, a reserved code `MAXCODE = 2^b - 1` marks an
//!   exception and one loop tests every value with an if-then-else. Its own (escape) format, since
//!   the production format has no marker; the codes are unpacked by the production kernel.
//! - [`Loop1`]: the three ways of the paper's compression figure to find the exceptions (NAIVE
//!   if-then-else, PRED predicated, DC double-cursor predicated); each then calls the production
//!   `pfor::finish` (compulsory exceptions, patch list, packing), so its frames are the production
//!   encoder's byte for byte.
//! - [`page_wise_sum`] and [`vector_wise_sum`]: decompress whole pages into RAM and then run the
//!   query, against decompress one vector into cache and consume it at once.

use tersedb_codecs::bits::{mask, pack, packed_len};
use tersedb_codecs::pfor::{self, column, FRAME};
use tersedb_codecs::{CodecError, Isa};

/// Values of one frame.
pub const N: usize = FRAME;

/// A column of production PFOR or PFOR-DELTA frames.
pub struct Column {
    pub len: usize,
    pub delta: bool,
    pub bytes: Vec<u8>,
    /// Per frame: byte offset of its payload (the payload ends at the next offset).
    pub offsets: Vec<u32>,
    pub bits: Vec<u8>,
    /// PFOR-DELTA: the value before each frame.
    pub prev: Vec<u32>,
    /// Exceptions of all frames, compulsory ones included.
    pub exceptions: usize,
}

impl Column {
    /// Encodes `values` with the width each frame chooses (`None`) or width `b` for all.
    pub fn encode(values: &[u32], delta: bool, bits: Option<u32>) -> Result<Column, CodecError> {
        let frames = values.len().div_ceil(N);
        let mut c = Column {
            len: values.len(),
            delta,
            bytes: Vec::with_capacity(values.len() * 2),
            offsets: Vec::with_capacity(frames + 1),
            bits: Vec::with_capacity(frames),
            prev: Vec::new(),
            exceptions: 0,
        };
        let mut buf = vec![0u8; column::max_len(N)];
        let mut prev = 0u32;
        for chunk in values.chunks(N) {
            let info = if delta {
                c.prev.push(prev);
                column::encode_delta(chunk, prev, bits, &mut buf)?
            } else {
                column::encode(chunk, bits, &mut buf)?
            };
            prev = chunk[chunk.len() - 1];
            c.offsets.push(c.bytes.len() as u32);
            c.bits.push(info.bits as u8);
            c.exceptions += info.exceptions;
            c.bytes.extend_from_slice(&buf[..info.size]);
        }
        c.offsets.push(c.bytes.len() as u32);
        Ok(c)
    }

    /// Bytes including the directory: 4 (offset) + 1 (width) per frame, + 4 (running value)
    /// for PFOR-DELTA.
    pub fn size(&self) -> usize {
        self.bytes.len() + self.bits.len() * if self.delta { 9 } else { 5 }
    }

    pub fn frames(&self) -> usize {
        self.bits.len()
    }

    /// Decodes frame `i` into `out` (its value count long) with the production decoder.
    #[inline(always)]
    pub fn decode_frame(&self, isa: Isa, i: usize, out: &mut [u32]) -> Result<(), CodecError> {
        let p = &self.bytes[self.offsets[i] as usize..self.offsets[i + 1] as usize];
        let b = self.bits[i] as u32;
        if self.delta {
            column::decode_delta(isa, b, p, self.prev[i], out)
        } else {
            column::decode(isa, b, p, out)
        }
    }

    /// Values of frame `i`.
    pub fn frame_len(&self, i: usize) -> usize {
        N.min(self.len - i * N)
    }
}

/// Wrapping sum of `v` (the query of the page-wise / vector-wise comparison).
#[inline(always)]
pub fn sum(v: &[u32]) -> u64 {
    v.iter().map(|&x| x as u64).sum()
}

/// Page-wise: each page of `page` values (a multiple of 128) is decompressed into `buf` (RAM, as
/// a buffer manager caching decompressed pages would), then summed.
pub fn page_wise_sum(
    c: &Column,
    isa: Isa,
    page: usize,
    buf: &mut [u32],
) -> Result<u64, CodecError> {
    // At least one frame per page (a granule below 128 values still decodes whole frames).
    let per = (page / N).max(1);
    if buf.len() < per * N {
        return Err(CodecError::InvalidInput {
            what: "page buffer shorter than the page",
        });
    }
    let mut total = 0u64;
    let mut f = 0;
    while f < c.frames() {
        let end = (f + per).min(c.frames());
        let mut at = 0;
        for i in f..end {
            let n = c.frame_len(i);
            c.decode_frame(isa, i, &mut buf[at..at + n])?;
            at += n;
        }
        total = total.wrapping_add(sum(&buf[..at]));
        f = end;
    }
    Ok(total)
}

/// Vector-wise: `vector` values (a multiple of 128) at a time are decompressed into a small
/// buffer that stays in the CPU cache and summed at once.
pub fn vector_wise_sum(
    c: &Column,
    isa: Isa,
    vector: usize,
    buf: &mut [u32],
) -> Result<u64, CodecError> {
    page_wise_sum(c, isa, vector, buf)
}

/// The paper's NAIVE format: per frame `b`-bit codes (`MAXCODE = 2^b - 1` marks an exception,
/// so the window holds `2^b - 1` values from `base`) and the exceptions in order.
pub struct Naive {
    pub b: u32,
    pub base: u32,
    pub len: usize,
    pub codes: Vec<u8>,
    pub exceptions: Vec<u32>,
    /// Per frame: index of its first exception.
    pub first: Vec<u32>,
}

impl Naive {
    /// Encodes with width `1..=32` and frame of reference `base` for all frames.
    pub fn encode(values: &[u32], b: u32, base: u32) -> Naive {
        assert!((1..=32).contains(&b));
        let maxcode = mask(b);
        let stride = packed_len(N, b);
        let mut nv = Naive {
            b,
            base,
            len: values.len(),
            codes: vec![0; values.len().div_ceil(N) * stride],
            exceptions: Vec::new(),
            first: Vec::new(),
        };
        let mut codes = [0u32; N];
        for (f, chunk) in values.chunks(N).enumerate() {
            nv.first.push(nv.exceptions.len() as u32);
            for (c, &v) in codes.iter_mut().zip(chunk) {
                let d = v.wrapping_sub(base);
                *c = if d < maxcode {
                    d
                } else {
                    nv.exceptions.push(v);
                    maxcode
                };
            }
            let n = chunk.len();
            pack(
                &codes[..n],
                b,
                &mut nv.codes[f * stride..f * stride + packed_len(n, b)],
            );
        }
        nv.first.push(nv.exceptions.len() as u32);
        nv
    }

    pub fn frames(&self) -> usize {
        self.first.len() - 1
    }

    /// NAIVE decompression of frame `f` into `out` (its value count long): the production
    /// unpack, then one loop with an if-then-else per value.
    #[inline(always)]
    pub fn decode_frame(&self, isa: Isa, f: usize, out: &mut [u32]) -> Option<()> {
        let stride = packed_len(N, self.b);
        let data = self.codes.get(f * stride..(f + 1) * stride)?;
        pfor::unpack_add(isa, data, self.b, 0, out)?;
        let exc = self
            .exceptions
            .get(self.first[f] as usize..self.first[f + 1] as usize)?;
        let maxcode = mask(self.b);
        let mut j = 0;
        for o in out.iter_mut() {
            let code = *o;
            if code < maxcode {
                *o = self.base.wrapping_add(code);
            } else {
                *o = exc[j];
                j += 1;
            }
        }
        Some(())
    }
}

/// LOOP1 variants of the paper's PFOR compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop1 {
    /// if-then-else per value.
    Naive,
    /// Predication: the position is always written, the list length grows by a boolean.
    Pred,
    /// Double cursor: two predicated cursors, from the start and from the middle.
    Dc,
}

impl Loop1 {
    pub const ALL: [Loop1; 3] = [Loop1::Naive, Loop1::Pred, Loop1::Dc];

    pub fn name(self) -> &'static str {
        match self {
            Loop1::Naive => "NAIVE",
            Loop1::Pred => "PRED",
            Loop1::Dc => "DC",
        }
    }

    /// Encodes the frame `v` (`1..=128` values) for width `b` and base `base` into `out`: this
    /// LOOP1, then the production LOOP2 and packing. Returns the frame's size.
    #[inline(always)]
    pub fn encode(self, v: &[u32], b: u32, base: u32, out: &mut [u8]) -> Result<usize, CodecError> {
        let n = v.len();
        if n == 0 || n > N {
            return Err(CodecError::InvalidInput {
                what: "a frame has 1..=128 values",
            });
        }
        let m = mask(b);
        let mut codes = [0u32; N];
        let mut miss = [0u8; N];
        let k = match self {
            Loop1::Naive => {
                let mut j = 0;
                for (i, (&x, c)) in v.iter().zip(codes.iter_mut()).enumerate() {
                    let val = x.wrapping_sub(base);
                    *c = val;
                    if val > m {
                        miss[j] = i as u8;
                        j += 1;
                    }
                }
                j
            }
            Loop1::Pred => {
                let mut j = 0;
                for (i, (&x, c)) in v.iter().zip(codes.iter_mut()).enumerate() {
                    let val = x.wrapping_sub(base);
                    *c = val;
                    miss[j % N] = i as u8;
                    j += (val > m) as usize;
                }
                j
            }
            Loop1::Dc => {
                let h = n / 2;
                let mut miss_m = [0u8; N];
                let (mut j0, mut jm) = (0, 0);
                for i in 0..h {
                    let val_0 = v[i].wrapping_sub(base);
                    let val_m = v[i + h].wrapping_sub(base);
                    codes[i] = val_0;
                    codes[i + h] = val_m;
                    miss[j0 % N] = i as u8;
                    miss_m[jm % N] = (i + h) as u8;
                    j0 += (val_0 > m) as usize;
                    jm += (val_m > m) as usize;
                }
                // The odd value out, on the second cursor's list.
                if n % 2 == 1 {
                    let val = v[n - 1].wrapping_sub(base);
                    codes[n - 1] = val;
                    miss_m[jm % N] = (n - 1) as u8;
                    jm += (val > m) as usize;
                }
                miss[j0..j0 + jm].copy_from_slice(&miss_m[..jm]);
                j0 + jm
            }
        };
        pfor::finish(v, b, base, &mut codes, &miss[..k], out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Frames of up to 128 values: codes of `b` bits from 0 with a share of outliers.
    fn frame() -> impl Strategy<Value = (Vec<u32>, u32)> {
        (1u32..=12, 1usize..=N, 0u32..=100, any::<u64>()).prop_map(|(b, n, pct, seed)| {
            let mut rng = fastrand::Rng::with_seed(seed);
            let v = (0..n)
                .map(|_| {
                    if rng.u32(0..100) < pct {
                        rng.u32(..)
                    } else {
                        rng.u32(..1 << b)
                    }
                })
                .collect();
            (v, b)
        })
    }

    proptest! {
        /// NAIVE, PRED and DC write the production encoder's frame byte for byte, and the
        /// production decoder gives the values back.
        #[test]
        fn loop1_variants_write_the_production_frame((v, b) in frame()) {
            let base = column::window_base(&v, b).unwrap();
            let mut want = vec![0u8; column::max_len(N)];
            let info = column::encode_with(&v, b, base, &mut want).unwrap();
            for l in Loop1::ALL {
                let mut got = vec![0u8; column::max_len(N)];
                let size = l.encode(&v, b, base, &mut got).unwrap();
                prop_assert_eq!(&got[..size], &want[..info.size], "{}", l.name());
            }
            let mut out = vec![0u32; v.len()];
            column::decode(Isa::detect(), b, &want[..info.size], &mut out).unwrap();
            prop_assert_eq!(out, v);
        }

        /// NAIVE decompression, the production PFOR and PFOR-DELTA decoders (every instruction
        /// set, chosen and forced widths) and the page-wise and vector-wise sums all give the
        /// column back.
        #[test]
        fn every_decoder_gives_the_column_back(
            len in 1usize..2000,
            b in 1u32..=10,
            pct in 0u32..=100,
            seed in any::<u64>(),
        ) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let v: Vec<u32> = (0..len)
                .map(|_| if rng.u32(0..100) < pct { rng.u32(..) } else { rng.u32(..(1 << b) - 1) })
                .collect();
            let want_sum = sum(&v);
            let naive = Naive::encode(&v, b, 0);
            let mut out = vec![0u32; v.len()];
            for isa in Isa::available() {
                for (f, o) in out.chunks_mut(N).enumerate() {
                    naive.decode_frame(isa, f, o).unwrap();
                }
                prop_assert_eq!(&out, &v);
                for delta in [false, true] {
                    for bits in [None, Some(b)] {
                        let c = Column::encode(&v, delta, bits).unwrap();
                        for (f, o) in out.chunks_mut(N).enumerate() {
                            c.decode_frame(isa, f, o).unwrap();
                        }
                        prop_assert_eq!(&out, &v);
                        let mut page = vec![0u32; 1024];
                        prop_assert_eq!(page_wise_sum(&c, isa, 1024, &mut page).unwrap(), want_sum);
                        let mut vec128 = vec![0u32; 128];
                        prop_assert_eq!(vector_wise_sum(&c, isa, 128, &mut vec128).unwrap(), want_sum);
                    }
                }
            }
        }
    }

    /// Page-wise decompression leaves the page's values in the RAM buffer, identical to the
    /// production decoder's frame by frame.
    #[test]
    fn page_buffer_holds_the_page() {
        let v: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2654435761) % 700)
            .collect();
        let c = Column::encode(&v, false, None).unwrap();
        let mut page = vec![0u32; 4096];
        page_wise_sum(&c, Isa::detect(), 4096, &mut page).unwrap();
        // The last page written holds values 4096..5000.
        assert_eq!(&page[..904], &v[4096..]);
    }
}
