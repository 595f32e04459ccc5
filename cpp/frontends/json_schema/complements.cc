// Complements of schemas for the native JSON Schema front end (`not`), mirroring the Python front end's
// _complements._negate and _rewrites._rewrite_not for the keywords and internal keywords this front end visits.
//
// Algorithm. Negate(S) returns schemas whose union is the set of JSON values S rejects. A schema object is the
// conjunction of its keywords, so its complement is the union of the complements of its keywords (not (A and B) =
// not A or not B), each holding values of the one type the keyword constrains (every value of another type passes
// it): `type` -> the other types (integer splits number: the numbers with a fraction, FRACTION_ONLY); a bound ->
// the opposite bound; `required` -> objects without one of the names (ABSENT); `pattern` -> the strings in which
// it finds no match (NOT_PATTERNS); `properties` -> objects with one
// of the names whose value is in the complement of its schema; `enum` / `const` of scalars -> the other types, the
// strings not listed (NOT_STRINGS), the other boolean, the integers between the listed ones and the numbers with a
// fraction; `allOf` -> the union of the branches' complements; `anyOf` -> their intersection; `oneOf` -> that
// intersection or any two branches together; `not S` -> S; `$ref` -> its target's complement. RewriteNot then
// turns `not S` into `allOf [..., {"anyOf": Negate(S)}]`, which the merge and the visitor already handle.
//
// Complements whose schemas need an internal keyword this front end does not visit (an additionalProperties', a
// patternProperties', a multipleOf's, an object or array constant's) stop the conversion, as does
// any keyword the Python front end cannot complement either. Schemas are built in the same key order as the
// Python front end's dicts, and sub-schemas that the Python front end passes on unchanged keep their identity
// (SchemaMerger::Share), since an allOf skips a branch it has merged by identity.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/json_schema/check.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/merge.h"
#include "frontends/json_schema/schema_nodes.h"

