"""Grammar, GrammarCompiler and CompiledGrammar: from grammar text to a compiled grammar.

Usage order: ``TokenizerInfo`` -> ``GrammarCompiler(tokenizer_info)`` ->
``compiler.compile_grammar(ebnf)`` (or ``compile_regex(pattern)``) -> ``GrammarMatcher(compiled)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import re

from xg2jax import _core
from xg2jax.tokenizer_info import TokenizerInfo

__all__ = ["Grammar", "GrammarCompiler", "CompiledGrammar", "Limits", "LimitError", "InputError", "get_max_recursion_depth",
           "set_max_recursion_depth", "max_recursion_depth"]

Limits = _core.Limits
Limits.__doc__ = """Resource limits of the engine, for grammars that arrive with requests (keyword-only).

Each bound turns an input whose shape or size would overflow the stack, never return or exhaust memory
into a :class:`LimitError` (a ``ValueError``) that names the limit. Defaults fit every grammar of the project's corpora.

Parameters
----------
max_nesting_depth : int, default 0
    Expression nesting (groups and repetition operators) in one rule. 0 follows the process-wide setting,
    :func:`get_max_recursion_depth` (10000 unless set), read whenever a grammar is parsed or checked; the
    attribute reads the depth in force. Parsers and every pass that walks an expression recursively take a
    stack frame per level and check the calling thread's stack as they go: a grammar within the depth but
    too deep for that stack raises :class:`LimitError` ("needs more stack than this thread has left").
max_items_per_set : int, default 2**20
    Earley items in one set of a parse (16 bytes each).
max_work_per_byte : int, default 2**24
    Items processed plus items scanned by completions while reading one byte (~0.1 s of one core).
    Highly ambiguous grammars (``root ::= root root | "a"``) grow it with every byte.
max_resume_chain : int, default 64
    Rules a mask fill climbs through that complete at once (unit-rule chains); past it the fill leaves the
    decision to the live parser (exact, slower).
max_automaton_states : int, default 2**19
    DFA states of a grammar's automata (a transition row of up to 1 KiB each), and NFA states of any one
    rule's (bounded repetitions are unrolled). Checked while compiling.
max_subset_members : int, default 2**24
    NFA states summed over the subsets that the DFA states stand for while compiling (4 bytes each, and the
    time to build them): nested bounded repetitions of ambiguous bodies reach it long before the state limit.
max_fill_work : int, default 2**28
    Parser work of one mask fill, everything included (~1.5 s of one core): the mask entries it builds on
    first visits (a walk of the vocabulary per grammar state), context entries and the uncertain tokens it
    checks against the live parser. Each byte is bounded by ``max_work_per_byte``, but a first fill may
    build hundreds of entries. Past it the fill raises and the matcher keeps the error until ``reset()``.
"""

InputError = _core.InputError
InputError.__module__ = "xg2jax"
InputError.__doc__ = """Bad input to the engine: a malformed grammar, regex or schema text, an invalid token id, a
bitmask of the wrong shape, ... The message says what and where.

Both a ``ValueError`` and a ``RuntimeError`` (xgrammar raises ``RuntimeError`` for the same inputs, so code written
for it keeps catching them).
"""

LimitError = _core.LimitError
LimitError.__module__ = "xg2jax"
LimitError.__doc__ = """A resource limit (:class:`Limits`) was exceeded: the input is valid but too costly to serve.

