// See merge.h.
#include "frontends/json_schema/merge.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_set>

#include "frontends/json_schema/check.h"
#include "frontends/json_schema/ebnf_text.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/multiples.h"
#include "frontends/json_schema/schema_nodes.h"

namespace xg::json_schema {

namespace {

// Nodes the merges of one conversion may make or copy (about 100 bytes each).
constexpr size_t kMaxMergedNodes = 2'000'000;
// Nesting of merged schemas (allOf wrappers around allOf wrappers) the recursive readers here accept.
constexpr int kMaxMergedDepth = 2048;

JsonValue* FindMutable(JsonValue* object, const std::string& key) {
  for (auto& [k, v] : object->members) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool HasAny(const JsonValue& s, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.Find(k) != nullptr; });
}

// The type names of a `type` value (a name or a list of names).
std::vector<std::string> TypeNames(const JsonValue& v) {
  if (v.is_string()) return {v.text};
  std::vector<std::string> out;
  for (const auto& t : v.items) out.push_back(t.text);
  return out;
}

}  // namespace

const JsonValue* SchemaMerger::True() {
  static const JsonValue kTrue = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::kBool;
    v.boolean = true;
    return v;
  }();
  return &kTrue;
}

const JsonValue* SchemaMerger::False() {
  static const JsonValue kFalse = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::kBool;
    return v;
  }();
  return &kFalse;
}

void SchemaMerger::Charge(size_t nodes) {
  nodes_ += nodes;
  if (nodes_ > kMaxMergedNodes) Stop("allOf merges beyond the native copy budget");
}

const JsonValue* SchemaMerger::Make(JsonValue v) {
  Charge(1);
  arena_.push_back(std::make_unique<JsonValue>(std::move(v)));
  return arena_.back().get();
}

JsonValue SchemaMerger::Share(const JsonValue& v) {
  Charge(1);
  JsonValue out;
  out.kind = v.kind;
  out.boolean = v.boolean;
  out.text = v.text;
  out.origin = v.Identity();
  out.items.reserve(v.items.size());
  for (const auto& x : v.items) out.items.push_back(Share(x));
  out.members.reserve(v.members.size());
  for (const auto& [k, x] : v.members) out.members.emplace_back(k, Share(x));
  return out;
}

void SchemaMerger::AppendText(const JsonValue& v, std::string* out, int depth, bool by_value) {
  if (depth > kMaxMergedDepth) Stop("allOf merges nested beyond the native limit");
  switch (v.kind) {
    case JsonValue::Kind::kNull: *out += "null"; return;
    case JsonValue::Kind::kBool: *out += v.boolean ? "true" : "false"; return;
    case JsonValue::Kind::kString: *out += JsonString(v.text); return;
    case JsonValue::Kind::kNumber: {
      // json.loads reads a literal without fraction or exponent as an int (exact), any other as a float: equal
      // floats share their 17-digit spelling, and the "f" keeps 1 and 1.0 apart as json.dumps does.
      if (v.text.find_first_of(".eE") == std::string::npos) {
        *out += v.text == "-0" ? "0" : v.text;
      } else if (std::optional<Decimal> d = by_value ? Decimal::Parse(v.text) : std::nullopt;
                 d && d->fraction.empty()) {  // an integral float equals the int
        *out += d->IsZero() ? "0" : (d->negative ? "-" : "") + std::to_string(d->whole);
      } else {
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "f%.17g", std::strtod(v.text.c_str(), nullptr));
        *out += buffer;
      }
      return;
    }
    case JsonValue::Kind::kArray:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out->push_back(',');
        AppendText(v.items[i], out, depth + 1, by_value);
      }
      out->push_back(']');
      return;
    case JsonValue::Kind::kObject: {
      std::vector<const std::pair<std::string, JsonValue>*> sorted;
      for (const auto& m : v.members) sorted.push_back(&m);
      std::sort(sorted.begin(), sorted.end(), [](const auto* x, const auto* y) { return x->first < y->first; });
      out->push_back('{');
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (i) out->push_back(',');
        *out += JsonString(sorted[i]->first);
        out->push_back(':');
        AppendText(sorted[i]->second, out, depth + 1, by_value);
      }
      out->push_back('}');
      return;
    }
  }
}

