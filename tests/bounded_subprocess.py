"""Runs a snippet of Python in a fresh interpreter under a time limit and an address-space limit.

Hostile-input tests use it so that a case that crashes, hangs or allocates without bound fails as that
case (with the child's stderr) instead of taking the test run down. Under AddressSanitizer (LD_PRELOAD
names libasan, see scripts/asan.sh) the address-space limit is skipped: ASan reserves terabytes of
shadow, so there time is the only bound.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

# First lines of every snippet: under scripts/asan.sh, import the sanitizer build's package tree
# (XG2JAX_PACKAGE_DIR) instead of the editable install.
PACKAGE_PRELUDE = """
import os, sys
if os.environ.get("XG2JAX_PACKAGE_DIR"):  # a sanitizer run (scripts/asan.sh): import its package tree
    sys.meta_path = [f for f in sys.meta_path if "ScikitBuild" not in type(f).__name__]
    sys.path.insert(0, os.environ["XG2JAX_PACKAGE_DIR"])
"""


def run_bounded(code: str, *, time_limit_s: float, memory_limit_bytes: int) -> str:
    """Runs ``PACKAGE_PRELUDE + code`` with ``python -c``; returns its stdout. Fails the calling test when
    the child runs past ``time_limit_s`` or exits with a nonzero status (negative: killed by a signal)."""

    def limit():
        if "asan" not in os.environ.get("LD_PRELOAD", ""):
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit_bytes, memory_limit_bytes))

    try:
        p = subprocess.run([sys.executable, "-c", PACKAGE_PRELUDE + code], capture_output=True, text=True,
                           timeout=time_limit_s, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {time_limit_s} s")
    assert p.returncode == 0, f"exit status {p.returncode} (negative: killed by signal)\n{p.stderr[-3000:]}"
    return p.stdout
