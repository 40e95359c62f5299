#!/usr/bin/env bash
# The C API's tests (crates/capi): builds libtersedb_c, checks that the C test program calls
# every function of include/tersedb.h, compiles it with `cc` against the static and the shared
# library, runs it, and runs it once more under valgrind when valgrind is installed (.ci/run
# installs it). The header's freshness is checked by `cargo test` (crates/capi/tests/header.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."

target="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build -q -p tersedb-capi
lib="$target/debug"
out="$target/capi-test"
rm -rf "$out"
mkdir -p "$out/scratch"

header=crates/capi/include/tersedb.h
test_c=crates/capi/tests/c/test_capi.c
missing=0
for fn in $(grep -oE '^[a-z_ ]*tersedb_status \*?(tersedb_[a-z0-9_]+)\(|^const char \*(tersedb_[a-z0-9_]+)\(' "$header" |
  grep -oE 'tersedb_[a-z0-9_]+\(' | tr -d '('); do
  if ! grep -q "$fn(" "$test_c"; then
    echo "c.sh: $test_c does not call $fn" >&2
    missing=1
  fi
done
[ "$missing" = 0 ]

cflags=(-std=c11 -Wall -Wextra -Werror -O1 -g -Icrates/capi/include)
cc "${cflags[@]}" "$test_c" "$lib/libtersedb_c.a" -lpthread -ldl -lm -o "$out/test_static"
cc "${cflags[@]}" "$test_c" -L"$lib" -ltersedb_c -Wl,-rpath,"$lib" -lpthread -o "$out/test_shared"

echo "-- C API (static library)"
"$out/test_static" "$out/scratch"
if command -v valgrind >/dev/null; then
  echo "-- C API (shared library, under valgrind)"
  valgrind -q --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=definite \
    "$out/test_shared" "$out/scratch" 20000
else
  echo "-- C API (shared library; valgrind not installed)"
  "$out/test_shared" "$out/scratch"
fi
