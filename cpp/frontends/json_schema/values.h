// `enum` / `const` next to other keywords, for the native JSON Schema front end: which listed values satisfy their
// sibling keywords, as the Python front end's small validator decides (_values._valid_values / _validate).
//
// Algorithm. A listed value is kept when it satisfies the siblings; the validator walks the schema as the spec
// defines each keyword (`not` inverts, `if` picks `then` or `else`, `oneOf` counts exactly one, a `$ref` is its
// target and, from draft 2019-09, its siblings too). Require first walks every subschema the validator could
// reach and stops the conversion at a keyword it does not check, so the validator never meets one the Python
// front end would refuse and this one would skip.
//
// Contract: the schema has been checked (Check) or was made by the merger; values are those Check admits in an
// `enum` / `const` (no non-integral numbers). Require before Validate.
#pragma once

#include <map>
#include <string>
#include <unordered_set>

#include "automata/codepoint_dfa.h"
#include "frontends/json_schema/merge.h"
#include "frontends/json_schema/references.h"
#include "support/json_value.h"

namespace xg::json_schema {

class ValueValidator {
 public:
  ValueValidator(const References& refs, SchemaMerger* merger, int draft, bool enforce_formats)
      : refs_(refs), merger_(merger), draft_(draft), enforce_formats_(enforce_formats) {}

  // Stops the conversion unless every keyword that `schema` reaches (through subschemas and references) is one
  // Validate checks, and every `pattern` compiles.
  void Require(const JsonValue& schema);
  // Require without stopping: whether Validate checks every keyword `schema` reaches.
  bool Supports(const JsonValue& schema);
  // Whether `value` satisfies `schema`.
  bool Validate(const JsonValue& value, const JsonValue& schema);

 private:
  void RequireAt(const JsonValue& schema, std::unordered_set<std::string>* targets);
  bool Holds(const JsonValue& value, const JsonValue& schema, bool skip_ref);
  const CodepointDfa& Pattern(const std::string& regex);

  const References& refs_;
  SchemaMerger* merger_;
  int draft_;
  bool enforce_formats_;
  std::map<std::string, CodepointDfa> patterns_;
  int depth_ = 0;  // of the Holds calls under way
};

}  // namespace xg::json_schema