std::string SchemaMerger::Text(const JsonValue& v) {
  std::string out;
  AppendText(v, &out, 0);
  Charge(out.size() / 64);  // text is work too: charge it against the same budget
  return out;
}

std::string SchemaMerger::ValueText(const JsonValue& v) {
  std::string out;
  AppendText(v, &out, 0, true);
  Charge(out.size() / 64);
  return out;
}

const JsonValue* SchemaMerger::Strip(const JsonValue* s) {
  if (!s->is_object()) return s;
  if (std::all_of(s->members.begin(), s->members.end(), [](const auto& m) { return IsRecognised(m.first); })) {
    return s;
  }
  JsonValue out = Object();
  for (const auto& [k, v] : s->members) {
    if (IsRecognised(k)) out.members.emplace_back(k, Share(v));
  }
  return Make(std::move(out));
}

const JsonValue* SchemaMerger::Deref(const JsonValue* s) {
  std::unordered_set<std::string> seen;
  while (References::IsBare(*s, enforce_formats_)) {
    auto [key, node] = refs_.Resolve(s->Find("$ref")->text);
    if (!node) Stop("a '$ref' that points to nothing");
    if (!seen.insert(key).second) Stop("a '$ref' cycle without any constraint");
    Check(*node, draft_);
    s = node;
  }
  return s;
}

const JsonValue* SchemaMerger::RewriteDependencies(const JsonValue* s) {
  if (!s->is_object()) return s;
  if (const JsonValue* dependencies = s->Find("dependencies")) {
    JsonValue out = Object();
    for (const auto& [k, v] : s->members) {
      if (k != "dependencies") out.members.emplace_back(k, Share(v));
    }
    bool arrays = false, schemas = false;
    JsonValue required = Object();
    if (const JsonValue* existing = s->Find("dependentRequired")) required = Share(*existing);
    JsonValue dependent = Object();
    if (const JsonValue* existing = s->Find("dependentSchemas")) dependent = Share(*existing);
    for (const auto& [name, value] : dependencies->members) {
      if (!value.is_array()) {  // a schema: with one already given for the name, both
        schemas = true;
        if (JsonValue* given = FindMutable(&dependent, name)) {
          JsonValue both = Array();
          both.items.push_back(std::move(*given));
          both.items.push_back(Share(value));
          JsonValue conjunction = Object();
          conjunction.members.emplace_back("allOf", std::move(both));
          *given = std::move(conjunction);
        } else {
          dependent.members.emplace_back(name, Share(value));
        }
        continue;
      }
      arrays = true;
      JsonValue* list = FindMutable(&required, name);
      if (!list) {
        required.members.emplace_back(name, Array());
        list = &required.members.back().second;
      }
      for (const auto& x : value.items) list->items.push_back(Share(x));
      list->origin = nullptr;  // a new list
    }
    auto set = [&](const char* kw, JsonValue v) {
      v.origin = nullptr;  // a new map
      if (JsonValue* existing = FindMutable(&out, kw)) {
        *existing = std::move(v);
      } else {
        out.members.emplace_back(kw, std::move(v));
      }
    };
    if (arrays) set("dependentRequired", std::move(required));
    if (schemas) set("dependentSchemas", std::move(dependent));
    s = Make(std::move(out));
  }
  if (const JsonValue* dependent = s->Find("dependentSchemas")) {
    // Only objects that have the name: "required" alone would also hold for every non-object.
    std::vector<JsonValue> rules;
    for (const auto& [name, sub] : dependent->members) {
      JsonValue names = Array();
      names.items.push_back(String(name));
      JsonValue cond = Object();
      cond.members.emplace_back("type", String("object"));
      cond.members.emplace_back("required", std::move(names));
      JsonValue rule = Object();
      rule.members.emplace_back("if", std::move(cond));
      rule.members.emplace_back("then", Share(sub));
      rules.push_back(std::move(rule));
    }
    s = Make(WithConjuncts(*s, {"dependentSchemas"}, std::move(rules)));
  }
  return s;
}

