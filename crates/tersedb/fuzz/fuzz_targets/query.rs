//! cargo-fuzz target `query`: see the harness, crates/tersedb/tests/fuzz/query.rs (also replayed by
//! the normal test suite, tests/fuzz_replay.rs). Run with `scripts/fuzz query`.

#![no_main]

#[path = "../../tests/fuzz/query.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::run(data));
