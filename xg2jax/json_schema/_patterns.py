"""``patternProperties`` and ``propertyNames``: which schema a key's value must satisfy, decided by regular
languages of keys (the engine's code-point automata, ``_automata``).

Algorithm. The declared names (``properties``, ``required``, ...) are checked one by one: a name that
``propertyNames`` rejects cannot appear; otherwise its value must satisfy ``properties[name]`` (or
``additionalProperties`` when undeclared and no pattern matches) and the schema of every pattern that matches the
name. Every other key runs through the product of the automata of the declared names, of each pattern and of the
``propertyNames`` filters; the accepting product states are grouped by the set M of patterns that match. Each group
becomes one member rule ``key_M : value_M`` whose key grammar is the product automaton with the group's states
accepting (trimmed to states that can still reach them), and whose value is ``allOf`` of the schemas of M
(``additionalProperties`` when M is empty). ``propertyNames`` is supported for the string keywords (``pattern``,
``minLength``, ``maxLength``, ``const``, ``enum``, ``type``) and boolean schemas.
"""

from __future__ import annotations

import json

from xg2jax.json_schema._common import (
    ANNOTATIONS,
    ARRAY_KEYWORDS,
    NUMBER_KEYWORDS,
    OBJECT_KEYWORDS,
    SchemaError,
    Unsatisfiable,
    UnsupportedSchemaError,
    escape_pointer,
    strip_annotations,
)
from xg2jax.json_schema._ebnf import choice, seq
from xg2jax.json_schema._limits import MAX_INLINE_DEPTH
from xg2jax.json_schema._automata import (
    RegexUnsupported,
    emission_plan,
    key_dfa,
    length_dfa,
    matches,
    names_dfa,
    product,
    spell,
)

_NOT_FOR_STRINGS = OBJECT_KEYWORDS | ARRAY_KEYWORDS | NUMBER_KEYWORDS | {"patternProperties", "propertyNames"}