const JsonValue* SchemaMerger::RefAndSiblings(const JsonValue& s, bool recognised_only) {
  JsonValue siblings = Object();
  for (const auto& [kw, v] : s.members) {
    if ((IsRecognised(kw) || !recognised_only) && kw != "$ref" && !IsAnnotation(kw, enforce_formats_)) {
      siblings.members.emplace_back(kw, Share(v));
    }
  }
  if (siblings.members.empty()) return nullptr;
  JsonValue bare = Object();
  bare.members.emplace_back("$ref", Share(*s.Find("$ref")));
  JsonValue list = Array();
  list.items.push_back(std::move(bare));
  list.items.push_back(std::move(siblings));
  JsonValue out = Object();
  out.members.emplace_back("allOf", std::move(list));
  return Make(std::move(out));
}

const JsonValue* SchemaMerger::WithoutRef(const JsonValue* b) {
  std::unordered_set<const JsonValue*> seen;
  while (b->is_object() && b->Find("$ref")) {
    if (!seen.insert(b->Identity()).second) Stop("a '$ref' cycle without any constraint");
    const JsonValue& ref = *b->Find("$ref");
    if (draft_ >= 2019) {
      // as _without_ref reads a target: unknown keywords count as siblings
      if (const JsonValue* conjunction = RefAndSiblings(*b, /*recognised_only=*/false)) return conjunction;
    }
    auto [key, node] = refs_.Resolve(ref.text);
    if (!node) Stop("a '$ref' that points to nothing");
    Check(*node, draft_);
    b = Deref(node);  // the target as written (unrecognised keywords too, as the Python front end reads it)
  }
  return b;
}

std::vector<const JsonValue*> SchemaMerger::Unique(const std::vector<const JsonValue*>& schemas) {
  std::vector<const JsonValue*> out;
  std::unordered_set<std::string> seen;
  for (const JsonValue* x : schemas) {
    if (seen.insert(Text(*x)).second) out.push_back(x);
  }
  return out;
}

const JsonValue* SchemaMerger::AllOf(const std::vector<const JsonValue*>& schemas) {
  std::vector<const JsonValue*> constraining;
  for (const JsonValue* x : schemas) {
    if (!IsTrue(x) && !IsEmptyObject(x)) constraining.push_back(x);
  }
  std::vector<const JsonValue*> distinct = Unique(constraining);
  if (distinct.empty()) return True();
  if (distinct.size() == 1) return distinct[0];
  JsonValue list = Array();
  for (const JsonValue* x : distinct) list.items.push_back(Share(*x));
  JsonValue out = Object();
  out.members.emplace_back("allOf", std::move(list));
  return Make(std::move(out));
}

