// See disjoint.h.
#include "frontends/json_schema/disjoint.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/string_automata.h"

namespace xg::json_schema {

namespace {

// A count keyword's value (Check has read it), or the default.
int64_t CountOr(const JsonValue& x, std::string_view kw, int64_t absent) {
  const JsonValue* v = x.Find(kw);
  return v ? Count(*v, kw) : absent;
}

// _ranges_meet: [max of the lower bounds, min of the upper bounds] is not empty (absent: 0 and unbounded).
bool RangesMeet(const JsonValue& a, const JsonValue& b, std::string_view lo_kw, std::string_view hi_kw) {
  constexpr int64_t kUnbounded = INT64_MAX;
  const int64_t lo = std::max(CountOr(a, lo_kw, 0), CountOr(b, lo_kw, 0));
  const int64_t hi = std::min(CountOr(a, hi_kw, kUnbounded), CountOr(b, hi_kw, kUnbounded));
  return lo <= hi;
}

// One end of _bounds: (value, exclusive), the value nullopt for an infinite end; `read` false when a bound is a
// number the native front end does not read exactly (then nothing is shown).
struct End {
  std::optional<Decimal> value;  // nullopt: -inf (a lower end) or +inf (an upper end)
  bool exclusive = false;
};

bool NumberBounds(const JsonValue& x, int draft, End* lo, End* hi) {
  auto num = [&](const char* kw, std::optional<Decimal>* out) {
    const JsonValue* v = x.Find(kw);
    if (!v || !v->is_number()) return true;  // absent, or draft 4's flag
    *out = Bound(*v);
    return out->has_value();
  };
  std::optional<Decimal> minimum, maximum, ex_min, ex_max;
  if (!num("minimum", &minimum) || !num("maximum", &maximum) || !num("exclusiveMinimum", &ex_min) ||
      !num("exclusiveMaximum", &ex_max)) {
    return false;
  }
  auto flag = [&](const char* kw) {
    const JsonValue* v = x.Find(kw);
    return draft < 6 && v && v->is_bool() && v->boolean;
  };
  if (minimum) *lo = End{minimum, flag("exclusiveMinimum")};
  if (maximum) *hi = End{maximum, flag("exclusiveMaximum")};
  if (draft >= 6) {
    if (ex_min && (!lo->value || Compare(*ex_min, *lo->value) >= 0)) *lo = End{ex_min, true};
    if (ex_max && (!hi->value || Compare(*ex_max, *hi->value) <= 0)) *hi = End{ex_max, true};
  }
  return true;
}

// Python's tuple order on (value, exclusive) for lower ends (-inf first) and upper ends (+inf last).
int CompareEnds(const End& a, const End& b, bool upper) {
  if (!a.value || !b.value) {
    if (!a.value && !b.value) return a.exclusive == b.exclusive ? 0 : a.exclusive ? 1 : -1;
    const int infinite_side = upper ? 1 : -1;
    return !a.value ? infinite_side : -infinite_side;
  }
  if (int c = Compare(*a.value, *b.value)) return c;
  return a.exclusive == b.exclusive ? 0 : a.exclusive ? 1 : -1;
}

bool AcceptsAll(const JsonValue& s) { return (s.is_bool() && s.boolean) || (s.is_object() && s.members.empty()); }

}  // namespace

std::optional<std::unordered_set<std::string>> PossibleTypes(const JsonValue& x) {
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
    return std::nullopt;
  }
  return out;
}

std::string DisjointProver::Text(const JsonValue* x) {
  if (!x) return "null";
  return merger_->Text(*merger_->Strip(x));
}

const CodepointDfa* DisjointProver::Key(const std::string& regex) {
  auto it = keys_.find(regex);
  if (it == keys_.end()) {
    std::pair<bool, CodepointDfa> entry{false, CodepointDfa()};
    try {
      entry.second = KeyDfa(regex);
      entry.first = true;
    } catch (const std::exception&) {
    }
    it = keys_.emplace(regex, std::move(entry)).first;
  }
  return it->second.first ? &it->second.second : nullptr;
}

bool DisjointProver::PatternsMayMeet(const std::string& a, const std::string& b) {
  auto key = std::make_pair(a, b);
  auto it = meet_.find(key);
  if (it == meet_.end()) {
    // (may meet, undecided): they meet unless the product shows no string matches both
    std::pair<bool, bool> answer{true, true};
    const CodepointDfa *da = Key(a), *db = Key(b);
    if (da && db) {
      try {
        CodepointDfa both = KeyProduct({da, db});
        answer = {false, false};
        for (int32_t s = 0; s < both.num_states() && !answer.first; ++s) {
          answer.first = both.Accepts(s, 0) && both.Accepts(s, 1);
        }
      } catch (const std::exception&) {
      }
    }
    it = meet_.emplace(key, answer).first;
  }
  if (it->second.second) ++undecided_;
  return it->second.first;
}

