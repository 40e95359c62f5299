//! The two meta pages (pages 0 and 1) and page checksums.
//!
//! ```text
//! meta page (little-endian):
//!   0..8    checksum   XXH3-64(page[8..], seed = page id)
//!   8       kind       1 (Meta)
//!   9..16   zero
//!   16..24  magic      b"TERSEDB\0"
//!   24..28  version    format version (1)
//!   28..32  page size  bytes, power of two in 512 ..= 65536
//!   32..40  txn id     of the commit that wrote this meta (>= 1); 0 = the empty file's meta
//!   40..48  root       page id of the catalog root (0 = no database yet)
//!   48..56  free list  page id of the first free-list page (0 = empty list)
//!   56..64  page count pages in use, i.e. the logical end of the file
//!   64..72  free count entries in the free list (informational)
//!   72..    zero
//! ```
//!
//! A commit writes meta `txn id % 2`; open takes the valid meta with the higher txn id.

use super::{PageKind, MAX_PAGE_SIZE, MIN_PAGE_SIZE, PAGE_CHECKSUM_LEN, PAGE_KIND_OFFSET};
use crate::error::{Error, PageId, Result};

/// Identifies a tersedb file.
pub const MAGIC: &[u8; 8] = b"TERSEDB\0";
/// The file format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The checksum of a page as stored in its first 8 bytes.
pub fn checksum(id: PageId, page: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&page[PAGE_CHECKSUM_LEN..], id)
}

/// Writes the page's checksum into its first 8 bytes.
pub fn seal(id: PageId, page: &mut [u8]) {
    let c = checksum(id, page);
    page[..PAGE_CHECKSUM_LEN].copy_from_slice(&c.to_le_bytes());
}

/// Checks the stored checksum.
pub fn verify(id: PageId, page: &[u8]) -> Result<()> {
    if page.len() < MIN_PAGE_SIZE {
        return Err(Error::Corrupted {
            page: id,
            what: "short page".into(),
        });
    }
    let stored = u64::from_le_bytes(page[..PAGE_CHECKSUM_LEN].try_into().expect("8 bytes"));
    if stored != checksum(id, page) {
        return Err(Error::Corrupted {
            page: id,
            what: "checksum mismatch".into(),
        });
    }
    Ok(())
}

/// The content of a meta page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub page_size: u32,
    pub txn_id: u64,
    pub root: PageId,
    pub free_list: PageId,
    pub page_count: u64,
    pub free_count: u64,
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(p[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(p: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether `n` is a supported page size.
pub fn valid_page_size(n: usize) -> bool {
    n.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&n)
}

impl Meta {
    /// Serialises into a full page (checksum included) for slot `id` (0 or 1).
    pub fn to_page(&self, id: PageId) -> Vec<u8> {
        let mut p = vec![0u8; self.page_size as usize];
        p[PAGE_KIND_OFFSET] = PageKind::Meta as u8;
        p[16..24].copy_from_slice(MAGIC);
        p[24..28].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        p[28..32].copy_from_slice(&self.page_size.to_le_bytes());
        p[32..40].copy_from_slice(&self.txn_id.to_le_bytes());
        p[40..48].copy_from_slice(&self.root.to_le_bytes());
        p[48..56].copy_from_slice(&self.free_list.to_le_bytes());
        p[56..64].copy_from_slice(&self.page_count.to_le_bytes());
        p[64..72].copy_from_slice(&self.free_count.to_le_bytes());
        seal(id, &mut p);
        p
    }

    /// Reads the header fields of a possible meta page without the checksum (which needs the
    /// page size first). `Err(BadFormat)` when it is not a tersedb meta page at all.
    pub fn peek_page_size(head: &[u8]) -> Result<usize> {
        if head.len() < 72 || &head[16..24] != MAGIC {
            return Err(Error::BadFormat(
                "no tersedb magic at the start of the file".into(),
            ));
        }
        let v = u32_at(head, 24);
        if v != FORMAT_VERSION {
            return Err(Error::BadFormat(format!(
                "file format version {v}; this build reads version {FORMAT_VERSION}"
            )));
        }
        let ps = u32_at(head, 28) as usize;
        if !valid_page_size(ps) {
            return Err(Error::BadFormat(format!("invalid page size {ps}")));
        }
        Ok(ps)
    }

    /// Parses and verifies meta page `id` (a full page).
    pub fn from_page(id: PageId, p: &[u8]) -> Result<Meta> {
        let bad = |what: &str| Error::Corrupted {
            page: id,
            what: what.into(),
        };
        verify(id, p)?;
        if p[PAGE_KIND_OFFSET] != PageKind::Meta as u8 {
            return Err(bad("not a meta page"));
        }
        let ps = Meta::peek_page_size(p)?;
        if ps != p.len() {
            return Err(bad("page size field differs from the file's"));
        }
        let m = Meta {
            page_size: ps as u32,
            txn_id: u64_at(p, 32),
            root: u64_at(p, 40),
            free_list: u64_at(p, 48),
            page_count: u64_at(p, 56),
            free_count: u64_at(p, 64),
        };
        if m.page_count > i64::MAX as u64 / ps as u64 {
            return Err(bad("page count beyond the largest file"));
        }
        if m.page_count < 2 || m.root >= m.page_count || m.free_list >= m.page_count {
            return Err(bad("page references beyond the page count"));
        }
        if (m.root != 0 && m.root < 2) || (m.free_list != 0 && m.free_list < 2) {
            return Err(bad("page reference to a meta page"));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checks() {
        let m = Meta {
            page_size: 512,
            txn_id: 7,
            root: 3,
            free_list: 4,
            page_count: 9,
            free_count: 2,
        };
        let p = m.to_page(1);
        assert_eq!(Meta::from_page(1, &p).unwrap(), m);
        assert!(
            Meta::from_page(0, &p).is_err(),
            "checksum is seeded by the page id"
        );
        for i in 8..p.len() {
            let mut q = p.clone();
            q[i] ^= 0x40;
            assert!(Meta::from_page(1, &q).is_err(), "flip at {i}");
        }
        let mut bad = m;
        bad.root = 9;
        assert!(Meta::from_page(0, &bad.to_page(0)).is_err());
        assert!(Meta::peek_page_size(&[0u8; 100]).is_err());
    }
}