class PatternsMixin:
    def _pattern_dfas(self, schema: dict, ptr: str) -> list:
        """[(regex, schema, dfa)] of ``patternProperties``."""
        patterns = schema.get("patternProperties", {})
        if not isinstance(patterns, dict):
            raise SchemaError(f"{ptr}/patternProperties", "'patternProperties' must be an object")
        out = []
        for regex, sub in patterns.items():
            out.append((regex, sub, self._regex_dfa(regex, f"{ptr}/patternProperties/{escape_pointer(regex)}")))
        return out

    @staticmethod
    def _regex_dfa(regex: str, where: str):
        try:
            return key_dfa(regex)
        except RegexUnsupported as e:
            raise UnsupportedSchemaError(where, f"regex {json.dumps(regex)}: {e} is not supported for property "
                                         "names") from None

    def _name_filters(self, schema: dict, ptr: str) -> list | None:
        """DFAs every key must match (``propertyNames``); None when keys are free, [] never (False -> no keys)."""
        if "propertyNames" not in schema:
            return None
        where = f"{ptr}/propertyNames"
        sub = self._deref(schema["propertyNames"], where)
        if sub is True or sub == {}:
            return None
        if sub is False:
            return [names_dfa([])]
        if not isinstance(sub, dict):
            raise SchemaError(where, "'propertyNames' must be a schema")
        sub = strip_annotations(sub)
        out = []
        for kw, value in sub.items():
            if kw in ANNOTATIONS or kw in _NOT_FOR_STRINGS:
                continue
            if kw == "type":
                types = [value] if isinstance(value, str) else value
                if "string" not in types:
                    out.append(names_dfa([]))
            elif kw == "pattern":
                if not isinstance(value, str):
                    raise SchemaError(f"{where}/pattern", "'pattern' must be a string")
                out.append(self._regex_dfa(value, f"{where}/pattern"))
            elif kw in ("minLength", "maxLength"):
                continue
            elif kw in ("const", "enum"):
                values = [value] if kw == "const" else value
                if not isinstance(values, list):
                    raise SchemaError(f"{where}/enum", "'enum' must be an array")
                out.append(names_dfa([v for v in values if isinstance(v, str)]))
            elif kw == "format" and not self.enforce_formats:
                continue
            else:
                raise UnsupportedSchemaError(f"{where}/{escape_pointer(kw)}", f"'{kw}' in 'propertyNames' is not "
                                             "supported yet")
        lo = self._int_keyword(sub, "minLength", where) or 0
        hi = self._int_keyword(sub, "maxLength", where)
        if lo or hi is not None:
            if hi is not None and hi < lo:
                out.append(names_dfa([]))
            else:
                try:
                    out.append(length_dfa(lo, hi))
                except RegexUnsupported as e:
                    raise UnsupportedSchemaError(f"{where}/maxLength", str(e)) from None
        return out

    def _declared_value(self, name: str, props: dict, additional, patterns: list, filters: list | None):
        """The schema for declared ``name``'s value, or False when the name cannot appear."""
        if filters is not None and not all(matches(d, name) for d in filters):
            return False
        matched = [sub for _, sub, d in patterns if matches(d, name)]
        base = props[name] if name in props else (additional if not matched else True)
        return {"allOf": [base] + matched} if matched else base

    def _pattern_members(self, names: list[str], additional, patterns: list, filters: list | None,
                         ptr: str, also: list = ()) -> str | None:
        """One member expression for every undeclared key (see the module docstring), or None if none may appear.
        ``also``: further schemas every value must satisfy."""
        filters = filters or []
        dfas = [names_dfa(names)] + [d for _, _, d in patterns] + filters
        try:
            keys, accept = product(dfas)
        except RegexUnsupported as e:
            raise UnsupportedSchemaError(f"{ptr}/patternProperties", str(e)) from None
        k = len(patterns)
        groups: dict[tuple, list[int]] = {}
        for q, vec in enumerate(accept):
            if vec[0] or not all(vec[1 + k:]):
                continue
            groups.setdefault(tuple(i for i in range(k) if vec[1 + i]), []).append(q)
        members = []
        for group, finals in sorted(groups.items()):
            if group:
                value_schema = {"allOf": [patterns[i][1] for i in group]}
                where = f"{ptr}/patternProperties/{escape_pointer(patterns[group[0]][0])}"
            else:
                value_schema, where = additional, f"{ptr}/additionalProperties"
            if also:
                value_schema = {"allOf": [value_schema, *also]}
            try:
                value = self.visit(value_schema, where)
            except Unsatisfiable:
                continue
            members.append(seq(self._key_rule(keys.with_accepting(finals)), self.key_sep, value))
        return choice(members) if members else None

    def _key_rule(self, dfa) -> str:
        """A JSON string (with its quotes) whose content ``dfa`` accepts. The engine trims and merges the automaton
        (``emission_plan``); a state's edges back into itself become a loop ``(c)*`` in its rule: a pattern such as
        ``.*`` then reads its characters in one lexical loop, whose masks the engine takes from the vocabulary's
        token slices, rather than one rule reference per character. A state with one predecessor is written inside
        its predecessor's rule (up to MAX_INLINE_DEPTH levels), so a pattern's or a name trie's chains cost one rule
        rather than one per state; the other states (and the start) get a rule each."""
        start, states = emission_plan(dfa)
        if start < 0:
            return "j_never"
        at = {q: i for i, (q, _, _, _) in enumerate(states)}
        num_preds = [0] * len(states)
        for _, _, _, edges in states:
            for t, _ in edges:
                num_preds[at[t]] += 1
        # Breadth-first from the kept states in plan order; a chain's state past the depth limit is kept.
        depth = [-1] * len(states)
        queue = [i for i, (q, _, _, _) in enumerate(states) if q == start or num_preds[i] != 1]
        for i in queue:
            depth[i] = 0
        for i in queue:  # grows while walked
            for t, _ in states[i][3]:
                j = at[t]
                if depth[j] < 0:
                    depth[j] = 0 if depth[i] + 1 > MAX_INLINE_DEPTH else depth[i] + 1
                    queue.append(j)
        names = {i: self.rules.reserve(f"key_{q}") for i, (q, _, _, _) in enumerate(states) if depth[i] == 0}

        def body_of(i: int) -> str:
            _, accepting, loop_ranges, edges = states[i]
            options = ['"\\""'] if accepting else []
            for t, ranges in edges:
                j = at[t]
                options.append(seq(choice(spell(ranges)), names[j] if depth[j] == 0 else f"( {body_of(j)} )"))
            body = " | ".join(options) if options else "j_never"
            return f"( {choice(spell(loop_ranges))} )* ( {body} )" if loop_ranges else body

        for i, name in names.items():
            self.rules.define(name, body_of(i))
        return seq('"\\""', names[at[start]])
