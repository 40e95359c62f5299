//! RecordLists: how a node stores its records inside the RecordList region.
//!
//! ```text
//! None       nothing (key-only databases)
//! Fixed(n)   [record 0: n bytes][record 1] ...      also the child ids of branches (n = 8)
//! Var        slots::var layout; each item is [tag u8][payload]:
//!              tag 0: the value itself follows (inline, up to Limits::max_inline_record)
//!              tag 1: [first overflow page u64][value length u64]   (see overflow.rs)
//! ```

use super::slots::{fixed, var, Fault, SResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordList {
    None,
    Fixed(usize),
    Var,
}

impl RecordList {
    #[inline]
    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        match *self {
            RecordList::None => Ok(0),
            RecordList::Fixed(w) => fixed::used(region, w, n),
            RecordList::Var => var::used(region, n),
        }
    }

    /// Bytes one more stored record of `len` bytes takes.
    #[inline]
    pub fn cost(&self, len: usize) -> usize {
        match *self {
            RecordList::None => 0,
            RecordList::Fixed(w) => w,
            RecordList::Var => 2 + len,
        }
    }

    /// The stored bytes of record `i` (empty for `None`).
    #[inline]
    pub fn raw<'r>(&self, region: &'r [u8], n: usize, i: usize) -> SResult<&'r [u8]> {
        if i >= n {
            return Err(Fault("record index out of range"));
        }
        match *self {
            RecordList::None => Ok(&[]),
            RecordList::Fixed(w) => fixed::get(region, w, i),
            RecordList::Var => var::get(region, n, i),
        }
    }

    pub fn insert(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<()> {
        match *self {
            RecordList::None => Ok(()),
            RecordList::Fixed(w) => fixed::insert(region, w, n, i, raw),
            RecordList::Var => var::insert(region, n, i, raw),
        }
    }

    pub fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        match *self {
            RecordList::None => Ok(()),
            RecordList::Fixed(w) => fixed::remove(region, w, n, i),
            RecordList::Var => var::remove(region, n, i),
        }
    }

    /// Overwrites a fixed-width record in place.
    pub fn set_fixed(&self, region: &mut [u8], i: usize, raw: &[u8]) -> SResult<()> {
        match *self {
            RecordList::Fixed(w) => fixed::set(region, w, i, raw),
            _ => Err(Fault("in-place set on a variable record list")),
        }
    }

    /// The share of a node's free space this list should get when the boundary moves, out of
    /// `(key_width_guess)`: returns (record weight, key weight) for a nominal entry.
    pub fn weight(&self) -> usize {
        match *self {
            RecordList::None => 0,
            RecordList::Fixed(w) => w,
            RecordList::Var => 18,
        }
    }
}
