// See keywords.h.
#include "frontends/json_schema/keywords.h"

#include <algorithm>

#include "frontends/json_schema/json_schema_to_ebnf.h"

namespace xg::json_schema {

namespace {

constexpr uint8_t R = 0;  // recognised, nothing more
constexpr uint8_t N = kw::kNoConstraint | kw::kAnnotation;  // NO_CONSTRAINT (all of them are annotations too)

struct KeywordRow {
  std::string_view name;
  uint8_t flags;
};

// The Python front end's recognised keywords (_common._RECOGNISED) and what each is. One table instead of a set
// per property: a conversion asks about every member of every schema object, and one binary search over a small
// array (sorted by length first, see Rows) touches a few cache lines where a hash set's lookup chased pointers
// through cold memory.
constexpr KeywordRow kRows[] = {
    {"$anchor", kw::kAnnotation},
    {"$comment", N},
    {"$defs", kw::kHandled | kw::kAnnotation | kw::kSchemaMap},
    {"$dynamicAnchor", kw::kAnnotation},
    {"$dynamicRef", R},
    {"$id", kw::kHandled | kw::kAnnotation},
    {"$recursiveAnchor", R},
    {"$recursiveRef", R},
    {"$ref", kw::kHandled},
    {"$schema", kw::kHandled | kw::kAnnotation},
    {"$vocabulary", kw::kAnnotation},
    {"additionalItems", kw::kHandled | kw::kNotForStrings},
    {"additionalProperties", kw::kHandled | kw::kNotForStrings},
    {"allOf", kw::kHandled},
    {"anyOf", kw::kHandled},
    {"const", kw::kHandled | kw::kValue},
    {"contains", kw::kHandled | kw::kNotForStrings},
    {"contentEncoding", kw::kHandled | kw::kAnnotation},
    {"contentMediaType", kw::kHandled | kw::kAnnotation},
    {"contentSchema", kw::kAnnotation},
    {"default", N | kw::kValue},
    {"definitions", kw::kHandled | kw::kAnnotation | kw::kSchemaMap},
    {"dependencies", kw::kHandled | kw::kSchemaMap},
    {"dependentRequired", kw::kHandled | kw::kNotForStrings},
    {"dependentSchemas", kw::kHandled | kw::kSchemaMap},
    {"deprecated", N},
    {"description", N},
    {"else", kw::kHandled},
    {"enum", kw::kHandled | kw::kValue},
    {"examples", N | kw::kValue},
    {"exclusiveMaximum", kw::kHandled | kw::kNotForStrings},
    {"exclusiveMinimum", kw::kHandled | kw::kNotForStrings},
    {"format", kw::kHandled | kw::kAnnotation},
    {"id", kw::kHandled | kw::kAnnotation},
    {"if", kw::kHandled},
    {"items", kw::kHandled | kw::kNotForStrings},
    {"maxContains", kw::kHandled | kw::kNotForStrings},
    {"maxItems", kw::kHandled | kw::kNotForStrings},
    {"maxLength", kw::kHandled},
    {"maxProperties", kw::kHandled | kw::kNotForStrings},
    {"maximum", kw::kHandled | kw::kNotForStrings},
    {"minContains", kw::kHandled | kw::kNotForStrings},
    {"minItems", kw::kHandled | kw::kNotForStrings},
    {"minLength", kw::kHandled},
    {"minProperties", kw::kHandled | kw::kNotForStrings},
    {"minimum", kw::kHandled | kw::kNotForStrings},
    {"multipleOf", kw::kHandled | kw::kNotForStrings},
    {"not", kw::kHandled},
    {"oneOf", kw::kHandled},
    {"pattern", kw::kHandled},
    {"patternProperties", kw::kHandled | kw::kSchemaMap | kw::kNotForStrings},
    {"prefixItems", kw::kHandled | kw::kNotForStrings},
    {"properties", kw::kHandled | kw::kSchemaMap | kw::kNotForStrings},
    {"propertyNames", kw::kHandled | kw::kNotForStrings},
    {"readOnly", N},
    {"required", kw::kHandled | kw::kNotForStrings},
    {"then", kw::kHandled},
    {"title", N},
    {"type", kw::kHandled},
    {"unevaluatedItems", R},
    {"unevaluatedProperties", R},
    {"uniqueItems", kw::kHandled | kw::kNotForStrings},
    {"writeOnly", N},
    {"x-xg2jax-absent", R},
    {"x-xg2jax-contains-all", R},
    {"x-xg2jax-non-integral", R},
    {"x-xg2jax-not-multiple-of", R},
    {"x-xg2jax-not-patterns", R},
    {"x-xg2jax-not-strings", R},
    {"x-xg2jax-some-member", R},
};

bool ShorterOrBefore(std::string_view a, std::string_view b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// kRows sorted by (length, text): a comparison with a keyword of another length does not read its text.
const std::vector<KeywordRow>& Rows() {
  static const std::vector<KeywordRow> rows = [] {
    std::vector<KeywordRow> r(std::begin(kRows), std::end(kRows));
    std::sort(r.begin(), r.end(), [](const KeywordRow& a, const KeywordRow& b) { return ShorterOrBefore(a.name, b.name); });
    return r;
  }();
  return rows;
}

}  // namespace

int KeywordFlags(std::string_view keyword) {
  const std::vector<KeywordRow>& rows = Rows();
  auto it = std::lower_bound(rows.begin(), rows.end(), keyword,
                             [](const KeywordRow& row, std::string_view k) { return ShorterOrBefore(row.name, k); });
  return it != rows.end() && it->name == keyword ? (it->flags | kw::kRecognised) : 0;
}

bool IsTypeName(std::string_view name) {
  return std::any_of(std::begin(kTypeNames), std::end(kTypeNames), [&](const char* t) { return name == t; });
}

[[noreturn]] void Stop(std::string why) { throw NotHandled{std::move(why)}; }

bool IsPlainInteger(const std::string& t) {
  size_t i = t[0] == '-' ? 1 : 0;
  if (i >= t.size() || t.size() - i > kMaxIntegerDigits) return false;
  if (t[i] == '0') return t.size() == i + 1;
  return std::all_of(t.begin() + i, t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t Count(const JsonValue& v, std::string_view kw) {
  // A non-negative integer, or a float with an integral value (2.0), as _int_keyword reads it.
  std::optional<Decimal> d = v.is_number() && v.text[0] != '-' ? Decimal::Parse(v.text) : std::nullopt;
  if (!d || !d->fraction.empty()) Stop("'" + std::string(kw) + "' other than a non-negative integer read exactly");
  if (d->whole > kMaxCount) Stop("'" + std::string(kw) + "' above MAX_REPETITION");
  return d->whole;
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

std::string NumberText(const JsonValue& v) {
  std::optional<std::string> text = PythonNumberText(v.text);
  if (!text) Stop("a number that is not read exactly");
  return *text;
}

std::string JsonType(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "boolean";
    case JsonValue::Kind::kNumber: {  // json_type: a float with an integral value is an integer too
      if (IsPlainInteger(v.text)) return "integer";
      std::optional<Decimal> d = Decimal::Parse(v.text);  // CheckValue admits numbers read exactly only
      return d && !d->fraction.empty() ? "number" : "integer";
    }
    case JsonValue::Kind::kString: return "string";
    case JsonValue::Kind::kArray: return "array";
    case JsonValue::Kind::kObject: return "object";
  }
  return "null";
}

std::vector<std::string_view> RecognisedKeywords() {
  std::vector<std::string_view> out;
  for (const KeywordRow& row : kRows) out.push_back(row.name);
  return out;
}

}  // namespace xg::json_schema
