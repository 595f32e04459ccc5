"""xg2jax: structured decoding for JAX, on a C++ Earley engine.

Map of the key types, in the order a user meets them:

- :class:`TokenizerInfo` (``VocabType``): the vocabulary, from a tokenizer file or a token list.
- :class:`Grammar`: parsed EBNF (xgrammar / GBNF dialect); ``str()`` prints it back.
- :class:`GrammarCompiler` -> :class:`CompiledGrammar`: a grammar compiled for one vocabulary;
  token masks are built lazily per parser state and shared by all matchers.
- :class:`GrammarMatcher`: one generation; ``fill_next_token_bitmask`` then ``accept_token``;
  :class:`BatchGrammarMatcher` for many at once.
- :class:`Limits`: resource limits for untrusted grammars (``GrammarCompiler(..., limits=...)``);
  exceeding one raises :class:`LimitError`; other bad input raises :class:`InputError` (both are ``ValueError`` s
  and ``RuntimeError`` s, as xgrammar raises ``RuntimeError``). :func:`set_max_recursion_depth` /
  :func:`max_recursion_depth` set the nesting depth that ``Limits`` follow by default, process-wide.
- :func:`allocate_token_bitmask`, :func:`apply_token_bitmask_inplace`: packed int32 bitmasks
  (bit ``t % 32`` of word ``t // 32``, 1 = allowed), the same layout as xgrammar.
- Tool calling: :func:`get_model_structural_tag` (a model family's tool-call format as a structural tag),
  ``GrammarCompiler.compile_structural_tag``; ``xg2jax.structural_tag`` and ``xg2jax.xml_styles`` hold the formats.

Moving from xgrammar is an import change: ``import xg2jax as xgr``.
"""

from xg2jax.compiler import (
    CompiledGrammar,
    Grammar,
    GrammarCompiler,
    InputError,
    LimitError,
    Limits,
    get_max_recursion_depth,
    max_recursion_depth,
    set_max_recursion_depth,
)
from xg2jax.matcher import (
    BatchGrammarMatcher,
    GrammarMatcher,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    batch_fill_next_token_bitmask,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)
from xg2jax.model_formats import get_model_structural_tag, register_model_structural_tag
from xg2jax.serialization import DeserializeFormatError, DeserializeVersionError, get_serialization_version
from xg2jax.structural_tag import StructuralTagItem
from xg2jax.tokenizer_info import TokenizerInfo
from xg2jax.vocab_decoding import VocabType

__version__ = "0.1.0"

__all__ = [
    "TokenizerInfo",
    "VocabType",
    "Grammar",
    "GrammarCompiler",
    "CompiledGrammar",
    "Limits",
    "LimitError",
    "InputError",
    "get_max_recursion_depth",
    "set_max_recursion_depth",
    "max_recursion_depth",
    "GrammarMatcher",
    "BatchGrammarMatcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "batch_fill_next_token_bitmask",
    "get_bitmask_shape",
    "bitmask_dtype",
    "reset_token_bitmask",
    "get_model_structural_tag",
    "register_model_structural_tag",
    "StructuralTagItem",
    "get_serialization_version",
    "DeserializeFormatError",
    "DeserializeVersionError",
]
