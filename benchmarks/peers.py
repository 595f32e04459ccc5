"""Engine adapters for the mask-time benchmark: xg2jax, xgrammar (eager and dynamic compilation), llguidance.

Every adapter has the same shape, so the runner treats xg2jax as just another engine:

* ``setup(vocab) -> ms``: build the engine's tokenizer object from the shared vocabulary (timed, reported apart).
* ``compile(kind, text) -> ms``: compile one grammar (``kind`` is ``"builtin_json"``, ``"ebnf"`` or ``"json_schema"``,
  ``text`` then being the schema as a JSON string), cold: a fresh compiler per grammar, caches off where the engine
  has a switch, one thread. JSON Schema options are the module-level ``JSON_SCHEMA_OPTIONS`` (below), the same for
  every engine as far as each engine's API allows.
* ``new_matcher()``: a matcher at the start of the grammar (untimed).
* ``fill()``: write the packed next-token bitmask into ``self.mask`` (int32 words, bit ``t % 32`` of word ``t // 32``;
  the runner times this call and nothing else).
* ``accept(token) -> bool``: advance by one token.

All engines get the same token ids and the same decoded bytes; special tokens are never text:

* xg2jax: ``special_token_ids`` and ``stop_token_ids`` are passed as given.
* xgrammar: ``TokenizerInfo`` has no special-token argument and auto-detects none of Gemma's or Qwen's control tokens
  from their spellings; it treats tokens whose spelling is empty as special, so special ids are passed as ``""``.
* llguidance: the tokenizer gets each token's decoded bytes; special tokens are ``b"\\xff" + name`` (llguidance's
  own convention, as in its llama.cpp binding), EOS = the vocabulary's stop tokens.
"""

from __future__ import annotations

import os
import time
from typing import Optional

# One thread everywhere; must be set before the engines' native libraries start their pools.
for _var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np


# JSON Schema compile options shared by every adapter (change them here, or per engine via ``engine.json_options``):
# * any_whitespace: free JSON whitespace between tokens (xgrammar/xg2jax ``any_whitespace=True``, llguidance
#   ``whitespace_flexible: true``), so compact and indented serialisations both match;
# * strict_mode False: the JSON Schema defaults (``additionalProperties`` and extra array items allowed unless the
#   schema says otherwise), as llguidance always does (xgrammar's default ``strict_mode=True`` forbids them); xg2jax
#   keeps its own default True, which means something else there (see XG2JaxEngine);
# * any_order False: properties in schema order (xgrammar's default; llguidance has only this mode);
# * formats: each engine's default (xg2jax ``enforce_formats=True``; xgrammar and llguidance enforce the formats they
#   implement).
JSON_SCHEMA_OPTIONS = {"any_whitespace": True, "strict_mode": False, "any_order": False}


def _ms(t0: int) -> float:
    return (time.perf_counter_ns() - t0) / 1e6


class Engine:
    name = "engine"
    version = "?"

    def __init__(self):
        self.mask: Optional[np.ndarray] = None  # int32 [ceil(V/32)] view of the engine's bitmask

    def setup(self, vocab) -> float:
        raise NotImplementedError

    def compile(self, kind: str, text: Optional[str]) -> float:
        raise NotImplementedError

    def new_matcher(self) -> None:
        raise NotImplementedError

    def fill(self) -> None:
        raise NotImplementedError

    def accept(self, token: int) -> bool:
        raise NotImplementedError

    def release_grammar(self) -> None:
        pass


# ----------------------------------------------------------------------------------------------------------------
# xgrammar
# ----------------------------------------------------------------------------------------------------------------


