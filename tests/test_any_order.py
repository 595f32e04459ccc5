"""``AnyOrder(...)``: items in any order, each once / at most once / any number of times, kept as a set of items read
in the parser state (grammar.h), and JSON Schema objects with ``any_order=True`` built on it.

Checked three ways: the language against a direct definition on every string over a small alphabet up to a length;
masks against the token-by-token oracle along walks, on a small vocabulary whose tokens span items and separators and
on GPT-2's; and JSON Schema objects with ``any_order=True`` against a validator, with any number of properties."""

from __future__ import annotations

import collections
import itertools
import json
import random
import re

import pytest

import xg2jax as xgr
from real_vocabularies import require
from xg2jax.json_schema import UnsupportedSchemaError
from xg2jax.testing import check_masks_along, is_grammar_accept_string, mask_oracle_diff

ITEMS = {"a": "A", "b": "B", "c": "C", "d": "CA"}  # rule name -> literal ("CA" overlaps "C" then "A")


def _reference(text: str, roles: dict[str, str], separator: str) -> bool:
    """Whether ``text`` is the items of ``roles`` (name -> "" once, "?" at most once, "*" any number) in some order,
    joined by ``separator``: tried over every way to cut it into item literals."""
    def parts(rest: str, first: bool):
        if rest == "":
            yield []
            return
        if not first:
            if not rest.startswith(separator):
                return
            rest = rest[len(separator):]
        for name in roles:
            lit = ITEMS[name]
            if rest.startswith(lit):
                for tail in parts(rest[len(lit):], False):
                    yield [name] + tail

    for names in parts(text, True):
        counts = {n: names.count(n) for n in roles}
        if all((counts[n] == 1) if r == "" else (counts[n] <= 1) if r == "?" else True for n, r in roles.items()):
            return True
    return False


CASES = {
    # name: (roles, separator)
    "once_and_optional": ({"a": "", "b": "?", "c": "?"}, ","),
    "all_optional": ({"a": "?", "b": "?"}, ","),
    "repeated_and_once": ({"a": "", "c": "*"}, ","),
    "overlapping_items_no_separator": ({"a": "?", "c": "", "d": "?"}, ""),
    "multi_byte_separator": ({"a": "", "b": "", "c": "?"}, ", "),
    "two_required_no_separator": ({"a": "", "b": "", "c": "*"}, ""),
}


def _grammar_text(roles: dict[str, str], separator: str) -> str:
    args = ", ".join(name + role for name, role in roles.items())
    sep = f', separator="{separator}"' if separator else ""
    rules = "\n".join(f'{name} ::= "{lit}"' for name, lit in ITEMS.items() if name in roles)
    return f'root ::= "[" AnyOrder({args}{sep}) "]"\n{rules}\n'


@pytest.mark.parametrize("name", sorted(CASES))
def test_language_equals_the_definition_on_every_short_string(name):
    roles, separator = CASES[name]
    grammar = xgr.Grammar.from_ebnf(_grammar_text(roles, separator))
    alphabet = sorted(set("".join(ITEMS[n] for n in roles) + separator))
    checked = accepted = 0
    for length in range(0, 8):
        for chars in itertools.product(alphabet, repeat=length):
            body = "".join(chars)
            want = _reference(body, roles, separator)
            got = is_grammar_accept_string(grammar, "[" + body + "]")
            assert got == want, f"{body!r}: grammar {got}, definition {want}"
            checked += 1
            accepted += want
    assert accepted >= 5 and checked >= 255


def test_prints_and_parses_back():
    text = 'root ::= "{" AnyOrder(a, ("x" | "y")?, (b "z")*, separator=("," " "?)) "}"\na ::= "a"\nb ::= "b"\n'
    grammar = xgr.Grammar.from_ebnf(text)
    printed = str(grammar)
    assert "AnyOrder(a, (\"x\" | \"y\")?, (b \"z\")*, separator=\",\" \" \"?)" in printed, printed
    assert str(xgr.Grammar.from_ebnf(printed)) == printed
    normalized = str(grammar.normalized())
    assert str(xgr.Grammar.from_ebnf(normalized).normalized()) == normalized
    for good in ["{a}", "{a, x}", "{bz,a,bz}", "{y,a}"]:
        assert is_grammar_accept_string(grammar, good), good
    for bad in ["{}", "{a,a}", "{x,y,a}", "{a,x,x}", "{a,}"]:
        assert not is_grammar_accept_string(grammar, bad), bad