const JsonValue* DisjointProver::Necessary(const JsonValue* x, int depth) {
  static const JsonValue kEmpty = [] {
    JsonValue v;
    v.kind = JsonValue::Kind::kObject;
    return v;
  }();
  for (int i = 0; i < 8; ++i) {
    if (x->is_bool() && x->boolean) return &kEmpty;
    if (!x->is_object()) return nullptr;
    x = merger_->Strip(x);
    const JsonValue* ref = x->Find("$ref");
    if (!ref) return WithConjunctRequired(x, depth);
    if (draft_ >= 2019 && x->members.size() != 1) {  // the target is one more conjunct, unused
      JsonValue rest;
      rest.kind = JsonValue::Kind::kObject;
      for (const auto& [kw, v] : x->members) {
        if (kw != "$ref") rest.members.emplace_back(kw, merger_->Share(v));
      }
      return merger_->Make(std::move(rest));
    }
    const JsonValue* target = refs_.Resolve(ref->text).second;
    if (!target) return nullptr;
    x = target;
  }
  return nullptr;
}

const JsonValue* DisjointProver::WithConjunctRequired(const JsonValue* x, int depth) {
  const JsonValue* subs = x->Find("allOf");
  if (!subs || !subs->is_array() || depth > kMaxDepth) return x;
  std::vector<const JsonValue*> extra;
  for (const auto& sub : subs->items) {
    const JsonValue* n = Necessary(&sub, depth + 1);
    const JsonValue* r = n && n->is_object() ? n->Find("required") : nullptr;
    if (r && r->is_array()) {
      for (const auto& name : r->items) extra.push_back(&name);
    }
  }
  const JsonValue* own = x->Find("required");
  if (extra.empty() || (own && !own->is_array())) return x;
  JsonValue names;
  names.kind = JsonValue::Kind::kArray;
  std::unordered_set<std::string> seen;
  auto add = [&](const JsonValue& n) {
    if (seen.insert(n.text).second) names.items.push_back(merger_->Share(n));
  };
  if (own) {
    for (const auto& n : own->items) add(n);
  }
  for (const JsonValue* n : extra) add(*n);
  JsonValue out;
  out.kind = JsonValue::Kind::kObject;
  bool placed = false;
  for (const auto& [kw, v] : x->members) {
    if (kw == "required") {
      out.members.emplace_back(kw, std::move(names));
      placed = true;
    } else {
      out.members.emplace_back(kw, merger_->Share(v));
    }
  }
  if (!placed) out.members.emplace_back("required", std::move(names));
  return merger_->Make(std::move(out));
}

bool DisjointProver::Pair(const JsonValue& a_in, const JsonValue& b_in, int depth) {
  if (++*work_ > kMaxVisits) Stop("a schema beyond the native budget");
  if ((a_in.is_bool() && !a_in.boolean) || (b_in.is_bool() && !b_in.boolean)) return true;
  if (depth > kMaxDepth) return false;
  for (const auto& [x, y] : {std::pair<const JsonValue*, const JsonValue*>{&a_in, &b_in}, {&b_in, &a_in}}) {
    if (!x->is_object()) continue;  // S and not S
    const JsonValue* sx = merger_->Strip(x);
    if (sx->members.size() == 1 && sx->members[0].first == "not") {
      const JsonValue* inner = &sx->members[0].second;
      if (Text(inner) == Text(y) || Text(Necessary(inner, depth)) == Text(Necessary(y, depth))) return true;
    }
  }
  const JsonValue* a = Necessary(&a_in, depth);
  const JsonValue* b = Necessary(&b_in, depth);
  if (!a || !b) return false;
  for (const auto& [x, y] : {std::pair<const JsonValue*, const JsonValue*>{a, b}, {b, a}}) {
    if (const JsonValue* all = x->Find("allOf"); all && all->is_array()) {
      for (const auto& sub : all->items) {
        if (Pair(sub, *y, depth + 1)) return true;
      }
    }
    for (const char* kw : {"anyOf", "oneOf"}) {
      const JsonValue* alts = x->Find(kw);
      if (alts && alts->is_array() && !alts->items.empty() &&
          std::all_of(alts->items.begin(), alts->items.end(),
                      [&](const JsonValue& s) { return Pair(s, *y, depth + 1); })) {
        return true;
      }
    }
  }
  const auto ta = PossibleTypes(*a), tb = PossibleTypes(*b);
  std::vector<std::string> common;
  for (const char* t : kTypeNames) {
    if ((!ta || ta->count(t)) && (!tb || tb->count(t))) common.push_back(t);
  }
  if (common.empty()) return true;
  for (const auto& [x, y] : {std::pair<const JsonValue*, const JsonValue*>{a, b}, {b, a}}) {
    std::vector<const JsonValue*> values;
    if (const JsonValue* c = x->Find("const")) {
      values.push_back(c);
    } else if (const JsonValue* e = x->Find("enum"); e && e->is_array()) {
      for (const auto& v : e->items) values.push_back(&v);
    } else {
      continue;
    }
    if (!validator_->Supports(*y)) {  // where the Python front end might decide, "not shown" here
      ++undecided_;
      continue;
    }
    if (std::none_of(values.begin(), values.end(), [&](const JsonValue* v) { return validator_->Validate(*v, *y); })) {
      return true;
    }
  }
  return std::all_of(common.begin(), common.end(), [&](const std::string& t) { return OnType(*a, *b, t, depth); });
}

