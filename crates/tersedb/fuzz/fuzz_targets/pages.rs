//! cargo-fuzz target `pages`: see the harness, crates/tersedb/tests/fuzz/pages.rs (also replayed by
//! the normal test suite, tests/fuzz_replay.rs). Run with `scripts/fuzz pages`.

#![no_main]

#[path = "../../tests/fuzz/pages.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
