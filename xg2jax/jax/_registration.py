"""Registration of the grammar-step FFI targets: one ``registrations()`` table, registered once at import.

The handlers live in ``xg2jax._core`` (CPU, built when jaxlib's XLA FFI headers were found at build time)
and ``xg2jax._ffi_cuda`` (CUDA, built when a CUDA toolkit was found; cudart is linked statically so the
import needs no driver). The CUDA module gets the host step function from ``_core`` so both see one
handle registry.
"""

from __future__ import annotations

import jax

from xg2jax import _core

TARGET = "xg2jax_grammar_step"

try:  # built only where a CUDA toolkit was found
    from xg2jax import _ffi_cuda
except ImportError:  # pragma: no cover - depends on the build machine
    _ffi_cuda = None


def registrations() -> dict[str, dict[str, object]]:
    """``{target name: {platform: handler capsule}}`` for every handler this build has."""
    handlers: dict[str, object] = dict(_core.ffi_handlers())
    if _ffi_cuda is not None:
        _ffi_cuda.set_step_function(_core.step_function())
        handlers["CUDA"] = _ffi_cuda.handler()
    return {TARGET: handlers}


def _register_all() -> frozenset[str]:
    platforms = set()
    for name, by_platform in registrations().items():
        for platform, capsule in by_platform.items():
            jax.ffi.register_ffi_target(name, capsule, platform=platform)
            platforms.add(platform.lower())
    return frozenset(platforms)


#: Platforms (lower case: "cpu", "cuda") with a registered grammar-step handler.
REGISTERED_PLATFORMS = _register_all()