def _satisfies_implies(text: str, implies: dict[str, list[str]], separator: str) -> bool:
    read = set(text.split(separator)) if text else set()
    return all(set(needed) <= read for item, needed in implies.items() if item in read)


@pytest.mark.parametrize("n", [4, 40])
def test_requires_on_every_short_string(n):
    """`requires="2: 3; 3: 1"`: item 2 needs item 3, item 3 needs item 1 (dependentRequired), with a narrow
    (bitmask) and a wide (interned set) rule: the first four items are the letters, the rest never appear."""
    letters = ["A", "B", "C", "D"] + [f"<{i}>" for i in range(4, n)]
    args = ", ".join(f'"{t}"?' for t in letters)
    grammar = xgr.Grammar.from_ebnf(f'root ::= "[" AnyOrder({args}, separator=",", requires="2: 3; 3: 1") "]"')
    assert 'requires="2: 3; 3: 1"' in str(grammar)
    assert str(xgr.Grammar.from_ebnf(str(grammar))) == str(grammar)
    implies = {"B": ["C"], "C": ["A"]}
    checked = 0
    for k in range(0, 5):
        for subset in itertools.permutations("ABCD", k):
            body = ",".join(subset)
            want = _satisfies_implies(body, implies, ",")
            assert is_grammar_accept_string(grammar, "[" + body + "]") == want, body
            checked += 1
    assert checked == 65


def test_requires_on_an_item_that_can_never_be_read_drops_the_item():
    grammar = xgr.Grammar.from_ebnf('root ::= "[" AnyOrder(a?, b?, separator=",", requires="1: 2") "]"\n'
                                    'a ::= "A"\nb ::= b "B"')  # b derives no string
    assert is_grammar_accept_string(grammar, "[]")
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(_small_tokenizer()).compile_grammar(grammar))
    assert not matcher.accept_string("[A")  # a would need b


