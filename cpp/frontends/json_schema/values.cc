// See values.h.
#include "frontends/json_schema/values.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <vector>

#include "frontends/json_schema/check.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/string_automata.h"

namespace xg::json_schema {

namespace {

// The keywords Validate checks (a part of _values._VALIDATED: those of the schemas this front end converts).
const std::unordered_set<std::string_view> kValidated = {
    "type",          "const",         "enum",         "allOf",       "anyOf",    "oneOf",     "not",
    "if",            "then",          "else",         "minimum",     "maximum",  "exclusiveMinimum",
    "exclusiveMaximum", kFractionOnly, "minLength",   "maxLength",   "pattern",  kNotStrings, kNotPatterns, "minItems",
    "maxItems",      "prefixItems",   "items",        "additionalItems", "uniqueItems", "required", kAbsent,
    "properties",    "additionalProperties", "minProperties", "maxProperties", "dependentRequired", "$ref",
    "contains",      "minContains",   "maxContains", "patternProperties", "propertyNames", "multipleOf",
    kNotMultipleOf};

// Nested validations (subschemas, references) one value check may take: a reference cycle that never reaches a
// value would otherwise recurse without end.
constexpr int kMaxValidationDepth = 512;

size_t CodePoints(const std::string& utf8) {
  return static_cast<size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

const CodepointDfa& ValueValidator::Pattern(const std::string& regex) {
  auto it = patterns_.find(regex);
  if (it == patterns_.end()) it = patterns_.emplace(regex, KeyDfa(regex)).first;
  return it->second;
}

void ValueValidator::Require(const JsonValue& schema) {
  std::unordered_set<std::string> targets;
  RequireAt(schema, &targets);
}

bool ValueValidator::Supports(const JsonValue& schema) {
  try {
    Require(schema);
    return true;
  } catch (const NotHandled&) {
    return false;
  }
}

void ValueValidator::RequireAt(const JsonValue& root, std::unordered_set<std::string>* targets) {
  std::vector<const JsonValue*> todo{&root};  // a worklist, not recursion: reference chains may be long
  while (!todo.empty()) {
    const JsonValue& s = *todo.back();
    todo.pop_back();
    if (s.is_bool()) continue;
    if (!s.is_object()) Stop("a schema next to 'enum' / 'const' that is no object");
    for (const auto& [kw, v] : s.members) {
      if (kw == "format") {
        if (enforce_formats_ && v.is_string() && FindStringFormat(v.text)) Stop("'format' next to 'enum' / 'const'");
        continue;
      }
      if (!IsRecognised(kw) || IsAnnotationKeyword(kw)) continue;
      if (!kValidated.count(kw)) Stop("'" + kw + "' next to 'enum' / 'const'");
      if (kw == "$ref") {
        auto [key, node] = refs_.Resolve(v.text);
        if (!node) Stop("a '$ref' that points to nothing");
        if (targets->insert(key).second) {
          Check(*node, draft_);
          todo.push_back(node);
        }
      } else if (kw == "allOf" || kw == "anyOf" || kw == "oneOf" || kw == "prefixItems" ||
                 (kw == "items" && v.is_array())) {
        for (const auto& x : v.items) todo.push_back(&x);
      } else if (kw == "properties") {
        for (const auto& m : v.members) todo.push_back(&m.second);
      } else if (kw == "patternProperties") {
        for (const auto& [regex, sub] : v.members) {
          try {
            Pattern(regex);
          } catch (const std::exception& e) {
            Stop(std::string("a 'patternProperties' regex next to 'enum' / 'const' beyond the automaton limits (") +
                 e.what() + ")");
          }
          todo.push_back(&sub);
        }
      } else if (kw == "not" || kw == "if" || kw == "then" || kw == "else" || kw == "items" || kw == "contains" ||
                 kw == "propertyNames" ||
                 kw == "additionalItems" || kw == "additionalProperties") {
        todo.push_back(&v);
      } else if (kw == "pattern" || kw == kNotPatterns) {
        try {
          if (kw == "pattern") Pattern(v.text);
          for (const auto& p : v.items) Pattern(p.text);
        } catch (const std::exception& e) {
          Stop(std::string("a 'pattern' next to 'enum' / 'const' beyond the automaton limits (") + e.what() + ")");
        }
      } else if (kw == "uniqueItems" && v.is_bool() && v.boolean) {
        Stop("'uniqueItems' next to 'enum' / 'const'");
      }
    }
  }
}

bool ValueValidator::Validate(const JsonValue& value, const JsonValue& schema) {
  depth_ = 0;
  return Holds(value, schema, false);
}

bool ValueValidator::Holds(const JsonValue& value, const JsonValue& s, bool skip_ref) {
  if (s.is_bool()) return s.boolean;
  if (s.members.empty()) return true;
  if (++depth_ > kMaxValidationDepth) Stop("a value check nested beyond the native limit");
  struct Leave {
    int* depth;
    ~Leave() { --*depth; }
  } leave{&depth_};
  if (const JsonValue* ref = s.Find("$ref"); ref && !skip_ref) {
    // The target, and from draft 2019-09 the siblings too.
    const JsonValue* target = refs_.Resolve(ref->text).second;
    return Holds(value, *target, false) && (draft_ < 2019 || Holds(value, s, true));
  }
  const std::string t = JsonType(value);
  // _validate_more: not, if / then / else, pattern, property counts, dependentRequired.
  if (const JsonValue* inner = s.Find("not"); inner && Holds(value, *inner, false)) return false;
  if (const JsonValue* cond = s.Find("if")) {
    const JsonValue* branch = s.Find(Holds(value, *cond, false) ? "then" : "else");
    if (branch && !Holds(value, *branch, false)) return false;
  }
  if (const JsonValue* p = s.Find("pattern"); p && t == "string" && !Matches(Pattern(p->text), value.text)) {
    return false;
  }
  if (t == "object") {
    const int64_t n = static_cast<int64_t>(value.members.size());
    if (const JsonValue* lo = s.Find("minProperties"); lo && n < Count(*lo, "minProperties")) return false;
    if (const JsonValue* hi = s.Find("maxProperties"); hi && n > Count(*hi, "maxProperties")) return false;
    if (const JsonValue* deps = s.Find("dependentRequired")) {
      for (const auto& [name, needed] : deps->members) {
        if (!value.Find(name)) continue;
        for (const auto& d : needed.items) {
          if (!value.Find(d.text)) return false;
        }
      }
    }
  }
  // _validate: type, const, enum, the combinators, then the keywords of the value's type.
  if (const JsonValue* type = s.Find("type")) {
    auto allows = [&](const std::string& name) {
      if (type->is_string()) return type->text == name;
      return std::any_of(type->items.begin(), type->items.end(), [&](const JsonValue& x) { return x.text == name; });
    };
    if (!allows(t) && !(t == "integer" && allows("number"))) return false;
  }
  if (const JsonValue* c = s.Find("const"); c && merger_->ValueText(*c) != merger_->ValueText(value)) return false;
  if (const JsonValue* e = s.Find("enum")) {
    const std::string text = merger_->ValueText(value);
    if (std::none_of(e->items.begin(), e->items.end(), [&](const JsonValue& x) { return merger_->ValueText(x) == text; })) {
      return false;
    }
  }
  if (const JsonValue* all = s.Find("allOf")) {
    for (const auto& x : all->items) {
      if (!Holds(value, x, false)) return false;
    }
  }
  if (const JsonValue* any = s.Find("anyOf")) {
    if (std::none_of(any->items.begin(), any->items.end(), [&](const JsonValue& x) { return Holds(value, x, false); })) {
      return false;
    }
  }
  if (const JsonValue* one = s.Find("oneOf")) {
    int matched = 0;
    for (const auto& x : one->items) matched += Holds(value, x, false) ? 1 : 0;
    if (matched != 1) return false;
  }
  if (t == "integer" || t == "number") {
    std::optional<Decimal> x = Decimal::Parse(value.text);
    if (!x) Stop("a listed number the native front end does not read exactly");
    const bool integral = x->fraction.empty();
    Bounds b = ReadBounds(s, draft_);
    if (b.lo && (b.lo_strict ? Compare(*x, *b.lo) <= 0 : Compare(*x, *b.lo) < 0)) return false;
    if (b.hi && (b.hi_strict ? Compare(*x, *b.hi) >= 0 : Compare(*x, *b.hi) > 0)) return false;
    if (const JsonValue* f = s.Find(kFractionOnly); f && f->is_bool() && f->boolean && integral) return false;
    constexpr int64_t kExactInDouble = int64_t{1} << 53;
    if (const JsonValue* k = s.Find("multipleOf")) {
      // As the Python validator: float(value / k).is_integer(), a division of doubles (an integer operand is exact
      // below 2^53, and strtod reads a decimal literal as Python's float() does).
      if (x->whole >= kExactInDouble || (IsPlainInteger(k->text) && std::strtod(k->text.c_str(), nullptr) >= 0x1p53)) {
        Stop("a listed number next to 'multipleOf' beyond 2^53");
      }
      const double q = std::strtod(value.text.c_str(), nullptr) / std::strtod(k->text.c_str(), nullptr);
      if (!std::isfinite(q) || std::floor(q) != q) return false;
    }
    if (const JsonValue* excluded = s.Find(kNotMultipleOf); excluded && integral) {
      for (const auto& e : excluded->items) {
        if (x->whole % std::stoll(e.text) == 0) return false;  // complements.cc writes positive integers
      }
    }
  }
  if (t == "string") {
    if (const JsonValue* excluded = s.Find(kNotStrings)) {
      for (const auto& x : excluded->items) {
        if (x.text == value.text) return false;
      }
    }
    if (const JsonValue* excluded = s.Find(kNotPatterns)) {
      for (const auto& p : excluded->items) {
        if (Matches(Pattern(p.text), value.text)) return false;
      }
    }
    const int64_t n = static_cast<int64_t>(CodePoints(value.text));
    if (const JsonValue* lo = s.Find("minLength"); lo && n < Count(*lo, "minLength")) return false;
    if (const JsonValue* hi = s.Find("maxLength"); hi && n > Count(*hi, "maxLength")) return false;
  }
  if (t == "array") {
    const int64_t n = static_cast<int64_t>(value.items.size());
    if (const JsonValue* lo = s.Find("minItems"); lo && n < Count(*lo, "minItems")) return false;
    if (const JsonValue* hi = s.Find("maxItems"); hi && n > Count(*hi, "maxItems")) return false;
    const JsonValue* items = s.Find("items");
    const JsonValue* prefix = nullptr;
    const JsonValue* rest = items;
    if (draft_ >= 2020) {
      prefix = s.Find("prefixItems");
    } else if (items && items->is_array()) {
      prefix = items;
      rest = s.Find("additionalItems");
    }
    for (size_t i = 0; i < value.items.size(); ++i) {
      const JsonValue* sub = prefix && i < prefix->items.size() ? &prefix->items[i] : rest;
      if (sub && !Holds(value.items[i], *sub, false)) return false;
    }
    if (const JsonValue* contains = s.Find("contains")) {  // some item; from 2019-09 a count of them in range
      int64_t matched = 0;
      for (const auto& item : value.items) matched += Holds(item, *contains, false) ? 1 : 0;
      if (matched == 0) return false;
      if (draft_ >= 2019) {
        const JsonValue* lo = s.Find("minContains");
        const JsonValue* hi = s.Find("maxContains");
        if (matched < (lo ? Count(*lo, "minContains") : 1) || (hi && matched > Count(*hi, "maxContains"))) {
          return false;
        }
      }
    }
  }
  if (t == "object") {
    if (const JsonValue* required = s.Find("required")) {
      for (const auto& r : required->items) {
        if (!value.Find(r.text)) return false;
      }
    }
    if (const JsonValue* absent = s.Find(kAbsent)) {
      for (const auto& a : absent->items) {
        if (value.Find(a.text)) return false;
      }
    }
    const JsonValue* props = s.Find("properties");
    const JsonValue* additional = s.Find("additionalProperties");
    const JsonValue* patterns = s.Find("patternProperties");
    const JsonValue* names = s.Find("propertyNames");
    for (const auto& [k, v] : value.members) {
      if (names) {  // the key, as a string value
        JsonValue key;
        key.kind = JsonValue::Kind::kString;
        key.text = k;
        if (!Holds(key, *names, false)) return false;
      }
      bool matched = false;  // by some pattern, whose schema the value must satisfy too
      if (patterns) {
        for (const auto& [regex, sub] : patterns->members) {
          if (!Matches(Pattern(regex), k)) continue;
          matched = true;
          if (!Holds(v, sub, false)) return false;
        }
      }
      const JsonValue* sub = props ? props->Find(k) : nullptr;
      if (!sub && matched) continue;  // additionalProperties is for keys no pattern matches
      if (!sub) sub = additional;
      if (sub && !Holds(v, *sub, false)) return false;
    }
  }
  return true;
}

}  // namespace xg::json_schema
