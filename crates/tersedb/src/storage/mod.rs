//! Storage: the pager and everything below it. The B+-tree layer sees pages only through
//! [`PageSource`] (read) and [`PageSink`] (copy-on-write), and the file only through [`Storage`].
//!
//! Every page starts with an 8-byte checksum that the pager owns; the byte after it names the
//! page's kind, and the rest belongs to the page's owner:
//!
//! ```text
//! offset 0         8      9                                                page_size
//!        [checksum][kind][ owner's bytes ...................................]
//!        checksum = XXH3-64(page[8..], seed = page id), little-endian; written at commit
//! ```
//!
//! Seeding the checksum with the page id makes a page written at the wrong offset fail its check.
//! Pages are cached as they are on disk (so compressed leaves stay compressed in RAM).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use crate::error::{PageId, Result};
use std::sync::Arc;

/// Bytes at the start of every page that belong to the pager (the checksum).
#[doc(hidden)]
pub const PAGE_CHECKSUM_LEN: usize = 8;
/// Offset of the page-kind byte.
#[doc(hidden)]
pub const PAGE_KIND_OFFSET: usize = 8;
/// Smallest supported page size; page sizes are powers of two.
pub const MIN_PAGE_SIZE: usize = 512;
/// Largest supported page size.
pub const MAX_PAGE_SIZE: usize = 64 * 1024;
/// Page size of new files unless [`crate::EnvOptions::page_size`] says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 16 * 1024;

/// The kind byte at [`PAGE_KIND_OFFSET`]. Stored on disk: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[doc(hidden)]
pub enum PageKind {
    /// One of the two meta pages (pages 0 and 1).
    Meta = 1,
    /// A page of the free-page list.
    FreeList = 2,
    /// A B+-tree internal node.
    Branch = 3,
    /// A B+-tree leaf.
    Leaf = 4,
    /// A page of a large record (overflow chain).
    Overflow = 5,
    /// The copy of a meta page, written with the commit's data pages.
    MetaCopy = 6,
}

impl PageKind {
    /// The kind a byte names (`None` for an unknown one).
    pub fn from_u8(v: u8) -> Option<PageKind> {
        Some(match v {
            1 => PageKind::Meta,
            2 => PageKind::FreeList,
            3 => PageKind::Branch,
            4 => PageKind::Leaf,
            5 => PageKind::Overflow,
            6 => PageKind::MetaCopy,
            _ => return None,
        })
    }
}

/// How hard a commit tries to reach the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// fsync the data pages, then the meta page: a commit that returned survives power loss.
    #[default]
    Immediate,
    /// No fsync. Commits are still atomic and the file is never corrupt after a process crash,
    /// but the last commits may be lost on power loss. For bulk loads.
    None,
}

/// A page's bytes, shared between the cache and readers. Always exactly `page_size` long.
#[doc(hidden)]
pub type Page = Arc<PageBuf>;

/// The bytes of one page and whether the layer above has proven their structure.
///
/// The bytes of a shared page never change (the writer changes only pages it holds alone, see
/// [`PageBuf::bytes_mut`]), so a proof of what they hold lasts as long as the buffer: the
/// B-tree layer proves a node once (its lists' indexes in order, their counts adding up) and
/// marks the buffer, and the reads after it, in any thread, rely on the mark instead of
/// checking again. A page read from the file, copied, or written starts unproven.
#[doc(hidden)]
#[derive(Debug)]
pub struct PageBuf {
    bytes: Box<[u8]>,
    proven: std::sync::atomic::AtomicBool,
}

