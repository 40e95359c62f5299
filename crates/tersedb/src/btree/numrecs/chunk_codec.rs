//! One chunk of compressed numeric records on its own, outside a leaf: the entry point through
//! which `tersedb bench pfor` measures the engine's PDICT (and its exception-free twin DICT)
//! against the patched-FOR paper (Zukowski et al., "Super-Scalar RAM-CPU Cache Compression",
//! section 3.1). Not a stable API: hidden from the docs, and only what a benchmark needs.
//!
//! ```text
//! [count u8][kind u8][body][sum]      exactly the bytes of one chunk of a leaf's record list
//! ```
//!
//! Encoding is the engine's own (`NumRecs::encode_with`, with a sum as leaves write one for
//! integer records), optionally forced to one layout; decoding is the bulk path of scans and
//! folds (`header` checks the chunk, then `chunk_words`). A caller never sees the layouts'
//! bytes: it gets values back and a [`ChunkInfo`] of what was written.

use super::{pdict, sum_len, Chunk, Num, NumRecs, DICT, FOR, PDICT, RAW, RECORD_LAYOUTS};

/// What one chunk holds, as [`ChunkCodec::encode`] wrote it or [`ChunkCodec::decode`] read it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// The layout's name ([`RECORD_LAYOUTS`]: "raw", "for", "dict", "dec", "pdict").
    pub layout: &'static str,
    /// Records in the chunk (1..=255).
    pub count: usize,
    /// Bytes of the chunk, header and sum included.
    pub len: usize,
    /// Bits of a code: FOR's offsets, DICT's codes, PDICT's `b`.
    pub bits: u32,
    /// PDICT: records that are exceptions (not among the `2^b` coded values); 0 otherwise.
    pub exceptions: usize,
}

/// The engine's record chunk codec for records of one width and signedness.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct ChunkCodec {
    recs: NumRecs,
}

impl ChunkCodec {
    /// Most records in one chunk (its count is a byte).
    pub const MAX_RECORDS: usize = 255;

    /// Integer records of `width` bytes (1..=8), two's complement when `signed`; `None` for
    /// another width.
    pub fn new(width: u8, signed: bool) -> Option<ChunkCodec> {
        (1..=8).contains(&width).then_some(ChunkCodec {
            recs: NumRecs {
                width,
                num: if signed { Num::Signed } else { Num::Unsigned },
                chunk: Self::MAX_RECORDS as u8,
            },
        })
    }

    /// Appends `vals` (1..=255 records, each the little-endian word of its `width` bytes: the
    /// bits above are ignored) to `out` as one chunk: the smallest layout (`layout` `None`), as
    /// a leaf writes it, or the layout named ("raw", "for", "dict" or "pdict"). `None`, with
    /// `out` unchanged, for no records or too many, an unknown name, or values the named
    /// layout cannot hold: PDICT needs 2..=256 distinct values (one value is FOR of 0 bits).
    pub fn encode(
        &self,
        vals: &[u64],
        layout: Option<&str>,
        out: &mut Vec<u8>,
    ) -> Option<ChunkInfo> {
        if !(1..=Self::MAX_RECORDS).contains(&vals.len()) {
            return None;
        }
        let kind = match layout {
            None => None,
            Some(name) => Some(
                match RECORD_LAYOUTS.iter().position(|&l| l == name)? as u8 {
                    k @ (RAW | FOR | DICT | PDICT) => k,
                    _ => return None,
                },
            ),
        };
        let m = super::mask(8 * u32::from(self.recs.width));
        let words: Vec<u64> = vals.iter().map(|&v| v & m).collect();
        let start = out.len();
        self.recs
            .encode_with(&words, kind.map(|k| (k, 0)), true, out);
        match self.info(out, start) {
            Ok(i) if kind.is_none_or(|k| RECORD_LAYOUTS.get(usize::from(k)) == Some(&i.layout)) => {
                Some(i)
            }
            _ => {
                out.truncate(start);
                None
            }
        }
    }

    /// Appends `vals` (as for [`ChunkCodec::encode`]) to `out` as one PDICT chunk whose codes
    /// take `bits` bits (0..=7), the `2^bits` most frequent values coded, instead of the width
    /// the engine would choose. `None`, with `out` unchanged, where that layout cannot hold
    /// them: more than `2^bits` distinct values are needed, at most 256.
    pub fn encode_pdict(&self, vals: &[u64], bits: u32, out: &mut Vec<u8>) -> Option<ChunkInfo> {
        if !(1..=Self::MAX_RECORDS).contains(&vals.len()) {
            return None;
        }
        let (nr, w) = (&self.recs, self.recs.w());
        let m = super::mask(8 * w as u32);
        let words: Vec<u64> = vals.iter().map(|&v| v & m).collect();
        // (value, occurrences) of the distinct values, ascending in the records' order.
        let mut sorted: Vec<u64> = words.iter().map(|&v| nr.ordered(v)).collect();
        sorted.sort_unstable();
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for &o in &sorted {
            match runs.last_mut() {
                Some(r) if r.0 == o => r.1 += 1,
                _ => runs.push((o, 1)),
            }
        }
        let p = pdict::plan_at(&runs, words.len(), w, bits)?;
        // The sum a leaf writes: sized for the chunk's range, as `encode_with` sizes it.
        let (lo, hi) = (sorted.first()?, sorted.last()?);
        let sum = sum_len(super::bits_for(hi - lo));
        let start = out.len();
        out.push(words.len() as u8);
        nr.encode_pdict(&words, &runs, &p, sum, out);
        match self.info(out, start) {
            Ok(i) if i.layout == "pdict" && i.len == out.len() - start => Some(i),
            _ => {
                out.truncate(start);
                None
            }
        }
    }

