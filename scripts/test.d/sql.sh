#!/usr/bin/env bash
# `tersedb sql` end to end: the CLI built with its `sql` feature (DataFusion; `cargo test
# --workspace` builds and tests the tersedb-datafusion crate but not the CLI's feature).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test -p tersedb-cli --features sql --test sql