impl PageBuf {
    /// Whether [`PageBuf::set_proven`] was called on these bytes.
    #[inline]
    pub fn proven(&self) -> bool {
        self.proven.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Marks the bytes as proven by the layer that owns them (see the type's docs).
    #[inline]
    pub fn set_proven(&self) {
        self.proven
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// The bytes, to change: the proof no longer holds.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        *self.proven.get_mut() = false;
        &mut self.bytes
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// A copy starts unproven (it is about to be changed).
impl Clone for PageBuf {
    fn clone(&self) -> Self {
        PageBuf::from(&self.bytes[..])
    }
}

impl From<Vec<u8>> for PageBuf {
    fn from(v: Vec<u8>) -> Self {
        PageBuf {
            bytes: v.into_boxed_slice(),
            proven: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl From<&[u8]> for PageBuf {
    fn from(v: &[u8]) -> Self {
        PageBuf::from(v.to_vec())
    }
}

/// All file I/O goes through this trait, so tests can run on memory and inject faults.
///
/// Offsets and lengths are in bytes. Implementations must be usable from several threads.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Current length of the file in bytes.
    fn len(&self) -> std::io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> std::io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Fills `buf` from `offset`; reading past the end is an `UnexpectedEof` error.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_at(&self, offset: u64, buf: &[u8]) -> std::io::Result<()>;
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> std::io::Result<()>;
    /// Makes every write so far durable (fsync / fdatasync).
    fn sync(&self) -> std::io::Result<()>;
}

/// A page lent for a short read (a lookup's descent): held by the source itself for as long
/// as the source lives (a read snapshot's pinned pages), borrowed with no reference counting,
/// or else shared like any [`Page`].
#[doc(hidden)]
pub enum PageRef<'a> {
    /// A page the source holds for its whole life.
    Pinned(&'a PageBuf),
    /// A page shared with the cache.
    Shared(Page),
}

impl std::ops::Deref for PageRef<'_> {
    type Target = PageBuf;
    #[inline]
    fn deref(&self) -> &PageBuf {
        match self {
            PageRef::Pinned(p) => p,
            PageRef::Shared(p) => p,
        }
    }
}

/// Read access to the pages of one snapshot.
#[doc(hidden)]
pub trait PageSource {
    /// Page size in bytes.
    fn page_size(&self) -> usize;
    /// The page `id` as of this snapshot; checksum-verified when it comes from disk.
    /// An id outside the file, or a checksum mismatch, is `Error::Corrupted` naming the page.
    fn page(&self, id: PageId) -> Result<Page>;
    /// [`PageSource::page`] for a short read: a source may lend a page it holds instead of
    /// sharing it (no lock, no reference count: [`ReadPages`] pins the pages its reads meet).
    #[inline]
    fn page_ref(&self, id: PageId) -> Result<PageRef<'_>> {
        self.page(id).map(PageRef::Shared)
    }
}

/// Copy-on-write access for the write transaction.
///
/// Pages allocated in this transaction are *dirty* and may be changed in place; any other page
/// must first be copied with [`PageSink::cow`], which returns the id of the writable copy and
/// frees the original (it becomes reusable once no reader can see it).
#[doc(hidden)]
pub trait PageSink: PageSource {
    /// Allocates a zeroed dirty page (from the free list when possible, else at the file's end).
    fn alloc(&mut self) -> Result<PageId>;
    /// Mutable bytes of a dirty page (the whole page; bytes `0..PAGE_CHECKSUM_LEN` are rewritten
    /// at commit). A page that is not dirty is an error.
    fn page_mut(&mut self, id: PageId) -> Result<&mut [u8]>;
    /// Whether `id` was allocated by this transaction.
    fn is_dirty(&self, id: PageId) -> bool;
    /// Returns a dirty page holding `id`'s content: `id` itself when dirty, else a fresh copy
    /// (and `id` is freed).
    fn cow(&mut self, id: PageId) -> Result<PageId>;
    /// Frees `id` (dirty pages are reusable at once, others once no reader can see them).
    fn free(&mut self, id: PageId) -> Result<()>;
}

// The pager's parts are internal; tests (crash images, forged pages, reader slots) reach
// them through these hidden paths.
#[doc(hidden)]
pub mod faulty;
mod file;
mod mem;
#[doc(hidden)]
pub mod meta;
#[doc(hidden)]
pub mod pager;
#[doc(hidden)]
pub mod readers;

#[doc(hidden)]
pub use faulty::{CrashMode, FaultyStorage};
pub use file::FileStorage;
pub use mem::MemStorage;
#[doc(hidden)]
pub use pager::{FreeView, MetaCheck, Pager, PagerOptions, ReadPages, Sharing, WritePages};

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A proof lasts while the bytes do: changing them or copying them starts unproven.
    #[test]
    fn a_page_proof_ends_when_its_bytes_change_or_are_copied() {
        let mut page = Page::new(PageBuf::from(vec![7u8; 64]));
        assert!(!page.proven(), "a page read or built starts unproven");
        page.set_proven();
        assert!(page.proven());
        let shared = page.clone();
        assert!(
            shared.proven(),
            "clones of the Arc share the buffer and its proof"
        );
        // Shared: the writer gets a private copy, unproven; the reader's buffer keeps its proof.
        Arc::make_mut(&mut page).bytes_mut()[0] = 1;
        assert!(!page.proven());
        assert!(shared.proven() && shared[0] == 7);
        // Alone: changed in place, the proof ends.
        page.set_proven();
        Arc::make_mut(&mut page).bytes_mut()[1] = 2;
        assert!(!page.proven());
        assert_eq!(&page[..3], &[1, 2, 7]);
        assert!(!PageBuf::clone(&shared).proven(), "a copy starts unproven");
    }
}