@pytest.mark.parametrize("text, message", [
    ('root ::= AnyOrder(a, b?)\na ::= "a"\nb ::= "b"?', "item 2 matches the empty string"),
    ('root ::= AnyOrder(a, separator=" "?)\na ::= "a"', "the separator matches the empty string"),
    ('root ::= AnyOrder()', "AnyOrder(...) needs at least one item"),
    ('root ::= AnyOrder(a, separator=",", separator=";")\na ::= "a"', "takes separator= once"),
    ('root ::= AnyOrder(a "", "")\na ::= "a"', "must not be empty"),
    ('root ::= AnyOrder(a b)\na ::= "a",', "unexpected ','"),
    ('root ::= AnyOrder(a, b?, requires="2: 3")\na ::= "a"\nb ::= "b"', "item 3 is not among the 2 items"),
    ('root ::= AnyOrder(a, b*, requires="1: 2")\na ::= "a"\nb ::= "b"', "item 2 is repeated"),
    ('root ::= AnyOrder(a, b?, requires="1 2")\na ::= "a"\nb ::= "b"', "expected ':'"),
])
def test_bad_any_order_is_an_input_error(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        xgr.GrammarCompiler(xgr.TokenizerInfo(["a", "b"])).compile_grammar(text)


@pytest.mark.parametrize("n", [31, 32, 70, 130])
def test_any_number_of_once_items(n):
    """Up to 31 once-items the set read is a bitmask in the parser item; beyond, an interned set's id."""
    items = [f'"<{i:03d}>"' for i in range(n)]
    grammar = xgr.Grammar.from_ebnf(f"root ::= AnyOrder({', '.join(items[:-1])}, {items[-1]}?, separator=\",\")")
    order = list(range(n))
    random.Random(n).shuffle(order)
    spelled = [f"<{i:03d}>" for i in order]
    last = f"<{n - 1:03d}>"
    assert is_grammar_accept_string(grammar, ",".join(spelled))
    assert is_grammar_accept_string(grammar, ",".join(t for t in spelled if t != last))  # the optional one
    required_missing = [t for t in spelled if t != ("<000>" if last != "<000>" else "<001>")]
    assert not is_grammar_accept_string(grammar, ",".join(required_missing))
    assert not is_grammar_accept_string(grammar, ",".join(spelled + spelled[:1]))  # one twice


# Tokens of 1..4 bytes over the pieces the walks use; id 0 is the stop token.
_PIECES = ["A", "B", "C", ",", " ", "[", "]", "x", '"', ":", "1", "{", "}", "p"]


def _small_tokenizer() -> xgr.TokenizerInfo:
    rng = random.Random(11)
    vocab = set(_PIECES)
    while len(vocab) < 500:
        vocab.add("".join(rng.choice(_PIECES) for _ in range(rng.randint(2, 4))))
    return xgr.TokenizerInfo(["</s>"] + sorted(vocab), stop_token_ids=[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_masks_equal_the_oracle_along_random_orders(name):
    roles, separator = CASES[name]
    compiled = xgr.GrammarCompiler(_small_tokenizer()).compile_grammar(_grammar_text(roles, separator))
    rng = random.Random(name)
    for _ in range(6):
        names = [n for n, r in roles.items() if r == "" or (r == "?" and rng.random() < 0.6)]
        names += [n for n, r in roles.items() if r == "*" for _ in range(rng.randint(0, 3))]
        rng.shuffle(names)
        text = "[" + separator.join(ITEMS[n] for n in names) + "]"
        if not _reference(text[1:-1], roles, separator):
            continue  # an overlapping cut of the shuffled items
        check_masks_along(compiled, text, rng=rng)


def _schema(n: int, required: list[int], additional=False) -> dict:
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
            "required": [f"p{i}" for i in required], "additionalProperties": additional}


def _instance(order: list[int], extras: dict | None = None) -> str:
    members = [f'"p{i}": {i}' for i in order] + [f'"{k}": {json.dumps(v)}' for k, v in (extras or {}).items()]
    return "{" + ", ".join(members) + "}"


@pytest.mark.parametrize("n", [30, 80])
def test_json_objects_with_many_properties_in_any_order(n):
    required = [2, 17, n - 1]
    grammar = xgr.Grammar.from_json_schema(json.dumps(_schema(n, required=required)), any_order=True)
    assert "AnyOrder(" in str(grammar)
    rng = random.Random(n)
    for _ in range(20):
        order = rng.sample(range(n), rng.randint(0, n))
        valid = set(required) <= set(order)
        assert is_grammar_accept_string(grammar, _instance(order)) == valid, order
    assert not is_grammar_accept_string(grammar, _instance(required + [5, 5]))
    assert not is_grammar_accept_string(grammar, _instance(required, {"q": 1}))


def test_json_any_order_with_dependent_required():
    schema = dict(_schema(40, required=[0]), dependentRequired={"p3": ["p4", "p39"], "p39": ["p1"]})
    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_order=True)
    assert "requires=" in str(grammar)
    for order, valid in [([0], True), ([3, 0], False), ([39, 4, 3, 0], False), ([1, 39, 4, 3, 0], True),
                         ([0, 39], False), ([39, 0, 1], True)]:
        assert is_grammar_accept_string(grammar, _instance(order)) == valid, order


def test_json_any_order_with_property_counts_keeps_its_limit():
    schema = dict(_schema(12, []), maxProperties=3)
    with pytest.raises(UnsupportedSchemaError, match="MAX_ANY_ORDER_PROPERTIES = 10"):
        xgr.Grammar.from_json_schema(json.dumps(schema), any_order=True)


def _valid(schema: dict, text: str) -> bool:
    """JSON Schema validity, with a declared property given twice invalid (the grammar's any-order objects hold each
    declared property at most once; json.loads would keep only the last)."""
    import jsonschema

    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    keys = [k for k, _ in pairs]
    if any(keys.count(k) > 1 for k in schema["properties"]):
        return False
    return jsonschema.Draft202012Validator(schema).is_valid(dict(pairs))


@pytest.mark.parametrize("schema", [
    _schema(4, required=[1, 3]),
    _schema(3, required=[], additional={"type": "string"}),
    _schema(5, required=[0, 1, 2, 3, 4]),
    {"type": "object", "properties": {"p0": {"type": "integer"}, "p1": {"enum": [1, 2]}}, "required": ["p0"],
     "patternProperties": {"^x": {"type": "boolean"}}, "additionalProperties": False},
], ids=["required_two", "extras", "all_required", "pattern_extras"])
def test_json_any_order_verdicts_equal_the_validator(schema):
    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), any_order=True)
    assert "AnyOrder(" in str(grammar)
    names = list(schema["properties"])
    values = {"p1": "2", "x1": "true", "zz": '"s"'}
    rng = random.Random(7)
    verdicts = collections.Counter()
    required = schema.get("required", [])
    for i in range(200):
        if i % 2:  # mostly valid: the required names, some others, in a random order
            keys = required + [k for k in names + ["x1", "zz"] if k not in required and rng.random() < 0.4]
            rng.shuffle(keys)
        else:
            keys = [rng.choice(names + ["x1", "zz"]) for _ in range(rng.randint(0, len(names) + 1))]
        text = "{" + ", ".join(f'"{k}": {values.get(k, "3")}' for k in keys) + "}"
        want = _valid(schema, text)
        assert is_grammar_accept_string(grammar, text) == want, text
        verdicts[want] += 1
    assert verdicts[True] >= 20 and verdicts[False] >= 20, verdicts