bool DisjointProver::OnType(const JsonValue& a, const JsonValue& b, const std::string& t, int depth) {
  if (t == "string") {
    if (!RangesMeet(a, b, "minLength", "maxLength")) return true;
    const JsonValue *pa = a.Find("pattern"), *pb = b.Find("pattern");
    if (pa && pb && pa->is_string() && pb->is_string()) return !PatternsMayMeet(pa->text, pb->text);
    return false;
  }
  if (t == "integer" || t == "number") {
    End lo_a, hi_a, lo_b, hi_b;
    if (!NumberBounds(a, draft_, &lo_a, &hi_a) || !NumberBounds(b, draft_, &lo_b, &hi_b)) {
      ++undecided_;
      return false;
    }
    const End lo = CompareEnds(lo_a, lo_b, false) >= 0 ? lo_a : lo_b;  // max, as Python's max of tuples
    const End hi = CompareEnds(hi_a, hi_b, true) <= 0 ? hi_a : hi_b;   // min
    if (!lo.value || !hi.value) return false;
    const int c = Compare(*lo.value, *hi.value);
    return c > 0 || (c == 0 && (lo.exclusive || hi.exclusive));
  }
  if (t == "object") {
    for (const auto& [x, y] : {std::pair<const JsonValue*, const JsonValue*>{&a, &b}, {&b, &a}}) {
      const JsonValue* req = x->Find("required");
      if (req && req->is_array()) {
        for (const auto& name : req->items) {
          if (name.is_string() && Forbids(*y, name.text)) return true;
        }
      }
    }
    const JsonValue *ra = a.Find("required"), *rb = b.Find("required");
    const JsonValue *pa = a.Find("properties"), *pb = b.Find("properties");
    if ((!ra || ra->is_array()) && (!rb || rb->is_array()) && (!pa || pa->is_object()) &&
        (!pb || pb->is_object())) {
      std::vector<std::string> names;
      std::unordered_set<std::string> seen;
      for (const JsonValue* r : {ra, rb}) {
        if (!r) continue;
        for (const auto& n : r->items) {
          if (seen.insert(n.text).second) names.push_back(n.text);
        }
      }
      for (const auto& n : names) {
        const JsonValue* sa = pa ? pa->Find(n) : nullptr;
        const JsonValue* sb = pb ? pb->Find(n) : nullptr;
        if (sa && sb && Pair(*sa, *sb, depth + 1)) return true;
      }
    }
    return !RangesMeet(a, b, "minProperties", "maxProperties");
  }
  if (t == "array") return !RangesMeet(a, b, "minItems", "maxItems");
  return false;
}

bool DisjointProver::Forbids(const JsonValue& y, const std::string& name) {
  if (const JsonValue* absent = y.Find(kAbsent)) {
    for (const auto& n : absent->items) {
      if (n.text == name) return true;
    }
  }
  const JsonValue* props = y.Find("properties");
  if (props && !props->is_object()) return false;
  if (const JsonValue* sub = props ? props->Find(name) : nullptr) return sub->is_bool() && !sub->boolean;
  if (const JsonValue* patterns = y.Find("patternProperties")) {
    for (const auto& [regex, _] : patterns->members) {
      const CodepointDfa* d = Key(regex);
      if (!d) ++undecided_;
      if (!d || Matches(*d, name)) return false;
    }
  }
  const JsonValue* additional = y.Find("additionalProperties");
  return additional && additional->is_bool() && !additional->boolean;
}

}  // namespace xg::json_schema
