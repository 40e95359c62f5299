//! cargo-fuzz target `engine`: see the harness, crates/tersedb/tests/fuzz/engine.rs (also replayed by
//! the normal test suite, tests/fuzz_replay.rs). Run with `scripts/fuzz engine`.

#![no_main]

#[path = "../../tests/fuzz/engine.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
