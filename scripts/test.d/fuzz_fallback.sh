#!/usr/bin/env bash
# Pins how scripts/fuzz behaves on machines without its tools, with stand-ins for cargo and
# rustup on PATH (nothing is built or fuzzed; a copy of the script runs in a scratch tree):
# * no cargo-fuzz and no way to install it: --ci skips with a note, exit 0; without --ci, exit 1;
# * cargo-fuzz but no nightly: the build runs with RUSTC_BOOTSTRAP=1; when that build fails,
#   --ci skips with a note (exit 0); with nightly, a build failure fails the run;
# * a crash fails the run (with or without --ci); a clean run reports executions per target;
# * an unknown target is refused (exit 2) before anything is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/repo/scripts" "$scratch/repo/crates/tersedb/fuzz" \
  "$scratch/repo/crates/codecs/fuzz"
cp scripts/fuzz "$scratch/repo/scripts/fuzz"

cat >"$scratch/bin/cargo" <<'EOF'
#!/usr/bin/env bash
echo "cargo $* RUSTC_BOOTSTRAP=${RUSTC_BOOTSTRAP:-}" >>"$SHIM_LOG"
[ "${1:-}" = +nightly ] && shift
case "${1:-} ${2:-}" in
  "fuzz --version")
    if [ "$HAVE_FUZZ" = 1 ]; then echo "cargo-fuzz 0.13.2"; exit 0; fi
    echo "error: no such command: \`fuzz\`" >&2; exit 101 ;;
  "install "*) echo "error: failed to download from crates.io" >&2; exit 101 ;;
  "fuzz build")
    if [ "$BUILD_OK" = 1 ]; then exit 0; fi
    echo "error: the option \`Z\` is only accepted on the nightly compiler" >&2; exit 101 ;;
  "fuzz run")
    echo "stat::number_of_executed_units: 123"
    if [ "$RUN_OK" = 1 ] && [ "${3:-}" != "${CRASH:-}" ]; then exit 0; fi
    echo "==1==ERROR: AddressSanitizer: heap-buffer-overflow" >&2; exit 77 ;;
esac
echo "unexpected: cargo $*" >&2
exit 99
EOF
cat >"$scratch/bin/rustup" <<'EOF'
#!/usr/bin/env bash
echo "rustup $*" >>"$SHIM_LOG"
[ "$NO_RUSTUP" = 1 ] && { echo "rustup: command not found" >&2; exit 127; }
case "${1:-} ${2:-}" in
  "toolchain list")
    echo "stable-x86_64-unknown-linux-gnu (default)"
    if [ "$HAVE_NIGHTLY" = 1 ]; then echo "nightly-x86_64-unknown-linux-gnu"; fi
    exit 0 ;;
  "toolchain install") echo "error: could not download nightly" >&2; exit 1 ;;
esac
exit 99
EOF
chmod +x "$scratch/bin/cargo" "$scratch/bin/rustup"

failures=0
# case NAME EXPECTED_EXIT EXPECTED_OUTPUT(grep -E) ENV... -- ARGS...
case_() {
  local name=$1 want_rc=$2 want_out=$3
  shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local out rc
  : >"$scratch/log"
  set +e
  out=$(env -i HOME="$HOME" PATH="$scratch/bin:/usr/bin:/bin" SHIM_LOG="$scratch/log" \
    HAVE_FUZZ=1 HAVE_NIGHTLY=1 BUILD_OK=1 RUN_OK=1 NO_RUSTUP=0 "${envs[@]}" \
    bash "$scratch/repo/scripts/fuzz" "$@" 2>&1)
  rc=$?
  set -e
  if [ "$rc" != "$want_rc" ] || ! grep -qE "$want_out" <<<"$out"; then
    echo "fuzz_fallback: $name: exit $rc (want $want_rc), output lacks /$want_out/:" >&2
    sed 's/^/    /' <<<"$out" >&2
    sed 's/^/    calls: /' "$scratch/log" >&2
    failures=$((failures + 1))
  else
    echo "fuzz_fallback: $name: ok (exit $rc)"
  fi
}
calls() { cat "$scratch/log"; }

case_ "no cargo-fuzz, --ci" 0 "skipped: cargo-fuzz could not be installed" HAVE_FUZZ=0 -- --ci --time 1 pages
grep -q "^cargo install --locked cargo-fuzz" <(calls) || { echo "fuzz_fallback: --ci did not try to install cargo-fuzz" >&2; failures=$((failures + 1)); }
case_ "no cargo-fuzz" 1 "skipped: cargo-fuzz is not installed" HAVE_FUZZ=0 -- --time 1 pages
if grep -q "^cargo install" <(calls); then echo "fuzz_fallback: installed without --ci" >&2; failures=$((failures + 1)); fi
case_ "no nightly, stable cannot build, --ci" 0 "skipped: pages does not build without a nightly" \
  HAVE_NIGHTLY=0 BUILD_OK=0 -- --ci --time 1 pages engine
grep -qE "^cargo fuzz build pages --target-dir \S+/target/fuzz RUSTC_BOOTSTRAP=1" <(calls) || { echo "fuzz_fallback: no RUSTC_BOOTSTRAP=1 build" >&2; failures=$((failures + 1)); }
case_ "no rustup, stable cannot build, --ci" 0 "skipped: pages does not build without a nightly" \
  NO_RUSTUP=1 BUILD_OK=0 -- --ci --time 1 pages
case_ "no nightly, stable builds" 0 "pages: 123 executions in 1 s, no crash" \
  HAVE_NIGHTLY=0 -- --ci --time 1 pages
case_ "nightly, build fails, --ci" 1 "pages: FAILED to build" BUILD_OK=0 -- --ci --time 1 pages
case_ "nightly, a crash, --ci" 1 "query: FAILED after 123 executions" RUN_OK=0 -- --ci --time 1 query
case_ "nightly, clean" 0 "byte_codecs: 123 executions in 1 s, no crash" -- --time 1 pages byte_codecs
grep -qE "^cargo \+nightly fuzz run byte_codecs --target-dir \S+/target/fuzz corpus/byte_codecs seeds/byte_codecs -- -max_total_time=1 .*-dict=dict/codecs.dict" <(calls) ||
  { echo "fuzz_fallback: the codec target ran without its corpus, time or dictionary" >&2; failures=$((failures + 1)); }
# Targets run side by side: a crash in one fails the run and is reported for that target alone.
case_ "two at a time, one crashes: the others" 1 "engine: 123 executions in 1 s, no crash" \
  CRASH=query FUZZ_JOBS=2 -- --time 1 pages engine query rice_codec
case_ "two at a time, one crashes: that one" 1 "query: FAILED after 123 executions" \
  CRASH=query FUZZ_JOBS=2 -- --time 1 pages engine query rice_codec
[ "$(grep -c "fuzz run" <(calls))" = 4 ] || { echo "fuzz_fallback: not every target ran" >&2; failures=$((failures + 1)); }
case_ "unknown target" 2 "unknown fuzz target: nope" HAVE_FUZZ=0 -- --ci nope
if grep -q "^cargo install" <(calls); then echo "fuzz_fallback: installed for an unknown target" >&2; failures=$((failures + 1)); fi

[ "$failures" = 0 ] || { echo "fuzz_fallback: $failures failure(s)" >&2; exit 1; }
