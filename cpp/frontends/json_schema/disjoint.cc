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

constexpr int kMaxDisjointDepth = 6;  // _disjoint._MAX_DEPTH

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


// _ranges_meet: [max of the lower bounds, min of the upper bounds] is not empty (absent: 0 and unbounded).
bool RangesMeet(const JsonValue& a, const JsonValue& b, std::string_view lo_kw, std::string_view hi_kw) {
  auto read = [](const JsonValue& x, std::string_view kw) -> std::optional<int64_t> {
    const JsonValue* v = x.Find(kw);
    if (!v) return std::nullopt;
    return Count(*v, kw);  // Check has read it
  };
  int64_t lo = std::max(read(a, lo_kw).value_or(0), read(b, lo_kw).value_or(0));
  std::optional<int64_t> ha = read(a, hi_kw), hb = read(b, hi_kw);
  if (!ha && !hb) return true;
  int64_t hi = ha && hb ? std::min(*ha, *hb) : ha ? *ha : *hb;
  return lo <= hi;
}

// _forbids without patternProperties: an object valid under y cannot have the member `name`.
bool Forbids(const JsonValue& y, const std::string& name) {
  if (y.Find("patternProperties")) return false;  // not shown here
  const JsonValue* props = y.Find("properties");
  if (props && props->is_object()) {
    if (const JsonValue* sub = props->Find(name)) return sub->is_bool() && !sub->boolean;
  }
  const JsonValue* additional = y.Find("additionalProperties");
  return additional && additional->is_bool() && !additional->boolean;
}

bool DisjointObjects(const JsonValue& a, const JsonValue& b, int depth) {
  for (const auto& [x, y] : {std::pair<const JsonValue*, const JsonValue*>{&a, &b}, {&b, &a}}) {
    if (const JsonValue* req = x->Find("required")) {
      for (const auto& name : req->items) {
        if (Forbids(*y, name.text)) return true;
      }
    }
  }
  const JsonValue *ra = a.Find("required"), *rb = b.Find("required");
  const JsonValue *pa = a.Find("properties"), *pb = b.Find("properties");
  if (pa && pb) {
    std::vector<const JsonValue*> names;
    if (ra) for (const auto& n : ra->items) names.push_back(&n);
    if (rb) for (const auto& n : rb->items) names.push_back(&n);
    for (const JsonValue* n : names) {
      const JsonValue *sa = pa->Find(n->text), *sb = pb->Find(n->text);
      if (sa && sb && DisjointPair(*sa, *sb, depth + 1)) return true;
    }
  }
  return !RangesMeet(a, b, "minProperties", "maxProperties");
}

}  // namespace

bool DisjointPair(const JsonValue& a, const JsonValue& b, int depth) {
  if (a.is_bool() && !a.boolean) return true;
  if (b.is_bool() && !b.boolean) return true;
  if (depth > kMaxDisjointDepth) return false;
  if (!a.is_object() || !b.is_object() || a.Find("$ref") || b.Find("$ref")) return false;
  std::unordered_set<std::string> ta = PossibleTypes(a), tb = PossibleTypes(b);
  if (ta.empty() || tb.empty()) return false;  // `enum: []` twice would be a repeated branch, not two disjoint
  std::vector<std::string> common;
  for (const auto& t : ta) {
    if (tb.count(t)) common.push_back(t);
  }
  if (common.empty()) return true;
  auto va = ListedScalars(a), vb = ListedScalars(b);
  if (va && vb && std::none_of(va->begin(), va->end(), [&](const std::string& v) {
        return std::count(vb->begin(), vb->end(), v) > 0;
      })) {
    return true;  // each listed value fails the other side's const / enum
  }
  return std::all_of(common.begin(), common.end(), [&](const std::string& t) {
    if (t == "string") return !RangesMeet(a, b, "minLength", "maxLength");
    if (t == "array") return !RangesMeet(a, b, "minItems", "maxItems");
    if (t == "object") return DisjointObjects(a, b, depth);
    return false;
  });
}

}  // namespace xg::json_schema