const JsonValue* SchemaMerger::Merge(const JsonValue* a, const JsonValue* b) {
  if (++*work_ > kMaxVisits) Stop("a schema beyond the native budget");
  if (IsFalse(a) || IsFalse(b)) return False();
  if (IsTrue(a) || IsEmptyObject(a)) return b;
  if (IsTrue(b) || IsEmptyObject(b)) return a;
  if (!a->is_object() || !b->is_object()) Stop("'allOf' entries that are not schemas");
  a = Strip(a);
  b = Strip(b);
  // x and x is x (equal texts have equal member counts: the count is the cheap test)
  if (a->members.size() == b->members.size() && Text(*a) == Text(*b)) return a;
  a = RewriteNot(RewriteDependencies(a));
  b = RewriteNot(RewriteDependencies(b));
  if (IsFalse(a) || IsFalse(b)) return False();
  if (b->Find("$ref")) {
    b = WithoutRef(b);
    if (!b->is_object()) return Merge(a, b);
  }
  JsonValue out = Object();
  for (const auto& [k, v] : a->members) out.members.emplace_back(k, Share(v));
  std::unordered_set<std::string> merged;  // b's keywords merged here already
  MergePositional(*a, *b, &out, &merged);
  // Every `contains` must find its own item (or one item matching several): two or more distinct ones become
  // CONTAINS_ALL, one (the same twice) stays `contains`.
  std::vector<const JsonValue*> wanted;
  for (const JsonValue* side : {a, b}) {
    if (const JsonValue* c = side->Find("contains")) wanted.push_back(c);
    if (const JsonValue* all = side->Find(kContainsAll)) {
      for (const auto& x : all->items) wanted.push_back(&x);
    }
  }
  if (wanted.size() > 1) {
    if (draft_ >= 2019 && (HasAny(*a, {"minContains", "maxContains"}) || HasAny(*b, {"minContains", "maxContains"}))) {
      Stop("allOf merging two 'contains' with minContains / maxContains");
    }
    std::vector<const JsonValue*> unique;
    std::unordered_set<std::string> texts;
    for (const JsonValue* x : wanted) {
      if (texts.insert(Text(*x)).second) unique.push_back(x);
    }
    auto& m = out.members;
    m.erase(std::remove_if(m.begin(), m.end(), [](const auto& x) { return x.first == "contains" || x.first == kContainsAll; }),
            m.end());
    if (unique.size() == 1) {
      m.emplace_back("contains", Share(*unique[0]));
    } else {
      JsonValue list = Array();
      for (const JsonValue* x : unique) list.items.push_back(Share(*x));
      m.emplace_back(kContainsAll, std::move(list));
    }
    merged.insert("contains");
    merged.insert(kContainsAll);
  }
  static const std::initializer_list<const char*> kTrio = {"properties", "patternProperties",
                                                           "additionalProperties"};
  bool members = HasAny(*a, kTrio) && HasAny(*b, kTrio);
  if (members) {
    auto& m = out.members;
    m.erase(std::remove_if(m.begin(), m.end(),
                           [](const auto& x) {
                             return x.first == "properties" || x.first == "patternProperties" ||
                                    x.first == "additionalProperties";
                           }),
            m.end());
    MergeMembers(*a, *b, &out);
  }
  for (const auto& [kw, vb] : b->members) {
    if (members && (kw == "properties" || kw == "patternProperties" || kw == "additionalProperties")) continue;
    if (merged.count(kw)) continue;
    if (IsAnnotation(kw, enforce_formats_)) continue;
    JsonValue* va = FindMutable(&out, kw);
    if (!va) {
      out.members.emplace_back(kw, Share(vb));
      continue;
    }
    if (!MergeKeyword(kw, va, vb)) return False();
  }
  return Make(std::move(out));
}

