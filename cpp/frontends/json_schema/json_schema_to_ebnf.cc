// The native JSON Schema front end (see json_schema_to_ebnf.h for its scope).
//
// Algorithm. Parse the JSON text (support/json_value.h), then two passes over the schema positions:
// 1. Check: every keyword the Python front end recognises must be one this front end handles, with a value of the
//    shape it expects, wherever it is (as the Python front end checks the whole document before converting);
//    anything else stops the conversion with the reason.
// 2. Visit: a recursive visitor that mirrors the Python visitor's path for these keywords (_converter.visit ->
//    _visit_alternatives / _visit_values / _visit_types -> _type_object / _type_array / _type_string) and adds
//    rules to the rule table in the same order, so the text is identical. Whatever would make the Python front
//    end raise (an unsatisfiable subschema, a limit) stops the conversion here instead, before it could differ.
#include "frontends/json_schema/json_schema_to_ebnf.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <tuple>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/ebnf_parser.h"
#include "frontends/json_schema/check.h"
#include "frontends/json_schema/disjoint.h"
#include "frontends/json_schema/excluded_texts.h"
#include "frontends/json_schema/ebnf_text.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/key_trie.h"
#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/merge.h"
#include "frontends/json_schema/multiples.h"
#include "frontends/json_schema/numbers.h"
#include "frontends/json_schema/references.h"
#include "frontends/json_schema/schema_nodes.h"
#include "frontends/json_schema/string_automata.h"
#include "frontends/json_schema/values.h"
#include "grammar/productivity.h"
#include "support/json_value.h"
#include "support/utf8.h"

namespace xg::json_schema {

namespace {

// What Gemma's tool arguments put around a string (StringStyle::kGemma).
constexpr std::string_view kGemmaQuote = "<|\"|>";

class Converter {
 public:
  Converter(const JsonSchemaOptions& o, const References& refs, int draft)
      : refs_(refs),
        draft_(draft),
        enforce_formats_(o.enforce_formats),
        ws_(o.any_whitespace ? "j_ws" : ""),
        item_sep_(Seq({ws_, Literal(Separator(o, true)), ws_})),
        key_sep_(Seq({ws_, Literal(Separator(o, false)), ws_})),
        plain_integers_(o.plain_integers),
        any_order_(o.any_order),
        root_name_(o.rule_prefix + "root"),
        rules_(LexicalRules(o)) {
    if (o.string_style == StringStyle::kGemma) {
      UseGemmaStrings(o.string_excludes);
    } else if (!o.string_excludes.empty()) {
      ExcludeFromStrings(o.string_excludes);
    }
    rules_.SetPrefix(o.rule_prefix);
  }

  // The rule table of a conversion under `o`, holding the lexical rules only.
  static RuleTable LexicalRules(const JsonSchemaOptions& o) {
    const std::string ws = o.any_whitespace ? "j_ws" : "";
    return RuleTable(ws, Seq({ws, Literal(Separator(o, true)), ws}), Seq({ws, Literal(Separator(o, false)), ws}),
                     WsBody(o), o.plain_integers);
  }

  // The text; with references, also the grammar parsed under `limits` into `*parsed`.
  std::string Convert(const JsonValue& root, const Limits& limits, std::optional<Grammar>* parsed) {
    std::string text;
    try {
      text = rules_.Text(Visit(root, 0));
    } catch (const Unsatisfiable& e) {
      Stop("an unsatisfiable schema (" + e.why + "): the Python front end reports it");
    }
    if (refs_.any()) {  // only references make rules recursive: the root must still derive a finite text
      try {
        Grammar g = ParseEbnf(text, root_name_, limits);
        if (ProductiveRules(g)[g.root]) parsed->emplace(std::move(g));
      } catch (const std::exception&) {
      }
      if (!*parsed) Stop("a reference cycle that never reaches a value: the Python front end reports it");
    }
    return text;
  }

 private:
  static std::string Separator(const JsonSchemaOptions& o, bool item) {
    if (o.any_whitespace) return item ? "," : ":";
    if (o.separators) return item ? o.separators->first : o.separators->second;
    return item ? ", " : ": ";
  }
  static std::string WsBody(const JsonSchemaOptions& o) {
    if (!o.any_whitespace) return std::string(kEmpty);
    if (!o.max_whitespace_cnt) return "[ \\n\\t\\r]*";
    return "[ \\n\\t\\r]{0," + std::to_string(*o.max_whitespace_cnt) + "}";
  }

  // JsonSchemaOptions::string_excludes: j_string redefined as the strings whose text holds none of the texts
  // (excluded_texts.h), and each text kept as a regex that finds it, for the strings an automaton writes
  // (patterns, formats, lengths, undeclared keys: there the value is checked). The rules are named j_x_... (before
  // the conversion's rule prefix applies), so schemas embedded side by side under the same options share them as
  // they share the other lexical rules.
  void ExcludeFromStrings(const std::vector<std::string>& texts) {
    rules_.SetPrefix("j_x_");
    rules_.Define("j_string", JsonStringAvoiding(texts, &rules_));  // checks the texts (none empty, ...)
    for (const std::string& t : texts) excluded_texts_.push_back(RegexFor(t));
  }

  // StringStyle::kGemma: strings between `<|"|>` markers, raw, their free text a TagDispatch that stops before the
  // marker (and the excluded texts); keys of free objects identifiers. Automaton strings exclude the marker and
  // the texts by value (ExcludingString), undeclared keys are identifiers other than the declared names.
  void UseGemmaStrings(const std::vector<std::string>& excludes) {
    gemma_ = true;
    value_spelling_ = {/*raw=*/true, Literal(kGemmaQuote), Literal(kGemmaQuote)};
    key_spelling_ = {/*raw=*/true, "", std::string(kEmpty)};
    std::vector<std::string> ends = {std::string(kGemmaQuote)};
    for (const std::string& t : excludes) {
      if (t.empty()) Stop("an empty string in string_excludes");
      if (std::find(ends.begin(), ends.end(), t) == ends.end()) ends.push_back(t);
    }
    std::string dispatch = "TagDispatch(loop_after_dispatch=false, excludes=(";
    for (size_t i = 0; i < ends.size(); ++i) {
      dispatch += (i ? ", " : "") + Literal(ends[i]);
      excluded_texts_.push_back(RegexFor(ends[i]));
    }
    rules_.SetPrefix("j_x_");
    const std::string text = rules_.Add("gemma_text", dispatch + "))");
    rules_.Define("j_string", Seq({value_spelling_.open, text, value_spelling_.close}));
    const std::string key = rules_.Add("gemma_key", "[a-zA-Z_] [a-zA-Z0-9_]*");
    rules_.Define("j_member", Seq({key, key_sep_, "j_value"}));
  }

  // A regex that finds `text` (its syntax characters escaped).
  static std::string RegexFor(const std::string& text) {
    std::string regex;
    for (char c : text) {
      if (c != '\0' && std::strchr("^$\\.*+?()[]{}|/", c) != nullptr) regex.push_back('\\');
      regex.push_back(c);
    }
    return regex;
  }

  // A string value equal to `v`.
  std::string StringLiteral(std::string_view v) const {
    if (!gemma_) return JsonStringLiteral(v);
    std::string text(kGemmaQuote);
    text.append(v);
    text.append(kGemmaQuote);
    return Literal(text);
  }
  // A member's key equal to `k`.
  std::string KeyLiteral(std::string_view k) const { return gemma_ ? Literal(k) : JsonStringLiteral(k); }

  // StringAutomaton with the excluded texts (JsonSchemaOptions::string_excludes) among the excluded patterns.
  std::string ExcludingString(const std::string* pattern, const std::string* format_regex,
                              const std::vector<std::string>& names, std::vector<std::string> excluded_patterns,
                              int64_t lo, int64_t hi, bool key = false) {
    excluded_patterns.insert(excluded_patterns.end(), excluded_texts_.begin(), excluded_texts_.end());
    std::string out;
    try {
      out = StringAutomaton(pattern, format_regex, names, excluded_patterns, lo, hi, &rules_,
                            key ? key_spelling_ : value_spelling_);
    } catch (const std::exception& e) {
      Stop(std::string(format_regex ? "a 'format' automaton beyond the limits ("
                                    : "a string automaton beyond the limits (") + e.what() + ")");
    }
    if (out == "j_never") throw Unsatisfiable{"no string satisfies the pattern, format, lengths and exclusions"};
    return out;
  }

  // Keys other than `names` (undeclared members); Gemma's are identifiers.
  std::string KeysOtherThan(const std::vector<std::string_view>& names) {
    if (excluded_texts_.empty()) return KeyExcept(names, &rules_);
    static const std::string kIdentifier = "^[a-zA-Z_][a-zA-Z0-9_]*$";
    return ExcludingString(gemma_ ? &kIdentifier : nullptr, nullptr,
                           std::vector<std::string>(names.begin(), names.end()), {}, 0, -1, /*key=*/gemma_);
  }

  // _converter.visit: booleans, the budget, then a schema with allOf through _visit_inlined.
  std::string Visit(const JsonValue& s, int depth) {
    if (s.is_bool()) {
      if (!s.boolean) throw Unsatisfiable{"the schema is false"};
      return "j_value";
    }
    if (++visits_ > kMaxVisits || rules_.size() > kMaxGrammarBytes) Stop("a schema beyond the native budget");
    if (depth > static_cast<int>(kMaxJsonDepth)) Stop("nesting beyond the native limit");
    if (s.Find("allOf")) return VisitInlined(s, depth);
    return VisitDict(s, depth);
  }

  // _visit_inlined: one rule per distinct text of a schema with allOf, reserved before its body is visited (a
  // recursive $ref inlined through the merge reaches the same text again and closes as rule recursion).
  std::string VisitInlined(const JsonValue& s, int depth) {
    std::string key = merger_.Text(*merger_.Strip(&s));
    auto it = inlined_rules_.find(key);
    if (it != inlined_rules_.end()) return it->second;
    std::string name = rules_.Reserve("merged");
    inlined_rules_[key] = name;
    std::string body;
    try {
      body = VisitDict(s, depth + 1);
    } catch (const Unsatisfiable&) {
      inlined_rules_.erase(key);
      rules_.Drop(name);
      throw;
    }
    return rules_.Define(name, std::move(body));
  }

