// Deterministic automata over Unicode code points: the key and string languages of JSON Schema
// (`pattern`, `patternProperties`, `propertyNames`, length bounds, finite name sets), their products,
// and the trimmed, merged form a front end emits as grammar rules.
//
// Call order: build plain DFAs (SearchDfa, NamesDfa, LengthDfa), combine them (ProductDfa, or
// ProductWithLength for "these match, those do not, and the length is in [lo, hi]"), pick the
// accepting states (WithAccepting), then PlanEmission. Every builder is a pure function of its
// arguments; a CodepointDfa is immutable once built, so one may be shared across threads.
//
// Contracts
//   * A DFA is complete over its atoms: a partition of [0, 0x10FFFF] into ranges, cut at every
//     range boundary of the automata it was built from, so that one transition per atom describes
//     every code point. Next() == -1 is the dead state (never stored). State 0 is the start; every
//     DFA has at least one state.
//   * A plain DFA has one component (one accepting set); a product has one per input DFA, and its
//     component i accepts where input i does (an input in its dead state accepts nothing).
//   * Budgets: `max_states` bounds the states of the automaton being built (5x for
//     ProductWithLength, whose states also count code points); NFA states and subset members are
//     bounded by Limits::max_automaton_states / max_subset_members. Exceeding one throws LimitError
//     naming it; regex syntax errors throw RegexError (automata/regex_parser.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "automata/regex_parser.h"
#include "support/limits.h"
#include "support/utf8.h"

namespace xg {

class CodepointDfa {
 public:
  const CodepointRanges& atoms() const { return atoms_; }
  int32_t num_states() const { return static_cast<int32_t>(accepts_.size() / num_components_); }
  int32_t num_components() const { return num_components_; }
  int32_t num_atoms() const { return static_cast<int32_t>(atoms_.size()); }
  // The state after reading a code point of atom `atom` in `state`; -1 is the dead state.
  int32_t Next(int32_t state, int32_t atom) const { return next_[static_cast<size_t>(state) * atoms_.size() + atom]; }
  bool Accepts(int32_t state, int32_t component = 0) const {
    return accepts_[static_cast<size_t>(state) * num_components_ + component] != 0;
  }
  // The atom holding `cp` (binary search).
  int32_t AtomOf(uint32_t cp) const;
  // The state reached from the start by reading `codepoints` (any values, surrogates included), or -1.
  int32_t Run(const std::vector<uint32_t>& codepoints) const;
  // A one-component copy whose accepting states are exactly `states` (each in range).
  CodepointDfa WithAccepting(const std::vector<int32_t>& states) const;

