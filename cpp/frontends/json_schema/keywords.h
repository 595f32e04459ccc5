// Shared by the files of the native JSON Schema front end: its limits, the two ways a conversion stops early, the
// keyword tables (mirroring xg2jax/json_schema/_common.py) and the readers of number-valued keywords.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "frontends/json_schema/numbers.h"
#include "support/json_value.h"

namespace xg::json_schema {

// Limits below the Python front end's (_limits.py), so that this front end stops before any input where the
// Python one would raise for size.
constexpr size_t kMaxTextBytes = 4 << 20;
constexpr size_t kMaxJsonDepth = 128;       // MAX_SCHEMA_DEPTH is 256
constexpr int64_t kMaxCount = 1 << 20;      // MAX_REPETITION
constexpr size_t kMaxEnumValues = 100000;   // MAX_ENUM_VALUES
constexpr size_t kMaxIntegerDigits = 300;   // Python's int <-> str conversion limit is 4300 digits
constexpr size_t kMaxGrammarBytes = 16 << 20;  // MAX_GRAMMAR_BYTES is 32 MiB
constexpr int64_t kMaxVisits = 100000;      // MAX_WORK (the Python budget grows from there)
constexpr size_t kMaxPositionalItems = 1000;
constexpr int64_t kMaxContainsRules = 2000;     // MAX_CONTAINS_RULES: states of a counted / merged `contains`
constexpr size_t kMaxContainsAll = 4;           // MAX_CONTAINS_ALL: different `contains` merged by allOf
constexpr size_t kMaxPropertyCountStates = 4096;  // MAX_PROPERTY_COUNT_STATES  // the Python front end recurses once per position

// The schema is outside what this front end converts: the caller runs the Python front end.
struct NotHandled {
  std::string why;
};
// A subschema that accepts no value (the Python front end's Unsatisfiable): caught where the Python front end
// catches it (an optional property is left out, an anyOf branch dropped, ...); at the root the conversion stops
// and the Python front end reports the error.
struct Unsatisfiable {
  std::string why;
};

// Internal keywords (_common.py) that complements write and the visitor reads: a number with a non-zero fraction
// (FRACTION_ONLY), names an object must not have (ABSENT), strings other than the listed ones (NOT_STRINGS) or in
// which none of the listed patterns finds a match (NOT_PATTERNS), integers that none of the listed integers divides
// (NOT_MULTIPLE_OF), arrays in which each of several schemas matches some item (CONTAINS_ALL, from merging
// `contains`). The other (some member) this front end never writes.
constexpr const char* kFractionOnly = "x-xg2jax-non-integral";
constexpr const char* kAbsent = "x-xg2jax-absent";
constexpr const char* kNotStrings = "x-xg2jax-not-strings";
constexpr const char* kNotPatterns = "x-xg2jax-not-patterns";  // strings in which none of the patterns matches
constexpr const char* kNotMultipleOf = "x-xg2jax-not-multiple-of";
constexpr const char* kContainsAll = "x-xg2jax-contains-all";  // allOf of several `contains`: the schemas
// Internal keywords this front end does not visit: a schema holding one stops the conversion.
constexpr const char* kUnvisitedInternal[] = {"x-xg2jax-some-member"};

// What a keyword is to the front ends, as flags of KeywordFlags.
namespace kw {
enum : int {
  kRecognised = 1,      // the Python front end's recognised keywords (_common._RECOGNISED); others are annotations
  kNoConstraint = 2,    // never constrains an instance (NO_CONSTRAINT)
  kHandled = 4,         // handled by this front end (Check stops at any other recognised one)
  kAnnotation = 8,      // ANNOTATIONS: no constraint of its own schema object (a `$ref` with only these beside it
                        // is a bare reference)
  kValue = 16,          // its value is a JSON value, never a schema (the resource walk does not look inside it)
  kSchemaMap = 32,      // its value maps names to schemas (_resources.SCHEMA_MAPS)
  kNotForStrings = 64,  // constrains no string (_patterns._NOT_FOR_STRINGS)
};
}  // namespace kw
// The kw:: flags of a keyword; 0 for one the front ends do not recognise.
int KeywordFlags(std::string_view keyword);
inline bool IsRecognised(std::string_view k) { return KeywordFlags(k) != 0; }
inline bool IsNoConstraint(std::string_view k) { return (KeywordFlags(k) & kw::kNoConstraint) != 0; }
inline bool IsHandled(std::string_view k) { return (KeywordFlags(k) & kw::kHandled) != 0; }
inline bool IsAnnotationKeyword(std::string_view k) { return (KeywordFlags(k) & kw::kAnnotation) != 0; }
inline bool IsValueKeyword(std::string_view k) { return (KeywordFlags(k) & kw::kValue) != 0; }
inline bool IsSchemaMap(std::string_view k) { return (KeywordFlags(k) & kw::kSchemaMap) != 0; }
inline bool IsNotForStrings(std::string_view k) { return (KeywordFlags(k) & kw::kNotForStrings) != 0; }
// The JSON Schema type names, in the Python front end's order (_common.TYPES).
inline constexpr const char* kTypeNames[] = {"object", "array", "string", "integer", "number", "boolean", "null"};
bool IsTypeName(std::string_view name);
// Whether kw does not constrain its own schema object (an annotation; with formats enforced, `format` does).
inline bool IsAnnotation(std::string_view k, bool enforce_formats) {
  return IsAnnotationKeyword(k) && !(enforce_formats && k == "format");
}
[[noreturn]] void Stop(std::string why);
// A plain JSON integer literal (-?(0|[1-9][0-9]*)) of a size Python reads exactly.
bool IsPlainInteger(const std::string& t);
// PythonNumberText of a number value; stops the conversion when it is not read exactly.
std::string NumberText(const JsonValue& v);
// A non-negative count keyword (minLength, ...): an integer, or a float with an integral value, up to kMaxCount;
// Stop otherwise.
int64_t Count(const JsonValue& v, std::string_view kw);
// A bound keyword (`minimum`, ...) read exactly (Decimal::Parse), else nullopt.
std::optional<Decimal> Bound(const JsonValue& v);
// _bounds: (lo, lo_strict, hi, hi_strict) from minimum / maximum / the exclusive bounds (draft 4's flags too); a
// bound not read exactly (Check stops at those in the document) counts as absent.
struct Bounds {
  std::optional<Decimal> lo, hi;
  bool lo_strict = false, hi_strict = false;
};
Bounds ReadBounds(const JsonValue& s, int draft);
// _common.json_type of an enum / const value ("integer" for a number with an integral value, 1.0 too).
std::string JsonType(const JsonValue& v);

}  // namespace xg::json_schema
