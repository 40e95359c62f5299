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
//!   72..80  copy 0     page id of meta 0's copy (0 = no copies: a file from before copies)
//!   80..88  copy 1     page id of meta 1's copy
//!   88..    zero
//! ```
//!
//! A commit writes meta `txn id % 2`; open takes the valid meta with the higher txn id. Each meta
//! also has a *copy* (the same fields, page kind 6, sealed with the copy page's id) that the
//! commit writes with its data pages, before the first sync: a damaged meta page is restored
//! from its copy instead of silently falling back to the older commit (see `Pager::open` and
//! docs/FORMAT.md, "Torn writes and damaged meta pages").
//!
//! Bytes read from the file are untrusted: every access is checked (no indexing, no unwrap).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use super::{PageKind, Storage, MAX_PAGE_SIZE, MIN_PAGE_SIZE, PAGE_CHECKSUM_LEN, PAGE_KIND_OFFSET};
use crate::error::{Error, PageId, Result};

/// Identifies a tersedb file.
pub const MAGIC: &[u8; 8] = b"TERSEDB\0";
/// The file format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The checksum of a page as stored in its first 8 bytes.
/// (A page shorter than the checksum has the checksum of no bytes.)
pub fn checksum(id: PageId, page: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(page.get(PAGE_CHECKSUM_LEN..).unwrap_or_default(), id)
}

/// Writes the page's checksum into its first 8 bytes (a page shorter than that is left alone:
/// it can never verify).
pub fn seal(id: PageId, page: &mut [u8]) {
    let c = checksum(id, page);
    if let Some(head) = page.get_mut(..PAGE_CHECKSUM_LEN) {
        head.copy_from_slice(&c.to_le_bytes());
    }
}

