"""String formats as ECMAScript regexes of the characters between the quotes: the engine's table
(cpp/frontends/json_schema/formats.h, which both JSON Schema front ends read; it documents the formats and their
approximations).

One spelling per format, used two ways: alone, as the grammar rule ``Regex("...", json_string=true)``; together with
``minLength`` / ``maxLength``, ``pattern``, or constants and patterns to exclude, as one code-point automaton
intersected with the others (``_automata``).
"""

from __future__ import annotations

from xg2jax import _core

#: format name -> (rule name, ECMAScript regex of the characters between the quotes, to match in full).
FORMATS = {name: (rule, regex) for name, rule, regex in _core.json_schema_formats()}


def format_search_pattern(fmt: str) -> str:
    """The format's regex anchored for JSON Schema ``pattern`` (search) semantics: the whole string must match."""
    return f"^(?:{FORMATS[fmt][1]})$"
