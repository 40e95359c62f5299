//! Sequential search in registers for the delta codecs (StreamVByte, VarIntGB, VByte / Masked
//! VByte): what `select` and `lower_bound` share.
//!
//! A block's payload values are deltas `d[0..n]`; value `v` ends at key `key(v) = start + d[0] +
//! .. + d[v]` (slot `v + 1`), so `key(n - 1) = last`. Both operations are one *seek* over the
//! values, which may run from either end, because the descriptor holds both `start` and `last`:
//!
//! ```text
//! forward:   the first v with key(v) >= target, or v = stop          (running sum from start)
//! backward:  the first v, walking down from n - 1, with v = stop or key(v - 1) < target
//!            (running difference from last: key(v - 1) = key(v) - d[v])
//! select(i):       target = u32::MAX forward / 0 backward, stop = i - 1; the nearer end
//! lower_bound(k):  target = k, stop = n - 1 forward / 0 backward; the end nearer to the
//!                  position interpolated from start, last and k
//! ```
//!
//! On sorted keys both directions find the same value. The definitions hold for any bytes, so
//! the SIMD kernels (which look at 8 or 16 values per step) and their scalar twins agree on
//! corrupt blocks too: a kernel hands over to its scalar twin at the step where a position
//! would leave the data, and the twin reports the error where it would have alone. (A block
//! whose byte count disagrees with its lengths may give a wrong key instead of an error, as
//! before: `validate` is the full check.)

/// What a seek found: value `v` and `key(v)`, or where it stopped for the next stage to go on
/// (the value index, the data position and the running key: `key(v - 1)` forward, `key(v - 1)`
/// of the first value not yet walked backward, i.e. the key at the end of what remains).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seek {
    Found(usize, u32),
    Next(usize, usize, u32),
}

/// The last up to 32 data bytes, zero-padded to 48: 16-byte loads that would cross the end of
/// the data read from here instead (at the same offset from `base`). Three 16-byte words, each
/// written once, so reading them back never waits on a partly overlapping store.
pub(crate) struct Pad {
    base: usize,
    words: [u128; 3],
}

impl Pad {
    #[inline]
    pub fn new(data: &[u8]) -> Pad {
        let word = |b: &[u8]| u128::from_ne_bytes(b.try_into().expect("16 bytes"));
        match data.last_chunk::<32>() {
            Some(tail) => Pad {
                base: data.len() - 32,
                words: [word(&tail[..16]), word(&tail[16..]), 0],
            },
            None => {
                let mut bytes = [0u8; 48];
                bytes[..data.len()].copy_from_slice(data);
                Pad {
                    base: 0,
                    words: [word(&bytes[..16]), word(&bytes[16..32]), 0],
                }
            }
        }
    }

    /// Pointer to 16 readable bytes equal to `data[p..p + 16]` where those exist (zeros past
    /// the end). `None` if `p > data.len()`.
    #[inline(always)]
    pub fn at(&self, data: &[u8], p: usize) -> Option<*const u8> {
        if p + 16 <= data.len() {
            Some(data.as_ptr().wrapping_add(p))
        } else if p <= data.len() {
            // base = len - 32 < p when len >= 32, else base = 0: p - base <= 32, and the words
            // are 48 bytes.
            Some((self.words.as_ptr() as *const u8).wrapping_add(p - self.base))
        } else {
            None
        }
    }
}

/// Whether `lower_bound(key)` should walk forward: the key's position interpolated between
/// `start` (before value 0) and `last` (value `n - 1`) is in the first half.
#[inline]
pub(crate) fn forward_for_key(start: u32, last: u32, key: u32) -> bool {
    // position ~ (key - start) / (last - start) * n < n / 2
    2 * (key.wrapping_sub(start) as u64) < last.wrapping_sub(start) as u64
}
