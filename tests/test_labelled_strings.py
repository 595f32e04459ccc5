"""Labelled strings from third-party suites, checked against the engine.

Sources (read from ``../shared/data`` relative to the repository root; every test here skips with
a reason when that folder is absent -- the data is never copied into the repository):

* ``xgrammar-tests/ebnf_cases.json``: xgrammar EBNF grammars with ``valid``/``invalid`` strings
  (see ``xgrammar-tests/SOURCE.txt``). Cases with ``"match": "prefix (require_termination=False)"``
  are prefix checks.
* ``xgrammar-tests/builtin_json_cases.json``: strings for the builtin any-JSON grammar.
* ``llama-cpp-grammars/tests_grammar_integration.json``: GBNF cases (``grammar`` key) and the
  ``invalid_grammars`` list. ``json_schema`` cases are out of scope (issue 4) and skip.

Every string must be accepted or rejected as labelled, except for the explicit exception table
:data:`EXCEPTIONS` / :data:`LEFT_RECURSION_CHECKS` below; each exception asserts what the engine
does instead. Any other difference is an engine bug and fails, listing every mismatching string of
the grammar. A per-source summary (strings accepted as labelled / under an exception / mismatched)
is printed at the end of the module.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from pathlib import Path

import pytest

import xg2jax
from xg2jax.testing import is_grammar_accept_string

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
XGR_EBNF = DATA / "xgrammar-tests" / "ebnf_cases.json"
XGR_JSON = DATA / "xgrammar-tests" / "builtin_json_cases.json"
LLAMA = DATA / "llama-cpp-grammars" / "tests_grammar_integration.json"

PREFIX_MATCH = "prefix (require_termination=False)"


# ---------------------------------------------------------------------------------------------
# The exception table. Every entry has a reason and says what the engine must do instead.
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LabelException:
    name: str
    pattern: str  # regex searched (MULTILINE) in the grammar text
    reason: str
    # "unsupported": compiling must raise ValueError containing `fragment` (and "not supported").
    # "no_grammar": the case has no grammar text; nothing can be checked (skip).
    kind: str
    fragment: str = ""


EXCEPTIONS: tuple[LabelException, ...] = (
    # Regex("pattern", json_string=..., search=..., flags=...) is supported, a leading (?i) / (?s) too; lookahead
    # is not.
    LabelException(
        "regex lookahead (?= / (?!", r'(?<=\bRegex\(")[^"]*\(\?[=!]',
        "regex lookahead assertions are not supported (frontends/regex.h)",
        "unsupported", "ookahead assertion '(?"),  # Lookahead / Negative lookahead
    LabelException(
        "<converted print_ebnf> placeholder", r"\A<converted print_ebnf>\Z",
        "the extractor recorded a placeholder, not a grammar (xgrammar printed a converted grammar "
        "at run time); there is no grammar text to test",
        "no_grammar"),
)

#: llama.cpp rejects left recursion at build time ("invalid_grammars" with a "left recursion"
#: reason); our Earley parser accepts it on purpose (README: "Left recursion ... supported").
#: Each such grammar must compile AND behave correctly on these strings (complete matches).
#: Keys are the grammar text with all whitespace removed.
LEFT_RECURSION_CHECKS: dict[str, tuple[list[str], list[str]]] = {
    'root::="a"|root"a"': (["a", "aa", "aaaaa"], ["", "b", "ab", "ba"]),
    'root::=asdfasdf::="a"|asdf"a"': (["a", "aaa"], ["", "b", "aab"]),
    # asdf = a | foo b ; foo = c | asdf d | e
    'root::=asdfasdf::="a"|foo"b"foo::="c"|asdf"d"|"e"': (
        ["a", "cb", "eb", "adb", "cbdb", "adbdb"], ["", "c", "ab", "ad", "adbd", "b"]),
    # as above with foo = c | empty asdf d | e ; empty = blah | (nothing)
    'root::=asdfasdf::="a"|foo"b"foo::="c"|emptyasdf"d"|"e"empty::="blah"|': (
        ["a", "cb", "adb", "blahadb", "blahcbdb", "blahblahadbdb"], ["", "blah", "blahab", "blahadbd", "adbb"]),
}

#: llama.cpp "invalid_grammars" that are not left-recursive must fail to build here too, with this
#: message fragment (keyed by the start of the reason text in the data file).
INVALID_GRAMMAR_FRAGMENTS = {
    "no root rule": "the root rule 'root' is not defined",
    "reference to undefined rule": "undefined rule 'numero'",
}

def _check_json_schema_case(source: str, case) -> None:
    """llama.cpp's JSON Schema cases, judged by the JSON Schema spec: each string's verdict from the `jsonschema`
    library (recorded in the data file) wins where llama.cpp's own label differs (llama.cpp rejects e.g. `-0` for
    `minimum: 0` and 33-digit integers, which the spec allows). An explicit SchemaError (an unsupported keyword)
    skips the case with its message; a wrong answer fails. Properties may come in any order (`any_order=True`; the
    default follows xgrammar and fixes the schema's order) and whitespace around the whole document is stripped
    (JSON allows it, the grammars generate none, as xgrammar's)."""
    from xg2jax.json_schema import SchemaError

    n = len(case["valid"]) + len(case["invalid"])
    try:
        grammar = xg2jax.Grammar.from_json_schema(case["json_schema"], any_order=True, plain_integers=False)
    except SchemaError as e:
        SUMMARY[source]["skipped"] += n
        SUMMARY[source]["g_skipped"] += 1
        pytest.skip(f"explicit JSON Schema error: {e}")
    verdicts = case["jsonschema_lib_verdicts"]
    strings = [s.strip() for s in case["valid"] + case["invalid"]]
    valid = [s for s, v in zip(strings, verdicts["valid"] + verdicts["invalid"]) if v == "valid"]
    invalid = [s for s, v in zip(strings, verdicts["valid"] + verdicts["invalid"]) if v != "valid"]
    _check_strings(source, grammar, valid, invalid, label=case["name"])


def classify(grammar: str) -> LabelException | None:
    """The exception whose feature comes first in the text (the parser reports the first one)."""
    found = []
    for exc in EXCEPTIONS:
        m = re.search(exc.pattern, grammar, re.MULTILINE)
        if m:
            found.append((m.start(), exc))
    return min(found, key=lambda t: t[0])[1] if found else None


def _strip_ws(s: str) -> str:
    return re.sub(r"\s+", "", s)


# ---------------------------------------------------------------------------------------------
# Summary: counts per source, printed when the module finishes.
# ---------------------------------------------------------------------------------------------
SUMMARY: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


@pytest.fixture(scope="module", autouse=True)
def _print_summary(request):
    yield
    if not SUMMARY:
        return
    lines = ["", "labelled strings summary (strings; grammars in brackets):"]
    for source in sorted(SUMMARY):
        c = SUMMARY[source]
        lines.append(
            f"  {source}: {c['ok']} accepted/rejected as labelled, {c['exception']} under an exception, "
            f"{c['skipped']} skipped, {c['mismatch']} MISMATCHED "
            f"[{c['g_ok']} ok, {c['g_exception']} exception, {c['g_skipped']} skipped, {c['g_bad']} failing]")
    text = "\n".join(lines)
    # Shown even without -s: suspend output capturing while writing.
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if capman is not None and reporter is not None:
        with capman.global_and_fixture_disabled():
            reporter.write_line(text)
    else:  # pragma: no cover
        print(text)


# ---------------------------------------------------------------------------------------------
# Loading the data (parametrisation degrades to one skipped case when the data is absent).
# ---------------------------------------------------------------------------------------------
def _load(path: Path):
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _missing(path: Path):
    return [pytest.param(None, marks=pytest.mark.skip(reason=f"third-party data not found: {path} "
                                                               "(expected ../shared/data next to the repository)"),
                         id="data-missing")]


def _xgr_ebnf_params():
    data = _load(XGR_EBNF)
    if data is None:
        return _missing(XGR_EBNF)
    return [pytest.param(c, id=f"{i:03d}-{c['test']}") for i, c in enumerate(data)]


def _xgr_json_params():
    data = _load(XGR_JSON)
    if data is None:
        return _missing(XGR_JSON)
    return [pytest.param(c, id=f"{i:02d}-{c['test']}") for i, c in enumerate(data)]


def _llama_case_params():
    data = _load(LLAMA)
    if data is None:
        return _missing(LLAMA)
    out = []
    for i, c in enumerate(data["cases"]):
        name = re.sub(r"[^\w]+", "_", c["name"]).strip("_")
        out.append(pytest.param(c, id=f"{i:02d}-{name}" + ("" if "grammar" in c else "-json_schema")))
    return out


def _llama_invalid_params():
    data = _load(LLAMA)
    if data is None:
        return _missing(LLAMA)
    return [pytest.param(c, id=f"{i:02d}") for i, c in enumerate(data["invalid_grammars"])]


# ---------------------------------------------------------------------------------------------
# The checks.
# ---------------------------------------------------------------------------------------------
def _check_strings(source: str, grammar, valid, invalid, *, root_rule_name="root", require_termination=True,
                   label="") -> None:
    """Check every string; collect all mismatches, then fail once listing them."""
    total = len(valid) + len(invalid)
    parse_error = None
    try:
        if isinstance(grammar, str):
            xg2jax.Grammar.from_ebnf(grammar, root_rule_name=root_rule_name)
    except ValueError as e:
        parse_error = str(e)
    if parse_error is not None:
        SUMMARY[source]["mismatch"] += total
        SUMMARY[source]["g_bad"] += 1
        pytest.fail(f"{label}: grammar failed to parse, so all {total} labelled strings fail "
                    f"(engine bug?):\n{parse_error}\n--- grammar ---\n{grammar}", pytrace=False)
    mismatches = []
    for expected, strings in ((True, valid), (False, invalid)):
        for s in strings:
            got = is_grammar_accept_string(grammar, s, root_rule_name=root_rule_name,
                                           require_termination=require_termination)
            if got != expected:
                mismatches.append(f"  expected {'accept' if expected else 'reject'}, got "
                                  f"{'accept' if got else 'reject'}: {s!r}")
    SUMMARY[source]["ok"] += total - len(mismatches)
    SUMMARY[source]["mismatch"] += len(mismatches)
    SUMMARY[source]["g_bad" if mismatches else "g_ok"] += 1
    if mismatches:
        mode = "complete match" if require_termination else "prefix"
        pytest.fail(f"{label}: {len(mismatches)}/{total} strings mismatch ({mode}, root={root_rule_name!r}):\n"
                    + "\n".join(mismatches) + f"\n--- grammar ---\n{grammar}", pytrace=False)


def _check_exception(source: str, exc: LabelException, case) -> None:
    n = len(case["valid"]) + len(case["invalid"])
    SUMMARY[source]["exception"] += n
    SUMMARY[source]["g_exception"] += 1
    if exc.kind == "no_grammar":
        pytest.skip(f"exception '{exc.name}': {exc.reason}")
    assert exc.kind == "unsupported", exc
    root = case.get("options", {}).get("root_rule_name", "root")
    with pytest.raises(ValueError, match="not supported") as info:
        xg2jax.Grammar.from_ebnf(case["grammar"], root_rule_name=root)
    assert exc.fragment in str(info.value), (exc.fragment, str(info.value))
    # The compiler path must say the same (not crash, not accept).
    with pytest.raises(ValueError, match=re.escape(exc.fragment)):
        is_grammar_accept_string(case["grammar"], "", root_rule_name=root)


@pytest.mark.parametrize("case", _xgr_ebnf_params())
def test_xgrammar_ebnf_cases(case):
    source = "xgrammar-tests/ebnf_cases.json"
    exc = classify(case["grammar"])
    if exc is not None:
        _check_exception(source, exc, case)
        return
    match = case.get("match")
    assert match in (None, PREFIX_MATCH), f"unknown match mode {match!r}: update this test"
    _check_strings(source, case["grammar"], case["valid"], case["invalid"],
                   root_rule_name=case["options"].get("root_rule_name", "root"),
                   require_termination=match is None, label=f"{case['file']}::{case['test']}")


@pytest.mark.parametrize("case", _xgr_json_params())
def test_xgrammar_builtin_json_cases(case):
    assert case["kind"] == "builtin_json" and case["grammar"] is None
    _check_strings("xgrammar-tests/builtin_json_cases.json", xg2jax.Grammar.builtin_json_grammar(),
                   case["valid"], case["invalid"], label=f"{case['file']}::{case['test']}")


@pytest.mark.parametrize("case", _llama_case_params())
def test_llama_cpp_gbnf_cases(case):
    source = "llama-cpp-grammars/tests_grammar_integration.json"
    if "grammar" not in case:
        assert "json_schema" in case, sorted(case)
        _check_json_schema_case(source, case)
        return
    assert case["grammar_format"] == "gbnf"
    exc = classify(case["grammar"])
    assert exc is None, f"no exception expected for llama.cpp GBNF; got {exc}"
    _check_strings(source, case["grammar"], case["valid"], case["invalid"], label=case["name"])


@pytest.mark.parametrize("case", _llama_invalid_params())
def test_llama_cpp_invalid_grammars(case):
    source = "llama-cpp-grammars/tests_grammar_integration.json (invalid_grammars)"
    grammar, reason = case["grammar"], case["reason"]
    if reason.startswith("left recursion"):
        # Exception: llama.cpp rejects these; we accept left recursion on purpose.
        key = _strip_ws(grammar)
        assert key in LEFT_RECURSION_CHECKS, f"new left-recursive grammar; add behaviour strings for:\n{grammar}"
        valid, invalid = LEFT_RECURSION_CHECKS[key]
        g = xg2jax.Grammar.from_ebnf(grammar)  # must compile
        assert g.root_rule_name == "root"
        SUMMARY[source]["exception"] += 1
        SUMMARY[source]["g_exception"] += 1
        _check_strings(source + " [left-recursion behaviour]", grammar, valid, invalid,
                       label=f"left recursion: {reason}")
        return
    fragments = [f for prefix, f in INVALID_GRAMMAR_FRAGMENTS.items() if reason.startswith(prefix)]
    assert fragments, f"unknown invalid-grammar reason {reason!r}: add its message to INVALID_GRAMMAR_FRAGMENTS"
    with pytest.raises(ValueError) as info:
        is_grammar_accept_string(grammar, "1")
    SUMMARY[source]["ok"] += 1
    SUMMARY[source]["g_ok"] += 1
    assert fragments[0] in str(info.value), (fragments[0], str(info.value))


def test_exception_table_entries_are_all_used():
    """No stale entries: each exception matches a case, and only cases it was written for."""
    data = _load(XGR_EBNF)
    if data is None:
        pytest.skip(f"third-party data not found: {XGR_EBNF}")
    used = collections.Counter()
    for c in data:
        exc = classify(c["grammar"])
        if exc is not None:
            used[exc.name] += 1
            # Only xgrammar's macro / placeholder tests may fall under an exception.
            assert c["file"] in {"test_grammar_matcher_macro.py", "test_grammar_regex_macro.py",
                                 "test_grammar_substring_macro.py", "test_grammar_matcher_structural_tag.py"} \
                or exc.kind == "no_grammar", (c["file"], c["test"], exc.name)
    for exc in EXCEPTIONS:
        assert used[exc.name] > 0, f"exception {exc.name!r} matches no case: remove it"
    # The plain EBNF tests of xgrammar must all be checked, none excepted.
    plain = [c for c in data if c["file"] == "test_grammar_matcher_ebnf.py"]
    assert plain and all(classify(c["grammar"]) is None for c in plain)


def test_classify_patterns():
    assert classify('root ::= TagDispatch(("a", b))') is None  # supported
    assert classify('root ::= r\nr[lazy] ::= "a"') is None  # supported
    assert classify('root ::= r\nr[max_chars=2] ::= "a"') is None  # supported
    assert classify('root ::= a [0-9]\na ::= "x"') is None  # a char class after a rule ref is no attribute
    assert classify('root ::= [a-z]+') is None
    assert classify('root ::= Regex("[a-z]+")') is None  # supported
    assert classify('root ::= Regex("a, flags=b")') is None  # a comma inside the pattern is no argument
    assert classify('root ::= Regex("a", flags="i")') is None  # supported
    assert classify('root ::= Regex("(?i)a", json_string=true)') is None  # supported
    assert classify('root ::= Regex("a(?!b)c")').name == "regex lookahead (?= / (?!"