  // _visit_dict for the handled keywords: $ref, allOf, anyOf / oneOf, listed values, types.
  std::string VisitDict(const JsonValue& original, int depth) {
    const JsonValue* rewritten = merger_.RewriteNot(merger_.RewriteDependencies(&original));
    if (SchemaMerger::IsFalse(rewritten)) throw Unsatisfiable{"'not' rejects every value"};
    const JsonValue& s = *rewritten;
    const JsonValue* any_of = nullptr;
    const JsonValue* one_of = nullptr;
    const JsonValue* type = nullptr;
    bool values = false, constrained = false;
    for (const auto& [kw, v] : s.members) {
      if (!IsRecognised(kw)) continue;
      if (kw == "anyOf") any_of = &v;
      else if (kw == "oneOf") one_of = &v;
      else if (kw == "type") type = &v;
      if (kw == "enum" || kw == "const") values = true;
      if (!IsNoConstraint(kw)) constrained = true;
    }
    if (const JsonValue* ref = s.Find("$ref")) {
      // From draft 2019-09 the siblings of $ref are conjuncts: allOf [{"$ref": ...}, siblings] (_visit_ref).
      const JsonValue* conjunction = draft_ >= 2019 ? merger_.RefAndSiblings(s, /*recognised_only=*/true) : nullptr;
      return conjunction ? Visit(*conjunction, depth + 1) : VisitRef(*ref, depth);
    }
    if (s.Find("allOf")) return VisitAllOf(s, depth);
    if (any_of || one_of) return VisitAlternatives(s, any_of ? "anyOf" : "oneOf", depth);
    if (values) return Values(s);
    if (type && type->is_string() && !(type->text == "integer" && FractionOnly(s))) {
      return Typed(s, type->text, depth);
    }
    if (!type && !constrained) return "j_value";
    return Types(s, type, depth);
  }

  // s (its recognised keywords) without the keywords named.
  const JsonValue* Without(const JsonValue& s, std::initializer_list<std::string_view> drop, bool annotations) {
    JsonValue out;
    out.kind = JsonValue::Kind::kObject;
    for (const auto& [kw, v] : s.members) {
      bool dropped = std::count(drop.begin(), drop.end(), kw) || (annotations && IsAnnotation(kw, enforce_formats_));
      if (!IsRecognised(kw) || dropped) continue;
      out.members.emplace_back(kw, merger_.Share(v));
    }
    return merger_.Make(std::move(out));
  }

  // The allOf branch of _visit_dict: the siblings merged with each branch's target in turn (a target merged once
  // per identity), then visited with the branches' property names first.
  std::string VisitAllOf(const JsonValue& s, int depth) {
    const JsonValue& branches = *s.Find("allOf");
    const JsonValue* merged = Without(s, {"allOf"}, false);
    std::unordered_set<const JsonValue*> seen;
    for (const auto& b : branches.items) {
      const JsonValue* target = merger_.Deref(&b);
      if (!seen.insert(target->Identity()).second) continue;  // x and x is x
      merged = merger_.Merge(merged, target);
    }
    if (SchemaMerger::IsFalse(merged)) throw Unsatisfiable{"the allOf branches and their siblings contradict"};
    return Visit(*BranchNamesFirst(merged, branches), depth + 1);
  }

  // _branch_names_first: the merged properties reordered as a writer of {"allOf": [{"$ref": base}], "properties":
  // {extra}} means them: the branches' names first, in branch order, then the schema's own.
  const JsonValue* BranchNamesFirst(const JsonValue* merged, const JsonValue& branches) {
    const JsonValue* props = merged->is_object() ? merged->Find("properties") : nullptr;
    if (!props || !props->is_object() || props->members.size() < 2) return merged;
    std::vector<std::string> first;
    std::unordered_set<std::string> in_first;
    for (const auto& b : branches.items) {
      for (const auto& name : ConjunctNames(&b)) {
        if (props->Find(name) && in_first.insert(name).second) first.push_back(name);
      }
    }
    if (first.empty()) return merged;
    JsonValue ordered;
    ordered.kind = JsonValue::Kind::kObject;
    for (const auto& name : first) ordered.members.emplace_back(name, merger_.Share(*props->Find(name)));
    for (const auto& [name, v] : props->members) {
      if (!in_first.count(name)) ordered.members.emplace_back(name, merger_.Share(v));
    }
    JsonValue out;
    out.kind = JsonValue::Kind::kObject;
    for (const auto& [kw, v] : merged->members) {
      if (kw == "properties") out.members.emplace_back(kw, std::move(ordered));
      else out.members.emplace_back(kw, merger_.Share(v));
    }
    return merger_.Make(std::move(out));
  }

  // A conjunct of a schema (_conjuncts): a schema object, or the own keywords (all but allOf) of one with allOf.
  struct Conjunct {
    const JsonValue* node;  // the schema (for the own keywords: the schema with allOf)
    const JsonValue* id;    // its identity
    bool own;
    bool operator==(const Conjunct& o) const { return id == o.id && own == o.own; }
  };
  struct ConjunctHash {
    size_t operator()(const Conjunct& c) const { return std::hash<const void*>()(c.id) * 2 + c.own; }
  };

  // The property names of the conjuncts of a schema, in order.
  std::vector<std::string> ConjunctNames(const JsonValue* s) {
    std::vector<std::string> names;
    for (const Conjunct& c : Conjuncts(s).first) {
      const JsonValue* props = c.node->is_object() ? c.node->Find("properties") : nullptr;
      if (props && props->is_object()) {
        for (const auto& m : props->members) names.push_back(m.first);
      }
    }
    return names;
  }

  // _flatten: a schema as the conjuncts whose conjunction it is (bare references followed, allOf flattened, each
  // conjunct once by identity), and whether it is complete: an allOf reached again while it is being flattened
  // (a cycle) adds nothing. Complete lists are memoised per schema, so a chain of levels that each name the level
  // below twice stays linear.
  std::pair<std::vector<Conjunct>, bool> Conjuncts(const JsonValue* s) {
    s = merger_.Deref(s);
    const JsonValue* all_of = s->is_object() ? s->Find("allOf") : nullptr;
    if (!all_of || (draft_ < 2019 && s->Find("$ref"))) return {{Conjunct{s, s->Identity(), false}}, true};
    const JsonValue* id = s->Identity();
    if (auto it = conjuncts_.find(id); it != conjuncts_.end()) return {it->second, true};
    if (!flattening_.insert(id).second) return {{}, false};
    std::vector<Conjunct> out;
    std::unordered_set<Conjunct, ConjunctHash> have;
    bool own = std::any_of(s->members.begin(), s->members.end(), [&](const auto& m) {
      return m.first != "allOf" && !IsAnnotationKeyword(m.first);
    });
    if (own) {
      out.push_back({s, id, true});
      have.insert(out.back());
    }
    bool complete = true;
    static const std::vector<JsonValue> kNone;
    for (const auto& sub : all_of->is_array() ? all_of->items : kNone) {
      auto [more, whole] = Conjuncts(&sub);
      complete = complete && whole;
      for (const Conjunct& c : more) {
        if (have.insert(c).second) out.push_back(c);
      }
    }
    flattening_.erase(id);
    if (complete) conjuncts_[id] = out;
    return {out, complete};
  }

  // _visit_alternatives: each branch merged with the siblings; oneOf taken as anyOf where the merged branches are
  // proven disjoint; a oneOf with repeated branches is first rewritten without them.
  std::string VisitAlternatives(const JsonValue& s, const std::string& kw, int depth) {
    const JsonValue& branches = *s.Find(kw);
    if (kw == "oneOf") {
      // _once_only: a value matching a branch written twice matches two branches, so oneOf [A, A, B...] is
      // oneOf [B...] and not A (and oneOf [A, A] matches nothing).
      std::vector<std::string> texts;
      std::unordered_map<std::string, int> counts;
      for (const auto& b : branches.items) ++counts[texts.emplace_back(merger_.Text(b))];
      std::vector<JsonValue> once, repeated;
      std::unordered_set<std::string> listed;
      for (size_t i = 0; i < texts.size(); ++i) {
        if (counts[texts[i]] == 1) {
          once.push_back(merger_.Share(branches.items[i]));
        } else if (listed.insert(texts[i]).second) {
          repeated.push_back(merger_.Share(branches.items[i]));
        }
      }
      if (once.empty()) throw Unsatisfiable{"every branch of 'oneOf' appears twice"};
      if (!repeated.empty()) {
        // {**rest, "allOf": rest's allOf + [{"oneOf": once}, {"not": the repeated ones}]}
        JsonValue rewritten = json_schema::Object();
        std::vector<JsonValue> conjuncts;
        for (const auto& [k, v] : s.members) {
          if (k == "oneOf") continue;
          if (k == "allOf") {
            if (v.is_array()) {
              for (const auto& x : v.items) conjuncts.push_back(merger_.Share(x));
            } else {
              conjuncts.push_back(merger_.Share(v));
            }
            continue;
          }
          rewritten.members.emplace_back(k, merger_.Share(v));
        }
        conjuncts.push_back(Keyword("oneOf", List(std::move(once))));
        conjuncts.push_back(Keyword("not", repeated.size() == 1 ? std::move(repeated[0])
                                                                : Keyword("anyOf", List(std::move(repeated)))));
        rewritten.members.emplace_back("allOf", List(std::move(conjuncts)));
        return Visit(*merger_.Make(std::move(rewritten)), depth + 1);
      }
    }
    const JsonValue* rest = Without(s, {kw}, false);
    std::vector<const JsonValue*> merged;
    for (const auto& b : branches.items) merged.push_back(merger_.Merge(rest, merger_.Deref(&b)));
    // oneOf is anyOf when no two branches share a value (the prover decides as the Python front end's does); else
    // first the branches restricted to the types where exactly one can hold, then exactly one by complements.
    bool overlap = false;
    if (kw == "oneOf" && !Disjoint(merged)) {
      std::optional<std::vector<const JsonValue*>> restricted = WithoutSharedTypes(merged);
      if (restricted && Disjoint(*restricted)) merged = std::move(*restricted);
    }
    if (kw == "oneOf" && !Disjoint(merged)) {
      overlap = true;
      merged = ExactlyOne(branches, merged);
    }
    std::vector<std::string> options;
    for (size_t i = 0; i < merged.size(); ++i) {
      try {
        options.push_back(overlap ? Visit(*merged[i], depth + 1)
                                  : VisitMergedBranch(s, branches.items[i], merged[i], depth));
      } catch (const Unsatisfiable&) {
      }
    }
    if (options.empty()) throw Unsatisfiable{"no branch of '" + kw + "' accepts a value"};
    return Choice(options);
  }