An :class:`InputError` (so a ``ValueError`` and a ``RuntimeError``). The message names the limit
(``Limits.max_work_per_byte``, ...). A :class:`GrammarMatcher` that met one keeps it: every later call raises it
again until ``reset()``.
"""


def get_max_recursion_depth() -> int:
    """The process-wide nesting depth (xgrammar's name): what :class:`Limits` ``max_nesting_depth`` is unless a
    ``Limits`` sets its own. 10000 (xgrammar's default) unless :func:`set_max_recursion_depth` changed it; here the
    bound is on expression nesting in one rule, which real grammars keep far below 100."""
    return _core.get_max_recursion_depth()


def set_max_recursion_depth(max_recursion_depth: int) -> None:
    """Set the process-wide nesting depth (see :func:`get_max_recursion_depth`) for every grammar parsed or checked
    from now on, in every thread. Not thread-safe with respect to grammars being compiled meanwhile, as in xgrammar.

    Raises
    ------
    InputError
        Unless ``1 <= max_recursion_depth <= 10000``; also a ``RuntimeError``, as xgrammar raises.
    """
    if isinstance(max_recursion_depth, bool) or not isinstance(max_recursion_depth, int):
        raise TypeError(f"set_max_recursion_depth: expected an int, got {type(max_recursion_depth).__name__}")
    _core.set_max_recursion_depth(max(min(max_recursion_depth, 2**62), -2**62))


@contextlib.contextmanager
def max_recursion_depth(max_recursion_depth: int):
    """Context manager: the process-wide nesting depth is ``max_recursion_depth`` inside the block, and what it was
    before after it (xgrammar's ``max_recursion_depth``)."""
    before = get_max_recursion_depth()
    set_max_recursion_depth(max_recursion_depth)
    try:
        yield
    finally:
        set_max_recursion_depth(before)


def _grammar_bytes(text: str, what: str) -> bytes:
    """Grammar text as UTF-8 bytes; invalid UTF-8 (lone surrogates in a str) reaches the engine,
    which reports it with line:column."""
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    raise TypeError(f"{what}: expected str, got {type(text).__name__}")


def _as_grammar(g, what: str) -> "Grammar":
    if not isinstance(g, Grammar):
        raise TypeError(f"{what}: expected Grammar objects, got {type(g).__name__}")
    return g


class Grammar:
    """A parsed grammar (the engine's IR). ``str(grammar)`` prints EBNF that parses back to it."""

    def __init__(self, handle: "_core.Grammar") -> None:
        self._handle = handle

    @staticmethod
    def from_ebnf(ebnf_string: str, *, root_rule_name: str = "root") -> "Grammar":
        """Parse EBNF text (xgrammar / GBNF dialect).

        Raises
        ------
        ValueError
            On a syntax error (``"EBNF parser error at line L, column C: <what>"`` and the offending line), an
            undefined rule, or an unknown root rule.
        """
        return Grammar(_core.Grammar.from_ebnf(_grammar_bytes(ebnf_string, "Grammar.from_ebnf"), root_rule_name))

    @staticmethod
    def from_json_schema(schema, *, any_whitespace: bool = True, indent: int | None = None,
                         separators: tuple[str, str] | None = None, strict_mode: bool = True,
                         max_whitespace_cnt: int | None = None, any_order: bool = False,
                         enforce_formats: bool = True, refs: dict | None = None,
                         plain_integers: bool = True) -> "Grammar":
        """The grammar of the JSON texts valid under a JSON Schema (str, dict, or pydantic model class).

        Options follow xgrammar: ``any_whitespace`` allows any JSON whitespace between tokens (else the fixed
        ``separators``, default ``(", ", ": ")``); ``max_whitespace_cnt`` bounds each whitespace run;
        ``strict_mode`` makes what no grammar can enforce (``uniqueItems``, backreferences in ``pattern``) an error;
        with False it is approximated by a wider language (``uniqueItems`` ignored, a backreference widened to its
        group's pattern; docs/json_schema.md); ``any_order`` accepts declared properties in any order; ``enforce_formats`` (an xg2jax
        extension, default True as in xgrammar) checks ``format`` (JSON Schema's default: annotation only);
        ``refs`` (an xg2jax extension) maps URIs to further schema documents that ``$ref`` may name (nothing is
        ever fetched); ``plain_integers`` (an xg2jax extension, default True) spells integers as plain JSON
        integers (``-12``; False also accepts ``1.0`` and ``-0``, which JSON Schema counts as integers).
        Keywords not supported raise ``UnsupportedSchemaError`` (a ``ValueError``) naming the JSON pointer of the
        keyword (docs/json_schema.md lists them); ``indent`` with ``any_whitespace=False`` raises too.
        """
        from xg2jax.json_schema import json_schema_to_ebnf

        return Grammar.from_ebnf(json_schema_to_ebnf(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators, strict_mode=strict_mode,
            max_whitespace_cnt=max_whitespace_cnt, any_order=any_order, enforce_formats=enforce_formats,
            refs=refs, plain_integers=plain_integers))

    @staticmethod
    def from_structural_tag(structural_tag=None, triggers=None, *, tags=None) -> "Grammar":
        """The grammar of a structural tag (xgrammar 0.2.9's format; ``xg2jax.structural_tag`` lists the formats).

        Parameters
        ----------
        structural_tag : dict, str or pydantic model
            ``{"type": "structural_tag", "format": {...}}`` as a dict, its JSON text, or an object with
            ``model_dump_json()``. The legacy form passes a list of :class:`~xg2jax.structural_tag.StructuralTagItem`
            here (or as ``tags=``) and the trigger strings as ``triggers``.

        Raises
        ------
        xg2jax.structural_tag.StructuralTagError
            A malformed tag or an unsupported feature (a ``ValueError``), naming the JSON path of the node.
        """
        from xg2jax.structural_tag import structural_tag_to_ebnf, structural_tag_value

        return Grammar.from_ebnf(structural_tag_to_ebnf(structural_tag_value(structural_tag, triggers, tags)))

    def serialize_json(self) -> str:
        """This grammar as JSON (``xg2jax.serialization``: its printed EBNF and root rule)."""
        from xg2jax import serialization as ser

        return ser.dump("Grammar", {"ebnf": str(self), "root_rule_name": self.root_rule_name})

    @staticmethod
    def deserialize_json(json_string: str) -> "Grammar":
        """The grammar :meth:`serialize_json` wrote.

        Raises
        ------
        xg2jax.serialization.DeserializeFormatError, DeserializeVersionError
        """
        from xg2jax import serialization as ser

        doc = ser.load(json_string, "Grammar")
        return Grammar.from_ebnf(ser.field(doc, "ebnf", "Grammar", str),
                                 root_rule_name=ser.field(doc, "root_rule_name", "Grammar", str))

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """A grammar matching what any one of ``grammars`` matches (each keeps its own rule names)."""
        return Grammar(_core.Grammar.combine([_as_grammar(g, "Grammar.union")._handle for g in grammars], False))

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """A grammar matching what ``grammars`` match, one after the other."""
        return Grammar(_core.Grammar.combine([_as_grammar(g, "Grammar.concat")._handle for g in grammars], True))

    @staticmethod
    def from_lark(lark_string: str, start: str = "start", *, tokenizer_info=None,
                  named_grammars: dict | None = None) -> "Grammar":
        """The grammar of a Lark grammar's start rule (xg2jax.lark lists the dialect).

        ``tokenizer_info`` resolves special tokens named by their text (``<|tool|>``; ``<[1,5-7]>`` names ids and
        needs none). ``named_grammars`` maps names to a :class:`Grammar` or the text of a Lark grammar, which
        ``@name`` in the grammar (and in the named Lark texts) refers to.

        Raises
        ------
        xg2jax.lark.LarkError
            (a ``ValueError`` and a ``RuntimeError``) naming the line, column and construct; also for a bad
            name or a cycle among the named grammars.
        TypeError
            If ``named_grammars`` is not a dict of names to Grammar objects or Lark strings.
        """
        from xg2jax.lark import LarkError, lark_to_ebnf

        if named_grammars is not None:
            if not isinstance(named_grammars, dict):
                raise TypeError(f"Grammar.from_lark: named_grammars must be a dictionary, got "
                                f"{type(named_grammars).__name__}")
            for name, value in named_grammars.items():
                if not isinstance(name, str):
                    raise TypeError(f"Grammar.from_lark: named grammar names must be strings, got {name!r}")
                if not isinstance(value, (Grammar, str)):
                    raise TypeError(f"Grammar.from_lark: named grammar values must be Grammar instances or Lark "
                                    f"strings, got {type(value).__name__} for {name!r}")
                if not _NAMED_GRAMMAR_NAME.fullmatch(name):
                    raise LarkError(name, 0, f"Invalid named grammar name {name!r} (letters, digits and '_', not "
                                             "starting with a digit)")
        return Grammar.from_ebnf(lark_to_ebnf(lark_string, start, named_grammars=named_grammars,
                                              tokenizer_info=tokenizer_info))

    @staticmethod
    def from_regex(pattern: str, *, search: bool = False) -> "Grammar":
        """A grammar with one rule, ``root``, for a regular expression.

        The dialect is described in :meth:`GrammarCompiler.compile_regex`.

        Parameters
        ----------
        pattern : str
            The regular expression.
        search : bool, optional
            False (default): the whole output must match. True: JSON Schema ``pattern`` semantics,
            the output must *contain* a match; a top-level alternative written with a leading ``^``
            must match at the start, one with a trailing ``$`` at the end.

        Raises
        ------
        ValueError
            On a syntax error or an unsupported construct, as
            ``"regex error at position P: <what>"`` (P counts code points from 0) followed by the
            pattern and a caret under position P.
        """
        return Grammar(_core.Grammar.from_regex(_grammar_bytes(pattern, "Grammar.from_regex"), bool(search)))

    @staticmethod
    def builtin_json_grammar() -> "Grammar":
        """The standard any-JSON grammar (an object or array, RFC 8259)."""
        return Grammar.from_ebnf(_core.Grammar.builtin_json_ebnf())

    @property
    def root_rule_name(self) -> str:
        return self._handle.root_rule_name

    def normalized(self) -> "Grammar":
        """The grammar after the compiler's normalising passes (inlining, fusing, pruning)."""
        return Grammar(self._handle.normalized())

    def __str__(self) -> str:
        return self._handle.to_string()

    def __repr__(self) -> str:
        return f"Grammar(root={self.root_rule_name!r}, rules={self._handle.num_rules})"


_NAMED_GRAMMAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CompiledGrammar:
    """A grammar compiled for one vocabulary; shared read-only by any number of matchers."""

    def __init__(self, handle: "_core.CompiledGrammar", tokenizer_info: TokenizerInfo) -> None:
        self._handle = handle
        self._tokenizer_info = tokenizer_info

    def serialize_json(self) -> str:
        """The grammar and its vocabulary as JSON (``xg2jax.serialization``; masks are not stored)."""
        from xg2jax import serialization as ser

        return ser.dump("CompiledGrammar", {"grammar": self.grammar.serialize_json(),
                                            "tokenizer_info": self._tokenizer_info.serialize_json()})

    @staticmethod
    def deserialize_json(json_string: str, tokenizer_info: TokenizerInfo | None = None) -> "CompiledGrammar":
        """Compile again what :meth:`serialize_json` wrote, for ``tokenizer_info`` (default: the stored one).

        Raises
        ------
        xg2jax.serialization.DeserializeFormatError, DeserializeVersionError
        """
        from xg2jax import serialization as ser

        kind = "CompiledGrammar"
        doc = ser.load(json_string, kind)
        grammar = Grammar.deserialize_json(ser.field(doc, "grammar", kind, str))
        if tokenizer_info is None:
            tokenizer_info = TokenizerInfo.deserialize_json(ser.field(doc, "tokenizer_info", kind, str))
        return GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(grammar)

    @property
    def grammar(self) -> Grammar:
        """The normalised grammar that was compiled."""
        return Grammar(self._handle.grammar)

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held, including the token-mask entries built so far."""
        return self._handle.memory_size_bytes()

    @property
    def num_scannable_states(self) -> int:
        """Automaton states with a token-mask entry (built lazily)."""
        return self._handle.num_scannable_states

    @property
    def num_built_masks(self) -> int:
        return self._handle.num_built_masks

    def build_all_masks(self, *, num_threads: int = 1) -> None:
        """Build every mask entry now instead of on first use."""
        self._handle.build_all_masks(int(num_threads))

    @property
    def dispatch_tags(self) -> list[DispatchTag]:
        """The tags a matcher reports switches into and out of: those of the outermost ``TagDispatch``
        rules (a structural tag's ``triggered_tags``, a tool-calling format's triggers), in order. Tag
        indices in :class:`xg2jax.jax.StepStatus` and tag events index this list; empty when the grammar
        has no ``TagDispatch``."""
        return [DispatchTag(d["trigger"].decode("utf-8", errors="replace"), d["token_id"], d["rule"])
                for d in self._handle.dispatch_tags]


@dataclasses.dataclass(frozen=True)
class DispatchTag:
    """One tag of a ``TagDispatch``: the trigger that opens it and the rule its text goes on with."""

    trigger: str  #: the trigger text (a special token's text for a token trigger)
    token_id: int  #: the special token of a token trigger, else -1
    rule: str  #: the name of the tag's rule


def _json_schema_cache_key(schema, options: dict):
    """(source, options) texts naming a JSON Schema compilation in the grammar-level cache, or None for a schema
    that has no JSON text of its own (a pydantic model class: its JSON Schema is generated first, then cached by
    the grammar it converts to)."""
    try:
        source = schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False, allow_nan=False)
        source.encode("utf-8")  # lone surrogates cannot key the cache (UnicodeEncodeError is a ValueError)
        try:
            text = _options_text(tuple(sorted(options.items())))  # the usual case: hashable options, memoised
        except TypeError:  # an unhashable value (a refs registry, separators as a list)
            text = json.dumps(options, sort_keys=True, ensure_ascii=False, allow_nan=False)
        return source, text
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _options_text(items: tuple) -> str:
    return json.dumps(dict(items), sort_keys=True, ensure_ascii=False, allow_nan=False)


# The options text of a fast-path request (JSON text, no refs / indent / separators) by its flags, filled by
# _fast_options_text: the same text _json_schema_cache_key gives, so both paths share cache entries.
_FAST_OPTIONS_TEXT: dict = {}


def _fast_options_text(flags: tuple) -> str:
    any_whitespace, strict_mode, max_whitespace_cnt, any_order, enforce_formats, plain_integers = flags
    options = dict(any_whitespace=any_whitespace, indent=None, separators=None, strict_mode=strict_mode,
                   max_whitespace_cnt=max_whitespace_cnt, any_order=any_order, enforce_formats=enforce_formats,
                   refs=None, plain_integers=plain_integers)
    text = _options_text(tuple(sorted(options.items())))  # the general path's text (_json_schema_cache_key)
    if len(_FAST_OPTIONS_TEXT) >= 64:  # bounded: max_whitespace_cnt can take many values
        _FAST_OPTIONS_TEXT.clear()
    _FAST_OPTIONS_TEXT[flags] = text
    return text


class GrammarCompiler:
    """Compiles grammars for one vocabulary, caching the results.

    Two caches, both thread-safe and compute-once (concurrent requests for one key compile once, outside any lock):
    whole compiled grammars keyed by (source kind, source, options), and token-mask entries shared across grammars,
    keyed by the structure of the rules that decide them, so a sub-structure that many grammars share (a tool's
    argument schema in agent requests with changing tool sets) builds its masks once.

    Parameters
    ----------
    tokenizer_info : TokenizerInfo
        The vocabulary.
    max_threads : int, optional
        Threads one compilation may use to build masks eagerly (``precompute_masks=True``). Default 8. Many
        compilations may run at once.
    cache_enabled : bool, optional
        Keep compiled grammars and shared mask entries. Default True. When False every compilation starts cold.
    cache_limit_bytes : int, optional
        -1 for unlimited (default). Otherwise everything cached stays within this many bytes
        (``get_cache_size_bytes() <= cache_limit_bytes``): compiled grammars get half and evict their least
        recently used; the rule-level mask entries a quarter (LRU too); the structure ids and the rule automata
        an eighth each, and each is flushed whole when it outgrows its share (as re2 resets its DFA cache: what
        is dropped is rebuilt on demand, and ids are never reused, so a flush costs time, never exactness). An
        entry larger than its share is returned, not kept. Without a limit the structure ids and automata grow
        with the distinct rule structures seen (~20 MB per 1,000 distinct schemas) until ``clear_cache()``.
    limits : Limits, optional
        Resource limits for untrusted grammars (:class:`xg2jax.Limits`; defaults fit every grammar of the
        project's corpora). A grammar over one raises ``ValueError`` naming it; a matcher that meets one
        while parsing raises it and keeps it as a sticky error until ``reset()``.
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit_bytes: int = -1,
        limits: Limits | None = None,
    ) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"GrammarCompiler: expected a TokenizerInfo, got {type(tokenizer_info).__name__}")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"GrammarCompiler: limits must be an xg2jax.Limits, got {type(limits).__name__}")
        self._tokenizer_info = tokenizer_info
        self._cache_limit_bytes = int(cache_limit_bytes)
        self._handle = _core.GrammarCompiler(tokenizer_info._handle, int(max_threads), bool(cache_enabled),
                                             int(cache_limit_bytes), limits if limits is not None else Limits())

    @property
    def cache_limit_bytes(self) -> int:
        """The cache budget given at construction (-1: unlimited)."""
        return self._cache_limit_bytes

    @property
    def limits(self) -> Limits:
        """The resource limits of this compiler's grammars and their matchers."""
        return self._handle.limits

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

    def compile_grammar(
        self, grammar: str | Grammar, *, root_rule_name: str = "root", precompute_masks: bool = False
    ) -> CompiledGrammar:
        """Compile EBNF text or a :class:`Grammar`.

        Parameters
        ----------
        grammar : str or Grammar
            EBNF text, or an already parsed grammar (its own root is used).
        root_rule_name : str, optional
            The start rule for EBNF text. Default ``"root"``.
        precompute_masks : bool, optional
            Build every token-mask entry now (eager) rather than when first reached (JIT, default).
        """
        if isinstance(grammar, Grammar):
            h = self._handle.compile_grammar(grammar._handle, bool(precompute_masks))
        elif isinstance(grammar, str):
            h = self._handle.compile_ebnf(_grammar_bytes(grammar, "compile_grammar"), root_rule_name,
                                          bool(precompute_masks))
        else:
            raise TypeError(f"compile_grammar: expected str or Grammar, got {type(grammar).__name__}")
        return CompiledGrammar(h, self._tokenizer_info)

    def compile_json_schema(self, schema, *, any_whitespace: bool = True, indent: int | None = None,
                            separators: tuple[str, str] | None = None, strict_mode: bool = True,
                            max_whitespace_cnt: int | None = None, any_order: bool = False,
                            enforce_formats: bool = True, refs: dict | None = None,
                            precompute_masks: bool = False, plain_integers: bool = True) -> CompiledGrammar:
        """Compile a JSON Schema (see :meth:`Grammar.from_json_schema` for the options).

        The grammar-level cache keys a schema given as text or as a JSON value by that text and the options, so a
        schema seen before skips the schema-to-grammar conversion too (agent servers see the same tool sets again).
        """
        if (type(schema) is str and refs is None and indent is None and separators is None
                and (max_whitespace_cnt is None or type(max_whitespace_cnt) is int)):
            # The usual request (JSON text, default layout), kept to a few bytecodes: a compile that starts with
            # cold caches pays for every Python object it touches, and the general path below measured ~50 us of
            # a ~0.4 ms time to first mask. Same cache key, same native call.
            h = self._compile_json_text_natively(schema, any_whitespace, strict_mode, max_whitespace_cnt, any_order,
                                                 enforce_formats, plain_integers, precompute_masks)
            if h is not None and h is not False:
                return CompiledGrammar(h, self._tokenizer_info)
            natively_declined = h is None
        else:
            natively_declined = False
        options = dict(any_whitespace=any_whitespace, indent=indent, separators=separators, strict_mode=strict_mode,
                       max_whitespace_cnt=max_whitespace_cnt, any_order=any_order, enforce_formats=enforce_formats,
                       refs=refs, plain_integers=plain_integers)
        from xg2jax.json_schema import json_schema_to_ebnf, native_arguments, python_json_schema_to_ebnf

        key = _json_schema_cache_key(schema, options)
        native = native_arguments(schema, **options) if key is not None else None
        if native is not None and native[0] == key[0]:
            if natively_declined:  # the fast path above tried the native front end: not again
                h = self._handle.lookup_source("json_schema", key[0], key[1], bool(precompute_masks))
            else:  # lookup, conversion and compile in one call without the GIL
                h = self._handle.compile_json_schema_native(key[0], key[1], *native[2], bool(precompute_masks))
            if h is not None:
                return CompiledGrammar(h, self._tokenizer_info)
            ebnf = python_json_schema_to_ebnf(schema, **options)  # not handled natively (and not held)
        else:
            if key is not None:
                h = self._handle.lookup_source("json_schema", key[0], key[1], bool(precompute_masks))
                if h is not None:
                    return CompiledGrammar(h, self._tokenizer_info)
            ebnf = json_schema_to_ebnf(schema, **options)
        if key is None:
            return self.compile_grammar(ebnf, precompute_masks=precompute_masks)
        h = self._handle.compile_source_ebnf("json_schema", key[0], key[1], ebnf, bool(precompute_masks))
        return CompiledGrammar(h, self._tokenizer_info)

    def _compile_json_text_natively(self, text, any_whitespace, strict_mode, max_whitespace_cnt, any_order,
                                    enforce_formats, plain_integers, precompute_masks):
        """The compiled grammar of JSON Schema text from the cache or the native front end; None when the native
        front end declines the schema; False when it was not tried (option values that are unhashable or not JSON,
        text that is not UTF-8 encodable: the general path reports those)."""
        flags = (any_whitespace, strict_mode, max_whitespace_cnt, any_order, enforce_formats, plain_integers)
        try:
            options_text = _FAST_OPTIONS_TEXT.get(flags) or _fast_options_text(flags)
            return self._handle.compile_json_schema_native(text, options_text, bool(any_whitespace), None,
                                                           max_whitespace_cnt, bool(plain_integers),
                                                           bool(enforce_formats), bool(any_order),
                                                           bool(precompute_masks))
        except (TypeError, ValueError):
            return False

    def compile_structural_tag(self, structural_tag=None, triggers=None, *, tags=None,
                               precompute_masks: bool = False) -> CompiledGrammar:
        """Compile a structural tag (:meth:`Grammar.from_structural_tag`; the legacy ``(tags, triggers)`` form
        too). The grammar-level cache keys it by its JSON text, so a tag seen before (an agent's tool set, turn
        after turn) skips the lowering as well as the compile."""
        from xg2jax.structural_tag import structural_tag_to_ebnf, structural_tag_value

        value = structural_tag_value(structural_tag, triggers, tags)
        try:
            key = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):  # not JSON: the lowering reports it
            key = None
        if key is not None:
            h = self._handle.lookup_source("structural_tag", key, "", bool(precompute_masks))
            if h is not None:
                return CompiledGrammar(h, self._tokenizer_info)
            ebnf = structural_tag_to_ebnf(value, self._tokenizer_info)
            h = self._handle.compile_source_ebnf("structural_tag", key, "", ebnf, bool(precompute_masks))
            return CompiledGrammar(h, self._tokenizer_info)
        return self.compile_grammar(structural_tag_to_ebnf(value, self._tokenizer_info),
                                    precompute_masks=precompute_masks)

    def compile_lark(self, lark_string: str, start: str = "start", *, named_grammars: dict | None = None,
                     precompute_masks: bool = False) -> CompiledGrammar:
        """Compile a Lark grammar (:meth:`Grammar.from_lark`; ``xg2jax.lark`` lists the dialect)."""
        grammar = Grammar.from_lark(lark_string, start, named_grammars=named_grammars,
                                    tokenizer_info=self.tokenizer_info)
        return self.compile_grammar(grammar, precompute_masks=precompute_masks)

    def compile_regex(self, pattern: str, *, precompute_masks: bool = False) -> CompiledGrammar:
        r"""Compile a regular expression that the whole output must match.

        The dialect is ECMAScript's (as in JSON Schema ``pattern``), read as Unicode code points:

        - literals, ``.`` (any code point except ``\n \r \u2028 \u2029``), escapes ``\n \r \t
          \f \v \0 \xHH \uHHHH \u{H...} \cX`` and escaped punctuation (``\. \\ \/ \- ...``);
        - classes ``[a-z]``, ``[^...]``, with escapes and ``\d \w \s`` inside (``[\b]`` is backspace,
          ``[^]`` any code point); ``\d \w \s \D \W \S`` (ASCII digits, ASCII word characters,
          ECMAScript white space); Unicode general categories ``\p{L}``, ``\p{Letter}``,
          ``\p{gc=Lu}`` and their complements ``\P{...}`` (Unicode 14.0);
        - quantifiers ``* + ? {m} {m,} {m,n}`` and their lazy forms (same language; bounds up to
          1048576); groups ``( )``, ``(?: )``, ``(?<name> )``; alternation ``|``, empty alternatives;
          a ``{`` that starts no quantifier, and ``}`` / ``]`` outside a class, are literals;
        - ``^`` at the start and ``$`` at the end of the pattern or of a top-level alternative
          (no-ops here: the whole output must match anyway).

        These raise ``ValueError`` naming the construct and its position: backreferences (``\1``,
        ``\k<name>``), lookahead and lookbehind, word boundaries ``\b \B``, Unicode properties
        other than general categories (``\p{Script=Greek}``), flags and
        inline modifiers (``(?i)``), atomic groups and possessive quantifiers, anchors anywhere
        else, unknown letter escapes (``\a``, ``\A``), classes that match nothing (``[]``), and
        syntax errors (unbalanced brackets, nothing to repeat, ``{3,2}``, reversed ranges).

        Parameters
        ----------
        pattern : str
            The regular expression.
        precompute_masks : bool, optional
            Build every token-mask entry now (eager) rather than when first reached (JIT, default).

        Returns
        -------
        CompiledGrammar
            Cached by pattern, like :meth:`compile_grammar`.

        Raises
        ------
        ValueError
            ``"regex error at position P: <what>"`` (P counts code points from 0), then the pattern
            and a caret under position P.
        """
        h = self._handle.compile_regex(_grammar_bytes(pattern, "compile_regex"), bool(precompute_masks))
        return CompiledGrammar(h, self._tokenizer_info)

    def compile_builtin_json_grammar(self, *, precompute_masks: bool = False) -> CompiledGrammar:
        """Compile the standard any-JSON grammar."""
        return CompiledGrammar(self._handle.compile_builtin_json_grammar(bool(precompute_masks)), self._tokenizer_info)

    def clear_cache(self) -> None:
        """Drop every cached grammar and shared mask entry, and reset the byte count to 0.

        Never waits for compilations in flight: they return their grammar to their callers but neither
        count nor cache it (a generation fence). Grammars already returned stay usable.
        """
        self._handle.clear_cache()

    def get_cache_size_bytes(self) -> int:
        """Bytes held by both caches: whole grammars (their own memory, measured when added), the token-mask entries
        shared across grammars (each measured when added), and the per-rule structures shared across grammars (the
        interned rule structures that key the entries, and the rules' automata).
        Whenever no compilation runs this equals ``sum(info["grammar_entry_sizes"]) + sum(info["rule_entry_sizes"])
        + info["structure_bytes"]`` for ``info = cache_info()``."""
        return self._handle.get_cache_size_bytes()

    def cache_info(self) -> dict:
        """Both caches in detail: ``grammar_entry_sizes`` / ``rule_entry_sizes`` (bytes of each held entry),
        ``grammar_bytes`` / ``rule_bytes``, ``structure_bytes`` (interned rule structures, their forward-closure ids
        and the rule automata; ``num_structures``, ``num_automata``; ``structure_flushes``, ``automata_flushes``:
        how often ``cache_limit_bytes`` flushed them), hit and miss counts (``grammar_hits``,
        ``grammar_misses``, ``rule_hits``, ``rule_misses``), and ``generation`` (bumped by every
        :meth:`clear_cache`)."""
        return dict(self._handle.cache_info())
