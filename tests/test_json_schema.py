"""JSON Schema front end (work in progress, issue 4): the supported keywords keep the schema's semantics on
hand-written valid / invalid instances, and unsupported or invalid schemas raise errors naming the JSON pointer."""

from __future__ import annotations

import json
import re

from absl.testing import absltest, parameterized

import xg2jax
from xg2jax.json_schema import SchemaError, UnsatisfiableSchemaError, UnsupportedSchemaError, json_schema_to_ebnf
from xg2jax.testing import GrammarTestCase

CASES = {
    "object_properties_required": (
        {"type": "object", "properties": {"a": {"type": "integer"},
                                          "b": {"type": "array", "items": {"type": "string", "maxLength": 3},
                                                "minItems": 1}}, "required": ["a"]},
        ['{"a": 1}', '{"a":1,"b":["x","yyy"]}', '{"a":1,"c":null}', '{ "a" : 1 }'],
        ['{"b":["x"]}', '{"a":1,"b":[]}', '{"a":1,"b":["xxxx"]}', '{"a":1,"a":2}', '{"a": 1.5}', '[]',
         '{"a": 1.0}']),
    "prefix_items": (
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False, "minItems": 1},
        ["[1]", "[1,true]", "[ 1 , false ]"], ["[]", "[1,true,3]", "[true]"]),
    "enum_intersected_with_type": (
        {"enum": [1, "a", {"x": [1, 2]}], "type": ["integer", "object"]},
        ["1", '{"x": [1, 2]}'], ['"a"', '{"x":[1]}', "2", "1.0"]),
    "recursive_ref": (
        {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                            "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
        ['{"v":1,"next":{"v":2,"next":{"v":3}}}'], ['{"v":1,"next":{"x":2}}', '{"v":1,"w":3}']),
    "any_of_with_lengths": (
        {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
        ['"ab"', '"é€"', "null"], ['"a"', "1"]),
    "one_of_disjoint_types": ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ['"x"', "3"], ["true", "1.5"]),
    "one_of_overlapping_bounds": ({"oneOf": [{"type": "integer", "minimum": 2}, {"type": "integer", "maximum": 5}]},
                                  ["1", "7"], ["3", "5", '"x"']),
    "dependent_schemas": ({"dependentSchemas": {"a": {"required": ["b"]}}, "properties": {"a": {}, "b": {}}},
                          ['{"a": 1, "b": 2}', '{"b": 2}', "{}", "3"], ['{"a": 1}']),
    "min_max_contains": ({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
                         ['["a", 1, "b"]', '["a","b","c",4]'], ['["a"]', '["a","b","c","d"]', "[1, 2]"]),
    "all_of_objects_merged": (
        {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                   {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
        ['{"a":"x","b":1}'], ['{"a":"x"}', '{"b":1}']),
    "all_of_keeps_additional_properties_per_branch": (
        {"allOf": [{"properties": {"foo": {}}, "additionalProperties": {"type": "boolean"}},
                   {"properties": {"bar": {}}}]},
        ['{"foo":true,"bar":false}', '{"foo":1,"bar":true}'], ['{"foo":1,"bar":1}']),
    "contains": ({"type": "array", "contains": {"const": 5}}, ["[1,5,2]", "[5]"], ["[1,2]", "[]", "[5.0]"]),
    "pattern_search_semantics": ({"type": "string", "pattern": "[0-9]{3}"}, ['"ab123"', '"123"', '"x1234y"'],
                                 ['"12"', '"1a2b3"', "123"]),
    "pattern_anchored": ({"type": "string", "pattern": "^[a-z]+$"}, ['"abc"'], ['"abc1"', '""']),
    "pattern_quote_literal": ({"type": "string", "pattern": '^a"b$'}, ['"a\\"b"'], ['"ab"']),
    "const_unicode": ({"const": "héllo"}, ['"héllo"'], ['"hello"']),
    "escaped_property_names": (
        {"properties": {"foo\nbar": {"type": "number"}, 'foo"bar': {"type": "number"}}},
        ['{"foo\\nbar":1,"foo\\"bar":2}', '{"other":"x"}'], ['{"foo\\nbar":"1"}', '{"foo\\"bar":"1"}']),
    "additional_properties_false": (
        {"properties": {"ab": {}, "b": {}}, "additionalProperties": False},
        ['{"ab":1}', '{"ab":1,"b":2}', "{}"], ['{"a":1}', '{"abc":1}', '{"c":1}']),
    # Complements: a keyword that constrains one type accepts every value of the others, so its "not" does not.
    "not_minimum_only_numbers": ({"not": {"minimum": 5}}, ["3", "-1.5"], ['"foo"', "7", "null", "{}"]),
    "not_required_only_objects": ({"not": {"required": ["a"]}}, ["{}", '{"b":1}'], ['{"a":1}', "3", '"x"']),
    "not_enum_scalars": ({"not": {"enum": ["a", 1, True, None]}}, ['"b"', "2", "0", "1.5", "false", "[]", "{}"],
                         ['"a"', "1", "1.0", "true", "null"]),
    "not_properties": ({"not": {"properties": {"a": {"type": "string"}}}}, ['{"a":1}'], ['{"a":"x"}', "{}", "1"]),
    "one_of_overlapping_objects": ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "type": "object"},
                                   ['{"a":1}', '{"b":1}'], ['{"a":1,"b":2}', "{}"]),
    "if_then_else_objects": (
        {"if": {"properties": {"k": {"const": "n"}}, "required": ["k"]}, "then": {"required": ["n"]},
         "else": {"required": ["s"]}, "type": "object"},
        ['{"k":"n","n":1}', '{"k":"x","s":1}', '{"s":1}'], ['{"k":"n","s":1}', '{"k":"x","n":1}']),
    "pattern_properties": (
        {"patternProperties": {"^x-": {"type": "integer"}, "id$": {"type": "string"}},
         "properties": {"name": {"type": "string"}}, "additionalProperties": False, "type": "object"},
        ['{"x-a":1}', '{"uid":"u"}', '{"name":"n","x-b":2}'],
        ['{"x-a":"s"}', '{"other":1}', '{"uid":1}', '{"x-id":"s"}', '{"x-id":1}']),  # "x-id" needs both
    "pattern_properties_other_keys_free": (
        {"patternProperties": {"^a": {"type": "integer"}}, "properties": {"b": {"type": "string"}}},
        ['{"ab":1}', '{"x":"x"}', '{"bc":1}', '{"":1}', '{"b":"x"}'], ['{"ab":"x"}', '{"b":1}']),
    "pattern_unicode_property": ({"type": "string", "pattern": "^\\p{Letter}+$"}, ['"ԱԲԳ"', '"abc"'],
                                 ['"a1"', '""']),
    "pattern_with_lengths": ({"type": "string", "pattern": "a", "minLength": 2, "maxLength": 3},
                             ['"ab"', '"bba"'], ['"a"', '"bbb"', '"abcd"']),
    "unique_items_finite_domain": (
        {"type": "array", "items": {"enum": [1, 2, "a"]}, "maxItems": 2, "uniqueItems": True},
        ["[1,2]", '["a",1]', "[]"], ["[1,1.0]", '["a","a"]', "[1,2,3]"]),
    "property_names": ({"propertyNames": {"maxLength": 2, "pattern": "^[a-z]+$"}, "type": "object"},
                       ['{"ab":1}', "{}", '{"a":1,"b":2}'], ['{"abc":1}', '{"A":1}', '{"":1}']),
    "unevaluated_properties_over_all_of": (
        {"allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}, "unevaluatedProperties": False},
        ['{"a":1,"b":2}', "{}"], ['{"a":1,"c":3}']),
    # Properties emitted in order (any_order=False): an allOf branch's (here a $ref'd base) before the schema's own.
    "all_of_branch_properties_first": (
        {"type": "object", "allOf": [{"$ref": "#/$defs/base"}], "properties": {"file": {"type": "string"}},
         "$defs": {"base": {"properties": {"active": {"type": "boolean"}}}}},
        ['{"active":true,"file":"a"}', '{"file":"a"}', '{"active":false}'], ['{"file":"a","active":true}']),
    "unevaluated_properties_over_any_of": (
        {"anyOf": [{"properties": {"a": {}}, "required": ["a"]}, {"properties": {"b": {}}, "required": ["b"]}],
         "unevaluatedProperties": False},
        ['{"a":1}', '{"b":1}', '{"a":1,"b":1}'], ['{"a":1,"c":1}', '{}']),
    "unevaluated_items_over_prefix": (
        {"allOf": [{"prefixItems": [{"type": "integer"}]}], "unevaluatedItems": False},
        ["[1]", "[]"], ["[1,2]", '["a"]']),
    "decimal_multiple_of": ({"multipleOf": 1.5}, ["4.5", "0", "-3", "1.50"], ["35", "0.75", "1.6"]),
    "integer_multiple_of_with_bounds": ({"type": "integer", "multipleOf": 2, "minimum": -5, "maximum": 9},
                                        ["-4", "0", "8"], ["-6", "10", "3", "8.0", "-0"]),
    "non_integral_with_bounds": ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, ["1", "2.5", "-1"],
                                 ["3", "1.5", "2"]),
    "contains_with_item_schema": ({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5}},
                                  ["[1,5]", "[7]"], ["[1,2]", '[5,"a"]', "[]"]),
    "all_of_two_contains": ({"type": "array", "allOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}]},
                            ["[1,2]", "[2,3,1]"], ["[1]", "[2,2]", "[]"]),
    "embedded_resource_ref": (
        {"$id": "https://example.com/root.json", "properties": {"a": {"$ref": "item.json"}},
         "$defs": {"i": {"$id": "item.json", "type": "integer"}}},
        ['{"a":1}'], ['{"a":"x"}']),
    "anchor_ref": ({"$ref": "#int", "$defs": {"i": {"$anchor": "int", "type": "integer"}}}, ["1"], ['"x"']),
    "dynamic_ref": (
        {"$id": "https://example.com/root", "$ref": "list", "$defs": {
            "override": {"$dynamicAnchor": "item", "type": "string"},
            "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
                     "$defs": {"default": {"$dynamicAnchor": "item"}}}}},
        ['["a","b"]', "[]"], ["[1]"]),
}