  // Whether no two of the schemas share a value, as the Python front end decides it (_disjoint).
  bool Disjoint(const std::vector<const JsonValue*>& merged) {
    for (size_t i = 0; i < merged.size(); ++i) {
      for (size_t j = i + 1; j < merged.size(); ++j) {
        if (!Shown(*merged[i], *merged[j])) return false;
      }
    }
    return true;
  }

  bool Shown(const JsonValue& a, const JsonValue& b) {
    std::optional<bool> shown = prover_.Decided(a, b);
    if (!shown) Stop("'oneOf' whose branches are not shown disjoint (a proof the native front end cannot make)");
    return *shown;
  }

  // Exactly one (the overlap path of _visit_alternatives): branch i and, for every other branch j, the complement
  // of the conjuncts of j that i does not share (i and not (c and r) = i and not r when i implies c), without the
  // complement's schemas shown disjoint from branch i; false where every value of i satisfies some j.
  std::vector<const JsonValue*> ExactlyOne(const JsonValue& branches, const std::vector<const JsonValue*>& merged) {
    std::vector<const JsonValue*> exact;
    for (size_t i = 0; i < merged.size(); ++i) {
      JsonValue parts;
      parts.kind = JsonValue::Kind::kArray;
      parts.items.push_back(merger_.Share(*merged[i]));
      bool every = false;  // every value of branch i satisfies branch j too
      for (size_t j = 0; j < merged.size() && !every; ++j) {
        if (j == i) continue;
        std::vector<const JsonValue*> negs;
        for (const JsonValue* n : NegateBeside(branches.items[j], branches.items[i])) {
          if (!Shown(*n, *merged[i])) negs.push_back(n);
        }
        if (negs.empty()) {
          every = true;
        } else if (negs.size() == 1) {
          parts.items.push_back(merger_.Share(*negs[0]));
        } else {
          std::vector<JsonValue> alternatives;
          for (const JsonValue* n : negs) alternatives.push_back(merger_.Share(*n));
          parts.items.push_back(Keyword("anyOf", List(std::move(alternatives))));
        }
      }
      if (every) {
        exact.push_back(SchemaMerger::False());
        continue;
      }
      exact.push_back(merger_.Make(Keyword("allOf", std::move(parts))));
    }
    return exact;
  }

