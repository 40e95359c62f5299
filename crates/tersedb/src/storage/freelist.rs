//! Free space: the persistent free-page list and the in-memory rules for reusing pages.
//!
//! On disk the list is a chain of pages, rewritten (copy-on-write) by every commit:
//!
//! ```text
//! offset size field
//!      0    8 checksum
//!      8    1 kind       2 (PageKind::FreeList)
//!      9    3 zero
//!     12    4 count n    ids on this page, <= (page_size - 24) / 8
//!     16    8 next       next page of the chain (0 = last)
//!     24  8*n ids        free page ids, u64 LE, ascending over the whole chain
//! ```
//!
//! The list of commit `t` holds every page that commit `t` does not use: pages free for reuse,
//! pages freed recently that old readers may still see, and the pages of commit `t - 1`'s list.
//! The pages of the chain itself are not in it. So every page below the page count is exactly
//! one of: a meta page (0, 1), reachable from the root (the layer above's business), a free-list
//! page, or listed as free.
//!
//! In memory ([`FreeSpace`]) a page freed by commit `t` waits in `pending[t]` until no live
//! reader's snapshot is older than `t` (a reader of snapshot `s` sees the pages of commit `s`,
//! and the pages commit `t` freed were part of every commit before `t`). The writer allocates
//! only from `free`. Pages allocated and freed within one transaction are reusable at once.
//!
//! Storing the list allocates pages for it, which shrinks the list: the commit takes pages until
//! the chain can hold what is left (see `WritePages::commit`). The chain of the previous commit
//! is freed by the new commit like any other page, so the space is bounded under churn.

use super::cache::IdSet;
use super::{Page, PageKind};
use crate::error::{Error, PageId, Result};
use std::collections::{BTreeMap, BTreeSet};

/// Bytes before the ids of a free-list page.
pub const HEADER_LEN: usize = 24;

/// Ids a free-list page of `page_size` holds.
pub fn capacity(page_size: usize) -> usize {
    (page_size - HEADER_LEN) / 8
}

/// Fills `page` (not yet checksummed) with `ids` and the link to `next`.
pub fn encode(page: &mut [u8], next: PageId, ids: &[PageId]) {
    debug_assert!(ids.len() <= capacity(page.len()));
    page.fill(0);
    page[8] = PageKind::FreeList as u8;
    page[12..16].copy_from_slice(&(ids.len() as u32).to_le_bytes());
    page[16..24].copy_from_slice(&next.to_le_bytes());
    for (i, id) in ids.iter().enumerate() {
        let at = HEADER_LEN + 8 * i;
        page[at..at + 8].copy_from_slice(&id.to_le_bytes());
    }
}

/// The free pages and free-list pages of one commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpaceInfo {
    /// The commit's page count (pages `0..page_count` are in use by the file).
    pub page_count: u64,
    /// Pages listed as free, ascending.
    pub free: Vec<PageId>,
    /// Pages holding the free list, in chain order.
    pub freelist_pages: Vec<PageId>,
}

/// Reads and verifies the chain starting at `head`, with `read` returning checksum-verified
/// pages. Checks kinds, counts, ranges, ascending order, that no page appears twice (also not
/// as both a list page and a listed id), and the totals the meta recorded.
pub fn read_chain(
    read: &dyn Fn(PageId) -> Result<Page>,
    head: PageId,
    page_count: u64,
    expect_free: u64,
    expect_pages: u64,
) -> Result<SpaceInfo> {
    let mut info = SpaceInfo {
        page_count,
        ..SpaceInfo::default()
    };
    let mut next = head;
    while next != 0 {
        let id = next;
        let bad = |what: String| Error::Corrupted { page: id, what };
        if info.freelist_pages.len() as u64 >= expect_pages {
            return Err(bad(format!(
                "free list is longer than the {expect_pages} pages the meta page records"
            )));
        }
        if id < 2 || id >= page_count {
            return Err(bad(format!(
                "free-list page id out of range 2..{page_count}"
            )));
        }
        let page = read(id)?;
        if page[8] != PageKind::FreeList as u8 {
            return Err(bad(format!(
                "expected a free-list page, found kind {}",
                page[8]
            )));
        }
        let mut b4 = [0u8; 4];
        b4.copy_from_slice(&page[12..16]);
        let count = u32::from_le_bytes(b4) as usize;
        if count > capacity(page.len()) {
            return Err(bad(format!("free-list page claims {count} ids")));
        }
        let mut b8 = [0u8; 8];
        b8.copy_from_slice(&page[16..24]);
        next = u64::from_le_bytes(b8);
        for i in 0..count {
            let at = HEADER_LEN + 8 * i;
            b8.copy_from_slice(&page[at..at + 8]);
            let free = u64::from_le_bytes(b8);
            if free < 2 || free >= page_count {
                return Err(bad(format!(
                    "free page id {free} out of range 2..{page_count}"
                )));
            }
            if info.free.last().is_some_and(|&last| last >= free) {
                return Err(bad(format!("free page ids not ascending at {free}")));
            }
            info.free.push(free);
        }
        info.freelist_pages.push(id);
    }
    if info.freelist_pages.len() as u64 != expect_pages || info.free.len() as u64 != expect_free {
        return Err(Error::Corrupted {
            page: head,
            what: format!(
                "free list holds {} ids on {} pages, the meta page records {expect_free} on \
                 {expect_pages}",
                info.free.len(),
                info.freelist_pages.len()
            ),
        });
    }
    let mut pages = info.freelist_pages.clone();
    pages.sort_unstable();
    for w in pages.windows(2) {
        if w[0] == w[1] {
            return Err(Error::Corrupted {
                page: w[0],
                what: "free-list chain visits the page twice".into(),
            });
        }
    }
    for p in &pages {
        if info.free.binary_search(p).is_ok() {
            return Err(Error::Corrupted {
                page: *p,
                what: "free-list page is also listed as free".into(),
            });
        }
    }
    Ok(info)
}