    /// Decodes the chunk at `at` of `bytes` into `out` (at least its count long: 255 always
    /// suffices) as words of the records' width. The chunk is checked as a leaf's is (its
    /// header and lengths; its bytes may be untrusted); packed codes may be read on to the end
    /// of `bytes`, never past it.
    pub fn decode(
        &self,
        bytes: &[u8],
        at: usize,
        out: &mut [u64],
    ) -> Result<ChunkInfo, &'static str> {
        let c = self.recs.header(bytes, at).map_err(|f| f.0)?;
        self.recs
            .chunk_words(bytes, at, &c, 0, c.count, out)
            .map_err(|f| f.0)?;
        Ok(Self::describe(&c))
    }

    fn info(&self, bytes: &[u8], at: usize) -> Result<ChunkInfo, &'static str> {
        self.recs
            .header(bytes, at)
            .map(|c| Self::describe(&c))
            .map_err(|f| f.0)
    }

    fn describe(c: &Chunk) -> ChunkInfo {
        ChunkInfo {
            layout: RECORD_LAYOUTS
                .get(usize::from(c.kind))
                .copied()
                .unwrap_or("?"),
            count: c.count,
            len: c.len,
            bits: if c.kind == RAW { 0 } else { c.bits },
            exceptions: if c.kind == PDICT { c.exc } else { 0 },
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Forced layouts are written or refused, never swapped silently; every chunk decodes to
    /// its values, also from between other chunks.
    #[test]
    fn chunks_round_trip_and_forced_layouts_hold() {
        let c = ChunkCodec::new(4, false).unwrap();
        let one = vec![7u64; 100];
        let mut out = Vec::new();
        assert!(c.encode(&one, Some("pdict"), &mut out).is_none());
        assert!(out.is_empty());
        let i = c.encode(&one, Some("dict"), &mut out).unwrap();
        assert_eq!((i.layout, i.bits, i.count), ("dict", 0, 100));
        let skew: Vec<u64> = (0..255u64)
            .map(|k| if k % 10 == 3 { k } else { 9 })
            .collect();
        let p = c.encode(&skew, Some("pdict"), &mut out).unwrap();
        assert_eq!((p.layout, p.bits, p.exceptions), ("pdict", 0, 26));
        let a = c.encode(&skew, None, &mut out).unwrap();
        assert!(a.len <= p.len);
        assert!(c.encode(&[], None, &mut out).is_none());
        assert!(c.encode(&[1; 256], None, &mut out).is_none());
        assert!(c.encode(&skew, Some("dec"), &mut out).is_none());
        assert!(ChunkCodec::new(9, false).is_none());
        let mut words = [0u64; 255];
        let mut at = 0;
        for (want, info) in [(&one, i), (&skew, p), (&skew, a)] {
            let got = c.decode(&out, at, &mut words).unwrap();
            assert_eq!(got, info);
            assert_eq!(&words[..got.count], &want[..]);
            at += got.len;
        }
        assert_eq!(at, out.len());
        assert!(c
            .decode(&out[..out.len() - 1], at - a.len, &mut words)
            .is_err());
    }

    /// A PDICT chunk at each width holds the `2^b` most frequent values and decodes to the
    /// records; the widths the engine's own choice tries include the one it keeps.
    #[test]
    fn pdict_at_a_width() {
        let c = ChunkCodec::new(8, true).unwrap();
        let vals: Vec<u64> = (0..255u64)
            .map(|k| match k % 9 {
                0..=4 => (-5i64) as u64,
                5 | 6 => 1 << 40,
                7 => k,
                _ => i64::MIN as u64,
            })
            .collect();
        let free = c.encode(&vals, Some("pdict"), &mut Vec::new()).unwrap();
        let mut words = [0u64; 255];
        let mut sizes = Vec::new();
        for bits in 0..=7 {
            let mut out = Vec::new();
            match c.encode_pdict(&vals, bits, &mut out) {
                Some(i) => {
                    assert_eq!((i.layout, i.bits, i.len), ("pdict", bits, out.len()));
                    assert_eq!(c.decode(&out, 0, &mut words).unwrap(), i);
                    assert_eq!(&words[..255], &vals[..]);
                    sizes.push((i.len, bits));
                }
                // 32 distinct values: b = 5 and wider code them all.
                None => assert!(bits >= 5 && out.is_empty(), "{bits}"),
            }
        }
        assert_eq!(sizes.len(), 5);
        assert_eq!(
            sizes.iter().min().map(|s| (s.0, s.1)),
            Some((free.len, free.bits))
        );
        // b = 0: the dominant value alone is coded; every other record is an exception.
        let mut out = Vec::new();
        let i = c.encode_pdict(&vals, 0, &mut out).unwrap();
        let others = vals.iter().filter(|&&v| v != (-5i64) as u64).count();
        assert_eq!((i.exceptions, others), (112, 112));
        assert!(c.encode_pdict(&[3; 10], 0, &mut out).is_none());
    }
}