  // _negate_beside: schemas whose union, intersected with `self`, is `self` and not `other`: the complements of
  // the conjuncts of `other` that are not conjuncts of `self`.
  std::vector<const JsonValue*> NegateBeside(const JsonValue& other, const JsonValue& self) {
    std::unordered_set<std::string> mine;
    for (const Conjunct& c : Conjuncts(&self).first) mine.insert(merger_.Text(*merger_.Strip(ConjunctSchema(c))));
    std::vector<const JsonValue*> out;
    for (const Conjunct& c : Conjuncts(&other).first) {
      const JsonValue* schema = ConjunctSchema(c);
      if (mine.count(merger_.Text(*merger_.Strip(schema)))) continue;
      std::vector<const JsonValue*> more = merger_.Negate(schema);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  // A conjunct as a schema: the node, or for the own keywords of a schema with allOf, those keywords (without
  // allOf and annotations).
  const JsonValue* ConjunctSchema(const Conjunct& c) {
    if (!c.own) return c.node;
    JsonValue own;
    own.kind = JsonValue::Kind::kObject;
    for (const auto& [kw, v] : c.node->members) {
      if (kw != "allOf" && !IsAnnotationKeyword(kw)) own.members.emplace_back(kw, merger_.Share(v));
    }
    return merger_.Make(std::move(own));
  }

  // _without_shared_types: the branches restricted to the types where exactly one can hold (a type of which two
  // branches accept every value is a type no valid value has); nullopt when there is none, or when it cannot be
  // written as `type` (integers excluded but not all numbers).
  std::optional<std::vector<const JsonValue*>> WithoutSharedTypes(const std::vector<const JsonValue*>& merged) {
    std::vector<std::unordered_set<std::string>> full(merged.size());
    for (size_t i = 0; i < merged.size(); ++i) {
      for (const char* t : kTypeNames) {
        if (FullOn(*merged[i], t)) full[i].insert(t);
      }
    }
    std::unordered_set<std::string> excluded;
    for (size_t i = 0; i < merged.size(); ++i) {
      for (size_t j = i + 1; j < merged.size(); ++j) {
        for (const auto& t : full[i]) {
          if (full[j].count(t)) excluded.insert(t);
        }
      }
    }
    if (excluded.empty() || (excluded.count("integer") && !excluded.count("number"))) return std::nullopt;
    std::vector<JsonValue> allowed;
    for (const char* t : kTypeNames) {
      if (!excluded.count(t)) allowed.push_back(json_schema::String(t));
    }
    std::vector<const JsonValue*> out;
    if (allowed.empty()) return std::vector<const JsonValue*>(merged.size(), SchemaMerger::False());
    const JsonValue* restriction = merger_.Make(Keyword("type", List(std::move(allowed))));
    for (const JsonValue* b : merged) out.push_back(merger_.Merge(restriction, b));
    return out;
  }

  // _full_on: x accepts every value of JSON type t (from its keywords; false when not sure).
  bool FullOn(const JsonValue& x_in, const std::string& t) {
    if (x_in.is_bool()) return x_in.boolean;
    if (!x_in.is_object()) return false;
    if (x_in.members.empty()) return true;
    const JsonValue& x = *merger_.Strip(&x_in);
    const std::optional<std::unordered_set<std::string>> types = PossibleTypes(x);
    if (types && !types->count(t)) return false;
    if (t == "number" && types && !types->count("number")) return false;
    if (t == "integer" && x.Find("type") && !types->count("integer")) return false;
    static const std::unordered_map<std::string, std::unordered_set<std::string_view>> kTypeKeywords = {
        {"object",
         {"properties", "required", "additionalProperties", "dependentRequired", "minProperties", "maxProperties",
          "patternProperties", "propertyNames", kAbsent, "x-xg2jax-some-member", "dependentSchemas", "dependencies",
          "unevaluatedProperties"}},
        {"array",
         {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minContains", "maxContains",
          "uniqueItems", "x-xg2jax-contains-all", "unevaluatedItems"}},
        {"string", {"minLength", "maxLength", "pattern", kNotStrings, "x-xg2jax-not-patterns", "format"}},
        {"number",
         {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", kFractionOnly,
          "x-xg2jax-not-multiple-of", "format"}},
        {"integer",
         {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", kFractionOnly,
          "x-xg2jax-not-multiple-of", "format"}},
        {"boolean", {}},
        {"null", {}},
    };
    for (const auto& [kw, _] : x.members) {
      if (kw == "type") continue;
      if (kw == "format" && !enforce_formats_) continue;
      bool typed = std::any_of(kTypeKeywords.begin(), kTypeKeywords.end(),
                               [&](const auto& entry) { return entry.second.count(kw) > 0; });
      if (typed && !kTypeKeywords.at(t).count(kw)) continue;  // constrains other types only
      return false;
    }
    return true;
  }

  // _visit_merged_branch: a branch that is a bare reference gets one rule per (target, siblings), named after the
  // branch's own target, so a recursive reference reached again through the same alternatives closes as rule
  // recursion.
  std::string VisitMergedBranch(const JsonValue& parent, const JsonValue& branch, const JsonValue* merged,
                                int depth) {
    if (!References::IsBare(branch, enforce_formats_) || !merged->is_object()) return Visit(*merged, depth + 1);
    std::string target;
    Target(branch.Find("$ref")->text, &target);
    std::string key = target + '\0' + merger_.Text(*Without(parent, {"anyOf", "oneOf"}, true));
    auto it = alt_rules_.find(key);
    if (it != alt_rules_.end()) return it->second;
    std::string name = rules_.Reserve(RuleHint("alt", target));
    alt_rules_[key] = name;
    std::string body;
    try {
      body = Visit(*merged, depth + 1);
    } catch (const Unsatisfiable&) {
      alt_rules_.erase(key);
      rules_.Drop(name);
      throw;
    }
    return rules_.Define(name, std::move(body));
  }

  static std::string RuleHint(const std::string& prefix, const std::string& key) {
    std::string hint = prefix;
    for (char c : key) hint.push_back(c == '/' ? '_' : c);
    if (std::any_of(hint.begin(), hint.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      Stop("a '$ref' pointer with non-ASCII characters (Unicode rule names)");
    }
    return hint;
  }

  // The target of a reference, checked as a schema (a pointer may name any part of the document).
  const JsonValue& Target(const std::string& ref, std::string* key) {
    auto [k, node] = refs_.Resolve(ref);
    Check(*node, draft_);
    *key = k;
    return *node;
  }

  // _visit_ref: one named rule per target (reserved before its body is visited, so recursion closes), after
  // following a chain of bare references to its last one.
  std::string VisitRef(const JsonValue& ref, int depth) {
    const JsonValue* last = &ref;
    std::unordered_set<std::string> seen;
    while (true) {
      auto [key, node] = refs_.Resolve(last->text);
      if (seen.count(key) || !References::IsBare(*node, enforce_formats_)) break;
      seen.insert(key);
      last = node->Find("$ref");
    }
    std::string key;
    const JsonValue& node = Target(last->text, &key);
    auto it = ref_rules_.find(key);
    if (it != ref_rules_.end()) return it->second;
    std::string name = rules_.Reserve(RuleHint("def", key.empty() ? "_root" : key));
    ref_rules_[key] = name;
    std::string body;
    try {
      body = Visit(node, depth + 1);
    } catch (const Unsatisfiable&) {
      Stop("a '$ref' target that accepts no value");
    }
    return rules_.Define(name, std::move(body));
  }

  // _visit_types with a list of types, or none (every type): one alternative per type that accepts a value.
  std::string Types(const JsonValue& s, const JsonValue* type, int depth) {
    std::vector<std::string> types;
    if (type) {
      for (const auto& t : type->items) types.push_back(t.text);
    } else {
      types.assign(std::begin(kTypeNames), std::end(kTypeNames));
    }
    if ((std::count(types.begin(), types.end(), "number") && std::count(types.begin(), types.end(), "integer")) ||
        FractionOnly(s)) {
      types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
    }
    std::vector<std::string> options;
    for (const auto& t : types) {
      try {
        options.push_back(Typed(s, t, depth));
      } catch (const Unsatisfiable&) {
      }
    }
    if (options.empty()) throw Unsatisfiable{"no allowed type fits"};
    return Choice(options);
  }

  // _visit_values: the listed values that satisfy their siblings (a bare `type` by a test per value, other
  // siblings by the validator), one alternative each.
  std::string Values(const JsonValue& s) {
    const JsonValue* c = s.Find("const");
    const JsonValue* e = s.Find("enum");
    std::vector<const JsonValue*> listed;
    if (c) {
      // const next to enum: the const if the enum lists it
      if (!e || std::any_of(e->items.begin(), e->items.end(),
                            [&](const JsonValue& x) { return merger_.ValueText(x) == merger_.ValueText(*c); })) {
        listed.push_back(c);
      }
    } else {
      for (const auto& v : e->items) listed.push_back(&v);
    }
    const JsonValue* rest = Without(s, {"enum", "const"}, false);
    bool type_only = true;  // no sibling but `type` constrains (annotations aside)
    for (const auto& [kw, v] : rest->members) {
      if (kw != "type" && (!IsAnnotationKeyword(kw) || (kw == "format" && enforce_formats_))) type_only = false;
    }
    if (!type_only) validator_.Require(*rest);
    std::vector<std::string> options;
    for (const JsonValue* v : listed) {
      if (validator_.Validate(*v, *rest)) options.push_back(Value(*v));
    }
    if (options.empty()) throw Unsatisfiable{"no listed value satisfies the sibling keywords"};
    return Choice(options);
  }

  // _value_expr: a grammar for exactly one JSON value.
  std::string Value(const JsonValue& v) {
    switch (v.kind) {
      case JsonValue::Kind::kString: return StringLiteral(v.text);
      case JsonValue::Kind::kNull: return "\"null\"";
      case JsonValue::Kind::kBool: return v.boolean ? "\"true\"" : "\"false\"";
      case JsonValue::Kind::kNumber: {
        // An integral value is spelled as the int (1.0 as "1"); any other as json.dumps writes the float.
        std::string integral;
        if (IsPlainInteger(v.text)) {
          integral = v.text == "-0" ? "0" : v.text;
        } else if (std::optional<Decimal> d = Decimal::Parse(v.text); d && d->fraction.empty()) {
          integral = d->IsZero() ? "0" : (d->negative ? "-" : "") + std::to_string(d->whole);
        } else {
          return Literal(NumberText(v));
        }
        std::string lit = Literal(integral);
        return plain_integers_ ? lit : Seq({lit, "( \".\" \"0\"+ )?"});
      }
      case JsonValue::Kind::kObject: {
        if (v.members.empty()) return Seq({"\"{\"", ws_, "\"}\""});
        if (any_order_ && v.members.size() > 1) {
          std::vector<std::pair<std::string, bool>> entries;
          for (const auto& [k, x] : v.members) entries.emplace_back(Seq({KeyLiteral(k), key_sep_, Value(x)}), true);
          return AnyOrderItems(entries, "", std::vector<uint64_t>(entries.size(), 0));
        }
        std::string body;
        for (const auto& [k, x] : v.members) {
          if (!body.empty()) body += " " + item_sep_ + " ";
          body += Seq({KeyLiteral(k), key_sep_, Value(x)});
        }
        return Seq({"\"{\"", ws_, body, ws_, "\"}\""});
      }
      case JsonValue::Kind::kArray: {
        if (v.items.empty()) return Seq({"\"[\"", ws_, "\"]\""});
        std::string body;
        for (const auto& x : v.items) {
          if (!body.empty()) body += " " + item_sep_ + " ";
          body += Value(x);
        }
        return Seq({"\"[\"", ws_, body, ws_, "\"]\""});
      }
    }
    return "";
  }

  // _type_integer: j_integer, the range's digits (bounds rounded inward), or the multiples of multipleOf's integer
  // step within them (multiples.h).
  std::string Integer(const JsonValue& s) {
    Bounds b = ReadBounds(s, draft_);
    std::optional<int64_t> lo, hi;
    if (b.lo) lo = b.lo_strict ? b.lo->Floor() + 1 : b.lo->Ceil();
    if (b.hi) hi = b.hi_strict ? b.hi->Ceil() - 1 : b.hi->Floor();
    const JsonValue* k = s.Find("multipleOf");
    const JsonValue* excluded = s.Find(kNotMultipleOf);
    std::string digits;
    if (excluded && !excluded->items.empty()) {
      // Remainders modulo lcm(step, excluded...): divisible by the step and by none of the excluded.
      const int64_t step = k ? IntegerStep(StepOf(*Bound(*k))) : 1;
      std::vector<int64_t> divisors;
      __int128 modulus = step;
      for (const JsonValue& e : excluded->items) {
        const int64_t n = std::stoll(e.text);  // written by complements.cc: a positive integer
        divisors.push_back(n);
        modulus = modulus / std::gcd(static_cast<int64_t>(modulus), n) * n;
        if (modulus > kMaxNotMultipleModulus) Stop("the complement of 'multipleOf' with too large a modulus");
      }
      digits = IntegerMultiples(static_cast<int64_t>(modulus), lo, hi, &rules_, !plain_integers_, [&](int64_t r) {
        return r % step == 0 && std::all_of(divisors.begin(), divisors.end(), [&](int64_t e) { return r % e != 0; });
      });
    } else if (k) {
      digits = IntegerMultiples(IntegerStep(StepOf(*Bound(*k))), lo, hi, &rules_, !plain_integers_);
    } else {
      if (!lo && !hi) return "j_integer";
      std::optional<std::string> range = IntegerRange(lo, hi, !plain_integers_);
      if (!range) throw Unsatisfiable{"no integer within the bounds"};
      digits = std::move(*range);
    }
    auto text = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
    return rules_.Add("integer_" + text(lo) + "_" + text(hi) + "_" + (k ? NumberText(*k) : "None"),
                      plain_integers_ ? digits : digits + " ( \".\" \"0\"+ )?");
  }

  // _type_number: j_number, the range's spellings (without an exponent), or multipleOf's multiples (an integral
  // step: Integer's; else those of multiples.h, within the bounds where there are any).
  std::string Number(const JsonValue& s) {
    Bounds b = ReadBounds(s, draft_);
    const JsonValue* k = s.Find("multipleOf");
    const std::optional<Decimal> step = k ? Bound(*k) : std::nullopt;
    if (FractionOnly(s)) {
      if (step && step->fraction.empty()) throw Unsatisfiable{"a number with a fraction is no multiple of an integer"};
      if (k) Stop("non-integral numbers (a complement of integer) with a non-integer 'multipleOf'");
      return NonIntegral(b);
    }
    if (s.Find(kNotMultipleOf) && !(step && step->fraction.empty())) {
      // Integers that are no multiple of the listed ones, or numbers with a fraction (never such a multiple).
      if (k || (b.lo && !b.lo->fraction.empty()) || (b.hi && !b.hi->fraction.empty())) {
        Stop("the complement of 'multipleOf' next to a non-integer 'multipleOf' or non-integer bounds");
      }
      std::vector<std::string> options;
      try {
        options.push_back(Integer(s));
      } catch (const Unsatisfiable&) {
      }
      try {
        options.push_back(NonIntegral(b));
      } catch (const Unsatisfiable&) {
      }
      if (options.empty()) throw Unsatisfiable{"no number within the bounds"};
      return Choice(options);
    }
    if (step) {
      if (step->fraction.empty()) return Integer(s);  // multiples of an integer are integers
      if (b.lo || b.hi) return BoundedDecimalMultiples(StepOf(*step), b.lo, b.lo_strict, b.hi, b.hi_strict, &rules_);
      // Approximation (as the Python front end's, documented): the multiples are spelled without an exponent.
      const DecimalStep k_step = StepOf(*step);
      return rules_.Add("number_multiple", DecimalMultipleOf(k_step.p, k_step.d, &rules_, MultipleSign::kAny));
    }
    if (!b.lo && !b.hi) return "j_number";
    std::optional<std::string> digits = NumberRange(b.lo, b.lo_strict, b.hi, b.hi_strict, &rules_);
    if (!digits) throw Unsatisfiable{"no number within the bounds"};
    return rules_.Add("number_range", *digits);
  }

  // FRACTION_ONLY (from a complement of integer): the numbers with a non-zero fraction.
  static bool FractionOnly(const JsonValue& s) {
    const JsonValue* v = s.Find(kFractionOnly);
    return v && v->is_bool() && v->boolean;
  }

  // _non_integral: the numbers with a non-zero fraction within integer bounds (strict or not: no such number equals
  // one): x = m.f > 0 lies in the bounds iff lo <= m <= hi - 1; x = -m.f < 0 iff -hi <= m <= -lo - 1.
  std::string NonIntegral(const Bounds& b) {
    auto whole = [](const std::optional<Decimal>& d) -> std::optional<int64_t> {
      if (!d) return std::nullopt;
      if (!d->fraction.empty()) Stop("non-integral numbers within non-integer bounds");
      return d->negative ? -d->whole : d->whole;
    };
    const std::optional<int64_t> lo = whole(b.lo), hi = whole(b.hi);
    struct Side {
      const char* sign;
      int64_t m_lo;
      std::optional<int64_t> m_hi;
      bool empty;
    };
    const Side sides[] = {
        {"", !lo || *lo <= 0 ? 0 : *lo, hi ? std::optional<int64_t>(*hi - 1) : std::nullopt, hi && *hi <= 0},
        {"\"-\" ", !hi || *hi >= 0 ? 0 : -*hi, lo ? std::optional<int64_t>(-*lo - 1) : std::nullopt,
         lo && *lo >= 0},
    };
    std::string body;
    for (const Side& side : sides) {
      if (side.empty || (side.m_hi && *side.m_hi < side.m_lo)) continue;
      std::optional<std::string> digits = side.m_lo == 0 && !side.m_hi
                                              ? std::optional<std::string>("( \"0\" | [1-9] [0-9]* )")
                                              : IntegerRange(side.m_lo, side.m_hi, true);
      if (!digits) continue;
      if (!body.empty()) body += " | ";
      body += "( " + std::string(side.sign) + *digits + " \".\" [0-9]* [1-9] [0-9]* )";
    }
    if (body.empty()) throw Unsatisfiable{"no number with a fraction within the bounds"};
    return rules_.Add("non_integral", body);
  }

  std::string Typed(const JsonValue& s, const std::string& type, int depth) {
    for (const char* kw : kUnvisitedInternal) {
      if (s.Find(kw)) Stop(std::string("the internal keyword '") + kw + "'");
    }
    if (type == "null") return "j_null";
    if (type == "boolean") return "j_bool";
    if (type == "integer") return Integer(s);
    if (type == "number") return Number(s);
    if (type == "string") return String(s);
    if (type == "array") return Array(s, depth);
    return Object(s, depth);
  }

  static std::optional<int64_t> OptionalCount(const JsonValue& s, std::string_view kw) {
    const JsonValue* v = s.Find(kw);
    if (!v) return std::nullopt;
    return Count(*v, kw);
  }

  // _type_string: a pattern's automaton (lengths intersected), a format's rule, or lengths alone.
  std::string String(const JsonValue& s) {
    int64_t lo = OptionalCount(s, "minLength").value_or(0);
    std::optional<int64_t> hi = OptionalCount(s, "maxLength");
    if (hi && *hi < lo) throw Unsatisfiable{"'minLength' > 'maxLength'"};
    const JsonValue* format = s.Find("format");
    const StringFormat* fmt = enforce_formats_ && format ? FindStringFormat(format->text) : nullptr;
    const JsonValue* pattern = s.Find("pattern");
    const JsonValue* not_strings = s.Find(kNotStrings);  // from complements: strings other than these
    const JsonValue* not_patterns = s.Find(kNotPatterns);  // and in which none of these finds a match
    // With excludes (or Gemma's raw strings) every constrained string is an automaton over the value.
    const bool excluding = !excluded_texts_.empty() && (lo || hi || pattern || fmt || not_strings);
    if (excluding || not_patterns || (not_strings && (lo || hi || pattern || fmt)) || (fmt && (lo || hi || pattern))) {
      // _string_automaton: one product of the pattern's, format's, lengths' and excluded automata
      std::vector<std::string> names, excluded;
      if (not_strings) for (const auto& x : not_strings->items) names.push_back(x.text);
      if (not_patterns) for (const auto& x : not_patterns->items) excluded.push_back(x.text);
      return ExcludingString(pattern ? &pattern->text : nullptr, fmt ? &fmt->regex : nullptr, names,
                             std::move(excluded), lo, hi ? *hi : -1);
    }
    if (not_strings) {
      std::vector<std::string_view> names;
      for (const auto& x : not_strings->items) names.push_back(x.text);
      return rules_.Add("string_except", KeyExcept(names, &rules_));
    }
    if (pattern) {
      std::string key;
      try {
        key = PatternString(pattern->text, lo, hi ? *hi : -1, &rules_);
      } catch (const std::exception& e) {
        Stop(std::string("a 'pattern' beyond the automaton limits (") + e.what() + ")");
      }
      if (key == "j_never") throw Unsatisfiable{"no string matches the pattern within the length bounds"};
      return key;
    }
    if (fmt) {
      if (!rules_.Has(fmt->rule)) {
        rules_.Define(rules_.ReserveExact(fmt->rule), "Regex(" + Literal(fmt->regex) + ", json_string=true)");
      }
      return rules_.Add("string_" + fmt->rule, "\"\\\"\" " + fmt->rule + " \"\\\"\"");
    }
    if (lo == 0 && !hi) return "j_string";
    std::string hi_text = hi ? std::to_string(*hi) : "None";
    std::string bound = "{" + std::to_string(lo) + "," + (hi ? hi_text : "") + "}";
    return rules_.Add("string_" + std::to_string(lo) + "_" + hi_text, "\"\\\"\" j_char" + bound + " \"\\\"\"");
  }

  // _array_contains: arrays whose number of items matching `contains` is within [minContains, maxContains]
  // (default [1, inf)), with positional items and length bounds. Each item matches its positional schema and
  // either C or its complement, so one rule per (position so far, count so far), both capped where they stop
  // mattering, keeps the count and the length exact.
  std::string ArrayContains(const JsonValue& s, const JsonValue* prefix, const JsonValue* rest, int64_t lo,
                            std::optional<int64_t> hi, int depth) {
    const JsonValue& contains = *s.Find("contains");
    const std::optional<int64_t> min_contains = draft_ >= 2019 ? OptionalCount(s, "minContains") : std::nullopt;
    const std::optional<int64_t> c_hi = draft_ >= 2019 ? OptionalCount(s, "maxContains") : std::nullopt;
    const int64_t c_lo = min_contains.value_or(1);
    if (c_hi && *c_hi < c_lo) throw Unsatisfiable{"'minContains' > 'maxContains'"};
    const std::string& sep = item_sep_;
    if (c_lo == 0 && !c_hi) return Array(*Without(s, {"contains"}, false), depth);
    const size_t n = prefix ? prefix->items.size() : 0;
    auto accepts_all = [](const JsonValue& x) {
      return (x.is_bool() && x.boolean) || (x.is_object() && x.members.empty());
    };
    if (n == 0 && accepts_all(*rest) && c_lo == 1 && !c_hi && !hi && lo <= 1) {
      std::string c = Visit(contains, depth + 1);
      std::string body = Seq({"( j_value " + sep + " )*", c, "( " + sep + " j_value )*"});
      return rules_.Add("array_contains", Seq({"\"[\"", ws_, body, ws_, "\"]\""}));
    }
    const int64_t cap = c_hi ? *c_hi : c_lo;
    const int64_t length_cap = hi ? *hi : std::max<int64_t>({static_cast<int64_t>(n), lo, 1});
    if ((cap + 1) * (length_cap + 1) > kMaxContainsRules) Stop("counting 'contains' beyond MAX_CONTAINS_RULES");
    // Without maxContains, "at least c_lo matches" needs no complement.
    std::vector<const JsonValue*> negated;
    if (c_hi) negated = merger_.Negate(&contains);
    else negated.push_back(SchemaMerger::True());
    // (matching C, not matching C) for an item under `item`; nullopt where impossible.
    auto pair = [&](const JsonValue& item) {
      std::pair<std::optional<std::string>, std::optional<std::string>> out;
      for (int side = 0; side < 2; ++side) {
        if (side == 1 && negated.empty()) break;
        JsonValue extra;
        if (side == 0) {
          extra = merger_.Share(contains);
        } else {
          std::vector<JsonValue> alternatives;
          for (const JsonValue* x : negated) alternatives.push_back(merger_.Share(*x));
          extra = Keyword("anyOf", List(std::move(alternatives)));
        }
        const JsonValue* schema;
        if (accepts_all(item)) {
          schema = merger_.Make(std::move(extra));
        } else {
          std::vector<JsonValue> both;
          both.push_back(merger_.Share(item));
          both.push_back(std::move(extra));
          schema = merger_.Make(Keyword("allOf", List(std::move(both))));
        }
        try {
          (side == 0 ? out.first : out.second) = Visit(*schema, depth + 1);
        } catch (const Unsatisfiable&) {
        }
      }
      return out;
    };
    std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>> kinds;
    for (size_t i = 0; i < n; ++i) kinds.push_back(pair(prefix->items[i]));
    kinds.push_back(pair(*rest));
    std::map<std::pair<int64_t, int64_t>, std::string> names;
    std::function<std::string(int64_t, int64_t)> state = [&](int64_t pos, int64_t count) -> std::string {
      auto it = names.find({pos, count});
      if (it != names.end()) return it->second;
      const std::string name = rules_.Reserve("contains_" + std::to_string(pos) + "_" + std::to_string(count));
      names[{pos, count}] = name;
      std::vector<std::string> options;
      if (pos >= lo && count >= c_lo) options.emplace_back(kEmpty);
      if (!hi || pos < *hi) {
        const auto& [match, other] = kinds[std::min<int64_t>(pos, static_cast<int64_t>(n))];
        const std::string lead = pos > 0 ? sep : "";
        const int64_t next = hi || pos < length_cap ? pos + 1 : pos;
        if (match && (!c_hi || count < *c_hi)) options.push_back(Seq({lead, *match, state(next, std::min(count + 1, cap))}));
        if (other) options.push_back(Seq({lead, *other, state(next, count)}));
      }
      std::string body;
      for (const auto& o : options) body += (body.empty() ? "" : " | ") + o;
      return rules_.Define(name, options.empty() ? "j_never" : body);
    };
    std::string body = state(0, 0);
    return rules_.Add("array_contains", Seq({"\"[\"", ws_, body, ws_, "\"]\""}));
  }

  // _array_contains_all: arrays in which each schema of `wanted` (CONTAINS_ALL) matches some item: one rule per
  // (position, set of schemas matched so far); an item may count for any set of schemas it matches.
  std::string ArrayContainsAll(const JsonValue& wanted, const JsonValue* prefix, const JsonValue* rest, int64_t lo,
                               std::optional<int64_t> hi, int depth) {
    const size_t k = wanted.items.size();
    if (k > kMaxContainsAll) Stop("allOf with more than MAX_CONTAINS_ALL different 'contains'");
    const int64_t n = prefix ? static_cast<int64_t>(prefix->items.size()) : 0;
    const int64_t length_cap = hi ? *hi : std::max<int64_t>({n, lo, 1});
    if ((int64_t{1} << k) * (length_cap + 1) > kMaxContainsRules) Stop("'contains' beyond MAX_CONTAINS_RULES");
    auto accepts_all = [](const JsonValue& x) {
      return (x.is_bool() && x.boolean) || (x.is_object() && x.members.empty());
    };
    std::map<std::pair<int64_t, uint32_t>, std::optional<std::string>> cache;
    auto item = [&](int64_t pos, uint32_t subset) -> std::optional<std::string> {
      const std::pair<int64_t, uint32_t> key{std::min(pos, n), subset};
      auto it = cache.find(key);
      if (it != cache.end()) return it->second;
      const JsonValue& base = pos < n ? prefix->items[static_cast<size_t>(pos)] : *rest;
      std::vector<JsonValue> parts;
      if (!accepts_all(base)) parts.push_back(merger_.Share(base));
      for (size_t j = 0; j < k; ++j) {
        if (subset >> j & 1) parts.push_back(merger_.Share(wanted.items[j]));
      }
      const JsonValue* schema =
          parts.empty() ? SchemaMerger::True() : merger_.Make(Keyword("allOf", List(std::move(parts))));
      std::optional<std::string> out;
      try {
        out = Visit(*schema, depth + 1);
      } catch (const Unsatisfiable&) {
      }
      cache[key] = out;
      return out;
    };
    const uint32_t full = (uint32_t{1} << k) - 1;
    std::map<std::pair<int64_t, uint32_t>, std::string> names;
    std::function<std::string(int64_t, uint32_t)> state = [&](int64_t pos, uint32_t done) -> std::string {
      auto it = names.find({pos, done});
      if (it != names.end()) return it->second;
      const std::string name = rules_.Reserve("contains_all_" + std::to_string(pos) + "_" + std::to_string(done));
      names[{pos, done}] = name;
      std::vector<std::string> options;
      if (pos >= lo && done == full) options.emplace_back(kEmpty);
      if (!hi || pos < *hi) {
        const std::string lead = pos > 0 ? item_sep_ : "";
        const int64_t next = hi || pos < length_cap ? pos + 1 : pos;
        for (uint32_t subset = 0; subset <= full; ++subset) {
          if (subset && (subset & done) == subset) continue;  // counting an item again for matched schemas: no change
          std::optional<std::string> expr = item(pos, subset);
          if (expr) {
            std::string after = state(next, done | subset);
            options.push_back(Seq({lead, *expr, after}));
          }
        }
      }
      std::string body;
      for (const auto& o : options) body += (body.empty() ? "" : " | ") + o;
      return rules_.Define(name, options.empty() ? "j_never" : body);
    };
    std::string body = state(0, 0);
    return rules_.Add("array_contains", Seq({"\"[\"", ws_, body, ws_, "\"]\""}));
  }

  // _type_array: positional items (prefixItems, or draft 7's array `items`), then the rest (`items`, or draft
  // 7's additionalItems), within the item counts. Position k is reachable only if every position before it is.
  std::string Array(const JsonValue& s, int depth) {
    int64_t lo = OptionalCount(s, "minItems").value_or(0);
    std::optional<int64_t> hi = OptionalCount(s, "maxItems");
    if (hi && *hi < lo) throw Unsatisfiable{"'minItems' > 'maxItems'"};
    const JsonValue* prefix = nullptr;
    const JsonValue* rest = s.Find("items");
    if (draft_ >= 2020) {
      prefix = s.Find("prefixItems");
    } else if (rest && rest->is_array()) {
      prefix = rest;
      rest = s.Find("additionalItems");
    }
    if (!rest) rest = SchemaMerger::True();
    if (prefix && prefix->items.size() > kMaxPositionalItems) Stop("more positional items than the native limit");
    if (const JsonValue* all = s.Find(kContainsAll)) return ArrayContainsAll(*all, prefix, rest, lo, hi, depth);
    if (s.Find("contains")) return ArrayContains(s, prefix, rest, lo, hi, depth);
    std::vector<std::string> items;
    std::optional<std::string> rest_expr;
    bool reachable = true;
    static const std::vector<JsonValue> kNone;
    for (const auto& sub : prefix ? prefix->items : kNone) {
      try {
        items.push_back(Visit(sub, depth + 1));
      } catch (const Unsatisfiable&) {
        reachable = false;  // no array reaches this position, so none reaches a later one
        break;
      }
    }
    if (reachable) {
      try {
        rest_expr = Visit(*rest, depth + 1);
      } catch (const Unsatisfiable&) {
      }
    }
    const int64_t p = static_cast<int64_t>(items.size());
    if (!rest_expr && p < lo) throw Unsatisfiable{"fewer items are possible than 'minItems'"};
    // tail(k): the items from position k on, given that item k-1 exists; the array may end there iff k >= lo.
    auto rest_tail = [&](int64_t k) -> std::string {
      if ((hi && k >= *hi) || !rest_expr) return "";
      int64_t need = std::max<int64_t>(0, lo - k);
      std::string bound = hi ? "{" + std::to_string(need) + "," + std::to_string(*hi - k) + "}"
                             : need == 0 ? "*" : need == 1 ? "+" : "{" + std::to_string(need) + ",}";
      return "( " + item_sep_ + " " + *rest_expr + " )" + bound;
    };
    std::string tail = rest_tail(std::max<int64_t>(p, 1));
    for (int64_t k = p - 1; k >= 1; --k) {
      if (hi && k >= *hi) {
        tail = "";
        continue;
      }
      std::string inner = Seq({item_sep_, items[k], tail});
      tail = k < lo ? inner : "( " + inner + " )?";
    }
    const std::string* first = p ? &items[0] : rest_expr ? &*rest_expr : nullptr;
    if (!first || (hi && *hi == 0)) {
      if (lo > 0) throw Unsatisfiable{"no item is possible"};
      return Seq({"\"[\"", ws_, "\"]\""});
    }
    std::string body = Seq({*first, tail});
    if (lo == 0) body = "( " + body + " )?";
    return rules_.Add("array", Seq({"\"[\"", ws_, body, ws_, "\"]\""}));
  }

  // _type_object + _object_expr: declared properties in schema order, optional ones skippable, then extras.
  std::string Object(const JsonValue& s, int depth) {
    static const JsonValue kEmptyObject = [] {
      JsonValue v;
      v.kind = JsonValue::Kind::kObject;
      return v;
    }();
    const JsonValue* props = s.Find("properties");
    if (!props) props = &kEmptyObject;
    const JsonValue* dependent = s.Find("dependentRequired");  // name -> the names it requires (Check)
    if (dependent && dependent->members.empty()) dependent = nullptr;
    int64_t min_count = OptionalCount(s, "minProperties").value_or(0);
    std::optional<int64_t> max_count = OptionalCount(s, "maxProperties");
    if (max_count && *max_count < min_count) throw Unsatisfiable{"'minProperties' > 'maxProperties'"};
    const bool counted = dependent || min_count > 0 || max_count;
    const JsonValue* additional = s.Find("additionalProperties");
    if (!additional) additional = SchemaMerger::True();
    // Declared names: the properties, then the names required or named by dependentRequired that they do not
    // list (those take additionalProperties).
    std::vector<std::pair<std::string_view, const JsonValue*>> names;
    std::unordered_set<std::string_view> required, seen;
    for (const auto& [name, sub] : props->members) {
      names.emplace_back(name, &sub);
      seen.insert(name);
    }
    if (const JsonValue* r = s.Find("required")) {
      for (const auto& x : r->items) {
        required.insert(x.text);
        if (seen.insert(x.text).second) names.emplace_back(x.text, additional);
      }
    }
    if (dependent) {
      for (const auto& [name, _] : dependent->members) {
        if (seen.insert(name).second) names.emplace_back(name, additional);
      }
      for (const auto& [_, list] : dependent->members) {
        for (const auto& x : list.items) {
          if (seen.insert(x.text).second) names.emplace_back(x.text, additional);
        }
      }
    }
    // ABSENT (from a complement of required): declared names, in sorted order, that no object has.
    std::unordered_set<std::string_view> absent;
    if (const JsonValue* a = s.Find(kAbsent)) {
      std::vector<std::string_view> sorted;
      for (const auto& x : a->items) {
        if (absent.insert(x.text).second) sorted.push_back(x.text);
      }
      std::sort(sorted.begin(), sorted.end());
      for (std::string_view name : sorted) {
        if (seen.insert(name).second) names.emplace_back(name, additional);
      }
    }
    // patternProperties: the automaton of the keys each regex matches (_pattern_dfas).
    std::vector<Pattern> patterns;
    if (const JsonValue* pp = s.Find("patternProperties")) {
      if (!excluded_texts_.empty()) Stop("'patternProperties' with string excludes or the gemma style");
      for (const auto& [regex, sub] : pp->members) {
        try {
          patterns.push_back({&sub, KeyDfa(regex)});
        } catch (const std::exception& e) {
          Stop(std::string("a 'patternProperties' regex beyond the automaton limits (") + e.what() + ")");
        }
      }
    }
    // propertyNames: automata every key must match (_name_filters); keyed: keys are decided by automata.
    const std::optional<std::vector<CodepointDfa>> filters = NameFilters(s);
    const bool keyed = !patterns.empty() || filters.has_value();
    std::vector<std::pair<std::string, bool>> entries;  // (member expression, required)
    std::vector<std::string_view> entry_names;
    for (const auto& [name, sub] : names) {
      bool req = required.count(name) > 0;
      const JsonValue* schema = absent.count(name)  ? SchemaMerger::False()
                                : !keyed ? sub
                                         : DeclaredValue(std::string(name), *props, additional, patterns, filters);
      std::string value;
      try {
        value = Visit(*schema, depth + 1);
      } catch (const Unsatisfiable&) {
        if (req) throw;
        continue;
      }
      entries.emplace_back(Seq({KeyLiteral(name), key_sep_, value}), req);
      entry_names.push_back(name);
    }
    if (dependent) {
      // A property whose dependencies can never be present cannot be present either (to a fixed point).
      while (true) {
        std::unordered_set<std::string_view> present(entry_names.begin(), entry_names.end());
        std::vector<std::pair<std::string, bool>> kept;
        std::vector<std::string_view> kept_names;
        for (size_t i = 0; i < entries.size(); ++i) {
          const JsonValue* deps = dependent->Find(entry_names[i]);
          bool ok = !deps || std::all_of(deps->items.begin(), deps->items.end(),
                                         [&](const JsonValue& d) { return present.count(d.text) > 0; });
          if (ok) {
            kept.push_back(std::move(entries[i]));
            kept_names.push_back(entry_names[i]);
          }
        }
        bool done = kept.size() == entries.size();
        entries = std::move(kept);
        entry_names = std::move(kept_names);
        if (done) break;
      }
    }
    std::string extra;
    if (keyed) {
      std::vector<std::string> declared;
      for (const auto& n : names) declared.emplace_back(n.first);
      extra = PatternMembers(declared, additional, patterns, filters, depth);
    } else if (!(additional->is_bool() && !additional->boolean)) {
      try {
        std::string value = Visit(*additional, depth + 1);
        std::vector<std::string_view> declared;
        for (const auto& n : names) declared.push_back(n.first);
        extra = Seq({KeysOtherThan(declared), key_sep_, value});
      } catch (const Unsatisfiable&) {
      }
    }
    if (!counted) return ObjectExpr(entries, extra);
    std::vector<uint64_t> deps(entries.size(), 0);
    if (dependent) {
      if (entries.size() > 63) Stop("'dependentRequired' on more than 63 declared properties");
      for (const auto& [_, list] : dependent->members) {
        std::unordered_set<std::string_view> listed;
        for (const auto& x : list.items) {
          if (!listed.insert(x.text).second) Stop("'dependentRequired' naming a property twice");
        }
      }
      std::unordered_map<std::string_view, size_t> index;
      for (size_t i = 0; i < entry_names.size(); ++i) index[entry_names[i]] = i;
      for (size_t i = 0; i < entries.size(); ++i) {
        if (const JsonValue* list = dependent->Find(entry_names[i])) {
          for (const auto& d : list->items) deps[i] |= uint64_t{1} << index.at(d.text);
        }
      }
    }
    if (any_order_) {
      // _any_order_object: AnyOrder(...) when the required properties already settle minProperties and
      // maxProperties (the Python front end builds one rule per subset otherwise).
      const int64_t num_required = std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e.second; });
      const bool plain = min_count <= num_required &&
                         (!max_count || (extra.empty() && *max_count >= static_cast<int64_t>(entries.size())));
      if (!plain) Stop("any_order=True with minProperties / maxProperties beyond the required properties");
      return AnyOrderItems(entries, extra, deps);
    }
    return OrderedCountedObject(entries, extra, deps, min_count, max_count);
  }

  // _any_order_items: members in any order, declared ones at most once (exactly once when required), extras any
  // number of times, dependentRequired as `requires=` (deps[i]: the entries entry i requires, as bits).
  std::string AnyOrderItems(const std::vector<std::pair<std::string, bool>>& entries, const std::string& extra,
                            const std::vector<uint64_t>& deps) {
    std::string body = "AnyOrder(";
    for (const auto& [member, req] : entries) body += "( " + member + " )" + (req ? "" : "?") + ", ";
    if (!extra.empty()) body += "( " + extra + " )*, ";
    body += "separator=( " + item_sep_ + " )";
    std::string groups;
    for (size_t i = 0; i < deps.size(); ++i) {
      if (!deps[i]) continue;
      if (!groups.empty()) groups += "; ";
      groups += std::to_string(i + 1) + ":";
      for (size_t j = 0; j < entries.size(); ++j)
        if (deps[i] >> j & 1) groups += " " + std::to_string(j + 1);
    }
    if (!groups.empty()) body += ", requires=\"" + groups + "\"";
    body += ")";
    return rules_.Add("object", Seq({"\"{\"", ws_, body, ws_, "\"}\""}));
  }

  // _ordered_counted_object (without member requirements): declared properties in schema order, then extra
  // ones, with minProperties / maxProperties / dependentRequired exact. Walking the declared properties in order,
  // a state is (members so far, capped where more no longer matters; later properties some present one
  // requires; earlier present properties a later one depends on); one rule per reachable state that can still
  // close the object, made after the states it leads to.
  std::string OrderedCountedObject(const std::vector<std::pair<std::string, bool>>& entries, const std::string& extra,
                                   const std::vector<uint64_t>& deps, int64_t min_count,
                                   std::optional<int64_t> max_count) {
    const size_t n = entries.size();
    const int64_t cap = max_count ? *max_count : std::max<int64_t>(min_count, 1);
    if (n >= kMaxPropertyCountStates) Stop("more declared properties than MAX_PROPERTY_COUNT_STATES");
    std::vector<uint64_t> targets_after(n + 1, 0);  // earlier-or-equal positions a source at >= k depends on
    for (size_t k = n; k-- > 0;) targets_after[k] = targets_after[k + 1] | deps[k];
    const std::string& sep = item_sep_;
    // _counted_extras: the rest of the object, extra members only (nullopt: it cannot close).
    auto bounds = [](int64_t least, std::optional<int64_t> most) -> std::string {
      if (!most) return least == 0 ? "*" : least == 1 ? "+" : "{" + std::to_string(least) + ",}";
      if (least == 0 && *most == 1) return "?";
      return "{" + std::to_string(least) + "," + std::to_string(*most) + "}";
    };
    auto tail = [&](int64_t count) -> std::optional<std::string> {
      int64_t need = std::max<int64_t>(0, min_count - count);
      std::optional<int64_t> most;
      if (max_count) most = *max_count - count;
      if (need && extra.empty()) return std::nullopt;
      if (extra.empty() || (most && *most == 0)) return std::string(kEmpty);
      if (count) return rules_.Add("obj_tail", "( " + Seq({sep, extra}) + " )" + bounds(need, most));
      std::string rest = bounds(std::max<int64_t>(need - 1, 0), most ? std::optional<int64_t>(*most - 1) : std::nullopt);
      std::string more = most && *most == 1 ? "" : "( " + Seq({sep, extra}) + " )" + rest;
      std::string body = Seq({extra, more});
      return rules_.Add("obj_tail", need ? body : "( " + body + " )?");
    };
    std::map<std::tuple<size_t, int64_t, uint64_t, uint64_t>, std::optional<std::string>> memo;
    std::function<std::optional<std::string>(size_t, int64_t, uint64_t, uint64_t)> at =
        [&](size_t k, int64_t count, uint64_t need, uint64_t have) -> std::optional<std::string> {
      if (k == n) return tail(count);
      auto key = std::make_tuple(k, count, need, have);
      if (auto it = memo.find(key); it != memo.end()) return it->second;
      if (memo.size() >= kMaxPropertyCountStates) Stop("property counts beyond MAX_PROPERTY_COUNT_STATES");
      const auto& [member, req] = entries[k];
      const uint64_t bit = k < 64 ? uint64_t{1} << k : 0;  // deps are zero past 63 properties
      const uint64_t below = bit - 1, upto = bit ? (bit << 1) - 1 : ~uint64_t{0};
      const uint64_t keep = targets_after[k + 1];
      std::vector<std::string> options;
      if ((!max_count || count < *max_count) && !(deps[k] & below & ~have)) {
        uint64_t later = deps[k] & ~upto;
        auto after = at(k + 1, std::min(count + 1, cap), (need | later) & ~bit, (have | bit) & keep);
        if (after) options.push_back(Seq({count ? std::string_view(sep) : std::string_view(), member, *after}));
      }
      if (!req && !(need & bit)) {
        auto after = at(k + 1, count, need, have & keep);
        if (after) options.push_back(*after);
      }
      std::optional<std::string> out;
      if (!options.empty()) {
        std::string body;
        for (const auto& o : options) body += (body.empty() ? "" : " | ") + o;
        out = rules_.Add("obj_ord_" + std::to_string(k), body);
      }
      memo[key] = out;
      return out;
    };
    auto body = at(0, 0, 0, 0);
    if (!body) throw Unsatisfiable{"no object satisfies the property keywords"};
    return rules_.Add("object", Seq({"\"{\"", ws_, *body, ws_, "\"}\""}));
  }

  struct Pattern {
    const JsonValue* schema;
    CodepointDfa keys;
  };

  // _name_filters: the automata every key must match (propertyNames with the string keywords `type`, `pattern`,
  // `minLength` / `maxLength`, `const` / `enum`; keywords of other types ignored); nullopt when keys are free.
  std::optional<std::vector<CodepointDfa>> NameFilters(const JsonValue& s) {
    if (!excluded_texts_.empty() && s.Find("propertyNames")) {
      Stop("'propertyNames' with string excludes or the gemma style");
    }
    const JsonValue* names = s.Find("propertyNames");
    if (!names) return std::nullopt;
    const JsonValue* sub = merger_.Deref(names);
    if (sub->is_bool() && sub->boolean) return std::nullopt;
    if (sub->is_object() && sub->members.empty()) return std::nullopt;
    std::vector<CodepointDfa> out;
    if (sub->is_bool()) {
      out.push_back(NamesDfa({}));
      return out;
    }
    sub = merger_.Strip(sub);
    for (const auto& [kw, v] : sub->members) {
      if (IsAnnotationKeyword(kw) || IsNotForStrings(kw)) continue;
      if (kw == "type") {
        bool string = v.is_string() ? v.text == "string"
                                    : std::any_of(v.items.begin(), v.items.end(),
                                                  [](const JsonValue& t) { return t.text == "string"; });
        if (!string) out.push_back(NamesDfa({}));
      } else if (kw == "pattern") {
        try {
          out.push_back(KeyDfa(v.text));
        } catch (const std::exception& e) {
          Stop(std::string("a 'propertyNames' pattern beyond the automaton limits (") + e.what() + ")");
        }
      } else if (kw == "minLength" || kw == "maxLength") {
        continue;
      } else if (kw == "const" || kw == "enum") {
        std::vector<std::string> listed;
        if (kw == "const" && v.is_string()) listed.push_back(v.text);
        for (const auto& x : v.items) {
          if (x.is_string()) listed.push_back(x.text);
        }
        out.push_back(NamesDfa(listed));
      } else {
        Stop("'" + kw + "' in 'propertyNames'");
      }
    }
    const int64_t lo = OptionalCount(*sub, "minLength").value_or(0);
    const std::optional<int64_t> hi = OptionalCount(*sub, "maxLength");
    if (lo || hi) {
      constexpr int64_t kMaxLengthAutomaton = 1000;  // MAX_LENGTH_AUTOMATON
      if (hi && *hi < lo) {
        out.push_back(NamesDfa({}));
      } else {
        if (lo > kMaxLengthAutomaton || (hi && *hi > kMaxLengthAutomaton)) Stop("a 'propertyNames' length bound above 1000");
        out.push_back(LengthDfa(lo, hi ? *hi : -1, kMaxLengthAutomaton + 1));
      }
    }
    return out;
  }

  // _declared_value: a declared name's value satisfies its property schema (additionalProperties when it has
  // none and no pattern matches it) and the schema of every pattern that matches it.
  const JsonValue* DeclaredValue(const std::string& name, const JsonValue& props, const JsonValue* additional,
                                 const std::vector<Pattern>& patterns,
                                 const std::optional<std::vector<CodepointDfa>>& filters) {
    if (filters) {  // a name propertyNames rejects cannot appear
      for (const auto& f : *filters) {
        if (!Matches(f, name)) return SchemaMerger::False();
      }
    }
    std::vector<const JsonValue*> matched;
    for (const auto& p : patterns) {
      if (Matches(p.keys, name)) matched.push_back(p.schema);
    }
    const JsonValue* declared = props.Find(name);
    const JsonValue* base = declared ? declared : matched.empty() ? additional : SchemaMerger::True();
    if (matched.empty()) return base;
    JsonValue list;
    list.kind = JsonValue::Kind::kArray;
    list.items.push_back(merger_.Share(*base));
    for (const JsonValue* m : matched) list.items.push_back(merger_.Share(*m));
    JsonValue out;
    out.kind = JsonValue::Kind::kObject;
    out.members.emplace_back("allOf", std::move(list));
    return merger_.Make(std::move(out));
  }

  // _pattern_members: every undeclared key through the product of the declared names' automaton and the
  // patterns'; its states grouped by the set of patterns that accept there, one member rule per group (key:
  // the product with the group's states accepting; value: allOf the group's schemas, or additionalProperties).
  // "" when no undeclared key may appear.
  std::string PatternMembers(const std::vector<std::string>& names, const JsonValue* additional,
                             const std::vector<Pattern>& patterns,
                             const std::optional<std::vector<CodepointDfa>>& filters, int depth) {
    CodepointDfa declared = NamesDfa(names);
    std::vector<const CodepointDfa*> dfas = {&declared};
    for (const auto& p : patterns) dfas.push_back(&p.keys);
    if (filters) {
      for (const auto& f : *filters) dfas.push_back(&f);
    }
    const int32_t first_filter = static_cast<int32_t>(1 + patterns.size());
    std::optional<CodepointDfa> keys;
    try {
      keys = KeyProduct(dfas);
    } catch (const std::exception& e) {
      Stop(std::string("a 'patternProperties' product beyond the automaton limits (") + e.what() + ")");
    }
    std::map<std::vector<int>, std::vector<int32_t>> groups;  // ordered as Python sorts tuples
    for (int32_t q = 0; q < keys->num_states(); ++q) {
      if (keys->Accepts(q, 0)) continue;
      bool filtered_out = false;  // some propertyNames automaton rejects the key
      for (int32_t c = first_filter; c < keys->num_components() && !filtered_out; ++c) filtered_out = !keys->Accepts(q, c);
      if (filtered_out) continue;
      std::vector<int> group;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (keys->Accepts(q, static_cast<int32_t>(i + 1))) group.push_back(static_cast<int>(i));
      }
      groups[group].push_back(q);
    }
    std::vector<std::string> members;
    for (const auto& [group, finals] : groups) {
      const JsonValue* value_schema = additional;
      if (!group.empty()) {
        JsonValue list;
        list.kind = JsonValue::Kind::kArray;
        for (int i : group) list.items.push_back(merger_.Share(*patterns[i].schema));
        JsonValue all_of;
        all_of.kind = JsonValue::Kind::kObject;
        all_of.members.emplace_back("allOf", std::move(list));
        value_schema = merger_.Make(std::move(all_of));
      }
      std::string value;
      try {
        value = Visit(*value_schema, depth + 1);
      } catch (const Unsatisfiable&) {
        continue;
      }
      members.push_back(Seq({DfaString(keys->WithAccepting(finals), &rules_), key_sep_, value}));
    }
    return members.empty() ? "" : Choice(members);
  }

