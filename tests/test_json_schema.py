"""JSON Schema front end (work in progress, issue 4): the supported keywords keep the schema's semantics on
hand-written valid / invalid instances, and unsupported or invalid schemas raise errors naming the JSON pointer."""

from __future__ import annotations

import json
import re

from absl.testing import absltest, parameterized

import xg2jax
from xg2jax.json_schema import SchemaError, UnsupportedSchemaError, json_schema_to_ebnf
from xg2jax.testing import GrammarTestCase

CASES = {
    "object_properties_required": (
        {"type": "object", "properties": {"a": {"type": "integer"},
                                          "b": {"type": "array", "items": {"type": "string", "maxLength": 3},
                                                "minItems": 1}}, "required": ["a"]},
        ['{"a": 1}', '{"a":1,"b":["x","yyy"]}', '{"a":1,"c":null}', '{"a": 1.0}', '{ "a" : 1 }'],
        ['{"b":["x"]}', '{"a":1,"b":[]}', '{"a":1,"b":["xxxx"]}', '{"a":1,"a":2}', '{"a": 1.5}', '[]']),
    "prefix_items": (
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False, "minItems": 1},
        ["[1]", "[1,true]", "[ 1 , false ]"], ["[]", "[1,true,3]", "[true]"]),
    "enum_intersected_with_type": (
        {"enum": [1, "a", {"x": [1, 2]}], "type": ["integer", "object"]},
        ["1", "1.0", '{"x": [1, 2]}'], ['"a"', '{"x":[1]}', "2"]),
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
    "contains": ({"type": "array", "contains": {"const": 5}}, ["[1,5,2]", "[5]", "[5.0]"], ["[1,2]", "[]"]),
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
         "JSON Schema at '/properties/x/pattern': regex \"(?<=a)b\": at position 0: lookbehind assertion"),
        ("dangling_ref", {"$ref": "#/$defs/nope"}, SchemaError, "JSON Schema at '/$ref': $ref '#/$defs/nope' points to nothing"),
        ("bad_type", {"type": "strin"}, SchemaError, "JSON Schema at '/type': 'type' must be one of"),
        ("negative_min_items", {"type": "array", "minItems": -1}, SchemaError,
         "JSON Schema at '/minItems': 'minItems' must be a non-negative integer, got -1"),
        ("overlapping_one_of", {"oneOf": [{"pattern": "a"}, {"pattern": "b"}]},
         UnsupportedSchemaError, "JSON Schema at '/oneOf': oneOf branches may overlap"),
        ("unsatisfiable", {"type": "array", "minItems": 3, "maxItems": 2}, SchemaError, "the schema accepts no JSON value"),
        ("not_json", "{not json", SchemaError, "the schema is not valid JSON"),
    )
    def test_errors(self, schema, error, message):
        with self.assertRaisesRegex(error, re.escape(message)):
            json_schema_to_ebnf(schema)

    def test_non_strict_mode_ignores_unique_items(self):
        grammar = xg2jax.Grammar.from_json_schema({"type": "array", "uniqueItems": True}, strict_mode=False)
        self.assertGrammarAccepts(grammar, "[1,1]")  # the documented approximation


if __name__ == "__main__":
    absltest.main()