class XGrammarEngine(Engine):
    def __init__(self, dynamic: bool = False):
        super().__init__()
        import torch
        import xgrammar

        torch.set_num_threads(1)
        self.xgr = xgrammar
        self.dynamic = dynamic
        self.name = "xgrammar-dyn" if dynamic else "xgrammar"
        try:
            from importlib.metadata import version

            self.version = version("xgrammar") + (" (enable_dynamic_compilation)" if dynamic else " (eager)")
        except Exception:
            pass
        self.tok = None
        self.compiled = None
        self.matcher = None
        self.json_options = dict(JSON_SCHEMA_OPTIONS)

    def setup(self, vocab) -> float:
        xgr = self.xgr
        enc = list(vocab.encoded_vocab)
        empty = b"" if vocab.encoded_vocab and isinstance(vocab.encoded_vocab[0], bytes) else ""
        for t in vocab.special_token_ids:
            if t not in vocab.stop_token_ids:
                enc[t] = empty
        t0 = time.perf_counter_ns()
        self.tok = xgr.TokenizerInfo(
            enc,
            xgr.VocabType(vocab.vocab_type),
            vocab_size=vocab.vocab_size,
            stop_token_ids=list(vocab.stop_token_ids),
            add_prefix_space=vocab.add_prefix_space,
        )
        ms = _ms(t0)
        self.bitmask = xgr.allocate_token_bitmask(1, vocab.vocab_size)
        self.mask = self.bitmask.numpy()[0]
        return ms

    def compile(self, kind, text) -> float:
        xgr = self.xgr
        compiler = xgr.GrammarCompiler(
            self.tok, max_threads=1, cache_enabled=False, enable_dynamic_compilation=self.dynamic
        )
        t0 = time.perf_counter_ns()
        if kind == "builtin_json":
            self.compiled = compiler.compile_builtin_json_grammar()
        elif kind == "json_schema":
            self.compiled = compiler.compile_json_schema(text, **self.json_options)
        else:
            self.compiled = compiler.compile_grammar(text, root_rule_name="root")
        return _ms(t0)

    def new_matcher(self):
        self.matcher = self.xgr.GrammarMatcher(self.compiled)

    def fill(self):
        self.matcher.fill_next_token_bitmask(self.bitmask, 0)

    def accept(self, token) -> bool:
        return bool(self.matcher.accept_token(token))

    def release_grammar(self):
        self.compiled = self.matcher = None


# ----------------------------------------------------------------------------------------------------------------
# llguidance
# ----------------------------------------------------------------------------------------------------------------


class _BytesTokenizer:
    """The minimal tokenizer object ``llguidance.TokenizerWrapper`` expects, over decoded token bytes."""

    def __init__(self, vocab, greedy):
        specials = set(vocab.special_token_ids)
        toks = []
        for i, b in enumerate(vocab.decoded):
            if i in specials:
                enc = vocab.encoded_vocab[i]
                name = enc.encode("utf-8") if isinstance(enc, str) else bytes(enc)
                toks.append(b"\xff" + (name or f"<special_{i}>".encode()))
            else:
                toks.append(b)
        self.tokens = toks
        self.eos_token_id = vocab.stop_token_ids[0] if vocab.stop_token_ids else None
        self.bos_token_id = None
        self.special_token_ids = sorted(specials)
        self._greedy = greedy

    def __call__(self, text):
        if isinstance(text, str):
            text = text.encode("utf-8")
        return self._greedy.encode(text)