  std::string ObjectExpr(const std::vector<std::pair<std::string, bool>>& entries, const std::string& extra) {
    if (any_order_ && (entries.size() > 1 || (!entries.empty() && !extra.empty())))
      return AnyOrderItems(entries, extra, std::vector<uint64_t>(entries.size(), 0));
    const std::string& sep = item_sep_;
    std::string extras_rest = extra.empty() ? "" : "( " + sep + " " + extra + " )*";
    std::string first = extra.empty() ? "" : "( " + extra + " " + extras_rest + " )?";
    std::string rest = extras_rest;
    std::vector<const std::string*> run;  // required members since the last optional one, nearest last

    auto join = [](const std::vector<std::string_view>& parts) {
      std::string out;
      for (std::string_view p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out.push_back(' ');
        out.append(p);
      }
      return out;
    };
    auto rest_text = [&]() {
      std::vector<std::string_view> parts;
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        parts.push_back(sep);
        parts.push_back(**it);
      }
      parts.push_back(rest);
      return join(parts);
    };
    auto first_text = [&]() {
      if (run.empty()) return first;
      std::vector<std::string_view> parts = {*run.back()};
      for (auto it = run.rbegin() + 1; it != run.rend(); ++it) {
        parts.push_back(sep);
        parts.push_back(**it);
      }
      parts.push_back(rest);
      return join(parts);
    };
    for (size_t k = entries.size(); k-- > 0;) {
      const auto& [member, req] = entries[k];
      if (req) {
        run.push_back(&member);
        continue;
      }
      std::string rest_next = rest_text(), first_next = first_text();
      run.clear();
      first = rules_.Add("obj_first_" + std::to_string(k),
                         Seq({member, rest_next}) + " | " + (first_next.empty() ? std::string(kEmpty) : first_next));
      rest = k ? rules_.Add("obj_rest_" + std::to_string(k), Seq({sep, member, rest_next}) + " | " +
                                                                 (rest_next.empty() ? std::string(kEmpty) : rest_next))
               : "";
    }
    std::string body = first_text();
    if (body.empty()) body = kEmpty;
    return rules_.Add("object", Seq({"\"{\"", ws_, body, ws_, "\"}\""}));
  }

