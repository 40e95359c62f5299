//! RecordLists: how a node stores its records inside the RecordList region.
//!
//! ```text
//! None       nothing (key-only databases)
//! Fixed(n)   [record 0: n bytes][record 1] ...      also the child ids of branches (n = 8)
//! Var        slots::var layout; each item is [tag u8][payload]:
//!              tag 0: the value itself follows (inline, up to Limits::max_inline_record)
//!              tag 1: [first overflow page u64][value length u64]   (see overflow.rs)
//! Packed     compressed numeric records in chunks (see numrecs.rs)
//! ```
//!
//! Callers read a record as a [`Rec`] (borrowed from the page, or decoded from a compressed
//! chunk) and size a change by asking the list (`plan`, `cost_of`):
//! only the plain lists have a fixed cost per record (`cost_is_exact`).

use super::numrecs::NumRecs;
pub use super::numrecs::RecHint;
pub use super::numrecs::RECORD_LAYOUTS;
use super::slots::{fixed, le_word, le_words, var, Fault, SResult};
use super::zone::{RecFold, RecNum, RecZone};

/// Records folded per run of a plain list (a stack buffer of words).
const FOLD_RUN: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordList {
    None,
    Fixed(usize),
    Var,
    Packed(NumRecs),
}

/// Bytes of a variable-size record that refers to an overflow chain (tag + first page +
/// length; `overflow` writes and reads the chains).
pub const REF_LEN: usize = 17;

/// Records measured as a list of their own (`RecordList::image`): their bytes, and for a
/// compressed list the encoded region and the record count.
#[derive(Debug)]
pub struct RecImage {
    pub bytes: usize,
    encoded: Option<(Vec<u8>, usize)>,
}

/// A change to a record list, planned when its size was asked for ([`RecordList::plan`]) and
/// made after the node made room ([`RecordList::apply`]): the plain lists insert or replace
/// then, a compressed one applies the chunk edit it planned.
#[derive(Debug)]
pub enum RecEdit {
    Insert,
    Replace,
    Chunk(super::numrecs::Edit),
}

/// What a planned record change does at its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecChange {
    /// A new record goes in before the slot.
    Insert,
    /// The slot's record is replaced.
    Replace,
}

/// One stored record as read from a node: the page's bytes, or a decoded word of a compressed
/// list (`len` bytes of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rec<'p> {
    Page(&'p [u8]),
    Word([u8; 8], u8),
}

impl<'p> Rec<'p> {
    /// The bytes on the page, `None` for a decoded record.
    pub fn page(&self) -> Option<&'p [u8]> {
        match *self {
            Rec::Page(b) => Some(b),
            Rec::Word(..) => None,
        }
    }
}

impl std::ops::Deref for Rec<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Rec::Page(b) => b,
            // A decoded word holds at most its 8 bytes.
            Rec::Word(w, n) => w.get(..usize::from(*n)).unwrap_or(w),
        }
    }
}

impl RecordList {
    #[inline]
    pub fn used(&self, region: &[u8], n: usize) -> SResult<usize> {
        match *self {
            RecordList::None => Ok(0),
            RecordList::Fixed(w) => fixed::used(region, w, n),
            RecordList::Var => var::used(region, n),
            RecordList::Packed(p) => p.used(region, n),
        }
    }

    /// Whether every record costs `cost(len)` bytes; a compressed list's cost depends on the
    /// chunk a record lands in, so its node is split only when a change finds no room.
    pub fn cost_is_exact(&self) -> bool {
        !matches!(self, RecordList::Packed(_))
    }

    /// Bytes one more stored record of `len` bytes takes (a nominal share for compressed lists:
    /// ask `plan`).
    #[inline]
    pub fn cost(&self, len: usize) -> usize {
        match *self {
            RecordList::None => 0,
            RecordList::Fixed(w) => w,
            RecordList::Var => 2 + len,
            RecordList::Packed(_) => 2,
        }
    }

