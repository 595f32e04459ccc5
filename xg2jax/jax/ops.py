"""Low-level ops for any jitted decode loop: ``next_token_mask`` and ``apply_token_bitmask``.

``next_token_mask(state, last_tokens)`` is one fused grammar step: each row's matcher is advanced by the
token sampled last (-1: do not advance) and the packed bitmask of the next token is written, in a
single XLA custom call with ``has_side_effect=True`` (without it XLA may CSE, DCE or hoist the call out
of the loop; one fused call per step also keeps advance-then-fill ordered without fake dependencies).
Where no custom call can run (TPU), the same step goes through ``io_callback`` into the same C++
function: the path is chosen in Python by backend (see :func:`step_path`).
"""

from __future__ import annotations

import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from xg2jax import _core
from xg2jax.jax._registration import REGISTERED_PLATFORMS, TARGET
from xg2jax.jax.state import GrammarState

__all__ = ["next_token_mask", "shard_next_token_mask", "apply_token_bitmask", "step_path", "Path"]

Path = Literal["auto", "ffi", "callback"]
_DEFAULT_MAX_THREADS = 8


def step_path(path: Path = "auto", *, platform: str | None = None) -> Literal["ffi", "callback"]:
    """The step implementation for ``platform`` (default: JAX's default backend).

    ``"auto"`` takes the FFI custom call where this build registered a handler for the platform (CPU;
    CUDA when built with a CUDA toolkit) and the io_callback path elsewhere (TPU). ``"ffi"`` on a
    platform without a handler raises instead of falling back.
    """
    platform = (platform or jax.default_backend()).lower()
    platform = "cuda" if platform == "gpu" else platform
    if path == "callback":
        return "callback"
    if path == "ffi":
        if platform not in REGISTERED_PLATFORMS:
            raise ValueError(f"next_token_mask: no grammar-step FFI handler for platform '{platform}' in this build "
                             f"(registered: {sorted(REGISTERED_PLATFORMS)}); use path='callback'")
        return "ffi"
    if path != "auto":
        raise ValueError(f"next_token_mask: path must be 'auto', 'ffi' or 'callback', got {path!r}")
    return "ffi" if platform in REGISTERED_PLATFORMS else "callback"


def _attrs(strict: bool, max_threads: int) -> dict[str, np.int32]:
    """FFI attributes, normalised in one place: the handler binds int32 attributes, and outside jit
    equal values of different Python types would share one cached executable."""
    return {"strict": np.int32(1 if strict else 0), "max_threads": np.int32(max_threads)}


def _check_not_auto_sharded(*operands: jax.Array) -> None:
    """Plain jit over inputs sharded across devices would run the side-effecting step per device (or
    fail deep in XLA's partitioner); only jax.shard_map gives each device its own rows."""
    for x in operands:
        sharding = getattr(jax.typeof(x), "sharding", None)
        mesh = getattr(sharding, "mesh", None)
        if mesh is None or not mesh.shape:
            continue
        auto = [name for name, kind in zip(mesh.axis_names, mesh.axis_types) if "Manual" not in str(kind)]
        if auto and np.prod([mesh.shape[a] for a in auto]) > 1:
            raise ValueError(
                "next_token_mask: its inputs are sharded over a mesh with axes "
                f"{dict((a, mesh.shape[a]) for a in auto)} under plain jax.jit; the grammar step advances "
                "matchers on the host and must see each row exactly once. Run it inside jax.shard_map over "
                "the batch axis (xg2jax.jax.shard_next_token_mask, or constrained_sample(..., mesh=...)).")


def _host_step(handles, tokens, *, words: int, strict: bool, max_threads: int):
    handles = np.ascontiguousarray(handles, dtype=np.int32)
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    bitmask = np.empty((handles.shape[0], words), np.int32)
    status = np.empty((handles.shape[0],), np.int32)
    _core.grammar_step(handles, tokens, bitmask, status, strict, max_threads)
    return bitmask, status


def _step_call(handles, tokens, *, words: int, strict: bool, max_threads: int, path: str):
    out_types = (jax.ShapeDtypeStruct((handles.shape[0], words), jnp.int32),
                 jax.ShapeDtypeStruct(handles.shape, jnp.int32))
    if path == "ffi":
        return jax.ffi.ffi_call(TARGET, out_types, has_side_effect=True)(handles, tokens, **_attrs(strict, max_threads))
    fn = functools.partial(_host_step, words=words, strict=strict, max_threads=max_threads)
    return io_callback(fn, out_types, handles, tokens, ordered=False)


def _batched_step(words: int, strict: bool, max_threads: int, path: str):
    """The step with an explicit vmap policy: vmapped handles flatten into one larger batch (one call);
    vmapping tokens over unbatched handles would advance the same matchers several times: an error."""

    @jax.custom_batching.custom_vmap
    def step(handles, tokens):
        return _step_call(handles, tokens, words=words, strict=strict, max_threads=max_threads, path=path)

    @step.def_vmap
    def _rule(axis_size, in_batched, handles, tokens):
        handles_b, tokens_b = in_batched
        if not handles_b:
            raise ValueError("next_token_mask: vmap over last_tokens with unbatched handles would advance the same "
                             "matchers once per vmapped element; vmap the GrammarState too (one matcher per row)")
        if not tokens_b:
            tokens = jnp.broadcast_to(tokens, (axis_size,) + tokens.shape)
        shape = handles.shape
        mask, status = step(handles.reshape(-1), tokens.reshape(-1))
        return (mask.reshape(shape + (words,)), status.reshape(shape)), (True, True)

    return step


