//! Fuzz target: arbitrary blocks for the Rice codec (see the harness in `src/lib.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tersedb_codecs::CodecId;
use tersedb_codecs_fuzz::fuzz_family;

fuzz_target!(|data: &[u8]| fuzz_family(&[CodecId::Rice], data));