    /// Bytes the list uses after `change` puts `raw` at slot `i`, and the edit planned for
    /// [`RecordList::apply`].
    pub fn plan(
        &self,
        region: &[u8],
        n: usize,
        i: usize,
        raw: &[u8],
        change: RecChange,
    ) -> SResult<(usize, RecEdit)> {
        if let RecordList::Packed(p) = *self {
            let (after, e) = p.plan_edit(region, n, i, raw, change == RecChange::Replace)?;
            return Ok((after, RecEdit::Chunk(e)));
        }
        let used = self.used(region, n)?;
        Ok(match change {
            RecChange::Insert => (used + self.cost(raw.len()), RecEdit::Insert),
            RecChange::Replace => {
                let old = self.get(region, n, i)?.len();
                (
                    used - self.cost(old) + self.cost(raw.len()),
                    RecEdit::Replace,
                )
            }
        })
    }

    /// Makes the change planned by [`RecordList::plan`] on these records (the region may have
    /// moved since, not changed); the caller made room.
    pub fn apply(
        &self,
        region: &mut [u8],
        n: usize,
        i: usize,
        raw: &[u8],
        plan: &RecEdit,
    ) -> SResult<()> {
        match (self, plan) {
            (RecordList::Packed(p), RecEdit::Chunk(e)) => p.apply(region, n, e),
            (_, RecEdit::Insert) => self.insert(region, n, i, raw),
            (_, RecEdit::Replace) => self.replace(region, n, i, raw),
            (_, RecEdit::Chunk(_)) => Err(Fault("a chunk edit planned for another record list")),
        }
    }

