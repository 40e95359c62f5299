//! The two meta pages (pages 0 and 1): which commit is current, where its trees and its free
//! list start, and how big the file is.
//!
//! ```text
//! offset size field
//!      0    8 checksum        XXH3-64(page[8..], seed = 0 or 1), like every page
//!      8    1 kind            1 (PageKind::Meta)
//!      9    7 magic           "TERSEDB" (so bytes 8..16 of the file are 01 54 45 52 53 45 44 42)
//!     16    4 format version  FORMAT_VERSION
//!     20    4 page size       bytes; a power of two in 512..=65536
//!     24    8 txn id          commit counter; the valid meta with the higher id is current
//!     32    8 root            page id of the catalog root owned by the layer above (0 = none)
//!     40    8 free-list head  first page of the free-page list (0 = empty list)
//!     48    8 page count      pages in use by this commit, including the meta pages (file end)
//!     56    8 free pages      number of ids stored in the free list
//!     64    8 free-list pages number of pages in the free-list chain
//!     72    - zero            (ignored on read)
//! ```
//!
//! Commit `t` writes its meta into slot `t % 2`, so the meta of the previous commit stays intact
//! until this one is durable. Open reads both slots and keeps the valid one with the higher
//! txn id.

use super::{checksum, PageKind, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use crate::error::{Error, PageId, Result};

/// The magic after the kind byte of a meta page.
pub const MAGIC: [u8; 7] = *b"TERSEDB";
/// The file format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of a meta page that carry fields (the rest is zero).
pub const META_LEN: usize = 72;

/// The decoded content of a meta page.
///
/// Invariants of a meta that passed [`Meta::decode`]: `page_count >= 2`, every page id field is
/// `0` or in `2..page_count`, and `page_count * page_size` fits in a u64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub page_size: u32,
    pub txn_id: u64,
    pub root: PageId,
    pub freelist_head: PageId,
    pub page_count: u64,
    pub free_pages: u64,
    pub freelist_pages: u64,
}

/// Why a meta slot could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaFault {
    /// No magic: this is not (the start of) a tersedb file.
    NoMagic,
    /// Magic and checksum are fine but the version is not ours.
    Version(u32),
    /// Magic present, but the page-size field names another page size than the one tried
    /// (the slot is read with the wrong size, or the field is damaged).
    OtherSize,
    /// Magic present, but the page is damaged or inconsistent.
    Damaged(String),
}

