#!/usr/bin/env bash
# The DataFusion tables (crates/datafusion, its own workspace so that `cargo test --workspace`
# never builds DataFusion) and `tersedb sql` end to end (the CLI with its `sql` feature). Both
# build into one target dir beside the main one, with dependencies at opt-level 0 (the crate's
# dev profile; the CLI gets the same through --config), so DataFusion is compiled once.
set -euo pipefail
cd "$(dirname "$0")/../.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/sql"
# The unit and integration tests, then the doc tests: not the timing examples, which a plain
# `cargo test` links too (40 s to relink the three after a change; a cold run builds them beside
# DataFusion's own units and gained nothing measurable). .ci/run's clippy --all-targets still
# compiles them.
cargo test --manifest-path crates/datafusion/Cargo.toml --lib --tests
cargo test --manifest-path crates/datafusion/Cargo.toml --doc
cargo test -p tersedb-cli --features sql --test sql \
  --config 'profile.dev.package."*".opt-level=0'
