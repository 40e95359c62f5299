//! Roaring bitmaps as a [`Store`]: the in-memory integer set a user might pick instead of a
//! store (`RoaringBitmap` for u32 keys, `RoaringTreemap` for u64). No transactions: batches are
//! plain inserts. "On disk" is its portable serialization after `optimize` (run containers),
//! written at close and read back on reopen. COUNT over a range is `range_cardinality`
//! (container counts); SUM walks the range's values.

use crate::{Result, Store, Width};
use roaring::{RoaringBitmap, RoaringTreemap};
use std::path::{Path, PathBuf};

enum Set {
    B32(RoaringBitmap),
    B64(RoaringTreemap),
}

pub struct Roaring {
    path: PathBuf,
    width: Width,
    set: Set,
}

fn e(x: impl std::fmt::Display) -> String {
    format!("roaring: {x}")
}

impl Roaring {
    pub fn create(dir: &Path, width: Width) -> Result<Roaring> {
        Ok(Roaring {
            path: dir.join("bench.roaring"),
            width,
            set: match width {
                Width::U32 => Set::B32(RoaringBitmap::new()),
                Width::U64 => Set::B64(RoaringTreemap::new()),
            },
        })
    }
}

impl Store for Roaring {
    fn durability(&self) -> String {
        "in memory; serialized to a file at close".into()
    }

    fn load_ascending(&mut self, keys: &[u64]) -> Result<()> {
        self.set = match self.set {
            Set::B32(_) => Set::B32(
                RoaringBitmap::from_sorted_iter(keys.iter().map(|&k| k as u32)).map_err(e)?,
            ),
            Set::B64(_) => {
                Set::B64(RoaringTreemap::from_sorted_iter(keys.iter().copied()).map_err(e)?)
            }
        };
        Ok(())
    }

    fn load_batches(&mut self, keys: &[u64], _batch: usize) -> Result<()> {
        match &mut self.set {
            Set::B32(b) => keys.iter().for_each(|&k| {
                b.insert(k as u32);
            }),
            Set::B64(b) => keys.iter().for_each(|&k| {
                b.insert(k);
            }),
        }
        Ok(())
    }

    fn close(&mut self) -> Result<u64> {
        let f = std::fs::File::create(&self.path).map_err(e)?;
        let mut w = std::io::BufWriter::new(f);
        match &mut self.set {
            Set::B32(b) => {
                b.optimize();
                b.serialize_into(&mut w).map_err(e)?;
            }
            Set::B64(b) => {
                b.optimize();
                b.serialize_into(&mut w).map_err(e)?;
            }
        }
        let f = w.into_inner().map_err(e)?;
        f.sync_all().map_err(e)?;
        drop(f);
        self.set = Set::B32(RoaringBitmap::new());
        std::fs::metadata(&self.path).map(|m| m.len()).map_err(e)
    }

    fn reopen(&mut self) -> Result<()> {
        let r = std::io::BufReader::new(std::fs::File::open(&self.path).map_err(e)?);
        self.set = match self.width {
            Width::U32 => Set::B32(RoaringBitmap::deserialize_from(r).map_err(e)?),
            Width::U64 => Set::B64(RoaringTreemap::deserialize_from(r).map_err(e)?),
        };
        Ok(())
    }

    fn count_present(&mut self, keys: &[u64]) -> Result<u64> {
        Ok(match &self.set {
            Set::B32(b) => keys.iter().filter(|&&k| b.contains(k as u32)).count(),
            Set::B64(b) => keys.iter().filter(|&&k| b.contains(k)).count(),
        } as u64)
    }

    fn scan(&mut self) -> Result<(u64, u128)> {
        let (mut c, mut s) = (0u64, 0u128);
        match &self.set {
            Set::B32(b) => b.iter().for_each(|k| {
                s += k as u128;
                c += 1;
            }),
            Set::B64(b) => b.iter().for_each(|k| {
                s += k as u128;
                c += 1;
            }),
        }
        Ok((c, s))
    }

    fn ranges(&mut self, ranges: &[(u64, u64)], sum: bool) -> Result<Vec<(u64, u128)>> {
        Ok(ranges
            .iter()
            .map(|&(lo, hi)| match &self.set {
                Set::B32(b) => {
                    let r = lo as u32..=hi as u32;
                    if sum {
                        let (c, s) = b
                            .range(r)
                            .fold((0u64, 0u128), |(c, s), k| (c + 1, s + k as u128));
                        (c, s)
                    } else {
                        (b.range_cardinality(r), 0)
                    }
                }
                Set::B64(b) => {
                    if !sum {
                        return (b.range_cardinality(lo..=hi), 0);
                    }
                    // Per 2^32 slice, the u32 bitmap's range.
                    let (mut c, mut s) = (0u64, 0u128);
                    for (high, bm) in b.bitmaps() {
                        let base = (high as u64) << 32;
                        if base > hi || base + (u32::MAX as u64) < lo {
                            continue;
                        }
                        let a = lo.saturating_sub(base).min(u32::MAX as u64) as u32;
                        let z = (hi - base).min(u32::MAX as u64) as u32;
                        for k in bm.range(a..=z) {
                            s += (base + k as u64) as u128;
                            c += 1;
                        }
                    }
                    (c, s)
                }
            })
            .collect())
    }
}