namespace xg::json_schema {

namespace {

// Nesting of complements within complements (`not` of `not` of ..., through references) the recursion accepts.
constexpr int kMaxNegationDepth = 128;
// Integers of `enum` / `const` whose neighbours a complement writes: within +-2^62, so n +- 1 cannot overflow.
constexpr int64_t kMaxListedInteger = int64_t{1} << 62;

JsonValue StringList(const std::vector<std::string>& names) {
  JsonValue list = Array();
  for (const auto& n : names) list.items.push_back(String(n));
  return list;
}

// {"type": t} with t a name, or a list of names when `as_list`.
JsonValue Typed(const std::vector<std::string>& types, bool as_list) {
  JsonValue out = Object();
  out.members.emplace_back("type", as_list ? StringList(types) : String(types.at(0)));
  return out;
}

bool AcceptsAll(const JsonValue& s) {
  return (s.is_bool() && s.boolean) || (s.is_object() && s.members.empty());
}

}  // namespace

// {**rest, "allOf": rest's allOf + conjuncts} with rest = s less the keywords `drop`: an allOf keeps its place, a
// new one goes last.
JsonValue SchemaMerger::WithConjuncts(const JsonValue& s, std::initializer_list<const char*> drop,
                                     std::vector<JsonValue> conjuncts) {
  JsonValue out = Object();
  bool placed = false;
  for (const auto& [kw, v] : s.members) {
    if (std::any_of(drop.begin(), drop.end(), [&](const char* d) { return kw == d; })) continue;
    if (kw == "allOf") {
      JsonValue list = Array();
      for (const auto& x : v.items) list.items.push_back(Share(x));
      for (auto& c : conjuncts) list.items.push_back(std::move(c));
      out.members.emplace_back(kw, std::move(list));
      placed = true;
      continue;
    }
    out.members.emplace_back(kw, Share(v));
  }
  if (!placed) {
    JsonValue list = Array();
    list.items = std::move(conjuncts);
    out.members.emplace_back("allOf", std::move(list));
  }
  return out;
}

const JsonValue* SchemaMerger::RewriteNot(const JsonValue* s) {
  if (!s->is_object()) return s;
  auto all_of = [&](JsonValue a, JsonValue b) {
    std::vector<JsonValue> both;
    both.push_back(std::move(a));
    both.push_back(std::move(b));
    return Keyword("allOf", List(std::move(both)));
  };
  if (const JsonValue* inner = s->Find("not")) {  // not S: one of the complement's schemas
    std::vector<const JsonValue*> branches = Negate(inner);
    if (branches.empty()) return False();
    std::vector<JsonValue> alternatives;
    for (const JsonValue* b : branches) alternatives.push_back(Share(*b));
    std::vector<JsonValue> conjunct;
    conjunct.push_back(Keyword("anyOf", List(std::move(alternatives))));
    s = Make(WithConjuncts(*s, {"not"}, std::move(conjunct)));
  }
  if (const JsonValue* cond = s->Find("if")) {  // if C then T else E: C and T, or not C and E
    const JsonValue* then = s->Find("then");
    const JsonValue* otherwise = s->Find("else");
    std::vector<JsonValue> alternatives;
    alternatives.push_back(all_of(Share(*cond), Share(then ? *then : *True())));
    for (const JsonValue* b : Negate(cond)) alternatives.push_back(all_of(Share(*b), Share(otherwise ? *otherwise : *True())));
    std::vector<JsonValue> conjunct;
    conjunct.push_back(Keyword("anyOf", List(std::move(alternatives))));
    s = Make(WithConjuncts(*s, {"if", "then", "else"}, std::move(conjunct)));
  } else if (s->Find("then") || s->Find("else")) {  // ignored without if
    JsonValue out = Object();
    for (const auto& [kw, v] : s->members) {
      if (kw != "then" && kw != "else") out.members.emplace_back(kw, Share(v));
    }
    s = Make(std::move(out));
  }
  return s;
}

std::vector<const JsonValue*> SchemaMerger::Negate(const JsonValue* schema) {
  if (++negation_depth_ > kMaxNegationDepth) Stop("complements nested beyond the native limit");
  struct Leave {
    int* depth;
    ~Leave() { --*depth; }
  } leave{&negation_depth_};
  const JsonValue* inner = Deref(schema);
  if (AcceptsAll(*inner)) return {};
  if (inner->is_bool()) return {True()};
  if (!inner->is_object()) Stop("a complement of a schema that is no object");
  inner = Strip(inner);
  const JsonValue* format = inner->Find("format");
  if (enforce_formats_ && format && format->is_string() && FindStringFormat(format->text)) {
    Stop("the complement of 'format'");
  }
  // The keywords that constrain (a sorted set, as the Python front end iterates sorted(keys)).
  std::vector<std::string> keys;
  for (const auto& [kw, _] : inner->members) {
    if (kw != "format" && !IsAnnotationKeyword(kw)) keys.push_back(kw);
  }
  if (draft_ < 2019 && inner->Find("$ref")) keys = {"$ref"};
  if (draft_ < 2019) {
    static const std::unordered_set<std::string> kLater = {"minContains", "maxContains", "dependentRequired",
                                                           "dependentSchemas", "unevaluatedItems",
                                                           "unevaluatedProperties", "prefixItems"};
    keys.erase(std::remove_if(keys.begin(), keys.end(), [](const std::string& k) { return kLater.count(k) > 0; }),
               keys.end());
  }
  std::sort(keys.begin(), keys.end());
  auto has = [&](const char* kw) { return std::binary_search(keys.begin(), keys.end(), std::string(kw)); };
  const JsonValue* items = inner->Find("items");
  if (draft_ < 2020 && items && items->is_array()) Stop("the complement of array-form 'items'");
  if (has("dependencies") || has("dependentSchemas")) return Negate(RewriteDependencies(inner));
  std::vector<const JsonValue*> out;
  auto append = [&](std::vector<const JsonValue*> more) { out.insert(out.end(), more.begin(), more.end()); };
  // The groups of keywords that only mean something together (_GROUPS), then the others one by one.
  if (has("if")) {  // then / else without if are ignored
    const JsonValue& cond = *inner->Find("if");
    auto negated = [&](const JsonValue& x) { return Keyword("not", Share(x)); };
    auto both = [&](JsonValue a, JsonValue b) {
      std::vector<JsonValue> items;
      items.push_back(std::move(a));
      items.push_back(std::move(b));
      return Make(Keyword("allOf", List(std::move(items))));
    };
    const JsonValue* then = inner->Find("then");
    const JsonValue* otherwise = inner->Find("else");
    if (then && !IsTrue(then)) out.push_back(both(Share(cond), negated(*then)));
    if (otherwise && !IsTrue(otherwise)) out.push_back(both(negated(cond), negated(*otherwise)));
  }
  if (has("contains")) {  // minContains / maxContains without contains are ignored
    if (has("minContains") || has("maxContains")) Stop("the complement of 'contains' with counts");
    // arrays whose items all fail it
    JsonValue negated = Object();
    negated.members.emplace_back("not", Share(*inner->Find("contains")));
    JsonValue piece = Typed({"array"}, false);
    piece.members.emplace_back("items", std::move(negated));
    out.push_back(Make(std::move(piece)));
  }
  if (has("prefixItems")) {
    if (has("items") && !AcceptsAll(*items)) Stop("the complement of 'prefixItems' with 'items'");
    const JsonValue& prefix = *inner->Find("prefixItems");
    for (size_t i = 0; i < prefix.items.size(); ++i) {
      if (AcceptsAll(prefix.items[i])) continue;
      // {"type": "array", "minItems": i + 1, "prefixItems": [true] * i + [{"not": p}]}
      JsonValue positions = Array();
      for (size_t k = 0; k < i; ++k) positions.items.push_back(Bool(true));
      JsonValue negated = Object();
      negated.members.emplace_back("not", Share(prefix.items[i]));
      positions.items.push_back(std::move(negated));
      JsonValue piece = Typed({"array"}, false);
      piece.members.emplace_back("minItems", Integer(static_cast<int64_t>(i) + 1));
      piece.members.emplace_back("prefixItems", std::move(positions));
      out.push_back(Make(std::move(piece)));
    }
  } else if (has("items") && !AcceptsAll(*items)) {  // arrays with an item outside it
    JsonValue negated = Object();
    negated.members.emplace_back("not", Share(*items));
    JsonValue piece = Typed({"array"}, false);
    piece.members.emplace_back("contains", std::move(negated));
    out.push_back(Make(std::move(piece)));
  }
  static const std::unordered_set<std::string> kGrouped = {"if",          "then",        "else",        "contains",
                                                           "minContains", "maxContains", "prefixItems", "items"};
  for (const auto& kw : keys) {
    if (!kGrouped.count(kw)) append(NegateKeyword(kw, *inner->Find(kw), *inner));
  }
  return out;
}

std::vector<const JsonValue*> SchemaMerger::NegateKeyword(const std::string& kw, const JsonValue& value,
                                                           const JsonValue& inner) {
  std::vector<const JsonValue*> out;
  if (kw == "type") {
    std::vector<std::string> banned;
    if (value.is_string()) banned.push_back(value.text);
    for (const auto& t : value.items) banned.push_back(t.text);
    auto is_banned = [&](const std::string& t) { return std::count(banned.begin(), banned.end(), t) > 0; };
    const bool fraction = is_banned("integer") && !is_banned("number");
    if (is_banned("number")) banned.push_back("integer");
    std::vector<std::string> kept;
    for (const char* t : kTypeNames) {
      if (!is_banned(t) && !(std::string(t) == "number" && is_banned("integer"))) kept.push_back(t);
    }
    if (!kept.empty()) out.push_back(Make(Typed(kept, true)));
    if (fraction) {  // the numbers that are not integers
      JsonValue piece = Typed({"number"}, false);
      piece.members.emplace_back(kFractionOnly, Bool(true));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == "required") {
    // A required name with a property schema: "absent or invalid" is one alternative (under 'properties').
    const JsonValue* props = inner.Find("properties");
    std::unordered_set<std::string> seen;
    for (const auto& n : value.items) {
      if (!seen.insert(n.text).second) continue;
      const JsonValue* sub = props && props->is_object() ? props->Find(n.text) : nullptr;
      if (sub && !AcceptsAll(*sub)) continue;
      JsonValue piece = Typed({"object"}, false);
      piece.members.emplace_back(kAbsent, StringList({n.text}));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == kAbsent) {
    for (const auto& n : value.items) {
      JsonValue piece = Typed({"object"}, false);
      piece.members.emplace_back("required", StringList({n.text}));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == "dependentRequired") {
    for (const auto& [a, bs] : value.members) {
      for (const auto& b : bs.items) {
        JsonValue piece = Typed({"object"}, false);
        piece.members.emplace_back("required", StringList({a}));
        piece.members.emplace_back(kAbsent, StringList({b.text}));
        out.push_back(Make(std::move(piece)));
      }
    }
    return out;
  }
  // keyword -> (the type it applies to, the keyword of the opposite bound, the change of a count)
  struct Opposite {
    const char* kw;
    const char* type;
    const char* other;
    int delta;
  };
  static const Opposite kBounds[] = {
      {"minimum", "number", "exclusiveMaximum", 0},     {"exclusiveMinimum", "number", "maximum", 0},
      {"maximum", "number", "exclusiveMinimum", 0},     {"exclusiveMaximum", "number", "minimum", 0},
      {"minLength", "string", "maxLength", -1},         {"maxLength", "string", "minLength", 1},
      {"minItems", "array", "maxItems", -1},            {"maxItems", "array", "minItems", 1},
      {"minProperties", "object", "maxProperties", -1}, {"maxProperties", "object", "minProperties", 1},
  };
  for (const Opposite& b : kBounds) {
    if (kw != b.kw) continue;
    if (!value.is_number()) Stop("the complement of a draft-04 exclusive bound");
    if (draft_ <= 4 && (kw == "minimum" || kw == "maximum") &&
        inner.Find(kw == "minimum" ? "exclusiveMinimum" : "exclusiveMaximum")) {
      Stop("the complement of a draft-04 exclusive bound");
    }
    JsonValue piece = Typed({b.type}, false);
    if (std::string(b.type) == "number") {
      piece.members.emplace_back(b.other, Share(value));
    } else {
      if (!IsPlainInteger(value.text)) Stop("the complement of a count that is no plain integer");
      const int64_t changed = Count(value, kw) + b.delta;
      if (changed < 0) return out;
      piece.members.emplace_back(b.other, Integer(changed));
    }
    out.push_back(Make(std::move(piece)));
    return out;
  }
  if (kw == "properties") {
    const JsonValue* required = inner.Find("required");
    auto is_required = [&](const std::string& n) {
      return required && std::any_of(required->items.begin(), required->items.end(),
                                     [&](const JsonValue& r) { return r.text == n; });
    };
    for (const auto& [n, sub] : value.members) {
      if (AcceptsAll(sub)) continue;
      JsonValue negated = Object();
      negated.members.emplace_back("not", Share(sub));
      JsonValue one = Object();
      one.members.emplace_back(n, std::move(negated));
      JsonValue piece = Typed({"object"}, false);
      if (!is_required(n)) piece.members.emplace_back("required", StringList({n}));
      piece.members.emplace_back("properties", std::move(one));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == "const") return NegateValues({&value});
  if (kw == "enum") {
    std::vector<const JsonValue*> values;
    for (const auto& v : value.items) values.push_back(&v);
    return NegateValues(values);
  }
  if (kw == "allOf") {
    for (const auto& s : value.items) {
      std::vector<const JsonValue*> more = Negate(&s);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  if (kw == "anyOf" || kw == "oneOf") {
    // anyOf: none of the branches; oneOf: none, or some two together.
    std::vector<const JsonValue*> pairs;
    if (kw == "oneOf") {
      for (size_t i = 0; i < value.items.size(); ++i) {
        for (size_t j = i + 1; j < value.items.size(); ++j) {
          JsonValue both = Array();
          both.items.push_back(Share(value.items[i]));
          both.items.push_back(Share(value.items[j]));
          JsonValue piece = Object();
          piece.members.emplace_back("allOf", std::move(both));
          pairs.push_back(Make(std::move(piece)));
        }
      }
    }
    JsonValue parts = Array();
    for (const auto& s : value.items) {
      std::vector<const JsonValue*> neg = Negate(&s);
      if (neg.empty()) return pairs;
      JsonValue alternatives = Array();
      for (const JsonValue* x : neg) alternatives.items.push_back(Share(*x));
      JsonValue part = Object();
      part.members.emplace_back("anyOf", std::move(alternatives));
      parts.items.push_back(std::move(part));
    }
    JsonValue none = Object();
    none.members.emplace_back("allOf", std::move(parts));
    out.push_back(Make(std::move(none)));
    out.insert(out.end(), pairs.begin(), pairs.end());
    return out;
  }
  if (kw == "not") return {&value};
  if (kw == "$ref") {
    auto [target, node] = refs_.Resolve(value.text);
    if (!node) Stop("a '$ref' that points to nothing");
    if (!negating_.insert(target).second) Stop("the complement of a recursive '$ref'");
    struct Unmark {
      std::unordered_set<std::string>* set;
      std::string key;
      ~Unmark() { set->erase(key); }
    } unmark{&negating_, target};
    Check(*node, draft_);
    return Negate(node);
  }
  if (kw == "patternProperties" || kw == "additionalProperties" || kw == "propertyNames" ||
      kw == "additionalItems" || kw == "dependentSchemas" || kw == "unevaluatedProperties" ||
      kw == "unevaluatedItems") {
    // Schema-valued keywords that every value passes when their schemas accept everything; otherwise the
    // complement needs objects (arrays) with some member (item) outside a schema, which this front end does not
    // write.
    const bool map = kw == "patternProperties" || kw == "dependentSchemas";
    const bool all = map ? value.is_object() && std::all_of(value.members.begin(), value.members.end(),
                                                            [](const auto& m) { return AcceptsAll(m.second); })
                         : AcceptsAll(value);
    if (all) return out;
    Stop("the complement of '" + kw + "' (some member or item outside a schema)");
  }
  if (kw == "pattern") {  // the strings in which it finds no match
    JsonValue piece = Typed({"string"}, false);
    JsonValue list = Array();
    list.items.push_back(Share(value));
    piece.members.emplace_back(kNotPatterns, std::move(list));
    out.push_back(Make(std::move(piece)));
    return out;
  }
  if (kw == kNotPatterns) {
    for (const auto& p : value.items) {
      JsonValue piece = Typed({"string"}, false);
      piece.members.emplace_back("pattern", Share(p));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == "multipleOf") {  // numbers with a fraction (never a multiple of an integer), integers with a remainder
    std::optional<Decimal> k = Bound(value);
    if (!k || k->negative || k->IsZero()) Stop("the complement of a 'multipleOf' that is not a positive number");
    if (!k->fraction.empty()) Stop("the complement of a non-integer 'multipleOf'");
    JsonValue fraction = Typed({"number"}, false);
    fraction.members.emplace_back(kFractionOnly, Bool(true));
    JsonValue rest = Typed({"integer"}, false);
    JsonValue divisors = Array();
    divisors.items.push_back(Integer(k->whole));
    rest.members.emplace_back(kNotMultipleOf, std::move(divisors));
    out.push_back(Make(std::move(fraction)));
    out.push_back(Make(std::move(rest)));
    return out;
  }
  if (kw == kNotMultipleOf) {
    for (const auto& divisor : value.items) {
      JsonValue piece = Typed({"integer"}, false);
      piece.members.emplace_back("multipleOf", Share(divisor));
      out.push_back(Make(std::move(piece)));
    }
    return out;
  }
  if (kw == kFractionOnly) {
    out.push_back(Make(Typed({"object", "array", "string", "integer", "boolean", "null"}, true)));
    out.push_back(Make(Typed({"integer"}, false)));
    return out;
  }
  Stop("the complement of '" + kw + "'");
}

std::vector<const JsonValue*> SchemaMerger::NegateValues(const std::vector<const JsonValue*>& values) {
  std::vector<std::string> strings;
  std::vector<bool> booleans;
  std::vector<int64_t> numbers;
  std::unordered_set<std::string> types;
  for (const JsonValue* v : values) {
    if (v->is_object() || v->is_array()) Stop("the complement of an object or array 'enum' / 'const'");
    types.insert(JsonType(*v));
    if (v->is_string() && std::find(strings.begin(), strings.end(), v->text) == strings.end()) {
      strings.push_back(v->text);
    }
    if (v->is_bool()) booleans.push_back(v->boolean);
    if (v->is_number()) {
      if (!IsPlainInteger(v->text) || v->text.size() > 18) Stop("the complement of a large number constant");
      const int64_t n = std::strtoll(v->text.c_str(), nullptr, 10);
      if (n >= kMaxListedInteger || n <= -kMaxListedInteger) Stop("the complement of a large number constant");
      numbers.push_back(n);
    }
  }
  std::vector<const JsonValue*> out;
  std::vector<std::string> first;  // the types none of whose values is listed, in this order
  for (const char* t : {"object", "array", "string", "boolean", "null"}) {
    if (!types.count(t)) first.push_back(t);
  }
  if (!first.empty()) out.push_back(Make(Typed(first, true)));
  if (types.count("string")) {
    JsonValue piece = Typed({"string"}, false);
    piece.members.emplace_back(kNotStrings, StringList(strings));
    out.push_back(Make(std::move(piece)));
  }
  if (types.count("boolean")) {
    for (bool b : {true, false}) {
      if (std::find(booleans.begin(), booleans.end(), b) == booleans.end()) {
        JsonValue piece = Object();
        piece.members.emplace_back("const", Bool(b));
        out.push_back(Make(std::move(piece)));
        break;
      }
    }
  }
  if (numbers.empty()) {
    out.push_back(Make(Typed({"number"}, false)));
    return out;
  }
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  JsonValue fraction = Typed({"number"}, false);
  fraction.members.emplace_back(kFractionOnly, Bool(true));
  out.push_back(Make(std::move(fraction)));
  bool bounded = false;  // lo is finite
  int64_t lo = 0;
  for (int64_t p : numbers) {
    if (!bounded || p - 1 >= lo) {
      JsonValue piece = Typed({"integer"}, false);
      piece.members.emplace_back("maximum", Integer(p - 1));
      if (bounded) piece.members.emplace_back("minimum", Integer(lo));
      out.push_back(Make(std::move(piece)));
    }
    lo = p + 1;
    bounded = true;
  }
  JsonValue last = Typed({"integer"}, false);
  last.members.emplace_back("minimum", Integer(lo));
  out.push_back(Make(std::move(last)));
  return out;
}

}  // namespace xg::json_schema
