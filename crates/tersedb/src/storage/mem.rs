//! [`MemStorage`]: a [`Storage`] held in memory, for tests and temporary environments. `sync` is
//! a no-op: everything written is "durable" at once.

use super::Storage;
use std::io;
use std::sync::{Arc, RwLock};

/// In-memory storage. Clones share the same bytes, so a test can keep a handle while the pager
/// owns another, and "reopen" by handing a clone to a new pager.
#[derive(Clone, Debug, Default)]
pub struct MemStorage {
    bytes: Arc<RwLock<Vec<u8>>>,
}

impl MemStorage {
    pub fn new() -> MemStorage {
        MemStorage::default()
    }

    /// Storage holding `bytes` (e.g. a crash image or a file with a flipped byte).
    pub fn from_bytes(bytes: Vec<u8>) -> MemStorage {
        MemStorage {
            bytes: Arc::new(RwLock::new(bytes)),
        }
    }

    /// A copy of the current bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.bytes.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

pub(crate) fn read_from(bytes: &[u8], offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let start = usize::try_from(offset).ok();
    match start.and_then(|s| Some(s..s.checked_add(buf.len())?)) {
        Some(r) if r.end <= bytes.len() => {
            buf.copy_from_slice(&bytes[r]);
            Ok(())
        }
        _ => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "read past the end of the storage",
        )),
    }
}

pub(crate) fn write_into(bytes: &mut Vec<u8>, offset: u64, buf: &[u8]) -> io::Result<()> {
    let start = usize::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
    let end = start + buf.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[start..end].copy_from_slice(buf);
    Ok(())
}

impl Storage for MemStorage {
    fn len(&self) -> io::Result<u64> {
        Ok(self.bytes.read().unwrap_or_else(|e| e.into_inner()).len() as u64)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        read_from(
            &self.bytes.read().unwrap_or_else(|e| e.into_inner()),
            offset,
            buf,
        )
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        write_into(
            &mut self.bytes.write().unwrap_or_else(|e| e.into_inner()),
            offset,
            buf,
        )
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length too large"))?;
        self.bytes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .resize(len, 0);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_len() {
        let s = MemStorage::new();
        assert!(s.is_empty().unwrap());
        s.write_at(4, b"abc").unwrap();
        assert_eq!(s.to_bytes(), b"\0\0\0\0abc");
        let mut b = [0u8; 3];
        s.read_at(4, &mut b).unwrap();
        assert_eq!(&b, b"abc");
        assert!(s.read_at(5, &mut b).is_err());
        assert!(s.read_at(u64::MAX, &mut b).is_err());
        s.set_len(2).unwrap();
        assert_eq!(s.len().unwrap(), 2);
        let c = s.clone();
        c.write_at(0, b"z").unwrap();
        assert_eq!(s.to_bytes(), b"z\0");
    }
}