/// Checks the stored checksum.
pub fn verify(id: PageId, page: &[u8]) -> Result<()> {
    if page.len() < MIN_PAGE_SIZE {
        return Err(Error::Corrupted {
            page: id,
            what: "short page".into(),
        });
    }
    if u64_at(page, 0) != Some(checksum(id, page)) {
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
    /// Pages holding the copies of meta 0 and meta 1 (`[0, 0]`: none).
    pub copies: [PageId; 2],
}

/// The `N` bytes at `at`, if the page has them.
pub(crate) fn bytes_at<const N: usize>(p: &[u8], at: usize) -> Option<[u8; N]> {
    p.get(at..at.checked_add(N)?)?.try_into().ok()
}

pub(crate) fn u32_at(p: &[u8], at: usize) -> Option<u32> {
    bytes_at(p, at).map(u32::from_le_bytes)
}

pub(crate) fn u64_at(p: &[u8], at: usize) -> Option<u64> {
    bytes_at(p, at).map(u64::from_le_bytes)
}

/// Writes `bytes` at `at` of a page the pager builds (always a full page, so they fit).
pub(crate) fn put(p: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = p.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// Whether `n` is a supported page size.
pub fn valid_page_size(n: usize) -> bool {
    n.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&n)
}

impl Meta {
    /// The page holding the copy of meta slot `slot` (0 or 1; 0 = none).
    pub fn copy(&self, slot: usize) -> PageId {
        match slot {
            0 => self.copies[0],
            _ => self.copies[1],
        }
    }

    /// Serialises into a full page (checksum included) for slot `id` (0 or 1).
    pub fn to_page(&self, id: PageId) -> Vec<u8> {
        self.page_of_kind(id, PageKind::Meta)
    }

    /// Serialises into the copy page `id` (kind `MetaCopy`).
    pub fn to_copy_page(&self, id: PageId) -> Vec<u8> {
        self.page_of_kind(id, PageKind::MetaCopy)
    }

    fn page_of_kind(&self, id: PageId, kind: PageKind) -> Vec<u8> {
        let mut p = vec![0u8; self.page_size as usize];
        let [c0, c1] = self.copies;
        put(&mut p, PAGE_KIND_OFFSET, &[kind as u8]);
        put(&mut p, 16, MAGIC);
        put(&mut p, 24, &FORMAT_VERSION.to_le_bytes());
        put(&mut p, 28, &self.page_size.to_le_bytes());
        put(&mut p, 32, &self.txn_id.to_le_bytes());
        put(&mut p, 40, &self.root.to_le_bytes());
        put(&mut p, 48, &self.free_list.to_le_bytes());
        put(&mut p, 56, &self.page_count.to_le_bytes());
        put(&mut p, 64, &self.free_count.to_le_bytes());
        put(&mut p, 72, &c0.to_le_bytes());
        put(&mut p, 80, &c1.to_le_bytes());
        seal(id, &mut p);
        p
    }

    /// Reads the header fields of a possible meta page without the checksum (which needs the
    /// page size first). `Err(BadFormat)` when it is not a tersedb meta page at all.
    pub fn peek_page_size(head: &[u8]) -> Result<usize> {
        let short = || Error::BadFormat("no tersedb magic at the start of the file".into());
        if head.len() < 72 || bytes_at::<8>(head, 16).as_ref() != Some(MAGIC) {
            return Err(short());
        }
        let v = u32_at(head, 24).ok_or_else(short)?;
        if v != FORMAT_VERSION {
            return Err(Error::BadFormat(format!(
                "file format version {v}; this build reads version {FORMAT_VERSION}"
            )));
        }
        let ps = u32_at(head, 28).ok_or_else(short)? as usize;
        if !valid_page_size(ps) {
            return Err(Error::BadFormat(format!("invalid page size {ps}")));
        }
        Ok(ps)
    }

    /// Parses and verifies meta page `id` (a full page).
    pub fn from_page(id: PageId, p: &[u8]) -> Result<Meta> {
        Self::from_page_of(id, p, PageKind::Meta)
    }

    /// Parses and verifies the copy page `id` (a full page of kind `MetaCopy`).
    pub fn from_copy_page(id: PageId, p: &[u8]) -> Result<Meta> {
        Self::from_page_of(id, p, PageKind::MetaCopy)
    }

    fn from_page_of(id: PageId, p: &[u8], kind: PageKind) -> Result<Meta> {
        let bad = |what: &str| Error::Corrupted {
            page: id,
            what: what.into(),
        };
        verify(id, p)?;
        if p.get(PAGE_KIND_OFFSET) != Some(&(kind as u8)) {
            return Err(bad(match kind {
                PageKind::Meta => "not a meta page",
                _ => "not a meta copy page",
            }));
        }
        let ps = Meta::peek_page_size(p)?;
        if ps != p.len() {
            return Err(bad("page size field differs from the file's"));
        }
        let field = |at| u64_at(p, at).ok_or_else(|| bad("short page"));
        let m = Meta {
            page_size: ps as u32,
            txn_id: field(32)?,
            root: field(40)?,
            free_list: field(48)?,
            page_count: field(56)?,
            free_count: field(64)?,
            copies: [field(72)?, field(80)?],
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
        let [c0, c1] = m.copies;
        if (c0, c1) != (0, 0)
            && (c0 < 2 || c1 < 2 || c0 == c1 || c0 >= m.page_count || c1 >= m.page_count)
        {
            return Err(bad("bad meta copy page ids"));
        }
        Ok(m)
    }
}

/// Whether meta `m` fits a file of `len` bytes: every page it counts must exist. (Files from
/// before meta copies may end before their page count: pages taken from the end and freed
/// unwritten were not written then.)
pub fn check_len(id: PageId, m: &Meta, len: u64) -> Result<()> {
    let pages = len / m.page_size as u64;
    if m.page_count > pages && m.copies != [0, 0] {
        return Err(Error::Corrupted {
            page: id,
            what: format!(
                "commit {} needs {} pages, the file holds {pages}",
                m.txn_id, m.page_count
            ),
        });
    }
    Ok(())
}

fn read_page(storage: &dyn Storage, id: PageId, ps: usize) -> Result<Vec<u8>> {
    let mut p = vec![0u8; ps];
    let at = id.checked_mul(ps as u64).ok_or(Error::Corrupted {
        page: id,
        what: "page id overflows".into(),
    })?;
    storage.read_at(at, &mut p).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::Corrupted {
                page: id,
                what: "page lies beyond the end of the file".into(),
            }
        } else {
            Error::Io(e)
        }
    })?;
    Ok(p)
}

/// Meta page `slot` (0 or 1) of a file of page size `ps` and length `len`.
pub fn read_slot(storage: &dyn Storage, slot: PageId, ps: usize, len: u64) -> Result<Meta> {
    let m = Meta::from_page(slot, &read_page(storage, slot, ps)?)?;
    check_len(slot, &m, len)?;
    Ok(m)
}

/// The copy in page `id`.
pub fn read_copy(storage: &dyn Storage, id: PageId, ps: usize, len: u64) -> Result<Meta> {
    let m = Meta::from_copy_page(id, &read_page(storage, id, ps)?)?;
    check_len(id, &m, len)?;
    Ok(m)
}

/// A page write that brings the meta pages back in line (done by a read-write open).
#[derive(Clone, Debug)]
pub struct Repair {
    /// The page to write.
    pub page: PageId,
    /// Its new content: a meta page (slots 0 and 1) or a copy.
    pub bytes: Vec<u8>,
}

/// What opening found in the meta pages.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// The commit to open.
    pub meta: Meta,
    /// Where it came from: the meta slot (0 or 1), or the copy page when the slot was damaged.
    pub from: PageId,
    /// Damage found and what was done about it, for `check` and `tersedb recover`.
    pub notes: Vec<String>,
    /// Writes that repair the meta pages (a read-write open applies them and syncs).
    pub repairs: Vec<Repair>,
}

