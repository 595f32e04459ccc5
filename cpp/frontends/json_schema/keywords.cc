// See keywords.h.
#include "frontends/json_schema/keywords.h"

#include <algorithm>

#include "frontends/json_schema/json_schema_to_ebnf.h"

namespace xg::json_schema {

const std::vector<std::string_view> kRecognised = {
    "$anchor", "$comment", "$defs", "$dynamicAnchor", "$dynamicRef", "$id", "$recursiveAnchor", "$recursiveRef",
    "$ref", "$schema", "$vocabulary", "additionalItems", "additionalProperties", "allOf", "anyOf", "const",
    "contains", "contentEncoding", "contentMediaType", "contentSchema", "default", "definitions", "dependencies",
    "dependentRequired", "dependentSchemas", "deprecated", "description", "else", "enum", "examples",
    "exclusiveMaximum", "exclusiveMinimum", "format", "id", "if", "items", "maxContains", "maxItems", "maxLength",
    "maxProperties", "maximum", "minContains", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "prefixItems", "properties", "propertyNames", "readOnly",
    "required", "then", "title", "type", "unevaluatedItems", "unevaluatedProperties", "uniqueItems", "writeOnly",
    "x-xg2jax-absent", "x-xg2jax-contains-all", "x-xg2jax-non-integral", "x-xg2jax-not-multiple-of",
    "x-xg2jax-not-patterns", "x-xg2jax-not-strings", "x-xg2jax-some-member"};

// Keywords that never constrain an instance (NO_CONSTRAINT).
const std::unordered_set<std::string_view> kNoConstraint = {"title",    "description", "default",  "examples",
                                                            "$comment", "deprecated",  "readOnly", "writeOnly"};
// `$schema` (a known dialect at the root), `$id`, `id`, `$defs` and `definitions` are no annotations of
// NO_CONSTRAINT's kind, so a schema holding them is visited as the Python front end visits it (e.g. not as
// `true` when it has no `type`); identifiers matter only to references (see References).
const std::unordered_set<std::string_view> kHandled = {
    "type",     "properties", "required",    "additionalProperties", "items", "enum",  "const", "anyOf",
    "minLength", "maxLength", "minItems",    "maxItems",             "$ref",  "$defs", "definitions",
    "$id",       "id",        "$schema",     "pattern",              "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "oneOf", "allOf", "patternProperties",
    "prefixItems", "additionalItems", "minProperties", "maxProperties", "dependentRequired",
    "dependencies", "not", "uniqueItems", "if", "then", "else", "dependentSchemas", "propertyNames", "contains", "minContains", "maxContains"};
// The Python front end's ANNOTATIONS: keywords that are not constraints of their own schema object (a `$ref`
// with only these beside it is a bare reference).
const std::unordered_set<std::string_view> kAnnotations = {
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema",
    "$id", "id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$vocabulary", "contentMediaType",
    "contentEncoding", "contentSchema", "format"};
// Keywords whose values are JSON values, never schemas (the resource walk does not look inside them).
const std::unordered_set<std::string_view> kValueKeywords = {"const", "enum", "default", "examples"};
const std::unordered_set<std::string_view> kSchemaMaps = {"properties",       "patternProperties", "$defs",
                                                          "definitions",      "dependentSchemas",  "dependencies"};
const std::unordered_set<std::string_view> kTypes = {"object",  "array",   "string", "integer",
                                                     "number", "boolean", "null"};


bool IsRecognised(std::string_view kw) {
  static const std::unordered_set<std::string_view> set(kRecognised.begin(), kRecognised.end());
  return set.count(kw) > 0;
}

[[noreturn]] void Stop(std::string why) { throw NotHandled{std::move(why)}; }

bool IsPlainInteger(const std::string& t) {
  size_t i = t[0] == '-' ? 1 : 0;
  if (i >= t.size() || t.size() - i > kMaxIntegerDigits) return false;
  if (t[i] == '0') return t.size() == i + 1;
  return std::all_of(t.begin() + i, t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t Count(const JsonValue& v, std::string_view kw) {
  if (!v.is_number() || !IsPlainInteger(v.text) || v.text[0] == '-' || v.text.size() > 8) {
    Stop("'" + std::string(kw) + "' other than a plain non-negative integer");
  }
  int64_t n = std::stoll(v.text);
  if (n > kMaxCount) Stop("'" + std::string(kw) + "' above MAX_REPETITION");
  return n;
}

std::optional<Decimal> Bound(const JsonValue& v) {
  if (!v.is_number()) return std::nullopt;
  return Decimal::Parse(v.text);
}

Bounds ReadBounds(const JsonValue& s, int draft) {
  auto number = [&](const char* kw) -> std::optional<Decimal> {
    const JsonValue* v = s.Find(kw);
    if (!v || v->is_bool()) return std::nullopt;  // a boolean is draft 4's flag (Check allowed no other)
    return Bound(*v);
  };
  Bounds b{number("minimum"), number("maximum")};
  if (draft <= 4) {
    const JsonValue* ex_lo = s.Find("exclusiveMinimum");
    const JsonValue* ex_hi = s.Find("exclusiveMaximum");
    b.lo_strict = ex_lo && ex_lo->is_bool() && ex_lo->boolean && b.lo;
    b.hi_strict = ex_hi && ex_hi->is_bool() && ex_hi->boolean && b.hi;
  }
  if (auto ex = number("exclusiveMinimum"); ex && (!b.lo || Compare(*ex, *b.lo) >= 0)) b.lo = ex, b.lo_strict = true;
  if (auto ex = number("exclusiveMaximum"); ex && (!b.hi || Compare(*ex, *b.hi) <= 0)) b.hi = ex, b.hi_strict = true;
  return b;
}

std::string JsonType(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "boolean";
    case JsonValue::Kind::kNumber: return "integer";  // CheckValue admits integers only
    case JsonValue::Kind::kString: return "string";
    case JsonValue::Kind::kArray: return "array";
    case JsonValue::Kind::kObject: return "object";
  }
  return "null";
}

const std::vector<std::string_view>& RecognisedKeywords() { return kRecognised; }

}  // namespace xg::json_schema
