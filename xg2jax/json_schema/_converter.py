"""JSON Schema -> EBNF: a recursive visitor that keeps the schema's semantics or says which keyword it cannot keep.

Algorithm. ``visit(schema, pointer)`` returns an EBNF expression for the set of JSON texts valid under ``schema``:

1. Boolean schemas: ``true`` is any JSON value, ``false`` matches nothing (an ``Unsatisfiable`` branch that a
   surrounding ``anyOf`` drops and the root reports).
2. Combinators are rewritten before types are looked at, using the identities of the spec:
   ``unevaluated*`` over the alternatives of the applicators next to it (``_unevaluated``), ``not`` / ``if`` into
   ``anyOf`` of complements (``_complements``), ``$ref`` / ``$dynamicRef`` with siblings = ``allOf [target,
   siblings]`` (draft 2019-09 and later; draft 7 and earlier ignore the siblings), ``allOf`` = one schema built by
   merging keywords (``_merge``), ``S + anyOf [A, B]`` = ``anyOf [S + A, S + B]``, and ``oneOf`` likewise, with
   each branch also required to fail the others unless the branches are provably disjoint.
3. ``enum`` / ``const``: the listed values that satisfy the sibling keywords (checked by ``_validate``), each
   spelled as a grammar that allows the chosen whitespace.
4. Otherwise one alternative per allowed JSON type, each built from the keywords that apply to that type.

Before visiting, ``_check`` measures the document's nesting and size without recursion, then validates keyword
value types over the whole document, and ``_resources`` canonicalises every reference. Every bound on the work
(nesting, subschema conversions, grammar size, counts, automaton sizes) is a constant of ``_limits``; passing one
raises an error naming the keyword's pointer and the limit. Keywords outside the supported set raise ``UnsupportedSchemaError`` naming the JSON
pointer; ``uniqueItems`` over items that cannot be listed raises in strict mode and is ignored otherwise, and a
backreference in a string ``pattern`` raises in strict mode and is widened to its group's pattern otherwise
(``_backrefs``; the documented approximations). ``$ref`` targets become named rules (keyed by the dynamic scope too when the document
uses ``$dynamicRef``), so recursive schemas become recursive rules.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

from xg2jax import _core
from xg2jax.json_schema._arrays import ArraysMixin
from xg2jax.json_schema._check import check_document, check_shape
from xg2jax.json_schema._combinators import CombinatorsMixin
from xg2jax.json_schema._common import (
    ANNOTATIONS,
    KNOWN_UNSUPPORTED,
    NOT_CONTEXT_FREE,
    BudgetExceeded,
    SchemaError,
    Unsatisfiable,
    UnsatisfiableSchemaError,
    UnsupportedSchemaError,
    escape_pointer,
    strip_annotations,
)
from xg2jax.json_schema._complements import ComplementsMixin
from xg2jax.json_schema._disjoint import DisjointMixin
from xg2jax.json_schema._ebnf import RuleTable, lexical_rules, literal, seq
from xg2jax.json_schema._limits import (
    MAX_EXPANSION_DEPTH,
    MAX_GRAMMAR_BYTES,
    MAX_REPETITION,
    MAX_SCHEMA_DEPTH,
    MAX_WORK,
    WORK_CONTAINERS,
    WORK_PER_CONTAINER,
    WORK_PER_EXTRA_CONTAINER,
)
from xg2jax.json_schema._objects import ObjectsMixin
from xg2jax.json_schema._patterns import PatternsMixin
from xg2jax.json_schema._refs import RefsMixin
from xg2jax.json_schema._resources import collect
from xg2jax.json_schema._rewrites import RewritesMixin
from xg2jax.json_schema._scalars import ScalarsMixin
from xg2jax.json_schema._unevaluated import UnevaluatedMixin
from xg2jax.json_schema._values import ValuesMixin


class SchemaConverter(UnevaluatedMixin, ComplementsMixin, PatternsMixin, RewritesMixin, RefsMixin,
                      CombinatorsMixin, DisjointMixin, ValuesMixin, ScalarsMixin, ArraysMixin, ObjectsMixin):
    """The visitor; each mixin holds the keywords of one concern (see the module docstrings)."""

    def __init__(self, schema: Any, *, any_whitespace: bool = True, indent: int | None = None,
                 separators: tuple[str, str] | None = None, strict_mode: bool = True,
                 max_whitespace_cnt: int | None = None, any_order: bool = False, enforce_formats: bool = True,
                 refs: dict[str, Any] | None = None, schema_is_private: bool = False, source_text: str | None = None,
                 plain_integers: bool = True):
        # schema_is_private: the caller parsed ``schema`` for this conversion alone, so it may be rewritten in place.
        # source_text: the JSON text ``schema`` was parsed from (lets the resource walk be skipped; _resources.py).
        self.any_order = any_order
        self.plain_integers = plain_integers
        self._depth = 0
        self._work = 0  # subschema conversions, merges and disjointness checks so far (MAX_WORK)
        self.enforce_formats = enforce_formats
        # Keywords that do not constrain their own schema object: with formats enforced, `format` constrains, so a
        # `$ref` next to it is no bare reference and a merge keeps it.
        self._annotations = ANNOTATIONS - {"format"} if enforce_formats else ANNOTATIONS
        self.root = schema
        self.strict = strict_mode
        self.any_whitespace = any_whitespace
        self._refs: dict[str, str] = {}  # resolved pointer -> rule name
        self._inlined: dict[str, str] = {}  # text of a visited allOf schema -> rule name
        # First: the passes below recurse through the document. The conversion budget grows with its size.
        size = check_shape(schema, is_tree=source_text is not None)
        for uri, doc in (refs or {}).items():
            size += check_shape(doc, f"refs[{uri}]")
        self._max_work = (MAX_WORK + WORK_PER_CONTAINER * min(size, WORK_CONTAINERS)
                          + WORK_PER_EXTRA_CONTAINER * max(0, size - WORK_CONTAINERS))
        self._draft, ignored = self._detect_draft(schema, refs)
        check_document(schema, self._draft)
        for uri, doc in (refs or {}).items():
            check_document(doc, self._draft, f"refs[{uri}]")
        self._res = collect(schema, refs, self._draft, ignored, copy_root=not schema_is_private,
                            source_text=source_text)
        self.root = self._res.docs[0]
        self._bindings: tuple = ()  # the dynamic scope: ($dynamicAnchor name, canonical target), outermost first
        self._scopes: list[tuple] = []
        self._scope_index: dict[tuple, int] = {}
        for doc, ptr, kw, ref in self._res.sites:  # a dangling local reference is an error wherever it is
            if doc == 0 and not ref.startswith("xg2jax-missing:"):
                try:
                    self._resolve(ref, ptr, entering=True)
                except SchemaError as e:
                    raise SchemaError(f"{ptr}/{kw}", str(e).split("': ", 1)[1].replace("$ref", kw, 1)) from None
        if any_whitespace:
            ws = '[ \\n\\t\\r]*' if max_whitespace_cnt is None else f'[ \\n\\t\\r]{{0,{int(max_whitespace_cnt)}}}'
            self.ws, item, key = "j_ws", ",", ":"
        else:
            if indent is not None:
                raise UnsupportedSchemaError("", "indent with any_whitespace=False is not supported yet")
            ws = '""'
            self.ws = ""
            item, key = separators if separators is not None else (", ", ": ")
        self.item_sep = seq(self.ws, literal(item), self.ws)
        self.key_sep = seq(self.ws, literal(key), self.ws)
        self.rules = RuleTable(lexical_rules(self.ws, self.item_sep, self.key_sep, ws, plain_integers))

    # ----------------------------------------------------------------------------------------------------------
    def convert(self) -> str:
        try:
            root = self.visit(self.root, "")
        except BudgetExceeded as e:
            raise UnsupportedSchemaError(e.pointer, e.message) from None
        except Unsatisfiable as e:
            reason = f" ({e.reason})" if e.reason else ""
            raise UnsatisfiableSchemaError(e.pointer, f"the schema accepts no JSON value{reason}") from None
        text = self.rules.text(root)
        if self._res.sites:  # only references ($ref, $dynamicRef) make rules recursive: check they can finish
            stuck = _core.Grammar.from_ebnf(text.encode(), "root").unproductive_rules()
            if "root" in stuck:
                raise UnsatisfiableSchemaError("", "the schema accepts no finite JSON value: every value would have "
                                               "to contain itself through '$ref' (a reference cycle that never "
                                               "reaches a value without one)")
        return text

    def visit(self, schema: Any, ptr: str) -> str:
        if schema is True:
            return "j_value"
        if schema is False:
            raise Unsatisfiable(ptr, "the schema is false")
        if not isinstance(schema, dict):
            raise SchemaError(ptr, f"a schema must be an object or a boolean, got {type(schema).__name__}")
        self._check_budget(ptr)
        if "allOf" in schema and not self._res.dynamic_refs:
            return self._visit_inlined(schema, ptr)
        self._depth += 1
        saved = self._bindings
        self._enter_resource(schema)
        try:
            return self._visit_dict(strip_annotations(schema), ptr)
        finally:
            self._depth -= 1
            self._bindings = saved

    def _check_budget(self, ptr: str) -> None:
        """Raise before one more subschema conversion would pass a limit of ``_limits``: nesting (through ``$ref``
        targets too), the work budget (rewriting ``allOf`` / ``anyOf`` / ``oneOf`` can multiply conversions, merges
        and disjointness checks), or the grammar's size."""
        if self._depth > MAX_EXPANSION_DEPTH:
            raise UnsupportedSchemaError(ptr, f"the schema expands to more than {MAX_EXPANSION_DEPTH} nested "
                                         "schemas (the limit is MAX_EXPANSION_DEPTH; a chain of $ref targets nested "
                                         "that deep, or a recursive $ref inlined through allOf / anyOf / oneOf, "
                                         "which is not supported yet)")
        self._charge(ptr)
        if self.rules.size > MAX_GRAMMAR_BYTES:
            raise UnsupportedSchemaError(ptr, f"the grammar grows beyond {MAX_GRAMMAR_BYTES} bytes (the limit is "
                                         "MAX_GRAMMAR_BYTES)")

    def _charge(self, ptr: str, units: int = 1) -> None:
        """Count ``units`` of work (a subschema conversion, a merge); raise once past the budget."""
        self._work += units
        if self._work > self._max_work:
            raise BudgetExceeded(ptr, f"converting the schema takes more than {self._max_work} steps (subschema "
                                 "conversions, merges and disjointness checks; the limit is MAX_WORK plus "
                                 "WORK_PER_CONTAINER per JSON object / array of the schema, fewer beyond "
                                 "WORK_CONTAINERS): allOf / anyOf / oneOf combinations multiply them")

    def _visit_inlined(self, schema: dict, ptr: str) -> str:
        """An ``allOf`` merge inlines its $ref targets; a recursive $ref inlined that way reaches a schema with the
        same text again. One named rule per distinct text (``$ref``s are canonical, absolute URIs, so equal text
        means equal constraints) closes that recursion as rule recursion."""
        try:
            key = json.dumps(strip_annotations(schema), sort_keys=True)
        except (TypeError, ValueError):
            key = None
        if key is not None and key in self._inlined:
            return self._inlined[key]
        self._depth += 1
        saved = self._bindings
        self._enter_resource(schema)
        name = None
        if key is not None:
            name = self._inlined[key] = self.rules.reserve("merged")
        try:
            body = self._visit_dict(strip_annotations(schema), ptr)
        except Unsatisfiable:
            if name is not None:
                del self._inlined[key]
                self.rules.rules.pop(name)
            raise
        finally:
            self._depth -= 1
            self._bindings = saved
        return self.rules.define(name, body) if name is not None else body

    def _visit_dict(self, schema: dict, ptr: str) -> str:
        self._check_keywords(schema, ptr)
        schema = self._rewrite_unevaluated(schema, ptr)
        if schema is False:
            raise Unsatisfiable(ptr, "no alternative of the applicators satisfies 'unevaluated*'")
        schema = self._rewrite_not(schema, ptr)
        if schema is False:
            raise Unsatisfiable(f"{ptr}/not", "'not' rejects every value")
        if "$dynamicRef" in schema:
            return self._visit_dynamic_ref(schema, ptr)
        if "$ref" in schema:
            return self._visit_ref(schema, ptr)
        if "allOf" in schema:
            branches = self._schema_list(schema, "allOf", ptr)
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            merged = rest
            seen = set()
            for i, b in enumerate(branches):
                target = self._deref(b, f"{ptr}/allOf/{i}")
                key = self._identity(target)
                if key in seen:
                    continue  # x and x is x: repeats would multiply the work (an allOf of a $ref twice, per level)
                seen.add(key)
                merged = self._merge(merged, target, f"{ptr}/allOf/{i}")
            if merged is False:
                raise Unsatisfiable(f"{ptr}/allOf", "the allOf branches and their siblings contradict each other")
            return self.visit(self._branch_names_first(merged, branches, ptr), ptr)
        for combinator in ("anyOf", "oneOf"):
            if combinator in schema:
                return self._visit_alternatives(schema, combinator, ptr)
        if "enum" in schema or "const" in schema:
            return self._visit_values(schema, ptr)
        return self._visit_types(schema, ptr)

    # ----------------------------------------------------------------------------------------------------------
    # Keyword checks
    def _check_keywords(self, schema: dict, ptr: str) -> None:
        for kw in schema:
            if kw in NOT_CONTEXT_FREE:
                continue  # checked value by value next to enum / const, over finite item domains in _type_array
            if kw in KNOWN_UNSUPPORTED:
                raise UnsupportedSchemaError(f"{ptr}/{escape_pointer(kw)}",
                                             f"keyword '{kw}' is not supported by this version of xg2jax")

    def _schema_list(self, schema: dict, kw: str, ptr: str) -> list:
        value = schema[kw]
        if not isinstance(value, list) or not value:
            raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a non-empty array of schemas")
        return value

    def _int_keyword(self, schema: dict, kw: str, ptr: str) -> int | None:
        if kw not in schema:
            return None
        v = schema[kw]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or (
                isinstance(v, float) and not v.is_integer()):
            raise SchemaError(f"{ptr}/{kw}", f"'{kw}' must be a non-negative integer, got {json.dumps(v)}")
        if v > MAX_REPETITION:
            # The engine counts repetitions up to this bound (and the property / contains counts are states).
            raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' {int(v)} is above the largest count a grammar "
                                         f"can enforce (the limit is MAX_REPETITION = {MAX_REPETITION})")
        return int(v)


# Python frames one nesting level takes at most in the recursive passes (a visit level takes up to ~20).
_FRAMES_PER_LEVEL = 30


@contextlib.contextmanager
def recursion_headroom():
    """Raise Python's recursion limit to what ``MAX_EXPANSION_DEPTH`` / ``MAX_SCHEMA_DEPTH`` levels need (the
    limits checked first keep the recursion within it), and report a recursion that still runs out as a schema
    error instead of a ``RecursionError``."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _FRAMES_PER_LEVEL * max(MAX_EXPANSION_DEPTH, MAX_SCHEMA_DEPTH)))
    try:
        yield
    except RecursionError:
        raise UnsupportedSchemaError("", "the schema nests too deeply for the converter (Python's recursion limit; "
                                     f"see MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} and MAX_EXPANSION_DEPTH = "
                                     f"{MAX_EXPANSION_DEPTH})") from None
    finally:
        sys.setrecursionlimit(limit)
