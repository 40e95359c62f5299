//! Page checksums: XXH3-64 of `page[8..]`, seeded with the page id, stored little-endian in
//! `page[0..8]`.
//!
//! ```text
//! [checksum u64 LE][kind u8][owner bytes ...]
//!  = xxh3_64_with_seed(page[8..], seed = page id)
//! ```
//!
//! The seed makes a page that landed at the wrong offset (or a meta page copied to the other
//! slot) fail its check even though its bytes are intact.

use super::PAGE_CHECKSUM_LEN;
use crate::error::PageId;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The checksum `page` should carry when stored as page `id`.
pub fn compute(id: PageId, page: &[u8]) -> u64 {
    xxh3_64_with_seed(&page[PAGE_CHECKSUM_LEN..], id)
}

/// Writes the checksum of `page` (stored as page `id`) into its first 8 bytes.
pub fn stamp(id: PageId, page: &mut [u8]) {
    let sum = compute(id, page);
    page[..PAGE_CHECKSUM_LEN].copy_from_slice(&sum.to_le_bytes());
}

/// Whether the stored checksum of `page` matches its content for page `id`.
pub fn verify(id: PageId, page: &[u8]) -> bool {
    if page.len() < PAGE_CHECKSUM_LEN + 1 {
        return false;
    }
    let mut stored = [0u8; PAGE_CHECKSUM_LEN];
    stored.copy_from_slice(&page[..PAGE_CHECKSUM_LEN]);
    u64::from_le_bytes(stored) == compute(id, page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_then_verify_and_detect_changes() {
        let mut page = vec![0u8; 512];
        page[8] = 4;
        page[100] = 7;
        stamp(9, &mut page);
        assert!(verify(9, &page));
        assert!(!verify(10, &page), "the seed binds the page to its id");
        for i in [0usize, 7, 8, 100, 511] {
            let mut bad = page.clone();
            bad[i] ^= 0x20;
            assert!(!verify(9, &bad), "flip at {i} not detected");
        }
        assert!(!verify(0, &[0u8; 4]));
    }
}
