// EBNF text building blocks of the native JSON Schema front end: literal quoting, sequences and choices, the
// JSON lexical rules, and a rule table that names sub-grammars once.
//
// The text is byte-for-byte what the Python front end (xg2jax/json_schema/_ebnf.py) writes for the same input,
// so the two can be compared as text while the port is under way (tests/test_json_schema_native.py).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xg::json_schema {

// An EBNF string literal matching exactly the UTF-8 text (quote, backslash, DEL and control characters escaped).
std::string Literal(std::string_view text);
// The compact JSON spelling of the string value (as Python's json.dumps(ensure_ascii=False)).
std::string JsonString(std::string_view value);
// Literal(JsonString(value)): a grammar for exactly that JSON string.
std::string JsonStringLiteral(std::string_view value);

// The concatenation of the non-empty parts ("\"\"" if none).
std::string Seq(std::initializer_list<std::string_view> parts);
// A parenthesised alternation of the distinct options (first occurrences, in order); one option stands alone.
std::string Choice(const std::vector<std::string>& options);

inline constexpr std::string_view kEmpty = "\"\"";

// Rules in definition order; Add reuses a rule whose body is the same text.
class RuleTable {
 public:
  // The JSON lexical rules of a conversion: `ws` is the whitespace expression between tokens ("" for none),
  // `item_sep` / `key_sep` the separator expressions, `ws_body` the body of j_ws.
  RuleTable(std::string_view ws, std::string_view item_sep, std::string_view key_sep, std::string_view ws_body,
            bool plain_integers);

  // Prepended to every name Reserve makes and to the root's (JsonSchemaOptions::rule_prefix).
  void SetPrefix(std::string prefix) { prefix_ = std::move(prefix); }

  std::string Reserve(std::string_view name_hint);
  // Reserves exactly `name` (which must be free: see Has).
  std::string ReserveExact(const std::string& name);
  bool Has(const std::string& name) const { return index_.count(name) > 0; }
  std::string Define(const std::string& name, std::string body);
  // Frees a reserved name whose body turned out unsatisfiable (it may be reserved again, then placed last).
  void Drop(const std::string& name);
  std::string Add(std::string_view name_hint, std::string body);
  // The grammar text, root rule first, then the rules in definition order; a lexical rule only when a rule
  // (or `root`) names it (see LexicalRulesNamed).
  std::string Text(std::string_view root) const;
  size_t size() const { return size_; }  // characters of the bodies defined after the lexical rules

 private:
  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_map<std::string, size_t> index_;     // name -> position in rules_
  std::unordered_map<std::string, std::string> by_body_;
  std::unordered_map<std::string, int> next_;         // base name -> last suffix used
  size_t size_ = 0;
  size_t num_lexical_ = 0;  // rules_[0, num_lexical_) are the lexical rules the constructor defines
  std::string prefix_;
};

}  // namespace xg::json_schema
