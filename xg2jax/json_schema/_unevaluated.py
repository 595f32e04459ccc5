"""``unevaluatedProperties`` / ``unevaluatedItems``: rewritten into ``additionalProperties`` / ``items`` over the
alternatives of the applicators next to them.

Algorithm. A schema S is expanded into alternatives ``(A_i, E_i)``: S accepts an instance exactly when some A_i
does, and the properties (or item positions) S evaluates on a valid instance are the union of E_i over the A_i it
satisfies. Local keywords give one alternative evaluating the names of ``properties`` (the length of
``prefixItems``), or every member when ``additionalProperties`` / ``items`` / a nested ``unevaluated*`` is there;
``allOf`` and ``$ref`` multiply alternatives (unions of E); ``anyOf`` concatenates the branches' alternatives;
``oneOf`` branch i is taken with the complement of every other branch; ``if/then/else`` gives ``if + then``
(evaluating both) and ``not-if + else``; ``not`` evaluates nothing. Each choice point (a ``oneOf``, an ``if``)
tags its alternatives, and alternatives with different choices at one point are never combined.

Evaluated members only grow with the set of alternatives an instance satisfies, and the condition "every member
outside E satisfies U" only weakens as E grows. So S + ``unevaluatedProperties: U`` is exactly
``anyOf`` over compatible non-empty sets T of alternatives of ``allOf [A_i for i in T] + {properties: E_T: true,
additionalProperties: U}`` (for items: ``prefixItems`` of length E_T, ``items: U``). A set T is kept only when each
of its members adds to E_T (a smaller set with the same E is weaker). ``patternProperties`` and ``contains``
annotations, recursion through ``$ref`` and too many alternatives raise ``UnsupportedSchemaError``.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from xg2jax.json_schema._common import (
    SchemaError,
    UnsupportedSchemaError,
    strip_annotations,
)
from xg2jax.json_schema._limits import MAX_UNEVALUATED_ALTERNATIVES

ALL = None  # every member is evaluated
BRANCHING = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "then", "else")


@dataclass(frozen=True)
class Alt:
    schema: object
    evaluated: object  # frozenset of names / int prefix length, or ALL
    tags: tuple = ()


def _union(a, b):
    """Evaluated members: (declared names, patterns) for properties, (prefix length, contains schemas as JSON text)
    for items, or ALL."""
    if a is ALL or b is ALL:
        return ALL
    if isinstance(a[0], int):
        return max(a[0], b[0]), a[1] | b[1]
    return a[0] | b[0], a[1] | b[1]


def _empty(kw: str):
    return (frozenset(), frozenset()) if kw == "unevaluatedProperties" else (0, frozenset())


def _condition(kw: str, total, value):
    """The schema "every member outside ``total`` satisfies ``value``"."""
    if total is ALL:
        return True
    if kw == "unevaluatedProperties":
        names, patterns = total
        out = {"properties": {n: True for n in sorted(names)}, "additionalProperties": value}
        if patterns:
            out["patternProperties"] = {p: True for p in sorted(patterns)}
        return out
    n, contains = total
    items = {"anyOf": [json.loads(c) for c in sorted(contains)] + [value]} if contains else value
    return {"prefixItems": [True] * n, "items": items} if n else {"items": items}


def _compatible(a: tuple, b: tuple) -> bool:
    choices = dict(a)
    return all(choices.get(k, v) == v for k, v in b)


def _both(a, b):
    if a is True:
        return b
    if b is True:
        return a
    return {"allOf": [a, b]}


class UnevaluatedMixin:
    def _rewrite_unevaluated(self, schema: dict, ptr: str):
        """``unevaluatedProperties`` / ``unevaluatedItems`` -> ``additionalProperties`` / ``items`` (see above)."""
        if "unevaluatedProperties" not in schema and "unevaluatedItems" not in schema:
            return schema
        if self._draft < 2019:  # not keywords before 2019-09
            return {k: v for k, v in schema.items() if k not in ("unevaluatedProperties", "unevaluatedItems")}
        schema = self._rewrite_dependencies(schema, ptr)
        if not any(k in schema for k in BRANCHING):
            return self._unevaluated_local(schema, ptr)
        if "unevaluatedProperties" in schema and "unevaluatedItems" in schema:
            raise UnsupportedSchemaError(f"{ptr}/unevaluatedItems", "'unevaluatedItems' and 'unevaluatedProperties' "
                                         "together next to applicators are not supported yet")
        kw = "unevaluatedProperties" if "unevaluatedProperties" in schema else "unevaluatedItems"
        value = schema[kw]
        rest = {k: v for k, v in schema.items() if k != kw}
        if value is True or value == {}:
            return rest
        self._choice_points = getattr(self, "_choice_points", 0)
        alts = self._expand(rest, kw, f"{ptr}", ())
        options = []
        for size in range(1, len(alts) + 1):
            for group in itertools.combinations(alts, size):
                if not all(_compatible(x.tags, y.tags) for x, y in itertools.combinations(group, 2)):
                    continue
                total = _empty(kw)
                for a in group:
                    total = _union(total, a.evaluated)
                if size > 1 and any(_evaluated_without(group, i, kw) == total for i in range(size)):
                    continue
                cond = _condition(kw, total, value)
                parts = [a.schema for a in group if a.schema is not True] + ([cond] if cond is not True else [])
                options.append({"allOf": parts} if parts else True)
                if len(options) > MAX_UNEVALUATED_ALTERNATIVES:
                    raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' over more than "
                                                 f"{MAX_UNEVALUATED_ALTERNATIVES} alternatives of its applicators is "
                                                 "not supported (the limit is MAX_UNEVALUATED_ALTERNATIVES)")
        if not options:
            return False
        return {"anyOf": options}

    def _unevaluated_local(self, schema: dict, ptr: str) -> dict:
        """Without applicators, unevaluatedProperties / unevaluatedItems mean additionalProperties / items."""
        out = dict(schema)
        if "unevaluatedProperties" in out:
            value = out.pop("unevaluatedProperties")
            if "additionalProperties" not in out:
                out["additionalProperties"] = value  # otherwise every property is already evaluated
        if "unevaluatedItems" in out:
            value = out.pop("unevaluatedItems")
            if self._draft >= 2020 and "items" not in out:
                # items matching "contains" are evaluated too
                out["items"] = {"anyOf": [out["contains"], value]} if "contains" in out else value
            elif self._draft < 2020 and isinstance(out.get("items"), list) and "additionalItems" not in out:
                out["additionalItems"] = value
            elif self._draft < 2020 and "items" not in out:
                out["items"] = value
        return out

    def _local_evaluated(self, local: dict, kw: str, ptr: str):
        if kw in local:
            return ALL
        if kw == "unevaluatedProperties":
            if "additionalProperties" in local:
                return ALL
            props = local.get("properties", {})
            patterns = local.get("patternProperties", {})
            if not isinstance(props, dict) or not isinstance(patterns, dict):
                raise SchemaError(ptr, "'properties' and 'patternProperties' must be objects")
            return frozenset(props), frozenset(patterns)
        contains = frozenset()  # items matching "contains" are evaluated (2020-12; not in 2019-09)
        if "contains" in local and self._draft >= 2020:
            contains = frozenset([json.dumps(local["contains"], sort_keys=True)])
        if self._draft >= 2020:
            if "items" in local:
                return ALL
            prefix = local.get("prefixItems", [])
            return (len(prefix) if isinstance(prefix, list) else 0), contains
        if isinstance(local.get("items"), list):
            return ALL if "additionalItems" in local else (len(local["items"]), contains)
        return ALL if "items" in local else (0, contains)

    def _expand(self, schema, kw: str, ptr: str, refs: tuple) -> list[Alt]:
        if schema is True:
            return [Alt(True, _empty(kw))]
        if schema is False:
            return []
        if not isinstance(schema, dict):
            raise SchemaError(ptr, f"a schema must be an object or a boolean, got {type(schema).__name__}")
        schema = self._rewrite_dependencies(strip_annotations(self._pin_resource(schema, ptr)), ptr)
        if "$dynamicRef" in schema:  # the target in the current dynamic scope, as a $ref
            if "$ref" in schema:
                raise UnsupportedSchemaError(f"{ptr}/$dynamicRef", "'$dynamicRef' next to '$ref' is not supported yet")
            target = self._with_scope(self._dynamic_target(schema["$dynamicRef"], ptr), self._bindings)
            schema = {**{k: v for k, v in schema.items() if k != "$dynamicRef"}, "$ref": target}
        local = {k: v for k, v in schema.items() if k not in BRANCHING}
        nested = [k for k in ("unevaluatedProperties", "unevaluatedItems") if k in local]
        if nested and any(k in schema for k in BRANCHING):
            if kw in nested and len(nested) == 1:
                return [Alt(schema, ALL)]  # it evaluates every member itself; the converter handles the inside
            raise UnsupportedSchemaError(f"{ptr}/{nested[0]}", f"'{kw}' over a subschema with its own "
                                         f"'{nested[-1]}' and applicators is not supported yet")
        # The $ref and allOf conjuncts come before the local keywords, so that their properties are emitted first
        # (the order _branch_names_first gives a plain allOf).
        alts = [Alt(True, _empty(kw))]
        if "$ref" in schema:
            target, node = self._resolve(schema["$ref"], ptr)
            if target in refs:
                raise UnsupportedSchemaError(f"{ptr}/$ref", f"'{kw}' over a recursive $ref is not supported yet")
            alts = self._product(alts, self._expand(node, kw, target, refs + (target,)), ptr, kw)
        if "allOf" in schema:
            for i, sub in enumerate(self._schema_list(schema, "allOf", ptr)):
                alts = self._product(alts, self._expand(sub, kw, f"{ptr}/allOf/{i}", refs), ptr, kw)
        alts = self._product(alts, [Alt(local if local else True, self._local_evaluated(local, kw, ptr))], ptr, kw)
        if "anyOf" in schema:
            branches = []
            for i, sub in enumerate(self._schema_list(schema, "anyOf", ptr)):
                branches += self._expand(sub, kw, f"{ptr}/anyOf/{i}", refs)
            alts = self._product(alts, branches, ptr, kw)
        if "oneOf" in schema:
            subs = self._schema_list(schema, "oneOf", ptr)
            point = self._new_choice_point()
            branches = []
            for i, sub in enumerate(subs):
                others = [{"not": s} for j, s in enumerate(subs) if j != i]
                for a in self._expand(sub, kw, f"{ptr}/oneOf/{i}", refs):
                    guard = {"allOf": others} if others else True
                    branches.append(Alt(_both(a.schema, guard), a.evaluated, a.tags + ((point, i),)))
            alts = self._product(alts, branches, ptr, kw)
        if "if" in schema:
            point = self._new_choice_point()
            yes = self._product(self._expand(schema["if"], kw, f"{ptr}/if", refs),
                                self._expand(schema.get("then", True), kw, f"{ptr}/then", refs), ptr, kw)
            yes = [Alt(a.schema, a.evaluated, a.tags + ((point, 0),)) for a in yes]
            no = [Alt(_both({"not": schema["if"]}, a.schema), a.evaluated, a.tags + ((point, 1),))
                  for a in self._expand(schema.get("else", True), kw, f"{ptr}/else", refs)]
            alts = self._product(alts, yes + no, ptr, kw)
        return alts

    def _new_choice_point(self) -> int:
        self._choice_points = getattr(self, "_choice_points", 0) + 1
        return self._choice_points

    def _product(self, xs: list[Alt], ys: list[Alt], ptr: str, kw: str) -> list[Alt]:
        out = [Alt(_both(x.schema, y.schema), _union(x.evaluated, y.evaluated), tuple(dict(x.tags + y.tags).items()))
               for x in xs for y in ys if _compatible(x.tags, y.tags)]
        if len(out) > MAX_UNEVALUATED_ALTERNATIVES:
            raise UnsupportedSchemaError(f"{ptr}/{kw}", f"'{kw}' over more than {MAX_UNEVALUATED_ALTERNATIVES} "
                                         "alternatives of its applicators is not supported (the limit is "
                                         "MAX_UNEVALUATED_ALTERNATIVES)")
        return out


def _evaluated_without(group: tuple, i: int, kw: str):
    total = _empty(kw)
    for j, a in enumerate(group):
        if j != i:
            total = _union(total, a.evaluated)
    return total
