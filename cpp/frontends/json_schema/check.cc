// See check.h.
#include "frontends/json_schema/check.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/string_automata.h"

namespace xg::json_schema {

namespace {

// JSON values (enum / const) whose spelling and value this front end reproduces: every number a plain integer or
// a number read exactly (Decimal::Parse: a double's repr is the same decimal).
void CheckValue(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNumber:
      if (!IsPlainInteger(v.text) && !Decimal::Parse(v.text)) Stop("a number in 'enum' / 'const' not read exactly");
      break;
    case JsonValue::Kind::kArray:
      for (const auto& x : v.items) CheckValue(x);
      break;
    case JsonValue::Kind::kObject:
      for (const auto& m : v.members) CheckValue(m.second);
      break;
    default:
      break;
  }
}

// `$schema` naming a dialect the Python front end knows (_refs._DIALECTS). The handled keywords mean the same in
// all of them but draft 4's boolean exclusive bounds (read by the converter) and identifiers (References); an
// array `items` is not handled.
bool KnownDialect(const JsonValue& v) {
  static const char* kMarkers[] = {"json-schema.org/draft-04/", "json-schema.org/draft-06/",
                                   "json-schema.org/draft-07/", "json-schema.org/draft/2019-09/",
                                   "json-schema.org/draft/2020-12/"};
  return v.is_string() && std::any_of(std::begin(kMarkers), std::end(kMarkers), [&](const char* m) {
           return v.text.find(m) != std::string::npos;
         });
}

}  // namespace

void Check(const JsonValue& s, int draft, bool is_root) {
  if (s.is_bool()) return;
  if (!s.is_object()) Stop("a schema that is neither an object nor a boolean");
  for (const auto& [kw, v] : s.members) {
    if (!IsRecognised(kw) || IsNoConstraint(kw)) continue;
    if (kw == "$schema" && is_root && !KnownDialect(v)) Stop("'$schema' naming an unknown dialect");
    if (kw == "$schema" || kw == "$id" || kw == "id") continue;  // identifiers: References decides
    if (!IsHandled(kw)) Stop("keyword '" + kw + "'");
    if (kw == "type") {
      bool names = v.is_string() ? IsTypeName(v.text)
                                 : v.is_array() && !v.items.empty() &&
                                       std::all_of(v.items.begin(), v.items.end(), [](const JsonValue& t) {
                                         return t.is_string() && IsTypeName(t.text);
                                       });
      if (!names) Stop("'type' other than a type name or a non-empty array of them");
    } else if (kw == "properties") {
      if (!v.is_object()) Stop("'properties' that is not an object");
      for (const auto& m : v.members) Check(m.second, draft);
    } else if (kw == "required") {
      if (!v.is_array() || !std::all_of(v.items.begin(), v.items.end(), [](const JsonValue& x) {
            return x.is_string();
          })) {
        Stop("'required' that is not an array of strings");
      }
    } else if (kw == "patternProperties") {
      if (!v.is_object()) Stop("'patternProperties' that is not an object");
      for (const auto& [regex, sub] : v.members) {
        if (auto problem = RegexSyntaxError(regex)) Stop("a 'patternProperties' regex the parser rejects (" + *problem + ")");
        Check(sub, draft);
      }
    } else if (kw == "items" && v.is_array()) {
      if (draft >= 2020) Stop("an array 'items' in draft 2020-12");
      for (const auto& x : v.items) Check(x, draft);
    } else if (kw == "uniqueItems") {
      // true needs the finite item domains or strict_mode of the Python front end; false constrains nothing
      if (!v.is_bool() || v.boolean) Stop("'uniqueItems' other than false");
    } else if (kw == "dependentRequired" || kw == "dependencies") {
      if (!v.is_object()) Stop("'" + kw + "' that is not an object");
      for (const auto& [name, list] : v.members) {
        if (!list.is_array()) {
          if (kw == "dependentRequired") Stop("'dependentRequired' with a value that is not an array");
          Check(list, draft);  // a dependent schema
          continue;
        }
        for (const auto& x : list.items) {
          if (!x.is_string()) Stop("'" + kw + "' naming a non-string");
        }
      }
    } else if (kw == "dependentSchemas") {
      if (!v.is_object()) Stop("'dependentSchemas' that is not an object");
      for (const auto& m : v.members) Check(m.second, draft);
    } else if (kw == "prefixItems") {
      if (draft < 2020) Stop("'prefixItems' before draft 2020-12");
      if (!v.is_array()) Stop("'prefixItems' that is not an array");
      for (const auto& x : v.items) Check(x, draft);
    } else if (kw == "additionalItems") {  // from draft 2020-12 on, no keyword of arrays (visits ignore it)
      Check(v, draft);
    } else if (kw == "additionalProperties" || kw == "items" || kw == "not" || kw == "if" || kw == "then" ||
               kw == "else" || kw == "propertyNames" || kw == "contains") {
      Check(v, draft);
    } else if (kw == "enum") {
      if (!v.is_array()) Stop("'enum' that is not an array");
      if (v.items.size() > kMaxEnumValues) Stop("'enum' above MAX_ENUM_VALUES");
      CheckValue(v);
    } else if (kw == "const") {
      CheckValue(v);
    } else if (kw == "anyOf" || kw == "oneOf" || kw == "allOf") {
      if (!v.is_array() || v.items.empty()) Stop("'" + kw + "' that is not a non-empty array");
      for (const auto& x : v.items) Check(x, draft);
    } else if (kw == "$defs" || kw == "definitions") {
      if (!v.is_object()) Stop("'" + kw + "' that is not an object");
      for (const auto& m : v.members) Check(m.second, draft);
    } else if (kw == "$ref") {
      // its target was checked by References
    } else if (kw == "format") {
      if (!v.is_string()) Stop("'format' that is not a string");
    } else if (kw == "minimum" || kw == "maximum" || kw == "exclusiveMinimum" || kw == "exclusiveMaximum") {
      bool draft4_flag = draft <= 4 && kw.rfind("exclusive", 0) == 0 && v.is_bool();
      if (!draft4_flag && !Bound(v)) Stop("'" + kw + "' that is not a number read exactly");
    } else if (kw == "contentMediaType" || kw == "contentEncoding") {  // annotations
      if (!v.is_string()) Stop("'" + kw + "' that is not a string");
    } else if (kw == "multipleOf") {
      std::optional<Decimal> k = Bound(v);
      if (!k || k->negative || k->IsZero()) Stop("'multipleOf' that is not a positive number read exactly");
    } else if (kw == "pattern") {
      if (!v.is_string()) Stop("'pattern' that is not a string");
      if (auto problem = RegexSyntaxError(v.text)) Stop("a 'pattern' the regex parser rejects (" + *problem + ")");
    } else {  // minLength, maxLength, minItems, maxItems
      Count(v, kw);
    }
  }
}

// The dialect from a root `$schema` (2020 without one); KnownDialect has accepted it.
int Draft(const JsonValue& root) {
  const JsonValue* uri = root.is_object() ? root.Find("$schema") : nullptr;
  if (!uri) return 2020;
  static const std::pair<int, const char*> kDialects[] = {{4, "json-schema.org/draft-04/"},
                                                          {6, "json-schema.org/draft-06/"},
                                                          {7, "json-schema.org/draft-07/"},
                                                          {2019, "json-schema.org/draft/2019-09/"},
                                                          {2020, "json-schema.org/draft/2020-12/"}};
  for (const auto& [draft, marker] : kDialects) {
    if (uri->text.find(marker) != std::string::npos) return draft;
  }
  return 2020;
}

}  // namespace xg::json_schema