FORMAT_CASES = {
    "date": (["2024-02-29", "1999-12-31"], ["2024-13-01", "24-01-01", "2024-1-01"]),
    "time": (["12:30:59Z", "23:59:60+01:00", "00:00:00.123z"], ["24:00:00Z", "12:30Z", "12:30:59"]),
    "date-time": (["2024-01-01T12:00:00Z"], ["2024-01-01 12:00:00Z"]),
    "duration": (["P1Y2M3DT4H5M6S", "PT1S", "P2W", "P1D"], ["P", "PT", "1Y", "P1S"]),
    "email": (["a.b@example.com", "x+y@a-b.org"], ["a@", "@b.com", "a..b@c.com"]),
    "hostname": (["example.com", "a-b.c"], ["-a.com", "a..b"]),
    "ipv4": (["192.168.0.1", "0.0.0.0", "255.255.255.255"], ["256.0.0.1", "1.2.3", "01.2.3.4"]),
    "ipv6": (["::1", "2001:db8::8a2e:370:7334", "::", "1:2:3:4:5:6:7:8", "::ffff:192.0.2.1", "1::"],
             ["1:2:3:4:5:6:7:8:9", ":::1", "1::2::3", "12345::"]),
    "uuid": (["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000"]),
    "uri": (["https://example.com/a?b=c#d", "mailto:x@y.z", "urn:isbn:123", "http://[::1]:80/"],
            ["/relative", "no scheme"]),
    "uri-reference": (["/relative/path?q", "https://x.y", "#frag", ""], ["\\x"]),
    "json-pointer": (["", "/a/b", "/a~0b/~1"], ["a", "/~2"]),
}


