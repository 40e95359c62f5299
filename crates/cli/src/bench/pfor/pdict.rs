//! PDICT in `bench pfor`: the engine's own patched dictionary (Zukowski et al., "Super-Scalar
//! RAM-CPU Cache Compression", section 3.1), reached through `tersedb::ChunkCodec`, not a copy.
//!
//! A [`DictColumn`] stores u32 values as the engine's record chunks of 255 records (what a leaf
//! of 4 KiB pages holds per chunk), back to back, in one of the engine's two dictionary
//! layouts: PDICT (the `2^b` most frequent values coded in `b` bits, the other values
//! exceptions listed by position) and DICT, PDICT without exceptions. With `b` from the data
//! each chunk takes the smaller of DICT and PDICT at the width the engine's histogram chooses;
//! with a fixed `b` (the paper's Fig. 4 fixes it) every chunk is PDICT at that width. The
//! engine's PDICT layout needs at least one value outside the coded ones (`2^b` < entries), so
//! a chunk of at most `2^b` values, the paper's PDICT at 0% exceptions, is DICT either way.
//! Chunks keep the sum a leaf writes (1-9 bytes); a directory entry of 4 bytes per chunk (its
//! offset) is counted in the size.

use tersedb::{ChunkCodec, ChunkInfo};

/// Records per chunk.
pub const CHUNK: usize = ChunkCodec::MAX_RECORDS;

/// Bits of the dictionary Fig. 4's PDICT values come from (`2^DICT_BITS` values): frequent
/// enough in a chunk of 255 (16 times each) for the histogram to find them.
pub const DICT_BITS: u32 = 4;

/// A column of u32 values as engine record chunks (module docs).
pub struct DictColumn {
    pub bytes: Vec<u8>,
    /// What each chunk holds, in order.
    pub chunks: Vec<ChunkInfo>,
    codec: ChunkCodec,
}

impl DictColumn {
    /// Encodes `values` in chunks of 255: PDICT at width `bits` (DICT where the chunk has at
    /// most `2^bits` values), or with `None` the smaller of DICT and PDICT.
    pub fn encode(values: &[u32], bits: Option<u32>) -> Result<DictColumn, String> {
        let codec = ChunkCodec::new(4, false).ok_or("no u32 record codec")?;
        let mut c = DictColumn {
            bytes: Vec::with_capacity(values.len()),
            chunks: Vec::with_capacity(values.len().div_ceil(CHUNK)),
            codec,
        };
        let mut dict = Vec::new();
        for part in values.chunks(CHUNK) {
            let words: Vec<u64> = part.iter().map(|&v| u64::from(v)).collect();
            dict.clear();
            let d = codec
                .encode(&words, Some("dict"), &mut dict)
                .ok_or("a chunk of 255 records always takes DICT")?;
            let at = c.bytes.len();
            let pdict = match bits {
                Some(b) => codec.encode_pdict(&words, b, &mut c.bytes),
                None => codec.encode(&words, Some("pdict"), &mut c.bytes),
            };
            let info = match pdict {
                Some(p) if bits.is_some() || p.len < d.len => p,
                _ => {
                    c.bytes.truncate(at);
                    c.bytes.extend_from_slice(&dict);
                    d
                }
            };
            c.chunks.push(info);
        }
        Ok(c)
    }

    /// Bytes with a 4-byte offset per chunk.
    pub fn size(&self) -> usize {
        self.bytes.len() + 4 * self.chunks.len()
    }

    /// Records that are PDICT exceptions.
    pub fn exceptions(&self) -> usize {
        self.chunks.iter().map(|i| i.exceptions).sum()
    }

    /// Chunks written as PDICT (the others are DICT).
    pub fn patched(&self) -> usize {
        self.chunks.iter().filter(|i| i.layout == "pdict").count()
    }

    /// Mean code width over the chunks.
    pub fn mean_bits(&self) -> f64 {
        self.chunks.iter().map(|i| i.bits as f64).sum::<f64>() / self.chunks.len().max(1) as f64
    }

