#!/usr/bin/env bash
# ThreadSanitizer run of the cache stress test (issue 5): builds a separate copy of the extension with
# -fsanitize=thread (build/tsan; the regular build is untouched), then runs tests/test_cache_stress.py against it
# with libtsan preloaded into the (uninstrumented) Python. Any TSAN report fails the run (halt_on_error, exitcode 66).
# Needs the venv scripts/test.sh sets up (run it from there, or after `source scripts/_venv.sh test`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python}"
# The regular install builds in an isolated environment, so the venv may lack pybind11's CMake files.
"$PY" -c "import pybind11" 2>/dev/null || "$PY" -m pip install -q "pybind11>=2.12"
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXG2JAX_BUILD_PYTHON=ON -DXG2JAX_BUILD_TESTS=OFF \
  -DXG2JAX_SKIP_CUDA=ON -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" -DPython_EXECUTABLE="$(command -v "$PY")" \
  -Dpybind11_DIR="$("$PY" -m pybind11 --cmakedir)" >/dev/null
cmake --build build/tsan --target _core
# A package tree with the sanitized core next to the sources.
rm -rf build/tsan/pkg && mkdir -p build/tsan/pkg
cp -r xg2jax build/tsan/pkg/xg2jax
rm -f build/tsan/pkg/xg2jax/_core*.so build/tsan/pkg/xg2jax/_ffi*.so
cp build/tsan/_core*.so build/tsan/pkg/xg2jax/
LIBTSAN="$(${CXX:-c++} -print-file-name=libtsan.so)"
[ -f "$LIBTSAN" ] || { echo "libtsan.so not found (${CXX:-c++} -print-file-name gave '$LIBTSAN'): install libtsan2" >&2; exit 1; }
echo "ThreadSanitizer: $LIBTSAN"
# ignore_noninstrumented_modules: only our code is instrumented; races inside CPython/numpy are not ours to judge.
LD_PRELOAD="$LIBTSAN" TSAN_OPTIONS="halt_on_error=1 exitcode=66 ignore_noninstrumented_modules=1 second_deadlock_stack=1" \
  XG2JAX_STRESS_OPS="${XG2JAX_STRESS_OPS:-10000}" \
  "$PY" scripts/_run_with_package.py build/tsan/pkg -q -p no:cacheprovider tests/test_cache_stress.py