def next_token_mask(
    state: GrammarState,
    last_tokens: jax.Array,
    *,
    strict: bool = True,
    max_threads: int = _DEFAULT_MAX_THREADS,
    path: Path = "auto",
) -> tuple[jax.Array, GrammarState]:
    """Advance every row's matcher by its last token, then return the next token's bitmask.

    Parameters
    ----------
    state : GrammarState
        The batch's matchers (``state.handles``: int32[B]).
    last_tokens : int32[B]
        The token sampled for each row at the previous step; -1 leaves the row's matcher as it is (the
        first step after prefill, rows that have finished).
    strict : bool
        A token the grammar rejects raises (``JaxRuntimeError`` naming the row), leaving every matcher
        of the batch unchanged. With ``strict=False`` the row is left unchanged and flagged
        ``StepStatus.REJECTED`` instead.
    max_threads : int
        Host threads that fill the batch's masks.
    path : {"auto", "ffi", "callback"}
        See :func:`step_path`.

    Returns
    -------
    bitmask : int32[B, state.mask_words]
        Packed allowed-token mask (bit ``t % 32`` of word ``t // 32``, 1 = allowed); all ones for rows
        without a grammar.
    state : GrammarState
        The same handles with this step's status bits.
    """
    handles = state.handles
    last_tokens = jnp.asarray(last_tokens) if not isinstance(last_tokens, jax.Array) else last_tokens
    if handles.dtype != jnp.int32 or handles.ndim != 1:
        raise TypeError(f"next_token_mask: state.handles must be int32[B], got {handles.dtype}{list(handles.shape)}")
    if last_tokens.dtype != jnp.int32:
        raise TypeError(f"next_token_mask: last_tokens must have dtype int32, got {last_tokens.dtype}")
    if last_tokens.shape != handles.shape:
        raise ValueError(f"next_token_mask: last_tokens has shape {tuple(last_tokens.shape)}, expected "
                         f"{tuple(handles.shape)} (one token per row)")
    if int(max_threads) < 1:
        raise ValueError(f"next_token_mask: max_threads must be >= 1, got {max_threads}")
    _check_not_auto_sharded(handles, last_tokens)
    step = _batched_step(int(state.mask_words), bool(strict), int(max_threads), step_path(path))
    bitmask, status = step(handles, last_tokens)
    return bitmask, GrammarState(handles, status, state.mask_words)


def shard_next_token_mask(mesh: jax.sharding.Mesh, batch_axis: str | tuple[str, ...], **kwargs):
    """``next_token_mask`` inside ``jax.shard_map`` over ``batch_axis`` of ``mesh``: each device's
    handler serves its own rows (concurrently; the registry locks per matcher). Under
    ``jax.distributed`` each process owns the matchers of its local rows. Keyword arguments go to
    :func:`next_token_mask`."""
    from jax.sharding import PartitionSpec as P

    spec = P(batch_axis)

    def local(state: GrammarState, last_tokens: jax.Array):
        return next_token_mask(state, last_tokens, **kwargs)

    def run(state: GrammarState, last_tokens: jax.Array):
        specs = GrammarState(spec, spec, state.mask_words)
        return jax.shard_map(local, mesh=mesh, in_specs=(specs, spec), out_specs=(spec, specs))(state, last_tokens)

    return run


def apply_token_bitmask(logits: jax.Array, bitmask: jax.Array, *, constrained: jax.Array | None = None) -> jax.Array:
    """Logits with forbidden tokens set to -inf (device-side; jit-, vmap- and shard-friendly).

    Parameters
    ----------
    logits : float[..., V]
        May be wider than the bitmask's vocabulary (columns past ``32 * W`` are forbidden in
        constrained rows) or narrower (extra bits are ignored).
    bitmask : int32[..., W]
        Packed mask, LSB first, 1 = allowed (unpacked with ``& (1 << j)``, which every backend has).
    constrained : bool[...], optional
        Rows where it is False are returned untouched (rows without a grammar). Default: all rows.
    """
    if bitmask.dtype != jnp.int32:
        raise TypeError(f"apply_token_bitmask: the bitmask must have dtype int32, got {bitmask.dtype}")
    if not jnp.issubdtype(logits.dtype, jnp.floating):
        raise TypeError(f"apply_token_bitmask: logits must be floating point, got {logits.dtype}")
    if logits.shape[:-1] != bitmask.shape[:-1]:
        raise ValueError(f"apply_token_bitmask: logits {tuple(logits.shape)} and bitmask {tuple(bitmask.shape)} "
                         "disagree on the leading (row) dimensions")
    vocab, words = logits.shape[-1], bitmask.shape[-1]
    n = min(vocab, 32 * words)
    bit = jnp.left_shift(jnp.int32(1), jnp.arange(32, dtype=jnp.int32))
    allowed = ((bitmask[..., :, None] & bit) != 0).reshape(bitmask.shape[:-1] + (32 * words,))[..., :n]
    if vocab > n:
        allowed = jnp.concatenate([allowed, jnp.zeros(allowed.shape[:-1] + (vocab - n,), bool)], axis=-1)
    if constrained is not None:
        allowed = allowed | ~constrained.astype(bool)[..., None]
    return jnp.where(allowed, logits, jnp.asarray(-jnp.inf, logits.dtype))
