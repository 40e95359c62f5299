//! Block-by-block reads of an integer-key database, for front ends that build columns in bulk
//! (the DataFusion table provider): [`crate::ReadTxn::scan_leaves`] visits the leaves that
//! overlap a list of key intervals, and each [`Leaf`] shows its keys as [`Block`]s, each with
//! a zone map entry, decodes one block's keys at a time into a [`KeyBuffer`] that stays in L1
//! (the patched-FOR paper's vector-at-a-time decompression, section 4), and reads the record
//! of a slot.
//!
//! ```text
//! leaf   [block 0: first..=last, slots 0..n0][block 1: slots n0..n1] ...
//!        plain keys: blocks of 256 slots; compressed keys: the codec's blocks
//! ```
//!
//! Plain and compressed keys and records look the same here; the query executor reads leaves
//! through the same window.

#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::btree::records::Rec;
use crate::btree::scan::LeafScan;
use crate::btree::zone;
pub use crate::btree::zone::BlockKeys;
use crate::error::Result;
use std::ops::{Deref, Range};

/// What [`crate::ReadTxn::scan_leaves`] calls for each leaf: the leaf and the intervals that
/// overlap it; returns false to stop the walk.
pub type LeafVisitor<'a> = dyn FnMut(&Leaf<'_, '_>, &[(u64, u64)]) -> Result<bool> + 'a;

/// One leaf of a [`crate::ReadTxn::scan_leaves`] walk.
#[derive(Debug)]
pub struct Leaf<'s, 'p>(pub(crate) &'s LeafScan<'p>);

impl<'p> Leaf<'_, 'p> {
    /// Keys in the leaf.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the leaf holds no key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The leaf's page (for tools and tests that look at the file).
    pub fn page_id(&self) -> u64 {
        self.0.page_id()
    }

    /// Lists into `out` (replacing its contents), in key order, the leaf's blocks that may hold
    /// keys in `[lo, hi]`: the others are skipped by their zone map entry, undecoded.
    pub fn blocks(&self, out: &mut Blocks, lo: u64, hi: u64) -> Result<()> {
        self.0.blocks_in(&mut out.0, lo, hi)
    }

    /// Decodes the keys of `block` (one of this leaf's) into `buf`.
    pub fn keys<'b>(&self, block: &Block, buf: &'b mut KeyBuffer) -> Result<BlockKeys<'b>> {
        self.0.decode_keys(&block.0, &mut buf.0)
    }

    /// The record of the leaf's slot `slot` (compressed records decoded; read in slot order,
    /// each costs O(1)). An error for a slot past the end.
    pub fn record(&self, slot: usize) -> Result<Record<'p>> {
        self.0.record(slot).map(Record)
    }
}

/// A leaf's blocks, as [`Leaf::blocks`] lists them: a buffer to reuse from leaf to leaf.
#[derive(Clone, Debug, Default)]
pub struct Blocks(Vec<zone::ScanBlock>);

impl Blocks {
    /// The blocks, in key order.
    pub fn iter(&self) -> impl Iterator<Item = Block> + '_ {
        self.0.iter().map(|b| Block(*b))
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no block.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One block of a leaf: its zone map entry and where its keys sit among the leaf's slots.
#[derive(Clone, Copy, Debug)]
pub struct Block(zone::ScanBlock);

impl Block {
    /// The block's smallest key.
    pub fn first(&self) -> u64 {
        self.0.first
    }

    /// The block's largest key.
    pub fn last(&self) -> u64 {
        self.0.last
    }

    /// Keys in the block (at least 1).
    pub fn len(&self) -> usize {
        self.0.count
    }

    /// Always false: a listed block holds keys (for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.0.count == 0
    }

    /// The block's slots within the leaf: key `i` of [`Leaf::keys`] is slot `slots().start + i`.
    pub fn slots(&self) -> Range<usize> {
        self.0.slots()
    }
}

/// A decode buffer for one block's keys (a few KiB, on the heap): reuse it.
#[derive(Clone, Debug, Default)]
pub struct KeyBuffer(Box<zone::KeyBuffer>);

/// A record as read from a leaf: the page's bytes, or the bytes of a decoded compressed record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'p>(Rec<'p>);

impl Deref for Record<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}
