// See disjoint.h.
#include "frontends/json_schema/disjoint.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/json_schema/keywords.h"

namespace xg::json_schema {

namespace {

// The types a schema object allows from `type` / `const` / `enum` (_possible_types), all when none says.
std::unordered_set<std::string> PossibleTypes(const JsonValue& x) {
  std::unordered_set<std::string> out;
  if (const JsonValue* c = x.Find("const")) {
    out.insert(JsonType(*c));
  } else if (const JsonValue* e = x.Find("enum"); e && e->is_array()) {
    for (const auto& v : e->items) out.insert(JsonType(v));
  } else if (const JsonValue* t = x.Find("type")) {
    if (t->is_string()) out.insert(t->text);
    for (const auto& v : t->items) out.insert(v.text);
    if (out.count("number")) out.insert("integer");
  } else {
    out = {"object", "array", "string", "integer", "number", "boolean", "null"};
  }
  return out;
}

// A scalar const / enum property schema (nothing else constraining): its values as canonical texts.
std::optional<std::vector<std::string>> ListedScalars(const JsonValue& x) {
  if (!x.is_object()) return std::nullopt;
  std::vector<const JsonValue*> values;
  for (const auto& [kw, v] : x.members) {
    if (!IsRecognised(kw) || kAnnotations.count(kw) || kw == "type") continue;
    if (kw == "const") values.push_back(&v);
    else if (kw == "enum" && v.is_array()) for (const auto& e : v.items) values.push_back(&e);
    else return std::nullopt;
  }
  if (values.empty() || (x.Find("const") && x.Find("enum"))) return std::nullopt;
  std::vector<std::string> out;
  for (const JsonValue* v : values) {
    if (v->is_object() || v->is_array()) return std::nullopt;
    std::string t = JsonType(*v) + ":" + (v->is_bool() ? (v->boolean ? "true" : "false") : v->text);
    out.push_back(t == "integer:-0" ? "integer:0" : t);
  }
  return out;
}

}  // namespace

bool DisjointPair(const JsonValue& a, const JsonValue& b) {
  if (!a.is_object() || !b.is_object() || a.Find("$ref") || b.Find("$ref")) return false;
  std::unordered_set<std::string> ta = PossibleTypes(a), tb = PossibleTypes(b);
  if (ta.empty() || tb.empty()) return false;  // `enum: []` twice would be a repeated branch, not two disjoint
  std::vector<std::string> common;
  for (const auto& t : ta) {
    if (tb.count(t)) common.push_back(t);
  }
  if (common.empty()) return true;
  if (common != std::vector<std::string>{"object"}) return false;
  const JsonValue *ra = a.Find("required"), *rb = b.Find("required");
  const JsonValue *pa = a.Find("properties"), *pb = b.Find("properties");
  if (!ra || !rb || !pa || !pb) return false;
  std::vector<const JsonValue*> names;
  for (const auto& n : ra->items) names.push_back(&n);
  for (const auto& n : rb->items) names.push_back(&n);
  for (const JsonValue* n : names) {
    const JsonValue *sa = pa->Find(n->text), *sb = pb->Find(n->text);
    if (!sa || !sb) continue;
    auto va = ListedScalars(*sa), vb = ListedScalars(*sb);
    if (!va || !vb) continue;
    bool meet = std::any_of(va->begin(), va->end(),
                            [&](const std::string& v) { return std::count(vb->begin(), vb->end(), v) > 0; });
    if (!meet) return true;
  }
  return false;
}

}  // namespace xg::json_schema
