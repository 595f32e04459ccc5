"""Many devices and hosts, each in fresh subprocesses (XLA_FLAGS must be set before JAX starts):

- shard_map over 8 CPU devices (``--xla_force_host_platform_device_count=8``) gives the same tokens as
  one device;
- plain jit over inputs sharded over those devices raises the clear error (and advances nothing);
- 2 processes under ``jax.distributed`` on localhost (4 CPU devices each, gloo collectives), each owning
  the matchers of its own rows, decode the sharded batch to the same tokens.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HELPER = Path(__file__).with_name("jax_helpers.py")
TIMEOUT_S = 300


def _run(mode: str, tmp_path: Path, devices: int, extra_env: dict | None = None, tag: str = "") -> subprocess.Popen:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", **(extra_env or {}))
    out = tmp_path / f"{mode}{tag}.json"
    return subprocess.Popen([sys.executable, str(HELPER), mode, str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _result(proc: subprocess.Popen, path: Path) -> dict:
    try:
        log, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        log, _ = proc.communicate()
        pytest.fail(f"subprocess timed out after {TIMEOUT_S} s:\n{log[-3000:]}")
    assert proc.returncode == 0, f"subprocess failed (exit {proc.returncode}):\n{log[-3000:]}"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("single")
    return _result(_run("single", tmp, 1), tmp / "single.json")


def test_shard_map_over_8_devices_equals_one_device(single, tmp_path):
    sharded = _result(_run("sharded", tmp_path, 8), tmp_path / "sharded.json")
    assert sharded["num_devices"] == 8
    assert sharded["tokens"] == single["tokens"]
    assert sharded["lengths"] == single["lengths"]


def test_plain_jit_over_sharded_inputs_raises_clear_error(tmp_path):
    result = _result(_run("plain_jit", tmp_path, 8), tmp_path / "plain_jit.json")
    assert result["error"] is not None, "plain jit over sharded inputs must not run"
    assert "sharded over a mesh with axes {'batch': 8} under plain jax.jit" in result["error"]
    assert "jax.shard_map" in result["error"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_under_jax_distributed_equal_one_device(single, tmp_path):
    coord = f"localhost:{_free_port()}"
    procs = [_run("distributed", tmp_path, 4, {"XG_COORD": coord, "XG_PROC": str(i)}, tag=str(i)) for i in range(2)]
    try:
        # Process 0 writes the gathered result; process 1 must exit cleanly too.
        result = _result(procs[0], tmp_path / "distributed0.json")
        log, _ = procs[1].communicate(timeout=TIMEOUT_S)
        assert procs[1].returncode == 0, log[-3000:]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert (result["num_processes"], result["num_devices"]) == (2, 8)
    assert result["tokens"] == single["tokens"]
    assert result["lengths"] == single["lengths"]