 private:
  friend class CodepointDfaBuilder;
  CodepointRanges atoms_;
  int32_t num_components_ = 1;
  std::vector<int32_t> next_;     // num_states() x atoms_.size()
  std::vector<uint8_t> accepts_;  // num_states() x num_components_
};

// The strings in which the ECMAScript `pattern` finds a match (JSON Schema `pattern` semantics: a
// top-level alternative without `^` may be preceded, one without `$` followed, by any string).
// `.` is any code point but a line terminator.
CodepointDfa SearchDfa(const std::string& pattern, int64_t max_states, const Limits& limits = DefaultLimits());

// The strings the whole of `pattern` matches (anchors are no-ops), `.` being `dot` and `ignore_case`
// folding ASCII letters (automata/regex_parser.h).
CodepointDfa MatchDfa(const std::string& pattern, const CodepointRanges& dot, bool ignore_case, int64_t max_states,
                      const Limits& limits = DefaultLimits());

// MatchDfa with xgrammar's Regex(..., flags=) letters: `i` folds ASCII letters, `s` lets `.` match a newline
// (without it `.` is any code point but '\n'), `u` changes nothing. Other letters are ignored (callers check them).
CodepointDfa FlagsMatchDfa(const std::string& pattern, const std::string& flags, int64_t max_states,
                           const Limits& limits = DefaultLimits());

// The strings of a regex syntax tree (automata/regex_parser.h), whole: a front end with its own expressions
// (the EBNF front end's lazy rules) builds the tree.
CodepointDfa NodeDfa(const regex::Node& body, int64_t max_states, const Limits& limits = DefaultLimits());

// The first matches of a one-component `dfa` once `after_chars` code points are read: the strings it accepts
// none of whose proper prefixes of at least `after_chars` code points it accepts, i.e. the text ends at the first
// point the match is complete once that many characters are read. after_chars = 0 (Lark's and xgrammar's lazy
// rules): L minus L followed by anything non-empty, the accepting states losing their transitions. after_chars
// = n > 0 (xgrammar's max_chars=n): each state is paired with its count up to n (at most (n + 1) x states;
// past `max_states` a LimitError).
CodepointDfa FirstMatches(const CodepointDfa& dfa, int64_t after_chars = 0, int64_t max_states = int64_t{1} << 19);

// A first-match region with a character budget that closes it (Lark's max_chars on a suffix / stop rule): the strings
// that `pattern` accepts, or that `budget_body` accepts once at least `after_chars` code points are read, none of whose
// proper prefixes is such a string. The text ends at the first complete match of `pattern` (its body and marker) or,
// once the budget is spent, at the first point where the text read is a whole `budget_body` (the body without its
// marker). Both one-component; the product's states are paired with a count up to `after_chars`.
CodepointDfa FirstMatchesOrBudget(const CodepointDfa& pattern, const CodepointDfa& budget_body, int64_t after_chars,
                                  int64_t max_states = int64_t{1} << 19);

// The strings `body` accepts none of whose proper prefixes `stop` accepts: a body that has not yet been ended by the
// first match of `stop` (a suffix rule's body closed by its token budget cannot run past its first marker). Both
// one-component.
CodepointDfa MatchesBefore(const CodepointDfa& body, const CodepointDfa& stop, int64_t max_states = int64_t{1} << 19);

// Exactly the strings `names` (UTF-8; duplicates allowed).
CodepointDfa NamesDfa(const std::vector<std::string>& names);

// The strings of `lo` to `hi` code points (`hi` < 0: no upper bound). One state per count.
CodepointDfa LengthDfa(int64_t lo, int64_t hi, int64_t max_states);

// The reachable product of one-component `dfas` (at least one) over their common atoms.
CodepointDfa ProductDfa(const std::vector<const CodepointDfa*>& dfas, int64_t max_states);

// One component: the strings that the first `num_required` of `dfas` accept, none of the others
// accepts, and whose length is within [lo, hi] (`hi` < 0: no upper bound). The length is tracked
// only while it still matters: at product state q after c code points it is dropped once every
// completion to an accepting state keeps it within bounds, so long bounded patterns stay small.
CodepointDfa ProductWithLength(const std::vector<const CodepointDfa*>& dfas, int32_t num_required, int64_t lo,
                               int64_t hi, int64_t max_states);

// A DFA (component 0) as grammar rules: the states that can reach an accepting one, equivalent
// states merged (partition_refinement.h, while its work, states x atoms per state examined, stays
// within `max_merge_work`; past it the states are kept as they are: the same language, more rules). Each
// state's transitions are grouped by target, surrogates left out; transitions back into the state
// itself are its `loop` (a front end writes them as one repetition, which masks per token slice).
struct EmissionPlan {
  struct State {
    int32_t id = 0;
    bool accepting = false;
    CodepointRanges loop;
    std::vector<std::pair<int32_t, CodepointRanges>> edges;  // (target id, code points), first-seen order
  };
  int32_t start = -1;  // -1: the language is empty
  std::vector<State> states;  // ascending ids
};
EmissionPlan PlanEmission(const CodepointDfa& dfa, int64_t max_merge_work);

}  // namespace xg
