#!/usr/bin/env python3
"""xgrammar's own test suite against xg2jax: what passes, per test file, and why each failure fails.

Runs xgrammar 0.2.9's Python tests (``../shared/xgrammar-suite``) twice: with the real xgrammar (the reference:
which tests pass offline at all) and with ``import xgrammar`` resolving to xg2jax (``run.sh``'s shim). Each test
that passes on xgrammar and fails on xg2jax gets a reason, from its failure message (the first matching rule of
``REASONS``). Tests that inspect xgrammar's internals (printed EBNF text, private helpers, its serialization
format) and the structural-tag / tool-calling files (their own conformance run:
``structural_tag_conformance.py``) are not *eligible*: the target is the share of eligible tests that pass.

Output: a summary on stdout, benchmarks/results/xgrammar_suite.md (a table per test file, the failures grouped by
reason, every failing test listed) and .json.

    python benchmarks/xgrammar_suite.py                      # runs both suites (~2-4 min)
    python benchmarks/xgrammar_suite.py --ours A.xml --ref B.xml   # from JUnit files of earlier runs
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.abspath(os.path.join(HERE, "..", "..", "shared", "xgrammar-suite"))
OUT = os.path.join(HERE, "results")
log = logging.getLogger("xgrammar_suite")

# Files whose subject has its own issue and conformance run (structural tags, tool calling).
SEPARATE_FILES = ("test_structural_tag_converter", "test_builtin_structural_tag", "test_builtin_structural_tag_alignment",
                  "test_function_calling_converter", "test_grammar_matcher_structural_tag")

# (reason, eligible, pattern over "file::test | message"): the first match names a failure's reason.
REASONS = [
    ("reads an xgrammar internal (private helper, FSM printer, debug state)", False,
     r"is an xgrammar internal|_debug_print_internal_state|_print_grammar_fsms|_get_allow_empty_rule_ids|"
     r"GrammarFunctor|test_tokenizer_info::test_detect_vocab_type_from_vocab"),
    ("compares printed grammar text (xgrammar's EBNF printer)", False, r"::="),
    ("compares xgrammar's serialization format", False, r"__VERSION__|'v16'|version 'v16'"),
    ("expects torch tensors from allocate_token_bitmask (xg2jax returns numpy)", True,
     r"numpy.ndarray' object has no attribute|must be Tensor, not numpy|not numpy.ndarray|"
     r"'str' object has no attribute 'type'"),
    ("xgrammar.kernels (torch / triton bitmask kernels)", True, r"xgrammar.kernels"),
    ("rule attributes xg2jax does not build together: max_tokens with lazy / suffix / stop (a token budget "
     "closing a first-match rule without its marker)", True,
     r"rule attributes? '?(capture|stop_capture|max_tokens|max_chars)|rule attributes such as|get_captures"
     r"|capture on a suffix or stop rule|capture around a stop rule|max_chars together with suffix"
     r"|max_tokens together with"),
    ("Lark's dynamic dispatch (lazy heads of `tool* tail`; any text + marker read as a tag dispatch)", True,
     r"test_lark_dynamic|standalone_lazy_rule|standalone-lazy-regex-suffix|consumed by dynamic dispatch"),
    ("free text over tokens: ExcludeToken, exclude_token / any_tokens, <[*]> / <[^...]>, token-level dispatch "
     "over text tokens", True,
     r"ExcludeToken|exclude_token|any_tokens|is a text token: the token triggers|wildcard special|negated special"),
    ("any_text max_tokens / max_chars budgets", True, r"budget of any_text"),
    ("regex features xg2jax refuses or reads differently (lookaround, mid anchors, {,n})", True,
     r"lookahead|lookbehind|anchor|DID NOT RAISE|Regex\(\.\.\.\) pattern"),
    ("xgrammar departs from the JSON Schema spec here; xg2jax keeps the spec (undeclared properties allowed "
     "unless the schema forbids them, an unanchored `pattern` is a search, a declared property at most once, "
     "multipleOf / oneOf / an enum's types enforced exactly, an empty `type` array allows nothing)", True,
     r"test_complex_restrictions|test_object_with_pattern_properties_and_property_names|"
     r"test_object_with_property_numbers|test_any_order_acceptance|test_any_order_no_required_fields|"
     r"test_utf8_object_array_in_enum|test_multiple_of_unsupported_warns_and_ignores|"
     r"test_oneof_unsupported_overlap_warns_and_falls_back|test_type_array_empty"),
    ("error message wording differs", True, r"Regex pattern did not match"),
    ("max_rollback_tokens is honoured (a documented difference: xgrammar 0.2.9 ignores it and reads -1)", True,
     r"\.max_rollback_tokens"),
    ("special_token_ids lists the stop tokens too (a documented difference: none of them matches text)", True,
     r"test_special_token_detection"),
]
OTHER = ("other (see the list)", True)


def run_suite(shim: bool, junit: str) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if shim:
        env["PYTHONPATH"] = os.path.join(SUITE, "shim") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", "tests/python", "-p", "no:cacheprovider", "--timeout=120", "-q",
           "--continue-on-collection-errors", f"--junitxml={junit}"]
    log.info("running xgrammar's suite %s", "through xg2jax's shim" if shim else "on xgrammar (reference)")
    subprocess.run(cmd, cwd=SUITE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def outcomes(junit: str) -> dict[str, tuple[str, str]]:
    """test id -> (passed | failed | skipped, failure message)."""
    out = {}
    for tc in ET.parse(junit).iter("testcase"):
        cls = tc.get("classname") or ""
        tid = f"{cls.rsplit('.', 1)[-1]}::{tc.get('name')}"
        bad = tc.find("failure")
        if bad is None:
            bad = tc.find("error")
        if bad is not None:
            out[tid] = ("failed", bad.get("message") or "")
        elif tc.find("skipped") is not None:
            out[tid] = ("skipped", "")
        else:
            out[tid] = ("passed", "")
    return out


def reason_of(tid: str, message: str) -> tuple[str, bool]:
    text = f"{tid} | {message}"
    for reason, eligible, pattern in REASONS:
        if re.search(pattern, text):
            return reason, eligible
    return OTHER


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ours", help="JUnit XML of a run through the shim (default: run it)")
    ap.add_argument("--ref", help="JUnit XML of a run on xgrammar itself (default: run it)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    tmp = tempfile.mkdtemp()
    ours_path, ref_path = args.ours, args.ref
    if ref_path is None:
        ref_path = os.path.join(tmp, "ref.xml")
        run_suite(False, ref_path)
    if ours_path is None:
        ours_path = os.path.join(tmp, "ours.xml")
        run_suite(True, ours_path)
    ref, ours = outcomes(ref_path), outcomes(ours_path)

    per_file = collections.defaultdict(lambda: collections.Counter())
    reasons = collections.Counter()
    failing = []
    for tid, (state, _) in sorted(ref.items()):
        if state != "passed":
            continue
        file = tid.split("::")[0]
        ours_state, message = ours.get(tid, ("failed", "not collected"))
        separate = file in SEPARATE_FILES
        c = per_file[file]
        c["reference"] += 1
        if ours_state == "passed":
            c["passed"] += 1
            c["eligible"] += not separate
            c["eligible passed"] += not separate
            continue
        reason, eligible = reason_of(tid, message)
        eligible = eligible and not separate
        c["eligible"] += eligible
        if separate:
            reason = "structural tags / tool calling (own conformance run)"
        reasons[(reason, eligible)] += 1
        failing.append((tid, reason, " ".join(message.split())[:160]))
    total = collections.Counter()
    for c in per_file.values():
        total.update(c)
    share = total["eligible passed"] / max(1, total["eligible"])
    print(f"reference (xgrammar 0.2.9, offline): {total['reference']} passed")
    print(f"xg2jax: {total['passed']} of them pass; eligible {total['eligible passed']} / {total['eligible']} "
          f"({share:.0%})")
    for (reason, eligible), n in reasons.most_common():
        print(f"  {n:5d}  {'eligible' if eligible else 'not eligible'}  {reason}")

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "xgrammar_suite.json"), "w") as f:
        json.dump({"reference_passed": total["reference"], "passed": total["passed"], "eligible": total["eligible"],
                   "eligible_passed": total["eligible passed"],
                   "per_file": {k: dict(v) for k, v in sorted(per_file.items())},
                   "reasons": [{"reason": r, "eligible": e, "tests": n} for (r, e), n in reasons.most_common()],
                   "failing": [{"test": t, "reason": r, "message": m} for t, r, m in failing]}, f, indent=1)
    lines = ["# xgrammar's test suite against xg2jax", "",
             "`python benchmarks/xgrammar_suite.py` (xgrammar 0.2.9's Python tests, `../shared/xgrammar-suite`).",
             "Counted: the tests that pass offline on xgrammar itself. *Eligible*: those that do not read xgrammar's",
             "internals (printed grammar text, private helpers, its serialization format) and are not in the",
             "structural-tag / tool-calling files (checked by `structural_tag_conformance.py` instead).", "",
             f"**{total['passed']} of {total['reference']} pass; eligible: {total['eligible passed']} of "
             f"{total['eligible']} ({share:.0%}).**", "",
             "| test file | pass on xgrammar | pass on xg2jax | eligible | eligible passing |",
             "|---|---:|---:|---:|---:|"]
    for file, c in sorted(per_file.items()):
        lines.append(f"| {file} | {c['reference']} | {c['passed']} | {c['eligible']} | {c['eligible passed']} |")
    lines += ["", "## Why the rest fail", "", "| tests | eligible | reason |", "|---:|---|---|"]
    for (reason, eligible), n in reasons.most_common():
        lines.append(f"| {n} | {'yes' if eligible else 'no'} | {reason} |")
    lines += ["", "## Every failing test", "", "| test | reason | message (start) |", "|---|---|---|"]
    for tid, reason, message in failing:
        lines.append(f"| `{tid}` | {reason} | {message.replace('|', '/')} |")
    with open(os.path.join(OUT, "xgrammar_suite.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    log.info("wrote %s", os.path.join(OUT, "xgrammar_suite.md"))


if __name__ == "__main__":
    main()
