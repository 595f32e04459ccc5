"""Backreferences in ``pattern``: an error in strict mode, the documented widening with ``strict_mode=False``
(xg2jax/json_schema/_backrefs.py). The widened language contains the original one; the tests show both that every
ECMAScript match is still accepted and where the approximation accepts more."""

from __future__ import annotations

import re

from absl.testing import absltest, parameterized

import xg2jax
from xg2jax.json_schema import UnsupportedSchemaError
from xg2jax.json_schema._backrefs import widen_backreferences
from xg2jax.testing import GrammarTestCase


def _string(pattern: str) -> dict:
    return {"type": "string", "pattern": pattern}


class WidenBackreferencesTest(parameterized.TestCase):
    @parameterized.named_parameters(
        ("numbered", r"^(a|b)\1$", r"^(a|b)(?:(?:a|b)?)$"),
        ("nested_groups_become_non_capturing", r"(a(b))\1(c)\3", r"(a(b))(?:(?:a(?:b))?)(c)(?:(?:c)?)"),
        ("named", r"(?<q>['x]).*\k<q>", r"(?<q>['x]).*(?:(?:['x])?)"),
        ("forward_reference_is_empty", r"\1(a)", r"(?:)(a)"),
        ("reference_inside_its_group_is_empty", r"(a\1)", r"(a(?:))"),
        ("octal_in_class_untouched", r"[\1](a)", r"[\1](a)"),
        ("escaped_backslash_untouched", r"(a)\\1", r"(a)\\1"),
        ("undefined_group_left_for_the_regex_error", r"(a)\2", r"(a)\2"),
        ("no_reference", r"^\d+(x)$", r"^\d+(x)$"),
    )
    def test_rewrite(self, pattern, want):
        self.assertEqual(widen_backreferences(pattern), want)

    def test_widened_language_contains_the_original(self):
        # Python's re has ECMAScript's backreference semantics for these patterns.
        cases = [r"^(a|b)\1$", r"^(ab?)c\1$", r"^([xy]+)-\1$", r"^(?:(a)|b)\1$"]
        strings = ["", "a", "b", "aa", "ab", "ba", "bb", "ac", "abcab", "acab", "abca", "x-x", "xy-xy", "xy-yx",
                   "x-", "bb"]
        for pattern in cases:
            widened = re.compile(widen_backreferences(pattern))
            for s in strings:
                if re.search(pattern, s):
                    self.assertIsNotNone(widened.search(s), (pattern, s))


class BackreferenceSchemaTest(GrammarTestCase):
    def test_strict_mode_names_the_backreference(self):
        with self.assertRaisesRegex(UnsupportedSchemaError,
                                    re.escape("JSON Schema at '/pattern': regex \"^(a|b)\\\\1$\": at position 6: "
                                              "Backreference '\\1' is not supported (pass strict_mode=False to "
                                              "widen each backreference to its group's pattern)")):
            xg2jax.Grammar.from_json_schema(_string(r"^(a|b)\1$"))

    def test_non_strict_mode_widens(self):
        grammar = xg2jax.Grammar.from_json_schema(_string(r"^(a|b)\1$"), strict_mode=False)
        for ok in ['"aa"', '"bb"', '"a"']:
            self.assertGrammarAccepts(grammar, ok)
        self.assertGrammarAccepts(grammar, '"ab"')  # the approximation: ECMAScript rejects "ab"
        for bad in ['"ac"', '"aab"', '""', "1"]:
            self.assertGrammarRejects(grammar, bad)

    def test_non_strict_mode_with_length_bounds(self):
        grammar = xg2jax.Grammar.from_json_schema({**_string(r"^<([a-z]+)>.*</\1>$"), "maxLength": 12},
                                                  strict_mode=False)
        self.assertGrammarAccepts(grammar, '"<b>x</b>"')
        self.assertGrammarAccepts(grammar, '"<b>x</>"')  # widened: the group may match empty
        self.assertGrammarRejects(grammar, '"<b>x</b1>"')
        self.assertGrammarRejects(grammar, '"<abc>xxxx</abc>"')  # 16 characters > maxLength

    def test_complement_still_raises(self):
        # Under `not` a wider pattern would reject valid strings, so it is not widened.
        with self.assertRaisesRegex(UnsupportedSchemaError, "Backreference"):
            xg2jax.Grammar.from_json_schema({"type": "string", "not": {"pattern": r"(a)\1"}}, strict_mode=False)


if __name__ == "__main__":
    absltest.main()
