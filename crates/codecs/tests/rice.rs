//! The shared model-based suite for `tersedb_codecs::rice::Rice`: every operation against a
//! sorted Vec, full and no-room paths, and untrusted descriptors/payloads. The format's own tests
//! (both modes, forged blocks) are in `src/rice.rs`.

mod common;
codec_suite!(rice, tersedb_codecs::rice::Rice);
