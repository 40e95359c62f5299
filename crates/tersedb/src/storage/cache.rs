//! The page cache: clean pages, exactly as they are on disk (checksum included), shared as
//! [`Page`] (`Arc<[u8]>`) with readers.
//!
//! Sharded by page id; each shard is a hash map plus a CLOCK queue (second chance). A hit costs
//! one uncontended lock, one hash lookup and one `Arc` clone. The budget is counted in pages
//! (`cache_bytes / page_size`).
//!
//! Entries are never invalidated: a page id only gets new content when it is reused, and reuse
//! happens only once no reader can see the old content (see `freelist.rs`), so the commit that
//! writes the new content simply replaces the entry.

use super::Page;
use crate::error::PageId;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// A fast hasher for page ids (a multiply-xorshift; ids are not attacker-chosen keys of an
/// open-addressed table that could be flooded: they are bounded by the file size).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(31);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// `HashMap` keyed by page id with [`IdHasher`].
pub type IdMap<V> = HashMap<PageId, V, BuildHasherDefault<IdHasher>>;
/// `HashSet` of page ids with [`IdHasher`].
pub type IdSet = std::collections::HashSet<PageId, BuildHasherDefault<IdHasher>>;

const SHARDS: usize = 16;
/// The cache keeps at least this many pages whatever the budget.
const MIN_PAGES: usize = 64;

struct Slot {
    page: Page,
    referenced: bool,
}

/// Invariant: every key of `map` appears exactly once in `queue` and vice versa.
struct Shard {
    map: IdMap<Slot>,
    queue: VecDeque<PageId>,
}

/// Counters, for tests and `info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub pages: usize,
    pub capacity_pages: usize,
}

pub struct PageCache {
    shards: Box<[Mutex<Shard>]>,
    shard_cap: usize,
}

impl std::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCache")
            .field("capacity_pages", &(self.shard_cap * SHARDS))
            .finish()
    }
}

impl PageCache {
    pub fn new(cache_bytes: usize, page_size: usize) -> PageCache {
        let pages = (cache_bytes / page_size.max(1)).max(MIN_PAGES);
        let shard_cap = pages.div_ceil(SHARDS);
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    map: IdMap::default(),
                    queue: VecDeque::new(),
                })
            })
            .collect();
        PageCache { shards, shard_cap }
    }

    fn shard(&self, id: PageId) -> std::sync::MutexGuard<'_, Shard> {
        // A poisoned shard only means a panic elsewhere while holding it; the map is still
        // consistent (no operation panics half-way), so keep using it.
        self.shards[id as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The cached page `id`, if any.
    #[inline]
    pub fn get(&self, id: PageId) -> Option<Page> {
        let mut shard = self.shard(id);
        let slot = shard.map.get_mut(&id)?;
        slot.referenced = true;
        Some(slot.page.clone())
    }

    /// Caches (or replaces) page `id`, evicting another page of the shard when it is full.
    pub fn insert(&self, id: PageId, page: Page) {
        let mut shard = self.shard(id);
        if let Some(slot) = shard.map.get_mut(&id) {
            slot.page = page;
            slot.referenced = true;
            return;
        }
        if shard.map.len() >= self.shard_cap {
            // CLOCK: give referenced pages a second chance. Terminates: each pass clears bits.
            while let Some(victim) = shard.queue.pop_front() {
                let slot = shard.map.get_mut(&victim).expect("queue and map agree");
                if slot.referenced {
                    slot.referenced = false;
                    shard.queue.push_back(victim);
                } else {
                    shard.map.remove(&victim);
                    break;
                }
            }
        }
        shard.map.insert(
            id,
            Slot {
                page,
                referenced: false,
            },
        );
        shard.queue.push_back(id);
    }

    pub fn stats(&self) -> CacheStats {
        let pages = (0..SHARDS)
            .map(|i| self.shards[i].lock().map(|s| s.map.len()).unwrap_or(0))
            .sum();
        CacheStats {
            pages,
            capacity_pages: self.shard_cap * SHARDS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn page(v: u8) -> Page {
        Arc::from(vec![v; 16])
    }

    #[test]
    fn hit_replace_and_budget() {
        let c = PageCache::new(0, 512);
        assert!(c.get(3).is_none());
        c.insert(3, page(1));
        assert_eq!(c.get(3).unwrap()[0], 1);
        c.insert(3, page(2));
        assert_eq!(c.get(3).unwrap()[0], 2);
        for id in 0..10_000u64 {
            c.insert(id, page(id as u8));
            assert_eq!(c.get(id).unwrap()[0], id as u8);
        }
        let s = c.stats();
        assert!(s.pages <= s.capacity_pages, "{s:?}");
        assert!(s.capacity_pages >= MIN_PAGES);
    }

    #[test]
    fn referenced_pages_survive_a_scan() {
        let c = PageCache::new(0, 512); // 64 pages: 4 per shard
        let hot = 0u64;
        c.insert(hot, page(9));
        for id in 1..200u64 {
            // Keep touching the hot page while streaming others through its shard.
            assert!(c.get(hot).is_some(), "hot page evicted at {id}");
            c.insert(id * SHARDS as u64, page(1));
        }
    }
}
