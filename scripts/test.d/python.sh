#!/usr/bin/env bash
# The Python package's tests (crates/python): a venv under the target dir with maturin, pytest,
# hypothesis, numpy, pandas, pyarrow and polars (for the optional to_pandas, to_arrow and
# to_polars); the extension built with `maturin develop --release` (its own workspace and target
# dir); pytest. Idempotent: a warm run reinstalls nothing and rebuilds
# only what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."

target="${CARGO_TARGET_DIR:-$PWD/target}"
venv="$target/python-venv"
reqs="maturin>=1.7,<2 pytest hypothesis numpy pandas pyarrow polars"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ "$(cat "$venv/.tersedb-reqs" 2>/dev/null)" != "$reqs" ]; then
  # shellcheck disable=SC2086 # word splitting of the requirement list is intended
  "$venv/bin/pip" install -q --disable-pip-version-check $reqs
  echo "$reqs" >"$venv/.tersedb-reqs"
fi

CARGO_TARGET_DIR="$target/python" VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
  "$venv/bin/maturin" develop --release -q -m crates/python/Cargo.toml
"$venv/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests
