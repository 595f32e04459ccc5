// The native JSON Schema front end: a schema's JSON text -> EBNF text for the engine, without Python.
//
// Scope. This front end is being ported from the Python one (xg2jax/json_schema), keyword by keyword; the list of
// what it handles is in docs/json_schema.md ("The native front end"). For those schemas it returns exactly the
// text the Python front end returns (same rules, names and order), so the two are compared as text. For any other
// input -- another keyword, a malformed or unsatisfiable schema, invalid JSON -- it converts nothing and says why:
// the caller runs the Python front end, which also owns every error message, so errors stay the same whichever
// front end would have run.
//
// Thread safety: a pure function of its arguments; safe to call concurrently (the Python binding releases the
// GIL around it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "support/limits.h"

namespace xg::json_schema {

// How strings and keys are written: JSON, or Gemma's tool-call arguments (xgrammar's "gemma" style): strings
// between `<|"|>` markers, raw (no escapes; never holding the marker), keys bare (`{city:<|"|>Paris<|"|>}`; an
// undeclared key is an identifier). Numbers, booleans, null, arrays and objects are as in JSON.
enum class StringStyle { kJson, kGemma };

struct JsonSchemaOptions {
  bool any_whitespace = true;
  // With any_whitespace=false: (item, key) separators; default (", ", ": ").
  std::optional<std::pair<std::string, std::string>> separators;
  // With any_whitespace=true: at most this many whitespace characters between tokens (default: any number).
  std::optional<int64_t> max_whitespace_cnt;
  bool plain_integers = true;
  bool enforce_formats = true;  // `format` checked for the formats of formats.h (else an annotation)
  // An object's members in any order (the engine's AnyOrder(...)): declared properties at most once, required
  // ones present; with minProperties / maxProperties beyond what the required properties settle, not converted.
  bool any_order = false;
  // Prepended to the names of the rules the conversion makes (root included), for a grammar embedded in a larger
  // one; the lexical rules (j_*) and the format rules (fmt_*) keep their names: their bodies depend only on the
  // options, so embedded conversions under the same options share them.
  std::string rule_prefix;
  // Texts no string value may contain (a structural tag's `excludes`: the markers of the format around the JSON,
  // which a model must not write inside it). Checked on the string's value, so an escaped spelling of a text
  // (`\u003c|close|>`) is refused too; enum / const values and declared property names are written as the schema
  // gives them. With excludes, the free string rule j_string is the excluding automaton (its rules named j_x_...),
  // and keys restricted by patternProperties or propertyNames are not converted.
  std::vector<std::string> string_excludes;
  StringStyle string_style = StringStyle::kJson;
};

struct NativeConversion {
  std::optional<std::string> ebnf;  // the grammar (root rule `root`), or nullopt: not converted natively
  std::string not_handled;          // when ebnf is nullopt: what this front end does not handle (yet)
  // `ebnf` parsed under the given Limits, when the conversion had to parse it (a schema with references: its root
  // must still derive a finite text); the compiler compiles it instead of parsing the text again.
  std::optional<Grammar> parsed;
};

// `limits`: those the text is parsed under when the conversion needs it parsed (see NativeConversion::parsed).
NativeConversion JsonSchemaToEbnf(std::string_view schema_text, const JsonSchemaOptions& options,
                                  const Limits& limits = DefaultLimits());

// A grammar whose root names every lexical rule (the rules of ebnf_text.h's RuleTable and the key tails) with the
// bodies a conversion under `options` writes, for automata built once per process (GrammarFsm::Build's `prebuilt`).
std::string JsonLexicalRulesEbnf(const JsonSchemaOptions& options);

// The keywords the Python front end recognises (every other keyword is an annotation); a test checks that the
// two lists agree.
std::vector<std::string_view> RecognisedKeywords();

}  // namespace xg::json_schema