/// The outcome of [`choose`] at one page size.
#[derive(Debug)]
pub enum Choice {
    /// The commit to open.
    Chosen(Chosen),
    /// A meta page is valid at this page size, but the file cannot be opened safely.
    Refused(Error),
    /// Neither meta page is valid at this page size: why, for slot 0 and slot 1.
    Invalid([Error; 2]),
}

/// Picks the commit to open from the two meta pages (and their copies) of a file whose page
/// size is `ps`: the valid meta with the higher txn id. When one meta page is damaged, its copy
/// says which commit it held: a newer commit is opened from the copy (its data pages were synced
/// before the meta page was written, so a torn meta write and a damaged meta page both open the
/// newest commit), an older one is ignored. When the copy cannot tell either, the damaged page
/// may have held the newest commit: `Corrupted` naming it, unless `recover`, which rolls back to
/// the other meta. Without `repair` (readers), the newest meta's copy is not read.
pub fn choose(storage: &dyn Storage, ps: usize, len: u64, recover: bool, repair: bool) -> Choice {
    let r = [
        read_slot(storage, 0, ps, len),
        read_slot(storage, 1, ps, len),
    ];
    let (y, m, e) = match r {
        [Ok(a), Ok(b)] => {
            let (y, m) = if b.txn_id > a.txn_id { (1, b) } else { (0, a) };
            let mut repairs = Vec::new();
            // The newest commit's copy must hold it; rewrite it if damaged or stale.
            if repair && m.copy(y) != 0 {
                let c = read_copy(storage, m.copy(y), ps, len);
                if c.ok() != Some(m) {
                    repairs.push(Repair {
                        page: m.copy(y),
                        bytes: m.to_copy_page(m.copy(y)),
                    });
                }
            }
            return Choice::Chosen(Chosen {
                meta: m,
                from: y as PageId,
                notes: Vec::new(),
                repairs,
            });
        }
        [Err(e0), Err(e1)] => return Choice::Invalid([e0, e1]),
        [Ok(m), Err(e)] => (0usize, m, e),
        [Err(e), Ok(m)] => (1usize, m, e),
    };
    let x = 1 - y;
    let cp = m.copy(x);
    let copy = (cp != 0).then(|| read_copy(storage, cp, ps, len));
    match copy {
        Some(Ok(c)) if c.txn_id.abs_diff(m.txn_id) <= 1 && c.copies == m.copies => {
            let newer = c.txn_id > m.txn_id;
            let mut repairs = vec![Repair {
                page: x as PageId,
                bytes: c.to_page(x as PageId),
            }];
            if !newer && m.copy(y) != 0 && read_copy(storage, m.copy(y), ps, len).ok() != Some(m) {
                repairs.push(Repair {
                    page: m.copy(y),
                    bytes: m.to_copy_page(m.copy(y)),
                });
            }
            let what = if newer {
                "the newest: opened from the copy".to_string()
            } else {
                format!("older than commit {} of meta page {y}", m.txn_id)
            };
            Choice::Chosen(Chosen {
                meta: if newer { c } else { m },
                from: if newer { cp } else { y as PageId },
                notes: vec![format!(
                    "meta page {x} is damaged ({e}); its copy in page {cp} holds commit {}, {what}",
                    c.txn_id
                )],
                repairs,
            })
        }
        copy => {
            let why = match copy {
                None => "the file has no meta copies (written by an older version)".to_string(),
                Some(Ok(c)) => format!("its copy in page {cp} holds commit {}", c.txn_id),
                Some(Err(ce)) => format!("its copy in page {cp} is damaged too ({ce})"),
            };
            if !recover {
                return Choice::Refused(Error::Corrupted {
                    page: x as PageId,
                    what: format!(
                        "meta page {x} is damaged ({e}) and {why}: it may hold a commit newer \
                         than commit {} of meta page {y}; refusing to roll back silently. \
                         Recovery (`tersedb recover`, EnvOptions::recover) rolls back to \
                         commit {}",
                        m.txn_id, m.txn_id
                    ),
                });
            }
            let mut repairs = vec![Repair {
                page: x as PageId,
                bytes: m.to_page(x as PageId),
            }];
            for s in [x, y] {
                if m.copy(s) != 0 {
                    repairs.push(Repair {
                        page: m.copy(s),
                        bytes: m.to_copy_page(m.copy(s)),
                    });
                }
            }
            Choice::Chosen(Chosen {
                meta: m,
                from: y as PageId,
                notes: vec![format!(
                    "recovery: meta page {x} is damaged ({e}) and {why}; rolled back to \
                     commit {} of meta page {y}",
                    m.txn_id
                )],
                repairs,
            })
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
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
            copies: [5, 6],
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
        let c = m.to_copy_page(5);
        assert_eq!(Meta::from_copy_page(5, &c).unwrap(), m);
        assert!(Meta::from_page(5, &c).is_err(), "a copy is not a meta page");
        assert!(Meta::from_copy_page(1, &p).is_err());
        bad = m;
        bad.copies = [5, 9];
        assert!(Meta::from_page(0, &bad.to_page(0)).is_err());
    }
}