    /// Bytes the records `recs` take as a list of their own.
    pub fn cost_of<'r>(&self, recs: impl Iterator<Item = &'r [u8]>) -> SResult<usize> {
        match *self {
            RecordList::Packed(p) => {
                let mut img = Vec::new();
                p.encode_all(&p.words(recs)?, &mut img);
                Ok(img.len())
            }
            _ => Ok(recs.map(|r| self.cost(r.len())).sum()),
        }
    }

    /// The records `recs` as a list of their own, measured: a compressed list is encoded once
    /// here and copied by [`RecordList::fill_image`].
    pub fn image<'r>(&self, recs: impl Iterator<Item = &'r [u8]>) -> SResult<RecImage> {
        match *self {
            RecordList::Packed(p) => {
                let words = p.words(recs)?;
                let mut img = Vec::new();
                p.encode_all(&words, &mut img);
                Ok(RecImage {
                    bytes: img.len(),
                    encoded: Some((img, words.len())),
                })
            }
            _ => Ok(RecImage {
                bytes: self.cost_of(recs)?,
                encoded: None,
            }),
        }
    }

    /// Writes the records measured by `image` (the same `recs`) into an empty region; returns
    /// how many.
    pub fn fill_image<'r>(
        &self,
        region: &mut [u8],
        recs: impl Iterator<Item = &'r [u8]>,
        img: &RecImage,
    ) -> SResult<usize> {
        match &img.encoded {
            Some((bytes, n)) => {
                region
                    .get_mut(..bytes.len())
                    .ok_or(Fault("record region too small for its records"))?
                    .copy_from_slice(bytes);
                Ok(*n)
            }
            None => self.fill(region, recs),
        }
    }

    /// Writes `recs` as the whole list into an empty region; returns how many.
    pub fn fill<'r>(
        &self,
        region: &mut [u8],
        recs: impl Iterator<Item = &'r [u8]>,
    ) -> SResult<usize> {
        match *self {
            RecordList::Packed(p) => {
                let words = p.words(recs)?;
                let mut img = Vec::new();
                p.encode_all(&words, &mut img);
                region
                    .get_mut(..img.len())
                    .ok_or(Fault("record region too small for its records"))?
                    .copy_from_slice(&img);
                Ok(words.len())
            }
            _ => {
                let mut n = 0;
                for r in recs {
                    self.insert(region, n, n, r)?;
                    n += 1;
                }
                Ok(n)
            }
        }
    }

    /// Record `i` (empty for `None`).
    #[inline]
    pub fn get<'r>(&self, region: &'r [u8], n: usize, i: usize) -> SResult<Rec<'r>> {
        if i >= n {
            return Err(Fault("record index out of range"));
        }
        match *self {
            RecordList::None => Ok(Rec::Page(&[])),
            RecordList::Fixed(w) => fixed::get(region, w, i).map(Rec::Page),
            RecordList::Var => var::get(region, n, i).map(Rec::Page),
            RecordList::Packed(p) => Ok(Rec::Word(p.get(region, n, i)?, p.width)),
        }
    }

    /// Record `i` as a little-endian u64 (a branch's child ids, `Fixed(8)`: read in place, a
    /// lookup's descent takes one per level).
    #[inline]
    pub fn u64_at(&self, region: &[u8], n: usize, i: usize) -> SResult<u64> {
        match *self {
            RecordList::Fixed(8) if i < n => fixed::get(region, 8, i).map(super::slots::le_u64),
            _ => Ok(super::slots::le_u64(&self.get(region, n, i)?)),
        }
    }

    /// `get` for reads in order (scans, cursors): `hint` remembers where the last read of this
    /// region was, so a compressed list walks at most one chunk header per read.
    #[inline]
    pub fn get_hinted<'r>(
        &self,
        region: &'r [u8],
        n: usize,
        i: usize,
        hint: &RecHint,
    ) -> SResult<Rec<'r>> {
        match *self {
            RecordList::Packed(p) if i < n => {
                Ok(Rec::Word(p.get_hinted(region, n, i, hint)?, p.width))
            }
            _ => self.get(region, n, i),
        }
    }

    /// Inserts `raw` at `i`; the caller made room (`plan`).
    pub fn insert(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<()> {
        match *self {
            RecordList::None => Ok(()),
            RecordList::Fixed(w) => fixed::insert(region, w, n, i, raw),
            RecordList::Var => var::insert(region, n, i, raw),
            RecordList::Packed(p) => p.write(region, n, i, raw, false),
        }
    }

    /// Replaces record `i` by `raw`; the caller made room (`plan`).
    pub fn replace(&self, region: &mut [u8], n: usize, i: usize, raw: &[u8]) -> SResult<()> {
        match *self {
            RecordList::Packed(p) => p.write(region, n, i, raw, true),
            _ => {
                self.remove(region, n, i)?;
                self.insert(region, n - 1, i, raw)
            }
        }
    }

    /// Adds the list's compressed record chunks to `out`, one count per layout (RAW, FOR,
    /// DICT, DEC, PDICT: [`RECORD_LAYOUTS`]); nothing for plain lists.
    pub fn chunk_layouts(&self, region: &[u8], n: usize, out: &mut [u64; 5]) -> SResult<()> {
        match *self {
            RecordList::Packed(p) => p.chunk_layouts(region, n, out),
            _ => Ok(()),
        }
    }

    /// Removes record `i`; never needs more bytes.
    pub fn remove(&self, region: &mut [u8], n: usize, i: usize) -> SResult<()> {
        match *self {
            RecordList::None => Ok(()),
            RecordList::Fixed(w) => fixed::remove(region, w, n, i),
            RecordList::Var => var::remove(region, n, i),
            RecordList::Packed(p) => p.remove(region, n, i),
        }
    }

    /// Folds records `range` (slots of a node holding `n`) into `acc`, read as `rn`: a run of
    /// fixed-width records is read straight from the page, a compressed list decodes each chunk
    /// once into a buffer that stays in L1; records of another width than `rn` are a fault.
    pub fn fold(
        &self,
        region: &[u8],
        n: usize,
        range: std::ops::Range<usize>,
        rn: RecNum,
        acc: &mut RecFold,
        hint: &RecHint,
    ) -> SResult<()> {
        if range.start > range.end || range.end > n {
            return Err(Fault("record range out of range"));
        }
        if range.is_empty() {
            return Ok(());
        }
        match *self {
            RecordList::Packed(p) => {
                if usize::from(p.width) != rn.width {
                    return Err(Fault("record of the wrong size"));
                }
                p.fold(region, n, range, rn, acc, hint)
            }
            RecordList::Fixed(w) => {
                if w != rn.width || !(1..=8).contains(&w) {
                    return Err(Fault("record of the wrong size"));
                }
                let bytes = region
                    .get(range.start * w..range.end * w)
                    .ok_or(Fault("fixed-width item outside its region"))?;
                let mut words = [0u64; FOLD_RUN];
                for run in bytes.chunks(FOLD_RUN * w) {
                    let k = run.len() / w;
                    le_words(run, w, &mut words);
                    acc.add_words(rn, words.get(..k).unwrap_or_default());
                }
                Ok(())
            }
            _ => {
                let mut words = [0u64; FOLD_RUN];
                for start in range.clone().step_by(FOLD_RUN) {
                    let end = (start + FOLD_RUN).min(range.end);
                    for (dst, i) in words.iter_mut().zip(start..end) {
                        let r = self.get(region, n, i)?;
                        if r.len() != rn.width || r.len() > 8 {
                            return Err(Fault("record of the wrong size"));
                        }
                        *dst = le_word(&r);
                    }
                    acc.add_words(rn, words.get(..end - start).unwrap_or_default());
                }
                Ok(())
            }
        }
    }

    /// The zone map of the records, replacing `out`: one entry per compressed chunk, its
    /// slots and its values' bounds read from its header (`None` for a chunk that cannot
    /// bound them cheaply). `false`, `out` empty, for the plain lists: they keep no bounds,
    /// and computing them would read every record, the work a zone map is there to save.
    pub fn zones(&self, region: &[u8], n: usize, out: &mut Vec<RecZone>) -> SResult<bool> {
        out.clear();
        match *self {
            RecordList::Packed(p) => p.zones(region, n, out).map(|()| true),
            _ => Ok(false),
        }
    }

    /// Checks every record can be read (`check`): a compressed list decodes all its chunks,
    /// which must end where its length says.
    pub fn validate(&self, region: &[u8], n: usize) -> SResult<()> {
        match *self {
            RecordList::Packed(p) => {
                // Bounded by the page: every record takes at least one bit of it.
                let mut out = Vec::with_capacity(n.min(region.len() * 8));
                p.decode_all(region, n, &mut out)
            }
            _ => Ok(()),
        }
    }

    /// Makes the list smaller when its kind can (compressed chunks repacked full); returns the
    /// bytes freed.
    pub fn vacuumize(&self, region: &mut [u8], n: usize) -> SResult<usize> {
        match *self {
            RecordList::Packed(p) => p.vacuumize(region, n),
            _ => Ok(0),
        }
    }

    /// Length of the stored record for a value of `value_len` bytes: the width of fixed-size
    /// and compressed records, nothing for a key-only list, and for variable-size records the
    /// tag byte and the value inline up to `max_inline`, else the reference to an overflow
    /// chain.
    pub fn stored_len(&self, value_len: usize, max_inline: usize) -> usize {
        match *self {
            RecordList::None => 0,
            RecordList::Fixed(n) => n,
            RecordList::Packed(p) => usize::from(p.width),
            RecordList::Var if value_len <= max_inline => 1 + value_len,
            RecordList::Var => REF_LEN,
        }
    }

    /// Whether the list stores record bytes at all (a key-only leaf's records are empty).
    pub fn holds_values(&self) -> bool {
        !matches!(self, RecordList::None)
    }

    /// Whether a record may live in an overflow chain: variable-size records are stored as a
    /// tag byte and the value, or a reference to the chain (`overflow`).
    pub fn may_overflow(&self) -> bool {
        matches!(self, RecordList::Var)
    }

    /// `value` as the list stores it inline, into `out` (a variable-size record carries its tag
    /// byte first; a key-only list stores nothing).
    pub fn inline_form(&self, value: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self {
            RecordList::None => {}
            RecordList::Var => {
                out.push(0);
                out.extend_from_slice(value);
            }
            _ => out.extend_from_slice(value),
        }
    }

    /// Overwrites record `i` by `raw` when the list can without moving bytes: fixed-size
    /// records in place, a key-only list has nothing to write. False, changing nothing, when
    /// the change must be planned (`plan`) instead.
    pub fn overwrite_in_place(&self, region: &mut [u8], i: usize, raw: &[u8]) -> SResult<bool> {
        match *self {
            RecordList::None => Ok(true),
            RecordList::Fixed(w) => fixed::set(region, w, i, raw).map(|()| true),
            RecordList::Var | RecordList::Packed(_) => Ok(false),
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
            RecordList::Packed(_) => 2,
        }
    }
}
