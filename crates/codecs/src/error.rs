//! Errors of the codec layer.

use std::fmt;

/// Why a codec operation failed. Corrupt input from storage is an error, never a panic.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// The descriptor or payload is malformed (truncated data, impossible count or bit width,
    /// keys out of order, last key mismatch). `what` says which check failed.
    Corrupt { what: &'static str },
    /// The caller broke the API contract (unsorted keys, slot out of range, output too small).
    InvalidInput { what: &'static str },
    /// The output buffer is too small for the encoded block.
    NoRoom { needed: usize, available: usize },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Corrupt { what } => write!(f, "corrupt compressed block: {what}"),
            CodecError::InvalidInput { what } => write!(f, "invalid codec input: {what}"),
            CodecError::NoRoom { needed, available } => write!(
                f,
                "compressed block needs {needed} bytes but only {available} are available"
            ),
        }
    }
}

impl std::error::Error for CodecError {}