bool SchemaMerger::MergeKeyword(const std::string& kw, JsonValue* va, const JsonValue& vb) {
  auto bound = [&](const JsonValue& v) {
    std::optional<Decimal> d = v.is_number() ? Bound(v) : std::nullopt;
    if (!d) Stop("allOf: a '" + kw + "' that is not a number read exactly");
    // Python compares an int with a float exactly, but reads a decimal literal as the nearest double: the two
    // orders agree while both fit a double's integers exactly.
    if (d->whole >= (int64_t{1} << 53)) Stop("allOf: a '" + kw + "' beyond 2^53");
    return *d;
  };
  if (kw == "type") {
    std::vector<std::string> ta = TypeNames(*va), tb = TypeNames(vb);
    auto has = [](const std::vector<std::string>& t, const char* name) {
      return std::find(t.begin(), t.end(), name) != t.end();
    };
    std::vector<std::string> both;
    for (const auto& t : ta) {
      if (has(tb, t.c_str()) && !has(both, t.c_str())) both.push_back(t);
    }
    if (((has(ta, "number") && has(tb, "integer")) || (has(ta, "integer") && has(tb, "number"))) &&
        !has(both, "integer")) {
      both.push_back("integer");
    }
    if (both.empty()) return false;
    std::sort(both.begin(), both.end());
    JsonValue list = Array();
    for (const auto& t : both) list.items.push_back(String(t));
    *va = std::move(list);
  } else if (kw == "required" || kw == kAbsent || kw == kNotStrings || kw == kNotPatterns || kw == kNotMultipleOf) {
    for (const auto& name : vb.items) {
      bool listed = std::any_of(va->items.begin(), va->items.end(),
                                [&](const JsonValue& x) { return x.text == name.text; });
      if (!listed) va->items.push_back(Share(name));
    }
    va->origin = nullptr;  // a new list (an identity of its own)
  } else if (kw == "minLength" || kw == "minItems" || kw == "minProperties") {
    if (Count(vb, kw) > Count(*va, kw)) *va = Share(vb);
  } else if (kw == "maxLength" || kw == "maxItems" || kw == "maxProperties") {
    if (Count(vb, kw) < Count(*va, kw)) *va = Share(vb);
  } else if ((kw == "minimum" || kw == "exclusiveMinimum") && draft_ >= 6) {
    if (xg::json_schema::Compare(bound(vb), bound(*va)) > 0) *va = Share(vb);
  } else if ((kw == "maximum" || kw == "exclusiveMaximum") && draft_ >= 6) {
    if (xg::json_schema::Compare(bound(vb), bound(*va)) < 0) *va = Share(vb);
  } else if (kw == "allOf") {
    std::vector<const JsonValue*> all;
    for (const auto& x : va->items) all.push_back(&x);
    for (const auto& x : vb.items) all.push_back(&x);
    JsonValue list = Array();
    for (const JsonValue* x : Unique(all)) list.items.push_back(Share(*x));
    *va = std::move(list);
  } else if (kw == "anyOf" || kw == "oneOf") {
    // (x1 | x2) & (y1 | y2) = (x1 & (y1 | y2)) | (x2 & (y1 | y2)); the same for exactly-one.
    JsonValue list = Array();
    for (const auto& x : va->items) {
      JsonValue pair = Array();
      pair.items.push_back(Share(x));
      JsonValue alternatives = Object();
      alternatives.members.emplace_back(kw, Share(vb));
      pair.items.push_back(std::move(alternatives));
      JsonValue conjunction = Object();
      conjunction.members.emplace_back("allOf", std::move(pair));
      list.items.push_back(std::move(conjunction));
    }
    *va = std::move(list);
  } else if (kw == "prefixItems" || (kw == "items" && (va->is_array() || vb.is_array()))) {
    Stop("allOf: merging two positional '" + kw + "'");
  } else if (kw == "propertyNames") {
    const JsonValue* both = Merge(va, &vb);
    *va = Share(*both);
  } else if (kw == "items" || kw == "additionalProperties") {
    const JsonValue* both = AllOf({va, &vb});
    *va = Share(*both);
  } else if (kw == "enum") {
    std::unordered_set<std::string> listed;
    for (const auto& x : vb.items) listed.insert(ValueText(x));
    JsonValue kept = Array();
    for (const auto& x : va->items) {
      if (listed.count(ValueText(x))) kept.items.push_back(Share(x));
    }
    *va = std::move(kept);
  } else if (kw == "const") {
    if (ValueText(*va) != ValueText(vb)) return false;
  } else if (kw == "multipleOf") {
    // The common multiples of two numbers are the multiples of their least common multiple.
    std::optional<std::string> lcm = DecimalLcm(bound(*va), bound(vb));
    if (!lcm) Stop("allOf merging two 'multipleOf' whose least common multiple is not written exactly");
    JsonValue merged;
    merged.kind = JsonValue::Kind::kNumber;
    merged.text = *lcm;
    *va = std::move(merged);
  } else if (Text(*va) != Text(vb)) {
    Stop("allOf: two different '" + kw + "' keywords");
  }
  return true;
}

namespace {

void SetMember(JsonValue* object, const std::string& key, JsonValue value) {
  if (JsonValue* v = FindMutable(object, key)) {
    *v = std::move(value);
  } else {
    object->members.emplace_back(key, std::move(value));
  }
}

}  // namespace