/// Whether `size` is a supported page size.
pub fn valid_page_size(size: usize) -> bool {
    size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Meta {
    /// A fresh, empty database of `page_size` (meta pages only).
    pub fn empty(page_size: usize) -> Meta {
        Meta {
            page_size: page_size as u32,
            txn_id: 0,
            root: 0,
            freelist_head: 0,
            page_count: 2,
            free_pages: 0,
            freelist_pages: 0,
        }
    }

    /// The meta slot (page id) commit `txn_id` writes to.
    pub fn slot(&self) -> PageId {
        self.txn_id % 2
    }

    /// Writes this meta as a complete, checksummed page for slot `slot`.
    pub fn encode(&self, slot: PageId, page: &mut [u8]) {
        debug_assert_eq!(page.len(), self.page_size as usize);
        page.fill(0);
        page[8] = PageKind::Meta as u8;
        page[9..16].copy_from_slice(&MAGIC);
        page[16..20].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        page[20..24].copy_from_slice(&self.page_size.to_le_bytes());
        page[24..32].copy_from_slice(&self.txn_id.to_le_bytes());
        page[32..40].copy_from_slice(&self.root.to_le_bytes());
        page[40..48].copy_from_slice(&self.freelist_head.to_le_bytes());
        page[48..56].copy_from_slice(&self.page_count.to_le_bytes());
        page[56..64].copy_from_slice(&self.free_pages.to_le_bytes());
        page[64..72].copy_from_slice(&self.freelist_pages.to_le_bytes());
        checksum::stamp(slot, page);
    }

    /// Decodes the meta page in `slot` (0 or 1), read with the candidate page size
    /// `page.len()`. `file_len` is the storage length, used to reject metas whose pages are
    /// not in the file.
    pub fn decode(slot: PageId, page: &[u8], file_len: u64) -> Result<Meta, MetaFault> {
        if page.len() < META_LEN || page[9..16] != MAGIC {
            return Err(MetaFault::NoMagic);
        }
        let damaged = |what: &str| Err(MetaFault::Damaged(what.to_string()));
        let page_size = u32_at(page, 20);
        if page_size as usize != page.len() {
            return Err(MetaFault::OtherSize);
        }
        if !checksum::verify(slot, page) {
            return damaged("checksum mismatch");
        }
        if page[8] != PageKind::Meta as u8 {
            return damaged("wrong page kind");
        }
        let version = u32_at(page, 16);
        if version != FORMAT_VERSION {
            return Err(MetaFault::Version(version));
        }
        let meta = Meta {
            page_size,
            txn_id: u64_at(page, 24),
            root: u64_at(page, 32),
            freelist_head: u64_at(page, 40),
            page_count: u64_at(page, 48),
            free_pages: u64_at(page, 56),
            freelist_pages: u64_at(page, 64),
        };
        if meta.page_count < 2 || meta.page_count > u64::MAX / page_size as u64 {
            return damaged("page count out of range");
        }
        for (id, name) in [(meta.root, "root"), (meta.freelist_head, "free-list head")] {
            if id == 1 || id >= meta.page_count {
                return Err(MetaFault::Damaged(format!("{name} page {id} out of range")));
            }
        }
        if meta.free_pages + meta.freelist_pages > meta.page_count - 2 {
            return damaged("free page counts exceed the page count");
        }
        if (meta.freelist_head == 0) != (meta.freelist_pages == 0) {
            return damaged("free-list head and free-list page count disagree");
        }
        if meta.page_count * page_size as u64 > file_len {
            return damaged("the file is shorter than the page count says");
        }
        Ok(meta)
    }
}

/// Picks the current meta from the first bytes of a file (`head` holds at least the first
/// `min(file_len, 2 * MAX_PAGE_SIZE)` bytes). Tries every supported page size for both slots.
pub fn choose(head: &[u8], file_len: u64) -> Result<Meta> {
    if file_len == 0 {
        return Err(Error::BadFormat("the file is empty".into()));
    }
    let mut best: Option<Meta> = None;
    let mut version = None;
    let mut damaged: Option<(PageId, String)> = None;
    let mut magic_seen = false;
    let mut size = MIN_PAGE_SIZE;
    while size <= MAX_PAGE_SIZE {
        for slot in 0..2u64 {
            let start = slot as usize * size;
            let Some(page) = head.get(start..start + size) else {
                continue;
            };
            match Meta::decode(slot, page, file_len) {
                Ok(m) => {
                    if best.is_none_or(|b| m.txn_id > b.txn_id) {
                        best = Some(m);
                    }
                }
                Err(MetaFault::Version(v)) => version = Some(v),
                Err(MetaFault::Damaged(what)) => {
                    if damaged.is_none() {
                        damaged = Some((slot, what));
                    }
                }
                Err(MetaFault::OtherSize) => magic_seen = true,
                Err(MetaFault::NoMagic) => {}
            }
        }
        size *= 2;
    }
    if let Some(m) = best {
        return Ok(m);
    }
    if let Some(v) = version {
        return Err(Error::BadFormat(format!(
            "format version {v} is not supported (this build reads version {FORMAT_VERSION})"
        )));
    }
    match damaged {
        Some((page, what)) => Err(Error::Corrupted {
            page,
            what: format!("no valid meta page: {what}"),
        }),
        None if magic_seen => Err(Error::Corrupted {
            page: 0,
            what: "no valid meta page: the page-size fields are damaged".into(),
        }),
        None => Err(Error::BadFormat(
            "not a tersedb file (no magic in either meta page)".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(metas: &[(PageId, Meta)], page_size: usize) -> Vec<u8> {
        let mut f = vec![0u8; page_size * 4];
        for (slot, m) in metas {
            let s = *slot as usize * page_size;
            m.encode(*slot, &mut f[s..s + page_size]);
        }
        f
    }

    #[test]
    fn picks_highest_valid_txn() {
        let ps = 1024;
        let mut a = Meta::empty(ps);
        a.page_count = 4;
        let mut b = a;
        b.txn_id = 1;
        b.root = 3;
        let f = file_with(&[(0, a), (1, b)], ps);
        assert_eq!(choose(&f, f.len() as u64).unwrap(), b);
        // Damage slot 1: slot 0 wins.
        let mut g = f.clone();
        g[ps + 40] ^= 1;
        assert_eq!(choose(&g, g.len() as u64).unwrap(), a);
        // Both damaged: Corrupted.
        g[30] ^= 1;
        assert!(matches!(
            choose(&g, g.len() as u64),
            Err(Error::Corrupted { .. })
        ));
    }

    #[test]
    fn not_a_tersedb_file_and_wrong_version() {
        let f = vec![7u8; 9000];
        assert!(matches!(choose(&f, 9000), Err(Error::BadFormat(_))));
        assert!(matches!(choose(&[], 0), Err(Error::BadFormat(_))));
        let ps = 512;
        let m = Meta::empty(ps);
        let mut f = file_with(&[(0, m), (1, m)], ps);
        for slot in 0..2 {
            let s = slot * ps;
            f[s + 16] = 9;
            checksum::stamp(slot as u64, &mut f[s..s + ps]);
        }
        match choose(&f, f.len() as u64) {
            Err(Error::BadFormat(msg)) => assert!(msg.contains("version 9"), "{msg}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_out_of_range_fields() {
        let ps = 512;
        let mut m = Meta::empty(ps);
        m.page_count = 3;
        m.root = 3;
        let f = file_with(&[(0, m)], ps);
        assert!(matches!(
            Meta::decode(0, &f[..ps], f.len() as u64),
            Err(MetaFault::Damaged(_))
        ));
        m.root = 2;
        m.page_count = 100; // more pages than the file holds
        let f = file_with(&[(0, m)], ps);
        assert!(matches!(
            Meta::decode(0, &f[..ps], f.len() as u64),
            Err(MetaFault::Damaged(_))
        ));
    }
}
