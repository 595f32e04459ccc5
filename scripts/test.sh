#!/usr/bin/env bash
# Sets up .venv and runs every test: GoogleTest (C++), then pytest (default set, then slow set).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "test"

if [ ! -f /usr/include/gtest/gtest.h ]; then
  echo "GoogleTest missing: installing Debian's libgtest-dev"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq libgtest-dev >/dev/null
fi
# Without link-time optimisation: the Python tests run the optimised extension; linking every test binary with it
# would only lengthen CI.
cmake -S . -B build/cpp-tests -G Ninja -DCMAKE_BUILD_TYPE=Release -DXG2JAX_BUILD_PYTHON=OFF -DXG2JAX_BUILD_TESTS=ON \
  -DXG2JAX_LTO=OFF >/dev/null
cmake --build build/cpp-tests
ctest --test-dir build/cpp-tests --output-on-failure -j2 | tail -n 5

# The cache stress test against a ThreadSanitizer build of the extension (a separate build in build/tsan).
bash scripts/tsan.sh
# The C++ tests and the hostile-input Python tests under AddressSanitizer + UBSan (a separate build in build/asan).
bash scripts/asan.sh

python -m pytest -q
# The slow set in two worker processes (pytest-xdist; XG2JAX_TEST_WORKERS to change): its tests are independent and
# single-threaded, so on CI's two cores this halves the longest step.
python -m pytest -q -m slow -o addopts="-ra" --durations=20 -n "${XG2JAX_TEST_WORKERS:-2}" || { rc=$?; [ $rc -eq 5 ] && echo "no slow tests selected"; [ $rc -eq 5 ]; }
