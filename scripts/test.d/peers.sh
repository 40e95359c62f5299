#!/usr/bin/env bash
# `tersedb bench --peers` end to end: the CLI built with its `peers` feature (LMDB, redb, SQLite,
# Roaring; `cargo test --workspace` builds the peers crate but not the CLI's feature).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test -p tersedb-cli --features peers --test peers
