#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run: builds the engine once with both sanitizers
# (build/asan; the regular build is untouched), runs every C++ test against it, then a slice of the Python tests
# (the hostile-input, bad-input, grammar and native JSON Schema tests) with the sanitized extension and libasan
# preloaded into the (uninstrumented) Python. Any report fails the run: ASan aborts on the first error, UBSan is
# built with -fno-sanitize-recover. Needs the venv scripts/test.sh sets up (run it from there, or after
# `source scripts/_venv.sh test`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python}"
"$PY" -c "import pybind11" 2>/dev/null || "$PY" -m pip install -q "pybind11>=2.12"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXG2JAX_BUILD_PYTHON=ON -DXG2JAX_BUILD_TESTS=ON \
  -DXG2JAX_SKIP_CUDA=ON -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" \
  -DCMAKE_SHARED_LINKER_FLAGS="$SAN" -DPython_EXECUTABLE="$(command -v "$PY")" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/dev/null
cmake --build build/asan --target xg2jax_cpp_tests _core
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
ASAN_OPTIONS="detect_leaks=1" ctest --test-dir build/asan --output-on-failure -j2 | tail -n 3

rm -rf build/asan/pkg && mkdir -p build/asan/pkg
cp -r xg2jax build/asan/pkg/xg2jax
rm -f build/asan/pkg/xg2jax/_core*.so build/asan/pkg/xg2jax/_ffi*.so
cp build/asan/_core*.so build/asan/pkg/xg2jax/
LIBASAN="$(${CXX:-c++} -print-file-name=libasan.so)"
LIBUBSAN="$(${CXX:-c++} -print-file-name=libubsan.so)"
[ -f "$LIBASAN" ] || { echo "libasan.so not found: install libasan8" >&2; exit 1; }
echo "AddressSanitizer: $LIBASAN"
# Leaks are not checked in Python (the interpreter keeps objects alive at exit by design); the C++ tests above do.
LD_PRELOAD="$LIBASAN $LIBUBSAN" ASAN_OPTIONS="detect_leaks=0 abort_on_error=1" \
  "$PY" scripts/_run_with_package.py build/asan/pkg -q -p no:cacheprovider \
  tests/test_untrusted_grammars.py tests/test_bad_input.py tests/test_ebnf.py tests/test_regex.py \
  tests/test_json_schema_native.py
