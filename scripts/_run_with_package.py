"""Runs pytest with ``xg2jax`` imported from the given package tree instead of the installed (editable) one.

Usage: ``python scripts/_run_with_package.py PKG_DIR [pytest args...]`` (used by scripts/tsan.sh and
scripts/asan.sh). Tests that start Python subprocesses pass ``XG2JAX_PACKAGE_DIR`` on so that those import it too.
"""

import sys

import os

pkg_dir = sys.argv[1]
os.environ["XG2JAX_PACKAGE_DIR"] = os.path.abspath(pkg_dir)  # for the tests' own subprocesses
# The editable install redirects `import xg2jax` through a meta-path finder; drop it so sys.path decides.
sys.meta_path = [f for f in sys.meta_path if "ScikitBuild" not in type(f).__name__]
sys.path.insert(0, pkg_dir)

import pytest  # noqa: E402

import xg2jax  # noqa: E402

if not xg2jax.__file__.startswith(pkg_dir.rstrip("/")) and pkg_dir not in xg2jax.__file__:
    raise SystemExit(f"xg2jax was imported from {xg2jax.__file__}, not from {pkg_dir}")
print(f"xg2jax from {xg2jax.__file__}")
sys.exit(pytest.main(sys.argv[2:]))
