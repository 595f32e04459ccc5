"""JSON-Schema-Test-Suite (../shared/data/json-schema-test-suite; skipped when absent): for every test of the required
(non-``optional``) files of draft2020-12 and draft7 (with the suite's ``remotes`` folder passed as the ``refs``
registry, at the URIs the suite serves it from), the instance, serialised compact and indented, must be accepted
exactly when ``valid`` is true, or the schema must raise an explicit error (an unsupported keyword).
``UnsatisfiableSchemaError`` ("the schema accepts no JSON value") is an answer, not an error: it is correct for a
test whose instance is invalid and wrong for a valid one. A wrong answer fails the test. The per-keyword table is
printed (``pytest -s``); ``python tests/test_json_schema_suite.py`` prints it as Markdown (docs/json_schema.md).
What still raises is listed there."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import xg2jax
from xg2jax.json_schema import SchemaError, UnsatisfiableSchemaError
from xg2jax.testing import is_grammar_accept_string

SUITE = Path(__file__).resolve().parents[2] / "shared" / "data" / "json-schema-test-suite" / "tests"
DIALECTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
            "draft7": "http://json-schema.org/draft-07/schema#"}


def _remotes() -> dict:
    """The suite's ``remotes`` folder as a ``refs`` registry: the suite serves it at http://localhost:1234/."""
    folder = SUITE.parent / "remotes"
    return {f"http://localhost:1234/{p.relative_to(folder).as_posix()}": json.loads(p.read_text())
            for p in sorted(folder.rglob("*.json"))}


def _run(draft: str):
    remotes = _remotes()
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    wrong = []
    for path in sorted((SUITE / draft).glob("*.json")):
        keyword = path.stem
        for group in json.loads(path.read_text()):
            schema = group["schema"]
            if isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": DIALECTS[draft], **schema}  # the folder's dialect, as the suite prescribes
            try:
                # The suite's required tests treat format as an annotation (the spec's default).
                grammar = xg2jax.Grammar.from_json_schema(schema, any_order=True, enforce_formats=False, refs=remotes,
                                                          plain_integers=False)
            except UnsatisfiableSchemaError as e:  # "accepts nothing" is an answer: right iff every test is invalid
                for test in group["tests"]:
                    table[keyword]["wrong" if test["valid"] else "correct"] += 1
                    if test["valid"]:
                        wrong.append(f"{keyword}: {group['description']} / {test['description']}: {e}")
                continue
            except SchemaError:
                table[keyword]["error"] += len(group["tests"])
                continue
            for test in group["tests"]:
                ok = True
                for text in (json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False),
                             json.dumps(test["data"], indent=2, ensure_ascii=False)):
                    if is_grammar_accept_string(grammar, text) != test["valid"]:
                        ok = False
                        wrong.append(f"{keyword}: {group['description']} / {test['description']}: {text[:80]}")
                table[keyword]["correct" if ok else "wrong"] += 1
    return table, wrong


@pytest.mark.parametrize("draft", sorted(DIALECTS))
def test_json_schema_test_suite_has_no_wrong_answers(draft):
    if not (SUITE / draft).is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite not found at {SUITE / draft} (../shared/data is not in the repository)")
    table, wrong = _run(draft)
    total = collections.Counter()
    for counts in table.values():
        total.update(counts)
    print(f"\n{draft}: {total['correct']} correct, {total['error']} explicit errors, {total['wrong']} wrong "
          f"of {sum(total.values())} tests ({100 * total['correct'] / sum(total.values()):.1f}% correct)")
    for keyword, counts in sorted(table.items()):
        print(f"  {keyword:24s} correct {counts['correct']:4d}  error {counts['error']:4d}  wrong {counts['wrong']}")
    assert not wrong, "wrong answers (valid rejected or invalid accepted):\n" + "\n".join(wrong[:30])


def markdown_table() -> str:
    """The per-keyword results of both drafts as a Markdown table (docs/json_schema.md)."""
    results = {draft: _run(draft)[0] for draft in sorted(DIALECTS)}
    keywords = sorted({k for table in results.values() for k in table})
    lines = ["| keyword file | " + " | ".join(f"{d} correct / error / wrong" for d in sorted(DIALECTS)) + " |",
             "|---|" + "---|" * len(DIALECTS)]
    for keyword in keywords + ["**total**"]:
        cells = []
        for draft in sorted(DIALECTS):
            table = results[draft]
            counts = sum(table.values(), collections.Counter()) if keyword == "**total**" else table.get(keyword)
            cells.append("-" if counts is None else f"{counts['correct']} / {counts['error']} / {counts['wrong']}")
        lines.append(f"| {keyword} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