@pytest.mark.parametrize("n", [14, 40])
def test_json_any_order_masks_equal_the_oracle_on_gpt2(n):
    """14 properties: the set read is a bitmask; 40: an interned set."""
    tok = xgr.TokenizerInfo.from_loaded_vocab(require("gpt2"))
    required = [0, 5, n - 1]
    compiled = xgr.GrammarCompiler(tok).compile_json_schema(json.dumps(_schema(n, required=required)),
                                                           any_order=True, any_whitespace=False)
    rng = random.Random(3)
    for _ in range(3):
        order = required + rng.sample([i for i in range(n) if i not in required], 4)
        rng.shuffle(order)
        # The longest fitting token at each step: GPT-2's tokens span keys, colons and commas.
        check_masks_along(compiled, _instance(order))
        matcher = xgr.GrammarMatcher(compiled)
        assert matcher.accept_string(_instance(order)) and matcher.accept_token(tok.stop_token_ids[0])


def test_structurally_equal_rules_with_different_roles_share_no_masks():
    """One compiler (one rule-level cache): `AnyOrder(a, b)` and `AnyOrder(a, b?)` differ only in a role; the
    second must still allow "]" after "[A"."""
    compiler = xgr.GrammarCompiler(_small_tokenizer())
    vocab = compiler.tokenizer_info.decoded_vocab
    close = vocab.index(b"]")
    for text, closes in [('root ::= "[" AnyOrder(a, b, separator=",") "]"\na ::= "A"\nb ::= "B"', False),
                         ('root ::= "[" AnyOrder(a, b?, separator=",") "]"\na ::= "A"\nb ::= "B"', True)]:
        matcher = xgr.GrammarMatcher(compiler.compile_grammar(text))
        assert matcher.accept_string("[A")
        extra, missing = mask_oracle_diff(matcher)
        assert len(extra) == 0 and len(missing) == 0
        row = xgr.allocate_token_bitmask(1, len(vocab))
        matcher.fill_next_token_bitmask(row)
        assert bool((row[0, close >> 5] >> (close & 31)) & 1) == closes


@pytest.mark.parametrize("text, prefix", [
    ('root ::= "[" AnyOrder(a, b, separator=",") "]"\na ::= "A"\nb ::= "B"', "[A,B,"),
    ('root ::= "[" AnyOrder(a?, b?, separator=",") "]"\na ::= "A"\nb ::= "B"', "[B,A,"),
    ('root ::= "[" AnyOrder(a, b?) "]"\na ::= "A"\nb ::= "B"', "[BAB"),
])
def test_no_dead_end_after_every_item_is_read(text, prefix):
    """Every prefix the matcher accepts must extend to a sentence: once no item is left to read, the separator is
    closed too (a separator with nothing after it would strand the parse)."""
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(_small_tokenizer()).compile_grammar(text))
    assert matcher.accept_string(prefix[:-1])
    assert not matcher.accept_string(prefix[-1])
    assert matcher.accept_string("]")


@pytest.mark.parametrize("text, good, bad", [
    # An item that holds another AnyOrder: the inner rule is proven productive only after the outer one.
    ('root ::= "{" AnyOrder(("B" ":" x)?, "A"?, separator=",") "}"\nx ::= "{" AnyOrder("C"?) "}"',
     ["{B:{}}", "{B:{C}}", "{A,B:{C}}", "{}"], ["{B:{C,C}}", "{B:{CC}}", "{B:{},B:{}}"]),
    # Recursive: an object whose optional property holds the same object.
    ('root ::= "{" AnyOrder(("B" ":" root)?, "A"?, separator=",") "}"',
     ["{B:{A}}", "{B:{B:{}}}", "{A,B:{A}}", "{B:{A},A}"], ["{B:{A,A}}", "{B:{},B:{}}", "{A,B:{},A}"]),
], ids=["nested", "recursive"])
def test_nested_and_recursive_any_order(text, good, bad):
    grammar = xgr.Grammar.from_ebnf(text)
    for s in good:
        assert is_grammar_accept_string(grammar, s), s
    for s in bad:
        assert not is_grammar_accept_string(grammar, s), s
    compiled = xgr.GrammarCompiler(_small_tokenizer()).compile_grammar(text)
    for s in good:
        check_masks_along(compiled, s, rng=random.Random(s))