class LLGuidanceEngine(Engine):
    name = "llguidance"

    def __init__(self):
        super().__init__()
        import llguidance

        self.llg = llguidance
        self.version = getattr(llguidance, "__version__", "?")
        self.tok = None
        self.template = None
        self.matcher = None
        self.json_options = dict(JSON_SCHEMA_OPTIONS)

    def setup(self, vocab) -> float:
        from workloads import GreedyTokenizer

        llg = self.llg
        wrapper_src = _BytesTokenizer(vocab, GreedyTokenizer(vocab))
        t0 = time.perf_counter_ns()
        self.tok = llg.LLTokenizer(
            llg.TokenizerWrapper(wrapper_src), n_vocab=vocab.vocab_size, eos_token=list(vocab.stop_token_ids)
        )
        ms = _ms(t0)
        self.nbytes = ((vocab.vocab_size + 31) // 32) * 4
        self.mask = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
        self.ptr = self.mask.ctypes.data
        return ms

    def grammar_text(self, kind, text) -> str:
        llg = self.llg
        if kind == "builtin_json":
            # The builtin JSON grammar of xgrammar/xg2jax: an object or array at the top, any JSON inside, free
            # whitespace.
            return llg.LLMatcher.grammar_from_json_schema(
                {"type": ["object", "array"]}, overrides={"whitespace_flexible": True}
            )
        if kind == "json_schema":
            # llguidance always keeps schema property order and the JSON Schema defaults for additional
            # properties/items, so only the whitespace option maps.
            return llg.LLMatcher.grammar_from_json_schema(
                text, overrides={"whitespace_flexible": bool(self.json_options.get("any_whitespace", True))}
            )
        return llg.grammar_from("gbnf", text)

    def compile(self, kind, text) -> float:
        t0 = time.perf_counter_ns()
        g = self.grammar_text(kind, text)
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        ms = _ms(t0)
        if m.is_error():
            raise RuntimeError(f"llguidance: {m.get_error()}")
        self.template = m
        return ms

    def new_matcher(self):
        self.matcher = self.template.deep_copy()

    def fill(self):
        self.matcher.unsafe_compute_mask_ptr(self.ptr, self.nbytes)

    def accept(self, token) -> bool:
        return bool(self.matcher.consume_token(token))

    def release_grammar(self):
        self.template = self.matcher = None


# ----------------------------------------------------------------------------------------------------------------
# xg2jax
# ----------------------------------------------------------------------------------------------------------------


class XG2JaxEngine(Engine):
    """xg2jax with its default lazy (JIT) mask building, or with ``precompute_masks=True`` (``xg2jax-eager``)."""

    def __init__(self, eager: bool = False, lenient: bool = False):
        super().__init__()
        import xg2jax

        self.x = xg2jax
        self.eager = eager
        self.name = "xg2jax-eager" if eager else "xg2jax-lenient" if lenient else "xg2jax"
        self.version = getattr(xg2jax, "__version__", "?") + (" (precompute_masks)" if eager else " (lazy)") + (
            " (strict_mode=False)" if lenient else "")
        self.source = getattr(xg2jax, "__file__", "?")
        self.tok = None
        self.compiled = None
        self.matcher = None
        # xg2jax's strict_mode is not xgrammar's: it never changes additionalProperties / extra items (those follow
        # JSON Schema's defaults in both modes); True (its default) makes a keyword no grammar can enforce
        # (uniqueItems over an unbounded domain) an error, False ignores it (a documented approximation that would
        # accept invalid instances). So xg2jax keeps its default here; ``xg2jax-lenient`` runs with False, which
        # is the mode comparable to xgrammar's (it approximates what it cannot enforce).
        self.json_options = dict(JSON_SCHEMA_OPTIONS, strict_mode=not lenient)

    def setup(self, vocab) -> float:
        x = self.x
        kwargs = dict(
            vocab_type=x.VocabType(vocab.vocab_type),
            vocab_size=vocab.vocab_size,
            stop_token_ids=list(vocab.stop_token_ids),
            special_token_ids=list(vocab.special_token_ids),
        )
        if _accepts_kw(x.TokenizerInfo, "add_prefix_space"):
            kwargs["add_prefix_space"] = vocab.add_prefix_space
        t0 = time.perf_counter_ns()
        self.tok = x.TokenizerInfo(list(vocab.encoded_vocab), **kwargs)
        ms = _ms(t0)
        bm = np.asarray(x.allocate_token_bitmask(1, vocab.vocab_size))
        self.bitmask = bm
        self.mask = bm[0]
        return ms

    def compile(self, kind, text) -> float:
        x = self.x
        ckw = {"cache_enabled": False} if _accepts_kw(x.GrammarCompiler, "cache_enabled") else {}
        compiler = x.GrammarCompiler(self.tok, max_threads=1, **ckw)
        kw = {"precompute_masks": True} if self.eager else {}
        t0 = time.perf_counter_ns()
        if kind == "builtin_json":
            self.compiled = compiler.compile_builtin_json_grammar(**kw)
        elif kind == "json_schema":
            self.compiled = compiler.compile_json_schema(text, **self.json_options, **kw)
        else:
            self.compiled = compiler.compile_grammar(text, root_rule_name="root", **kw)
        return _ms(t0)

    def new_matcher(self):
        self.matcher = self.x.GrammarMatcher(self.compiled)

    def fill(self):
        self.matcher.fill_next_token_bitmask(self.bitmask, 0)

    def accept(self, token) -> bool:
        return bool(self.matcher.accept_token(token))

    def release_grammar(self):
        self.compiled = self.matcher = None


def _accepts_kw(fn, kw: str) -> bool:
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    return kw in sig.parameters or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


# ----------------------------------------------------------------------------------------------------------------

ENGINE_ALIASES = {
    "xgrammar": ["xgrammar", "xgrammar-dyn"],  # both compilation modes
    "xgrammar-eager": ["xgrammar"],
    "xgrammar-dyn": ["xgrammar-dyn"],
    "xgrammar-jit": ["xgrammar-dyn"],
    "llguidance": ["llguidance"],
    "xg2jax": ["xg2jax"],
    "xg2jax-eager": ["xg2jax-eager"],
    "xg2jax-lenient": ["xg2jax-lenient"],
}
PEERS = ("xgrammar", "xgrammar-dyn", "llguidance")


def expand_engines(spec: str) -> list[str]:
    out: list[str] = []
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        if part not in ENGINE_ALIASES:
            raise SystemExit(f"unknown engine {part!r}; choose from {', '.join(ENGINE_ALIASES)}")
        for e in ENGINE_ALIASES[part]:
            if e not in out:
                out.append(e)
    return out


def make_engine(name: str) -> Engine:
    if name == "xgrammar":
        return XGrammarEngine(dynamic=False)
    if name == "xgrammar-dyn":
        return XGrammarEngine(dynamic=True)
    if name == "llguidance":
        return LLGuidanceEngine()
    if name == "xg2jax":
        return XG2JaxEngine(eager=False)
    if name == "xg2jax-eager":
        return XG2JaxEngine(eager=True)
    if name == "xg2jax-lenient":
        return XG2JaxEngine(lenient=True)
    raise ValueError(name)