void SchemaMerger::MergePositional(const JsonValue& a, const JsonValue& b, JsonValue* out,
                                   std::unordered_set<std::string>* merged) {
  static const JsonValue kNoItems = Array();
  // (positional schemas, the schema past them) of one side.
  auto split = [&](const JsonValue& x, const char* positional, const char* past) {
    const JsonValue* p = x.Find(positional);
    const JsonValue* r = x.Find(past);
    return std::make_pair(p && p->is_array() ? p : &kNoItems, r ? r : True());
  };
  auto positions = [&](const std::pair<const JsonValue*, const JsonValue*>& sa,
                       const std::pair<const JsonValue*, const JsonValue*>& sb) {
    JsonValue list = Array();
    size_t n = std::max(sa.first->items.size(), sb.first->items.size());
    for (size_t i = 0; i < n; ++i) {
      const JsonValue* x = i < sa.first->items.size() ? &sa.first->items[i] : sa.second;
      const JsonValue* y = i < sb.first->items.size() ? &sb.first->items[i] : sb.second;
      list.items.push_back(Share(*AllOf({x, y})));
    }
    return list;
  };
  if (draft_ >= 2020 && (a.Find("prefixItems") || b.Find("prefixItems"))) {
    // Position i is checked by each side's prefixItems[i], or its items past its prefix.
    auto sa = split(a, "prefixItems", "items"), sb = split(b, "prefixItems", "items");
    SetMember(out, "prefixItems", positions(sa, sb));
    if (a.Find("items") || b.Find("items")) SetMember(out, "items", Share(*AllOf({sa.second, sb.second})));
    merged->insert({"prefixItems", "items"});
  } else if (draft_ < 2020 && ((a.Find("items") && a.Find("items")->is_array()) ||
                               (b.Find("items") && b.Find("items")->is_array()))) {
    // Draft 7 and earlier: array-form items with additionalItems past them, the same positional merge.
    auto side = [&](const JsonValue& x) {
      const JsonValue* items = x.Find("items");
      if (items && items->is_array()) return split(x, "items", "additionalItems");
      return std::make_pair(&kNoItems, items ? items : True());
    };
    auto sa = side(a), sb = side(b);
    SetMember(out, "items", positions(sa, sb));
    auto& m = out->members;
    m.erase(std::remove_if(m.begin(), m.end(), [](const auto& x) { return x.first == "additionalItems"; }),
            m.end());
    if ((!IsTrue(sa.second) && !IsEmptyObject(sa.second)) || (!IsTrue(sb.second) && !IsEmptyObject(sb.second))) {
      out->members.emplace_back("additionalItems", Share(*AllOf({sa.second, sb.second})));
    }
    merged->insert({"items", "additionalItems"});
  }
}

void SchemaMerger::MergeMembers(const JsonValue& a, const JsonValue& b, JsonValue* out) {
  if (a.Find("patternProperties") || b.Find("patternProperties")) Stop("allOf merging 'patternProperties'");
  static const JsonValue kNoProperties = Object();
  struct Side {
    const JsonValue* props;
    const JsonValue* additional;
  };
  Side sides[2];
  for (int i = 0; i < 2; ++i) {
    const JsonValue& x = i ? b : a;
    const JsonValue* props = x.Find("properties");
    const JsonValue* additional = x.Find("additionalProperties");
    sides[i] = {props ? props : &kNoProperties, additional ? additional : True()};
  }
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const Side& side : sides) {
    for (const auto& [n, _] : side.props->members) {
      if (seen.insert(n).second) names.push_back(n);
    }
  }
  if (!names.empty()) {
    JsonValue props = Object();
    for (const auto& n : names) {
      std::vector<const JsonValue*> values;
      for (const Side& side : sides) {
        const JsonValue* declared = side.props->Find(n);
        values.push_back(declared ? declared : side.additional);
      }
      props.members.emplace_back(n, Share(*AllOf(values)));
    }
    out->members.emplace_back("properties", std::move(props));
  }
  std::vector<const JsonValue*> adds;
  for (const Side& side : sides) {
    if (!IsTrue(side.additional) && !IsEmptyObject(side.additional)) adds.push_back(side.additional);
  }
  if (adds.size() == 1) {
    out->members.emplace_back("additionalProperties", Share(*adds[0]));
  } else if (adds.size() == 2) {
    JsonValue list = Array();
    for (const JsonValue* x : adds) list.items.push_back(Share(*x));
    JsonValue conjunction = Object();
    conjunction.members.emplace_back("allOf", std::move(list));
    out->members.emplace_back("additionalProperties", std::move(conjunction));
  }
}

}  // namespace xg::json_schema
