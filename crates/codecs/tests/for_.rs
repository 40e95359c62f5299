//! The shared model-based suite for `tersedb_codecs::for_::For`: every operation against a sorted
//! Vec, full and no-room paths, and untrusted descriptors/payloads.

mod common;
codec_suite!(for_, tersedb_codecs::for_::For);