/// The writer's view of free space between transactions.
///
/// Invariant: `free`, the lists in `pending` and `chain` are disjoint; `pending_set` holds
/// exactly the ids of `pending`.
#[derive(Debug, Default)]
pub struct FreeSpace {
    /// Reusable now. Taken by the write transaction while it runs.
    pub free: BTreeSet<PageId>,
    /// Freed by commit `t`; reusable once no reader's snapshot is older than `t`.
    pub pending: BTreeMap<u64, Vec<PageId>>,
    pub pending_set: IdSet,
    /// The pages of the current commit's free-list chain.
    pub chain: Vec<PageId>,
}

impl FreeSpace {
    /// Free space as loaded at open (no readers yet: everything listed is reusable).
    pub fn from_info(info: &SpaceInfo) -> FreeSpace {
        FreeSpace {
            free: info.free.iter().copied().collect(),
            pending: BTreeMap::new(),
            pending_set: IdSet::default(),
            chain: info.freelist_pages.clone(),
        }
    }

    /// Moves into `into` the pending pages no reader can see any more; `oldest_reader` is the
    /// oldest live snapshot's txn id.
    pub fn release(&mut self, oldest_reader: Option<u64>, into: &mut BTreeSet<PageId>) {
        while let Some(entry) = self.pending.first_entry() {
            if oldest_reader.is_some_and(|r| r < *entry.key()) {
                break;
            }
            for id in entry.remove() {
                self.pending_set.remove(&id);
                into.insert(id);
            }
        }
    }

    /// Records pages freed by commit `txn`.
    pub fn add_pending(&mut self, txn: u64, ids: Vec<PageId>) {
        if ids.is_empty() {
            return;
        }
        self.pending_set.extend(ids.iter().copied());
        self.pending.entry(txn).or_default().extend(ids);
    }

    /// Every pending id.
    pub fn pending_ids(&self) -> impl Iterator<Item = PageId> + '_ {
        self.pending.values().flatten().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn chain(pages: &[(PageId, PageId, Vec<PageId>)]) -> impl Fn(PageId) -> Result<Page> {
        let map: std::collections::HashMap<PageId, Page> = pages
            .iter()
            .map(|(id, next, ids)| {
                let mut p = vec![0u8; 512];
                encode(&mut p, *next, ids);
                (*id, Arc::from(p))
            })
            .collect();
        move |id| {
            map.get(&id).cloned().ok_or(Error::Corrupted {
                page: id,
                what: "missing".into(),
            })
        }
    }

    #[test]
    fn round_trip_and_faults() {
        let read = chain(&[(5, 9, vec![2, 3, 4]), (9, 0, vec![6, 7])]);
        let info = read_chain(&read, 5, 20, 5, 2).unwrap();
        assert_eq!(info.free, vec![2, 3, 4, 6, 7]);
        assert_eq!(info.freelist_pages, vec![5, 9]);
        assert!(read_chain(&read, 5, 20, 5, 1).is_err(), "too long");
        assert!(read_chain(&read, 5, 20, 4, 2).is_err(), "count mismatch");
        assert!(read_chain(&read, 5, 7, 5, 2).is_err(), "id out of range");
        let cyclic = chain(&[(5, 9, vec![2]), (9, 5, vec![3])]);
        assert!(read_chain(&cyclic, 5, 20, 100, 100).is_err());
        let unsorted = chain(&[(5, 0, vec![3, 2])]);
        assert!(read_chain(&unsorted, 5, 20, 2, 1).is_err());
        let self_listed = chain(&[(5, 0, vec![2, 5])]);
        assert!(read_chain(&self_listed, 5, 20, 2, 1).is_err());
        assert_eq!(
            read_chain(&read, 0, 20, 0, 0).unwrap().free,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn release_respects_readers() {
        let mut fs = FreeSpace::default();
        fs.add_pending(3, vec![10, 11]);
        fs.add_pending(5, vec![12]);
        let mut free = BTreeSet::new();
        fs.release(Some(2), &mut free);
        assert!(free.is_empty());
        fs.release(Some(4), &mut free);
        assert_eq!(free.iter().copied().collect::<Vec<_>>(), vec![10, 11]);
        assert!(!fs.pending_set.contains(&10) && fs.pending_set.contains(&12));
        fs.release(None, &mut free);
        assert_eq!(free.len(), 3);
        assert!(fs.pending.is_empty() && fs.pending_set.is_empty());
    }
}