class JsonSchemaTest(GrammarTestCase, parameterized.TestCase):
    @parameterized.named_parameters(*[(f.replace("-", "_"), f, *c) for f, c in FORMAT_CASES.items()])
    def test_formats(self, fmt, valid, invalid):
        grammar = xg2jax.Grammar.from_json_schema({"type": "string", "format": fmt})
        for text in valid:
            self.assertGrammarAccepts(grammar, json.dumps(text))
        for text in invalid:
            self.assertGrammarRejects(grammar, json.dumps(text))

    @parameterized.named_parameters(*[(f.replace("-", "_"), f, *c) for f, c in FORMAT_CASES.items()])
    def test_formats_with_lengths_patterns_and_constants(self, fmt, valid, invalid):
        # The format's automaton intersected with a length, a pattern, and the complement of a constant: each
        # valid example is accepted exactly when it also meets the other keyword; invalid ones never are.
        lo, hi = min(1, len(valid[0])), len(valid[0])  # valid[0] always stays valid
        for extra, keeps in [({"minLength": lo, "maxLength": hi}, lambda t: lo <= len(t) <= hi),
                             ({"pattern": "^[^:]*$"}, lambda t: ":" not in t),
                             ({"not": {"const": valid[0]}}, lambda t: t != valid[0])]:
            try:
                grammar = xg2jax.Grammar.from_json_schema({"type": "string", "format": fmt, **extra})
            except UnsupportedSchemaError as e:  # the URI automata times a length exceed the automaton budget
                self.assertIn(fmt, ("uri", "uri-reference"))
                self.assertIn("more than", str(e))
                continue
            except UnsatisfiableSchemaError:  # e.g. date-times always contain ':'
                self.assertFalse(any(keeps(t) for t in valid), (fmt, extra))
                continue
            for text in valid:
                if keeps(text):
                    self.assertGrammarAccepts(grammar, json.dumps(text))
                else:
                    self.assertGrammarRejects(grammar, json.dumps(text))
            for text in invalid:
                self.assertGrammarRejects(grammar, json.dumps(text))

    def test_formats_filter_constants(self):
        grammar = xg2jax.Grammar.from_json_schema({"enum": ["2024-01-02", "2024-13-02", 3], "format": "date"})
        for text in ['"2024-01-02"', "3"]:
            self.assertGrammarAccepts(grammar, text)
        self.assertGrammarRejects(grammar, '"2024-13-02"')

    @parameterized.named_parameters(
        ("all_of", {"allOf": [{"type": "string"}, {"format": "email"}]}, 2020),
        ("any_of_with_siblings", {"description": "d", "anyOf": [{"type": "string", "format": "email"}]}, 2020),
        ("ref_sibling", {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "format": "email"}, 2020),
        ("ref_sibling_in_all_of", {"$defs": {"s": {"type": "string"}},
                                   "allOf": [{"minLength": 1}, {"$ref": "#/$defs/s", "format": "email"}]}, 2020),
        ("draft7_ref_sibling_ignored", {"$schema": "http://json-schema.org/draft-07/schema#",
                                        "definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s",
                                        "format": "email"}, 7))
    def test_formats_survive_merges(self, schema, draft):
        # `format` constrains (formats are enforced by default), so merges keep it and a `$ref` beside it is no
        # bare reference; draft 7 ignores every sibling of `$ref`, as that draft says.
        for enforce in (True, False):
            grammar = xg2jax.Grammar.from_json_schema(schema, enforce_formats=enforce)
            self.assertGrammarAccepts(grammar, '"a@b.co"')
            if enforce and draft >= 2019:
                self.assertGrammarRejects(grammar, '"not an email"')
            else:
                self.assertGrammarAccepts(grammar, '"not an email"')

    @parameterized.named_parameters(*[(name, *case) for name, case in CASES.items()])
    def test_instances(self, schema, valid, invalid):
        grammar = xg2jax.Grammar.from_json_schema(schema)
        for text in valid:
            self.assertGrammarAccepts(grammar, text)
        for text in invalid:
            self.assertGrammarRejects(grammar, text)

    def test_fixed_separators(self):
        schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
        grammar = xg2jax.Grammar.from_json_schema(schema, any_whitespace=False)
        self.assertGrammarAccepts(grammar, '{"a": [1, 2]}')
        self.assertGrammarRejects(grammar, '{"a":[1,2]}')
        compact = xg2jax.Grammar.from_json_schema(schema, any_whitespace=False, separators=(",", ":"))
        self.assertGrammarAccepts(compact, '{"a":[1,2]}')

    @parameterized.named_parameters(("true", True), ("empty", {}), ("annotations_only", {"description": "any"}))
    def test_fixed_separators_inside_free_values(self, value_schema):
        # A value the schema leaves free (true, {}, annotations only) is spelled with the same separators as the
        # rest of the output, as xgrammar does.
        schema = {"type": "object", "properties": {"a": value_schema}, "required": ["a"], "additionalProperties": False}
        spaced = xg2jax.Grammar.from_json_schema(schema, any_whitespace=False)
        self.assertGrammarAccepts(spaced, '{"a": {"x": 1, "y": [1, {"z": null}]}}')
        self.assertGrammarAccepts(spaced, '{"a": "text"}')
        self.assertGrammarRejects(spaced, '{"a": {"x":1,"y":[1]}}')
        compact = xg2jax.Grammar.from_json_schema(schema, any_whitespace=False, separators=(",", ":"))
        self.assertGrammarAccepts(compact, '{"a":{"x":1,"y":[1,{"z":null}]}}')
        self.assertGrammarRejects(compact, '{"a":{"x": 1}}')

    def test_required_members_need_no_rules_per_position(self):
        # Members that are all required form one sequence; optional ones keep a rule pair per position.
        schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcd"}, "required": ["a", "b", "d"],
                  "additionalProperties": False}
        ebnf = json_schema_to_ebnf(schema, any_whitespace=False, separators=(",", ":"))
        self.assertEqual(sorted(re.findall(r"^(obj_\w+) ::=", ebnf, re.M)), ["obj_first_2", "obj_rest_2"])
        grammar = xg2jax.Grammar.from_ebnf(ebnf)
        for text in ('{"a":1,"b":2,"d":4}', '{"a":1,"b":2,"c":3,"d":4}'):
            self.assertGrammarAccepts(grammar, text)
        for text in ('{"a":1,"d":4}', '{"a":1,"b":2}', '{"b":2,"a":1,"d":4}', '{"a":1,"b":2,"c":3}', '{}'):
            self.assertGrammarRejects(grammar, text)

    @parameterized.named_parameters(
        ("ascii", ["base", "based", "height", "b"]),
        ("non_ascii", ["prénom", "pré", "名前"]),
        ("escapes", ['a"b', "c\\d", "e\nf", "g\x01"]),
    )
    def test_undeclared_keys_exclude_declared_names(self, names):
        # Declared names take their own value schema (integer); every other key is an extra one (string). Keys
        # that are prefixes or extensions of a name, or differ in one character, are extra keys.
        schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names},
                  "additionalProperties": {"type": "string"}}
        grammar = xg2jax.Grammar.from_json_schema(schema, any_whitespace=False, separators=(",", ":"))
        others = {"", "x", "é", "\\", '"', "\n"}
        for n in names:
            others |= {n[:i] for i in range(len(n))} | {n + "x", n + "é", n + "\\", "x" + n, n[:-1] + "é"}
        for n in names:
            self.assertGrammarAccepts(grammar, json.dumps({n: 1}, ensure_ascii=False, separators=(",", ":")))
            self.assertGrammarRejects(grammar, json.dumps({n: "s"}, ensure_ascii=False, separators=(",", ":")))
        for key in sorted(others - set(names)):
            self.assertGrammarAccepts(grammar, json.dumps({key: "s"}, ensure_ascii=False, separators=(",", ":")))
            self.assertGrammarRejects(grammar, json.dumps({key: 1}, ensure_ascii=False, separators=(",", ":")))

    def test_key_exclusion_shares_the_string_tail(self):
        # A trie node of the key exclusion continues into shared tail rules (j_key_rest, j_key_wide) instead of
        # a copy of the string body: one more name of 20 new characters adds about one state per character (it
        # added 13 per character when every node had its own copy).
        tok = xg2jax.TokenizerInfo([bytes([b]) for b in range(256)])
        compiler = xg2jax.GrammarCompiler(tok, cache_enabled=False)

        def states(names):
            schema = {"type": "string", "not": {"enum": names}}
            return compiler.compile_json_schema(schema, any_whitespace=False).num_scannable_states

        self.assertLessEqual(states(["a", "z" * 20]) - states(["a"]), 2 * 20)
        grammar = xg2jax.Grammar.from_json_schema({"type": "string", "not": {"enum": ["a", "z" * 20]}})
        for text in ('"a"', '"' + "z" * 20 + '"'):
            self.assertGrammarRejects(grammar, text)
        for text in ('""', '"b"', '"' + "z" * 19 + '"', '"' + "z" * 21 + '"', '"aa"', '"\\u0062"', '"é"'):
            self.assertGrammarAccepts(grammar, text)

    def test_key_automaton_chains_share_a_rule_and_escapes_stay_exact(self):
        # A key automaton's states with one predecessor are written inside it (a name trie's chain, a pattern's
        # unrolled count): a 70-character name costs 70 // 32 + 1 rules, not 70; and an "any other character" edge
        # spells every escape in one compact group. The language is the same: the canonical spelling of each key
        # (json.dumps's, and "\/" for "/"), decoded, decides the value's schema.
        name = "n" * 70
        schema = {"type": "object", "properties": {name: {"type": "integer"}},
                  "patternProperties": {"^x_[a-z]{2,3}$": {"type": "boolean"}}, "additionalProperties": {"type": "null"}}
        ebnf = json_schema_to_ebnf(schema)
        key_rules = [line for line in ebnf.splitlines() if line.startswith("key_")]
        self.assertLessEqual(len(key_rules), 8)
        self.assertIn('"\\\\" ( ["\\\\/bfnrt] | "u00" ( "0" [0-7bBeEfF] | "1" [0-9a-fA-F] ) )', ebnf)
        grammar = xg2jax.Grammar.from_json_schema(schema)
        escapes = ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001f", "\\u001F",
                   "\\u0001", "\\u000b"]
        cases = {f'{{"{name}": 1}}': True, f'{{"{name}": null}}': False, '{"x_ab": true}': True,
                 '{"x_abc": null}': False, '{"x_abcd": null}': True, '{"x_a": null}': True,
                 f'{{"{name[:-1]}": null}}': True, f'{{"{name}n": null}}': True}
        for e in escapes:
            cases[f'{{"x_a{e}": null}}'] = True  # not the pattern: additionalProperties
            cases[f'{{"x_a{e}": true}}'] = False
            cases[f'{{"{e}{name}": null}}'] = True
        cases['{"x_\\u0061b": true}'] = False  # a non-canonical spelling of "x_ab" is not read (documented)
        cases['{"\\u0008": null}'] = False     # "\b" is the canonical spelling of U+0008
        for text, valid in cases.items():
            with self.subTest(text=text):
                (self.assertGrammarAccepts if valid else self.assertGrammarRejects)(grammar, text)

    def test_key_pattern_reads_its_characters_in_one_loop(self):
        # A patternProperties key automaton is minimised and a state's edges into itself become a loop in its rule:
        # ".*" (unanchored: every key) is one rule with one character loop, as a JSON string is (it was three rules
        # referring to each other at every character, one per class of line terminator, and no token slice).
        ebnf = json_schema_to_ebnf({"type": "object", "patternProperties": {".*": {"type": "string"}}})
        key_rules = [line for line in ebnf.splitlines() if line.startswith("key_")]
        self.assertLen(key_rules, 1)
        self.assertRegex(key_rules[0], r"^key_\d+ ::= \( .* \)\* \( \"\\\"\" \)$")
        # Exact still: keys with line terminators (raw U+2028, an escaped newline) and escapes match ".*" (a
        # search), and every value must be a string.
        grammar = xg2jax.Grammar.from_json_schema({"type": "object", "patternProperties": {".*": {"type": "string"}}})
        for text in ('{"a\u2028b":"x"}', '{"\\n":"x","":"y"}', '{"a\u2028\\"":"x"}'):
            self.assertGrammarAccepts(grammar, text)
        for text in ('{"a\u2028b":1}', '{"\\n":null}'):
            self.assertGrammarRejects(grammar, text)
        # A pattern whose states differ keeps them apart: "^a[0-9]+$" needs an "a", then a digit, then digits.
        grammar = xg2jax.Grammar.from_json_schema(
            {"type": "object", "patternProperties": {"^a[0-9]+$": {"type": "integer"}}, "additionalProperties": False})
        for text in ('{"a1":1}', '{"a123":2,"a0":3}', "{}"):
            self.assertGrammarAccepts(grammar, text)
        for text in ('{"a":1}', '{"a1b":1}', '{"b1":1}', '{"a1":"x"}', '{"1":1}'):
            self.assertGrammarRejects(grammar, text)

    def test_compile_json_schema_accepts_str_dict_and_matches_tokens(self):
        tok = xg2jax.TokenizerInfo([bytes([b]) for b in range(256)])
        compiler = xg2jax.GrammarCompiler(tok)
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        for form in (schema, json.dumps(schema)):
            matcher = xg2jax.GrammarMatcher(compiler.compile_json_schema(form))
            self.assertTrue(matcher.accept_string('{"n": 12}'))
            self.assertTrue(matcher.is_completed())
            self.assertMaskMatchesOracle(matcher)

    @parameterized.named_parameters(
        ("unique_items", {"type": "array", "uniqueItems": True}, UnsupportedSchemaError,
         "JSON Schema at '/uniqueItems': keyword 'uniqueItems' cannot be enforced by a grammar"),
        ("unknown_keyword", {"properties": {"x": {"$recursiveRef": "#"}}}, UnsupportedSchemaError,
         "JSON Schema at '/properties/x/$recursiveRef': keyword '$recursiveRef' is not supported"),
        ("unsupported_regex", {"properties": {"x": {"pattern": "(?<=a)b"}}}, UnsupportedSchemaError,
         "JSON Schema at '/properties/x/pattern': regex \"(?<=a)b\": at position 0: Lookbehind assertion"),
        ("dangling_ref", {"$ref": "#/$defs/nope"}, SchemaError, "JSON Schema at '/$ref': $ref '#/$defs/nope' points to nothing"),
        ("bad_type", {"type": "strin"}, SchemaError, "JSON Schema at '/type': type must be one of"),
        # An empty type array is valid since draft 6 and allows no value; draft 4 required one element.
        ("empty_type_array", {"type": []}, UnsatisfiableSchemaError,
         "JSON Schema at '/type': the schema accepts no JSON value (no type is allowed)"),
        ("empty_type_array_draft4", {"$schema": "http://json-schema.org/draft-04/schema#", "type": []}, SchemaError,
         "JSON Schema at '/type': type must be one of"),
        ("negative_min_items", {"type": "array", "minItems": -1}, SchemaError,
         "JSON Schema at '/minItems': minItems must be a non-negative integer, got -1"),
        ("overlapping_one_of", {"oneOf": [{"format": "email"}, {"format": "uri"}]},
         UnsupportedSchemaError, "JSON Schema at '/oneOf': oneOf branches may overlap"),
        ("unsatisfiable", {"type": "array", "minItems": 3, "maxItems": 2}, SchemaError, "the schema accepts no JSON value"),
        ("not_json", "{not json", SchemaError, "the schema is not valid JSON"),
    )
    def test_errors(self, schema, error, message):
        with self.assertRaisesRegex(error, re.escape(message)):
            json_schema_to_ebnf(schema)

    @parameterized.named_parameters(
        ("min_items_string", {"type": "string", "minItems": "3"}, SchemaError,
         "JSON Schema at '/minItems': minItems must be an integer, got \"3\""),
        ("required_int", {"properties": {"x": {"required": 5}}}, SchemaError,
         "JSON Schema at '/properties/x/required': required must be an array of strings, got 5"),
        ("properties_list", {"properties": []}, SchemaError,
         "JSON Schema at '/properties': properties must be an object (of schemas), got []"),
        ("subschema_not_a_schema", {"items": 5}, SchemaError,
         "JSON Schema at '/items': items must be a boolean or an object (a schema), got 5"),
        ("multiple_of_zero", {"type": "string", "multipleOf": 0}, SchemaError,
         "JSON Schema at '/multipleOf': multipleOf must be greater than 0, got 0"),
        ("empty_any_of", {"anyOf": []}, SchemaError, "JSON Schema at '/anyOf': anyOf must be a non-empty array of "
         "schemas"),
        ("unique_items_string", {"uniqueItems": "yes"}, SchemaError,
         "JSON Schema at '/uniqueItems': uniqueItems must be a boolean, got \"yes\""),
        ("dangling_ref_unused", {"$defs": {"a": {"$ref": "#/$defs/nope"}}}, SchemaError,
         "JSON Schema at '/$defs/a/$ref': $ref '#/$defs/nope' points to nothing"),
        ("dangling_anchor", {"properties": {"x": {"$ref": "#nope"}}}, SchemaError,
         "JSON Schema at '/properties/x/$ref': $ref '#nope': no $anchor named 'nope'"),
        ("invalid_pattern", {"properties": {"x": {"type": "integer", "pattern": "("}}}, SchemaError,
         "JSON Schema at '/properties/x/pattern': invalid regex \"(\": at position 0: unbalanced '(': no matching "
         "')'"),
        ("invalid_pattern_properties", {"patternProperties": {"[": {}}}, SchemaError,
         "JSON Schema at '/patternProperties/[': invalid regex \"[\": at position 0: unterminated character class "
         "'['"),
        ("min_items_above_max_items", {"type": "object", "properties": {"x": {"type": "array", "minItems": 3,
                                                                               "maxItems": 2}}, "required": ["x"]},
         UnsatisfiableSchemaError, "JSON Schema at '/properties/x/maxItems': the schema accepts no JSON value "
         "(minItems is greater than maxItems: 3 > 2)"),
        ("min_length_above_max_length", {"type": "string", "minLength": 5, "maxLength": 2}, UnsatisfiableSchemaError,
         "JSON Schema at '/maxLength': the schema accepts no JSON value ('minLength' 5 > 'maxLength' 2)"),
        ("minimum_above_maximum", {"type": "number", "minimum": 5, "maximum": 2}, UnsatisfiableSchemaError,
         "JSON Schema at '/maximum': the schema accepts no JSON value (no number within 'minimum' 5 and "
         "'maximum' 2)"),
        ("min_properties_above_max", {"type": "object", "minProperties": 3, "maxProperties": 1},
         UnsatisfiableSchemaError, "JSON Schema at '/maxProperties': the schema accepts no JSON value "
         "('minProperties' 3 > 'maxProperties' 1)"),
        ("false_schema", False, UnsatisfiableSchemaError,
         "JSON Schema at '/': the schema accepts no JSON value (the schema is false)"),
        ("ref_to_itself", {"$ref": "#"}, UnsatisfiableSchemaError,
         "JSON Schema at '/': the schema accepts no finite JSON value: every value would have to contain itself "
         "through '$ref' (a reference cycle that never reaches a value without one)"),
        ("required_member_of_itself", {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
         UnsatisfiableSchemaError, "JSON Schema at '/': the schema accepts no finite JSON value: every value would "
         "have to contain itself through '$ref' (a reference cycle that never reaches a value without one)"),
        ("unknown_remote", {"$ref": "https://example.com/other.json"}, UnsupportedSchemaError,
         "JSON Schema at '/$ref': $ref 'https://example.com/other.json' names a document that is neither this "
         "schema nor in the 'refs' registry (remote documents are never fetched)"),
    )
    def test_bad_input_messages(self, schema, error, message):
        with self.assertRaises(error) as ctx:
            json_schema_to_ebnf(schema)
        self.assertEqual(str(ctx.exception), message)

    def test_refs_registry(self):
        other = {"$id": "https://example.com/defs.json", "$defs": {"pos": {"type": "integer", "minimum": 1}}}
        schema = {"type": "array", "items": {"$ref": "https://example.com/defs.json#/$defs/pos"}}
        grammar = xg2jax.Grammar.from_json_schema(schema, refs={"https://example.com/defs.json": other})
        self.assertGrammarAccepts(grammar, "[1,2]")
        self.assertGrammarRejects(grammar, "[0]")
        compiler = xg2jax.GrammarCompiler(xg2jax.TokenizerInfo([bytes([b]) for b in range(256)]))
        compiled = compiler.compile_json_schema(schema, refs={"https://example.com/defs.json": other})
        matcher = xg2jax.GrammarMatcher(compiled)
        self.assertTrue(matcher.accept_string("[7]"))
        self.assertTrue(matcher.is_completed())
        relative = {"$id": "https://example.com/main.json", "$ref": "defs.json#/$defs/pos"}
        grammar = xg2jax.Grammar.from_json_schema(relative, refs={"https://example.com/defs.json": other})
        self.assertGrammarAccepts(grammar, "3")
        self.assertGrammarRejects(grammar, "-3")

    def test_enum_siblings_checked(self):
        for schema, text in (({"enum": ["a", "b"], "pattern": "^a"}, '"b"'),
                             ({"enum": [{}, {"a": 1}], "minProperties": 1}, "{}")):
            self.assertGrammarRejects(xg2jax.Grammar.from_json_schema(schema), text)

    def test_key_regex_automaton_matches_python_re(self):
        import random

        from xg2jax.json_schema._automata import matches, regex_dfa
        rng = random.Random(1)
        alphabet = "abcdfoxy-0123 \n.á_]"
        for pattern in ["f.*o", "^a*$", "a+", "^fo", "[0-9]{2,}", "^x-", "ab|cd$", "^(ab|c)+d?$", "a{2,3}",
                        "^[^a-c]\\d\\w$", "x{0}y", "(a|b){2}c", "^á+$", "[\\-a]", "^\\.$", "a?b*c+"]:
            dfa = regex_dfa(pattern)
            for _ in range(500):
                text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
                expected = re.search(pattern.replace("$", "\\Z"), text, re.ASCII) is not None  # ECMAScript \w is ASCII
                self.assertEqual(matches(dfa, text), expected, (pattern, text))

    def test_large_counts_and_categories_in_patterns_with_lengths(self):
        # Counted repetitions of any size (within the automaton state limit) and \p{...} reach the automaton path,
        # which also takes minLength / maxLength and a lone surrogate in a key.
        ident = xg2jax.Grammar.from_json_schema({"type": "string", "pattern": "^[a-z0-9_-]{1,128}$", "minLength": 3})
        self.assertGrammarAccepts(ident, json.dumps("a" * 128))
        for bad in ["a" * 129, "ab", "a b"]:
            self.assertGrammarRejects(ident, json.dumps(bad))
        word = xg2jax.Grammar.from_json_schema({"type": "string", "pattern": "^\\p{Letter}+$", "maxLength": 3})
        self.assertGrammarAccepts(word, '"añΩ"')
        for bad in ['"añΩb"', '"a1"', '""']:
            self.assertGrammarRejects(word, bad)
        keys = xg2jax.Grammar.from_json_schema({"type": "object", "patternProperties": {"^\\p{Lu}{1,200}$": {}},
                                                "additionalProperties": False})
        self.assertGrammarAccepts(keys, '{"ÀB": 1}')
        self.assertGrammarRejects(keys, '{"Àb": 1}')

    def test_regex_errors_and_limits_are_reported_at_the_keyword(self):
        with self.assertRaisesRegex(SchemaError, r"'/pattern'.*unterminated character class"):
            xg2jax.Grammar.from_json_schema({"type": "string", "pattern": "a[b"})
        with self.assertRaisesRegex(UnsupportedSchemaError,
                                    r"'/patternProperties/.*more than 2000 DFA states"):
            xg2jax.Grammar.from_json_schema({"type": "object", "patternProperties": {"(a|b)*a(a|b){12}": {}},
                                             "additionalProperties": False})

    def test_plain_integers_option(self):
        # Default: integers as a generator writes them. plain_integers=False: every spelling JSON Schema counts as
        # an integer (1.0, 1.00, -0), as a validator reads them.
        for schema, accepted, other_spellings in [
                ({"type": "integer"}, ["2", "0", "-12"], ["2.0", "0.00", "-0", "-12.000"]),
                ({"type": "integer", "minimum": -3, "maximum": 3}, ["2", "0", "-3"], ["2.0", "-0"]),
                ({"type": "integer", "multipleOf": 2}, ["2", "0", "-4"], ["2.0", "-0"]),
                ({"enum": [2, 0]}, ["2", "0"], ["2.0", "0.0"]),
                ({"const": 0}, ["0"], ["0.00"])]:
            plain = xg2jax.Grammar.from_json_schema(schema)
            wide = xg2jax.Grammar.from_json_schema(schema, plain_integers=False)
            for text in accepted:
                self.assertGrammarAccepts(plain, text)
                self.assertGrammarAccepts(wide, text)
            for text in other_spellings:
                self.assertGrammarRejects(plain, text)
                self.assertGrammarAccepts(wide, text)
        compiler = xg2jax.GrammarCompiler(xg2jax.TokenizerInfo([b"1", b".", b"0"]))
        for plain in (True, False, True):  # the option is part of the compiler's cache key
            m = xg2jax.GrammarMatcher(compiler.compile_json_schema({"type": "integer"}, plain_integers=plain))
            self.assertEqual(m.accept_string("1.0"), not plain)

    def test_non_strict_mode_ignores_unique_items(self):
        grammar = xg2jax.Grammar.from_json_schema({"type": "array", "uniqueItems": True}, strict_mode=False)
        self.assertGrammarAccepts(grammar, "[1,1]")  # the documented approximation


if __name__ == "__main__":
    absltest.main()
