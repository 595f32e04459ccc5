"""Every resource limit of the JSON Schema front end, in one place.

A schema can arrive from anywhere (a tool definition, a client of a long-running server), so each input whose
conversion cost grows with a number written in the schema is bounded here. A schema beyond a limit raises
:class:`~xg2jax.json_schema.UnsupportedSchemaError` (or :class:`~xg2jax.json_schema.SchemaError` when the input is not
a valid schema at all) naming the JSON pointer of the keyword and the limit, before the large allocation happens;
nothing is approximated silently. Inputs below every limit convert in time and memory roughly linear in the size of
the schema and of the grammar it needs.

================================  =========  =======================================================================
Limit                             Default    What it bounds (and what one unit costs)
================================  =========  =======================================================================
``MAX_SCHEMA_DEPTH``              256        Nesting of JSON objects / arrays in a schema document (a nested schema
                                             through ``properties`` takes two levels, through ``items`` one). Each
                                             level costs a few dozen Python frames in the recursive passes.
``MAX_SCHEMA_NODES``              4_000_000  JSON objects / arrays in a schema document counted along every path (a
                                             ``dict`` that shares sub-objects counts them once per path, so a small
                                             DAG cannot stand for an exponentially large schema).
``MAX_EXPANSION_DEPTH``           400        Schemas nested inside one another while converting, ``$ref`` targets
                                             included (a chain of 1000 ``$ref`` through ``properties``). About 20
                                             Python frames each.
``MAX_WORK``                      100_000    Steps of one conversion (subschema conversions, ``allOf`` merges,
                                             disjointness checks of ``oneOf`` branches), plus
                                             ``WORK_PER_CONTAINER`` (1,000) per JSON object / array of the schema
                                             for its first ``WORK_CONTAINERS`` (400) and
                                             ``WORK_PER_EXTRA_CONTAINER`` (8) per further one: bounds the
                                             combinatorial growth of ``allOf`` / ``anyOf`` / ``oneOf`` rewriting
                                             (~5-50 µs a step) while a schema with 50,000 properties still
                                             converts. Most JSONSchemaBench schemas take a few thousand steps; the
                                             largest that convert take up to ~900 per container (390,000 for 474),
                                             so a small schema gets a small budget (a few seconds at most) and none
                                             more than ~500,000 plus 8 per container (~10 s).
``MAX_GRAMMAR_BYTES``             32 MiB     Text of the EBNF rules the conversion writes.
``MAX_ENUM_VALUES``               100_000    Values of one ``enum`` (one grammar alternative each; 32,000 short
                                             strings convert in about 0.1 s).
``MAX_DECIMAL_DIGITS``            400        Decimal digits of a number bound or ``multipleOf`` (integer part plus
                                             exact fraction digits; every finite double needs at most about 330).
                                             Each digit is a grammar state.
``MAX_REPETITION``                1_048_576  ``minLength`` / ``maxLength`` / ``minItems`` / ``maxItems`` /
                                             ``minProperties`` / ``maxProperties`` and ``minContains`` /
                                             ``maxContains``: the largest repetition count the grammar engine
                                             accepts (it counts, it does not unroll).
``MAX_MULTIPLE_OF_RULES``         10_000     Rules of a ``multipleOf`` divisibility automaton (about the divisor
                                             times the digits of the bounds).
``MAX_LISTED_MULTIPLES``          500        Not an error: bounded ``multipleOf`` ranges with at most this many
                                             multiples list them; larger ranges use the automaton.
``MAX_LISTED_NON_MULTIPLES``      2_000      Likewise for the complement of ``multipleOf`` within bounds.
``MAX_PROPERTY_COUNT_STATES``     4_096      Rules for ``minProperties`` / ``maxProperties`` / ``dependentRequired``
                                             with properties in schema order (declared properties times the counts
                                             that still matter).
``MAX_ANY_ORDER_PROPERTIES``      10         Declared properties of an object with ``any_order=True`` that also has
                                             ``minProperties`` above its required count, ``maxProperties``,
                                             ``dependentRequired`` or member requirements (one grammar rule per
                                             subset of the properties). Without those keywords there is no limit
                                             (the engine's ``AnyOrder(...)`` keeps the set read in the parser).
``MAX_ANY_ORDER_STATES``          16_384     Rules of such an object with counted properties (subsets times counts).
``MAX_MEMBER_REQUIREMENTS``       4          "Some member matches" requirements on one object (complements of
                                             ``patternProperties`` / ``additionalProperties``; 2**n rules each).
``MAX_CONTAINS_RULES``            2_000      Rules that count ``contains`` matches (positions times counts).
``MAX_CONTAINS_ALL``              4          Different ``contains`` merged by ``allOf`` (2**n states).
``MAX_UNIQUE_ARRAYS``             1_000      Arrays listed to enforce ``uniqueItems`` over small finite item domains
                                             (beyond it the keyword is unsupported in strict mode).
``MAX_UNEVALUATED_ALTERNATIVES``  64         Alternatives of the applicators next to ``unevaluatedProperties`` /
                                             ``unevaluatedItems`` (each becomes a branch of its own).
``MAX_DFA_STATES``                2_000      States of a regex / key automaton (``pattern``, ``patternProperties``,
                                             complements of string constants). A ``{n,m}`` count is unrolled, so
                                             ``[a-z]{1,128}`` takes 129 states.
``MAX_MERGE_WORK``                4_194_304  Work (states x atoms per state examined) of merging an automaton's
                                             equivalent states before it is written as rules; past it the states
                                             are written unmerged (the same language, more rules). Not an error.
``MAX_INLINE_DEPTH``              32         Levels of an automaton's states written inside their single
                                             predecessor's rule (parenthesised); deeper, a state gets its own rule.
                                             Not an error.
``MAX_LENGTH_AUTOMATON``          1_000      ``minLength`` / ``maxLength`` combined with a regex automaton (one state
                                             per length).
================================  =========  =======================================================================
"""

from __future__ import annotations

MAX_SCHEMA_DEPTH = 256
MAX_SCHEMA_NODES = 4_000_000
MAX_EXPANSION_DEPTH = 400
MAX_WORK = 100_000
WORK_PER_CONTAINER = 1_000
WORK_CONTAINERS = 400
WORK_PER_EXTRA_CONTAINER = 8
MAX_GRAMMAR_BYTES = 32 << 20
MAX_ENUM_VALUES = 100_000
MAX_DECIMAL_DIGITS = 400
MAX_REPETITION = 1 << 20
MAX_MULTIPLE_OF_RULES = 10_000
MAX_LISTED_MULTIPLES = 500
MAX_LISTED_NON_MULTIPLES = 2_000
MAX_PROPERTY_COUNT_STATES = 4_096
MAX_ANY_ORDER_PROPERTIES = 10
MAX_ANY_ORDER_STATES = 1 << 14
MAX_MEMBER_REQUIREMENTS = 4
MAX_CONTAINS_RULES = 2_000
MAX_CONTAINS_ALL = 4
MAX_UNIQUE_ARRAYS = 1_000
MAX_UNEVALUATED_ALTERNATIVES = 64
MAX_DFA_STATES = 2_000
MAX_MERGE_WORK = 1 << 22
MAX_INLINE_DEPTH = 32
MAX_LENGTH_AUTOMATON = 1_000
