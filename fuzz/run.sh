#!/usr/bin/env bash
# Builds and runs one fuzz target for a given time, on one core.
#   fuzz/run.sh <target> <seconds> [extra fuzzer args...]
# Targets: ebnf, regex (libFuzzer, C++; built into build/fuzz with clang++ and ASan+UBSan),
#          json_schema, matcher_ops (atheris, Python; run against the installed xg2jax).
# Corpora: fuzz/corpus/<target>/ (seeds, read-only) + build/fuzz/corpus/<target>/ (what the run adds).
# Crashes / findings are written to build/fuzz/findings/<target>/. Prints executions and findings at the end.
# Environment: PYTHON (default: python; use the venv's), CXX (default: clang++), JOBS (build jobs, default 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -ge 2 ] || { echo "usage: fuzz/run.sh <ebnf|regex|json_schema|matcher_ops> <seconds> [args...]" >&2; exit 2; }
target="$1"; secs="$2"; shift 2
PY="${PYTHON:-python}"
out="build/fuzz"
corpus="$out/corpus/$target"; findings="$out/findings/$target"
mkdir -p "$corpus" "$findings"
log="$out/$target.log"

case "$target" in
  ebnf|regex)
    cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
      -DXG2JAX_BUILD_FUZZERS=ON -DXG2JAX_BUILD_PYTHON=OFF -DXG2JAX_BUILD_TESTS=OFF -DXG2JAX_SKIP_CUDA=ON >/dev/null
    cmake --build "$out" --target "${target}_fuzzer" -j "${JOBS:-1}"
    export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
    export ASAN_OPTIONS="detect_leaks=1 abort_on_error=0"
    set +e
    "$out/fuzz/${target}_fuzzer" "$corpus" "fuzz/corpus/$target" -max_total_time="$secs" -max_len=4096 \
      -timeout=10 -rss_limit_mb=2048 -fork=1 -ignore_timeouts=1 -ignore_ooms=1 -ignore_crashes=1 \
      -artifact_prefix="$findings/" "$@" 2>&1 | tee "$log" | grep -E "^#[0-9]+: cov" --line-buffered | awk 'NR % 10 == 1'
    rc=${PIPESTATUS[0]}
    set -e
    echo "== $target: exit $rc"
    # Fork mode (one worker): a timeout, OOM or crash is saved and the run goes on. The last status line
    # holds the totals: #<executions>: ... oom/timeout/crash: O/T/C time: <s>.
    grep -E "^#[0-9]+: cov" "$log" | tail -n 1 || true
    grep -E "==FINDING==|ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: " "$log" | sort | uniq -c || true
    ;;
  json_schema|matcher_ops)
    "$PY" -c "import atheris" 2>/dev/null || "$PY" -m pip install -q atheris
    set +e
    "$PY" "fuzz/${target}_fuzzer.py" "$corpus" "fuzz/corpus/$target" -max_total_time="$secs" -timeout=60 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" "$@" 2>&1 | tee "$log" \
      | grep -E "^#[0-9]+ +(pulse|NEW|REDUCE)" --line-buffered | awk 'NR % 50 == 1'
    rc=${PIPESTATUS[0]}
    set -e
    echo "== $target: exit $rc"
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb|==FINDING==|Uncaught Python exception|ERROR: libFuzzer|Traceback" "$log" || true
    ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
ls -1 "$findings" | sed "s|^|finding file: $findings/|" || true
exit "$rc"
