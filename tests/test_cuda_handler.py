"""The CUDA grammar-step handler: built wherever a CUDA toolkit was found at build time, registered at
import, and (on a machine with a GPU backend) giving the same masks as the CPU handler."""

from __future__ import annotations

import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xg2jax
import xg2jax.jax as xj
from jax_helpers import byte_tokenizer

HAVE_TOOLKIT = bool(shutil.which("nvcc")) or os.path.exists("/usr/local/cuda/include/cuda_runtime_api.h")


@pytest.mark.skipif(not HAVE_TOOLKIT, reason="no CUDA toolkit (nvcc) on this machine: the CUDA handler is not built")
def test_cuda_handler_is_built_and_registered():
    from xg2jax import _ffi_cuda  # built by CMake when it found the toolkit

    assert type(_ffi_cuda.handler()).__name__ == "PyCapsule"
    assert "CUDA" in xj.registrations()["xg2jax_grammar_step"]
    assert "cuda" in xj.REGISTERED_PLATFORMS
    assert xj.step_path("auto", platform="gpu") == "ffi"


def _gpu_devices():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


@pytest.mark.skipif(not _gpu_devices(), reason="no GPU backend in this jax: the CUDA handler cannot run here")
def test_cuda_handler_masks_equal_cpu_masks():
    compiler = xg2jax.GrammarCompiler(byte_tokenizer())
    g = compiler.compile_grammar('root ::= "ab" [0-9]+')
    masks = {}
    for device in (jax.devices("cpu")[0], _gpu_devices()[0]):
        with jax.default_device(device), xj.GrammarState.create([g, None, g]) as state:
            step = jax.jit(lambda s, t: xj.next_token_mask(s, t, path="ffi"))
            out = []
            for tok in (-1, ord("a"), ord("b"), ord("7")):
                mask, state = step(state, jnp.asarray([tok, -1, tok], jnp.int32))
                out.append(np.asarray(mask))
            masks[device.platform] = out
    for cpu, gpu in zip(masks["cpu"], masks["gpu"]):
        np.testing.assert_array_equal(cpu, gpu)