    /// Decodes every chunk in order into `buf`, handing each chunk's values to `each`: the
    /// engine's bulk decode, as a scan or fold runs it.
    #[inline(always)]
    pub fn decode_each(
        &self,
        buf: &mut [u64; CHUNK],
        mut each: impl FnMut(&[u64]),
    ) -> Result<(), &'static str> {
        let mut at = 0;
        while at < self.bytes.len() {
            let i = self.codec.decode(&self.bytes, at, buf)?;
            each(&buf[..i.count]);
            at += i.len;
        }
        Ok(())
    }

    /// Wrapping sum of every value (the check before timing).
    pub fn sum(&self) -> Result<u64, &'static str> {
        let mut buf = [0u64; CHUNK];
        let mut total = 0u64;
        self.decode_each(&mut buf, |v| {
            total = total.wrapping_add(v.iter().sum::<u64>());
        })?;
        Ok(total)
    }
}

/// `n` values of which a share `rate` (0..=1) lie outside a dictionary of `2^bits` values (Fig.
/// 4's exceptions, for PDICT): dictionary values random in `[2^20, 2^32)`, drawn uniformly; the
/// others uniform in `[0, 2^32)` (distinct from them and from each other but by chance).
pub fn dict_values(rng: &mut fastrand::Rng, n: usize, rate: f64, bits: u32) -> Vec<u32> {
    let mut dict: Vec<u32> = Vec::with_capacity(1 << bits);
    while dict.len() < 1 << bits {
        let v = rng.u32(1 << 20..);
        if !dict.contains(&v) {
            dict.push(v);
        }
    }
    (0..n)
        .map(|_| {
            if rng.f64() < rate {
                loop {
                    let v = rng.u32(..);
                    if !dict.contains(&v) {
                        break v;
                    }
                }
            } else {
                dict[rng.usize(..dict.len())]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The paper's PDICT of one chunk at width `b` (section 3.1, "Choosing Compression
    /// Schemes"): the histogram sorted by frequency, its first `2^b` values coded; returns the
    /// records that are exceptions, `s * E_PDICT(b)`.
    fn model_exceptions(vals: &[u64], b: u32) -> usize {
        let mut h: std::collections::HashMap<u64, usize> = Default::default();
        for &v in vals {
            *h.entry(v).or_default() += 1;
        }
        let mut counts: Vec<usize> = h.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        vals.len() - counts.iter().take(1 << b).sum::<usize>()
    }

    fn distinct(words: &[u64]) -> usize {
        words.iter().collect::<std::collections::HashSet<_>>().len()
    }

    /// `agree_at` with `b` from the data and at widths 0, 4 and 7.
    fn agree(values: &[u32]) {
        for bits in [None, Some(0), Some(DICT_BITS), Some(7)] {
            agree_at(values, bits);
        }
    }

    /// Every chunk decodes to `values`, and a PDICT chunk's exceptions are the model's for its
    /// width, `bits` or the one the engine chose (then no chunk is larger than either layout
    /// forced); a chunk is DICT only where PDICT at `bits` cannot hold its values.
    fn agree_at(values: &[u32], bits: Option<u32>) {
        let c = DictColumn::encode(values, bits).unwrap();
        let mut buf = [0u64; CHUNK];
        let mut got = Vec::new();
        c.decode_each(&mut buf, |v| got.extend(v.iter().map(|&w| w as u32)))
            .unwrap();
        assert_eq!(got, values);
        let codec = ChunkCodec::new(4, false).unwrap();
        for (info, part) in c.chunks.iter().zip(values.chunks(CHUNK)) {
            let words: Vec<u64> = part.iter().map(|&v| u64::from(v)).collect();
            assert_eq!(info.count, part.len());
            if bits.is_none() {
                let mut scratch = Vec::new();
                for layout in ["dict", "pdict"] {
                    if let Some(f) = codec.encode(&words, Some(layout), &mut scratch) {
                        assert!(info.len <= f.len, "{layout}: {info:?} against {f:?}");
                    }
                }
            }
            match info.layout {
                "pdict" => {
                    assert!(info.bits <= 7, "{info:?}");
                    assert!(bits.is_none_or(|b| b == info.bits), "{info:?}");
                    assert_eq!(info.exceptions, model_exceptions(&words, info.bits));
                    assert!(info.exceptions > 0, "{info:?}");
                }
                "dict" => {
                    assert_eq!(info.exceptions, 0);
                    if let Some(b) = bits {
                        assert!(distinct(&words) <= 1 << b, "{bits:?}: {info:?}");
                    }
                }
                other => panic!("layout {other}"),
            }
        }
        let want: u64 = values.iter().map(|&v| v as u64).sum();
        assert_eq!(c.sum().unwrap(), want);
    }

    proptest! {
        /// Random columns of 1..2000 values from dictionaries of 1..256 values with 0..100%
        /// outside them decode to themselves through the engine's chunks.
        #[test]
        fn dictionary_columns_round_trip(
            len in 1usize..2000,
            bits in 0u32..=8,
            pct in 0u32..=100,
            seed in any::<u64>(),
        ) {
            let mut rng = fastrand::Rng::with_seed(seed);
            agree(&dict_values(&mut rng, len, pct as f64 / 100.0, bits));
        }
    }

    /// Edge input: one value throughout (DICT of 0 bits: PDICT needs two), every value distinct,
    /// 0-bit codes (one dominant value), the widest code b = 7, the extremes of u32.
    #[test]
    fn edge_chunks() {
        let one = vec![42u32; 1000];
        agree(&one);
        let c = DictColumn::encode(&one, None).unwrap();
        assert!(c.chunks.iter().all(|i| (i.layout, i.bits) == ("dict", 0)));
        // All distinct: at b = 4 the 16 smallest are coded, the other 239 exceptions.
        let distinct: Vec<u32> = (0..255u32).map(|i| i.wrapping_mul(2654435761)).collect();
        agree(&distinct);
        let c = DictColumn::encode(&distinct, Some(4)).unwrap();
        assert_eq!(c.exceptions(), 255 - 16);
        // One dominant value and a few others: PDICT with no codes at all.
        let dominant: Vec<u32> = (0..255u32)
            .map(|i| if i % 16 == 5 { u32::MAX - i } else { 7 })
            .collect();
        agree(&dominant);
        let c = DictColumn::encode(&dominant, None).unwrap();
        assert_eq!((c.chunks[0].layout, c.chunks[0].bits), ("pdict", 0));
        assert_eq!(c.exceptions(), 16);
        // 126 values twice and 3 once: 128 coded in 7 bits, one exception.
        let mut widest: Vec<u32> = (0..126u32).flat_map(|i| [i * 3, i * 3]).collect();
        widest.extend([u32::MAX, u32::MAX - 1, 1]);
        agree(&widest);
        let c = DictColumn::encode(&widest, None).unwrap();
        let first = (c.chunks[0].layout, c.chunks[0].bits, c.exceptions());
        assert_eq!(first, ("pdict", 7, 1));
        // Fig. 4's values: at 0% every chunk a dictionary of 16 in 4 bits; at b = 4 the
        // exceptions are the values outside the dictionary.
        let mut rng = fastrand::Rng::with_seed(9);
        for rate in [0.0, 0.05, 0.5, 1.0] {
            let v = dict_values(&mut rng, 5000, rate, DICT_BITS);
            agree(&v);
            for bits in [None, Some(DICT_BITS)] {
                let c = DictColumn::encode(&v, bits).unwrap();
                if rate == 0.0 {
                    assert_eq!(c.patched(), 0, "no exceptions: DICT");
                    assert!(c.chunks.iter().all(|i| i.bits == DICT_BITS));
                }
                if rate == 0.05 {
                    assert!(c.patched() * 10 >= c.chunks.len() * 9, "{}", c.patched());
                }
            }
            let c = DictColumn::encode(&v, Some(DICT_BITS)).unwrap();
            let outside = c.exceptions() as f64 / v.len() as f64;
            let low = if rate == 1.0 {
                1.0 - 16.0 / 255.0
            } else {
                rate - 0.03
            };
            assert!(
                outside >= low - 0.01 && outside <= rate + 0.03,
                "{rate}: {outside}"
            );
        }
    }
}
