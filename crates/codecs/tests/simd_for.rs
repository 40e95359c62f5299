//! The shared model-based suite for `tersedb_codecs::simd_for::SimdFor`: every operation against a sorted
//! Vec, full and no-room paths, and untrusted descriptors/payloads.

mod common;
codec_suite!(simd_for, tersedb_codecs::simd_for::SimdFor);
