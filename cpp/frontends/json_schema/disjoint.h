// oneOf as anyOf for the native JSON Schema front end: proofs that two schemas share no value (mirroring
// xg2jax/json_schema/_disjoint.py, so where the Python front end proves two branches disjoint this one does, and
// both take the anyOf path and write the same text).
//
// Algorithm. Pair(a, b) answers true only with a proof; false means "not shown". It uses only necessary conditions
// of each schema (keywords are conjuncts, so ignoring some weakens a schema and keeps the proof sound): `S` and
// `not S`; the JSON types each side allows; the values of a `const` / `enum` side checked against the other side
// by the value validator (values.h); then, type by type among the types both allow: strings whose `pattern`s have
// an empty intersection (the product of the two automata) or whose length ranges do not meet; numbers whose ranges
// do not meet; objects where a name one side requires is one the other side forbids, or a name either side
// requires has disjoint property schemas on both sides (recursively, at most kMaxDepth levels); arrays whose item
// count ranges do not meet. `allOf` conjuncts are used one by one (their `required` names too), and `anyOf` /
// `oneOf` sides must be disjoint branch by branch. Before draft 2019-09 the siblings of `$ref` are ignored; from
// 2019-09 they are conjuncts. Where the Python front end could decide and this one cannot (a value check past the
// validator's keywords, a pattern past the automaton limits), the answer is "not shown": the conversion then
// stops, and the Python front end converts the schema.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "automata/codepoint_dfa.h"
#include "frontends/json_schema/merge.h"
#include "frontends/json_schema/references.h"
#include "frontends/json_schema/values.h"
#include "support/json_value.h"

namespace xg::json_schema {

// _possible_types: the types a schema object allows from `const` / `enum` / `type` (number includes integer);
// nullopt when none of them says.
std::optional<std::unordered_set<std::string>> PossibleTypes(const JsonValue& x);

class DisjointProver {
 public:
  // `work` counts the pairs examined against kMaxVisits (shared with the converter).
  DisjointProver(const References& refs, SchemaMerger* merger, ValueValidator* validator, int draft,
                 bool enforce_formats, int64_t* work)
      : refs_(refs), merger_(merger), validator_(validator), draft_(draft), enforce_formats_(enforce_formats),
        work_(work) {}

  // Whether no JSON value satisfies both a and b (proved; false: not shown).
  bool Pair(const JsonValue& a, const JsonValue& b, int depth = 0);
  // Pair, or nullopt where it is not shown and the Python front end might show it (a value check past the
  // validator's keywords, a pattern or bound this front end does not read): the answer both front ends share.
  std::optional<bool> Decided(const JsonValue& a, const JsonValue& b) {
    const int64_t before = undecided_;
    const bool shown = Pair(a, b, 0);
    if (!shown && undecided_ != before) return std::nullopt;
    return shown;
  }

 private:
  static constexpr int kMaxDepth = 6;  // _disjoint._MAX_DEPTH
  // _necessary: x as a schema object of its conjuncts (a bare $ref followed), or nullptr when nothing is known.
  const JsonValue* Necessary(const JsonValue* x, int depth);
  const JsonValue* WithConjunctRequired(const JsonValue* x, int depth);
  bool OnType(const JsonValue& a, const JsonValue& b, const std::string& type, int depth);
  bool Forbids(const JsonValue& y, const std::string& name);
  bool PatternsMayMeet(const std::string& a, const std::string& b);
  const CodepointDfa* Key(const std::string& regex);  // nullptr: beyond the automaton limits
  std::string Text(const JsonValue* x);               // _text (nullptr: None)

  const References& refs_;
  SchemaMerger* merger_;
  ValueValidator* validator_;
  int draft_;
  bool enforce_formats_;
  int64_t* work_;
  std::map<std::string, std::pair<bool, CodepointDfa>> keys_;  // regex -> (built, automaton)
  std::map<std::pair<std::string, std::string>, std::pair<bool, bool>> meet_;  // (may meet, undecided)
  int64_t undecided_ = 0;  // proofs given up where the Python front end might go on
};

}  // namespace xg::json_schema
