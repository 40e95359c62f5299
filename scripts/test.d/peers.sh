#!/usr/bin/env bash
# `tersedb bench --peers` end to end: the CLI built with its `peers`, `rocksdb` and `fjall`
# features (LMDB, redb, SQLite, Roaring, RocksDB, fjall; `cargo test --workspace` builds the
# peers crate without them). RocksDB is the system's (Debian's librocksdb-dev, 7.8) and its Rust
# binding runs bindgen (libclang-dev): both installed here when missing (~15 s).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! dpkg -s librocksdb-dev libclang-dev >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librocksdb-dev libclang-dev
fi
cargo test -p tersedb-cli --features peers,rocksdb,fjall --test peers
