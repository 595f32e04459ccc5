"""Lark front end: a Lark grammar (the dialect xgrammar and llguidance accept) -> EBNF text for the engine.

Supported: rules and terminals (``name: ...``, ``NAME: ...``, the ``?`` / ``!`` / ``_`` prefixes and ``-> alias``,
which change Lark's tree, not the language), string literals (JSON-style escapes, ``"abc"i`` for ASCII case
folding), ``/regex/flags`` (``i``, ``s``, ``u``), character ranges ``"a".."z"``, groups, ``[optional]``,
``? * +``, ``x~n``, ``x~n..m``, ``x{n}``, ``x{n,m}``, ``x{n,}``, ``x{,m}``, ``%import common.NAME [-> ALIAS]`` and
``%import common (A, B)``, ``%ignore``, ``%grammar_options {"allow_initial_skip": ...}``, ``%json {schema}``,
nested grammars ``%lark { ... }``, named grammars ``@name`` (``Grammar.from_lark(named_grammars=...)``) and ``%regex
{"substring_chunks": [...]}`` / ``{"substring_chars": "..."}``, special tokens ``<|name|>`` / ``<[0,5-7]>``
(``Token(...)``) and free text over tokens: ``<[*]>`` (any one token) and ``<[^0,5-7]>`` (any one token but those:
``ExcludeToken(...)``), and the rule attributes ``[lazy]``, ``[suffix=M]``, ``[stop=M]`` and ``[max_chars=n]``
(first matches of a regular body, of the body followed by M, or once n characters are read: ``Regex(...,
lazy=true)``, ``Regex(..., max_chars=n)``; with a marker, ``max_chars`` also closes the body without it once n
characters are read: ``Regex(..., budget_close=...)``), ``[temperature=T]`` (the matcher's ``temperature`` inside
the rule), ``[capture]`` / ``[capture="label"]`` (``GrammarMatcher.get_captures``; a suffix or stop rule captures
its body, ``stop_capture`` its marker), ``[max_tokens=n]`` (a token budget per occurrence; on a suffix or stop rule
it also closes the body without its marker: the engine's ``BudgetSpent()``), and xgrammar's dynamic dispatch (``T*
tail`` with lazy heads: tool calls in free text, ``TagDispatch``; see ``_dispatch.py``). Everything else raises
:class:`LarkError` naming the construct (priorities, templates, ``%declare``, ``max_tokens`` with ``max_chars`` on a
suffix or stop rule, other modules). See ``_convert.py`` for how the language is read.
"""

from xg2jax.lark._convert import lark_to_ebnf
from xg2jax.lark._syntax import LarkError

__all__ = ["LarkError", "lark_to_ebnf"]