  const References& refs_;
  int draft_;
  bool enforce_formats_;
  int64_t visits_ = 0;  // conversion steps: visits and merges (kMaxVisits)
  SchemaMerger merger_{refs_, draft_, enforce_formats_, &visits_};
  ValueValidator validator_{refs_, &merger_, draft_, enforce_formats_};
  DisjointProver prover_{refs_, &merger_, &validator_, draft_, enforce_formats_, &visits_};
  std::unordered_map<std::string, std::string> ref_rules_;  // $ref target pointer -> rule name
  std::unordered_map<std::string, std::string> alt_rules_;  // (branch $ref target, siblings' text) -> rule name
  std::unordered_map<std::string, std::string> inlined_rules_;  // text of a schema with allOf -> rule name
  std::unordered_map<const JsonValue*, std::vector<Conjunct>> conjuncts_;  // identity -> complete Conjuncts
  std::unordered_set<const JsonValue*> flattening_;  // Conjuncts in progress (an allOf cycle)
  std::string ws_, item_sep_, key_sep_;
  bool plain_integers_;
  bool any_order_;
  std::string root_name_;  // JsonSchemaOptions::rule_prefix + "root"
  RuleTable rules_;
  std::vector<std::string> excluded_texts_;  // JsonSchemaOptions::string_excludes as regexes (Gemma: its marker too)
  bool gemma_ = false;                      // StringStyle::kGemma
  StringSpelling value_spelling_;           // how automaton strings are written (JSON by default)
  StringSpelling key_spelling_;
};

}  // namespace

std::string JsonLexicalRulesEbnf(const JsonSchemaOptions& options) {
  RuleTable rules = Converter::LexicalRules(options);
  DefineKeyTails(&rules);
  return rules.Text("j_value | j_integer | j_int | j_key_rest | j_key_wide");
}

NativeConversion JsonSchemaToEbnf(std::string_view schema_text, const JsonSchemaOptions& options,
                                  const Limits& limits) {
  NativeConversion out;
  if (schema_text.size() > kMaxTextBytes) {
    out.not_handled = "a schema text above the native size limit";
    return out;
  }
  std::string error;
  JsonParseOptions parse;
  parse.max_depth = kMaxJsonDepth;
  std::optional<JsonValue> doc = ParseJson(schema_text, parse, &error);
  if (!doc) {
    out.not_handled = "JSON the native reader does not take: " + error;
    return out;
  }
  try {
    int draft = Draft(*doc);
    Check(*doc, draft, /*is_root=*/true);
    References refs(*doc, draft);
    out.ebnf = Converter(options, refs, draft).Convert(*doc, limits, &out.parsed);
  } catch (const NotHandled& e) {
    out.not_handled = e.why;
    out.parsed.reset();
  }
  return out;
}

}  // namespace xg::json_schema
