// Regex front end: ECMAScript-style regular expressions lowered to the grammar IR.
//
// Contract: the dialect, its anchors and its errors are those of automata/regex_parser.h (the
// automata library's regex syntax). Here, how a parsed pattern becomes grammar expressions: in
// kFullMatch anchors are no-ops; in kSearch they decide whether an alternative may be preceded /
// followed by any string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "automata/regex_parser.h"
#include "support/limits.h"
#include "grammar/grammar.h"

namespace xg {

enum class RegexMode {
  kFullMatch,  // the whole output must match the pattern
  kSearch,     // JSON Schema `pattern`: the output must contain a match (unless anchored)
};

// What `.` matches. ECMAScript excludes line terminators; xgrammar's EBNF Regex(...) macro does not.
enum class RegexDot {
  kNoLineTerminators,  // [^\n\r\u2028\u2029]
  kNoNewline,          // [^\n]: Python's and Lark's `.`, xgrammar's Regex(..., flags=...)
  kAnyCodePoint,
};

// How a matched string is written: as is (UTF-8), or as the content of a JSON string (xgrammar's
// `json_string=true`): classes and `.` exclude the characters a JSON string cannot hold raw ('"',
// '\\', control characters), and a literal the pattern names explicitly is spelled as its JSON escape.
// Approximation (documented): escaped spellings of other characters (\u0041 for 'A') are accepted only
// in the search mode's "any string" parts.
enum class RegexSpelling {
  kRaw,
  kJsonString,
};

// Appends expression nodes for `pattern` to `g` (no rules are added) and returns the index of the
// root expression. `ignore_case` folds ASCII letters (automata/regex_parser.h). Throws RegexError;
// `g` may then hold unreferenced nodes.
int32_t AddRegex(Grammar* g, const std::string& pattern, RegexMode mode,
                 RegexDot dot = RegexDot::kNoLineTerminators, RegexSpelling spelling = RegexSpelling::kRaw,
                 bool ignore_case = false);

// The first matches of `pattern` (automata/codepoint_dfa.h, FirstMatches): the strings it matches whole
// that have no proper prefix it matches, so the text ends as soon as the pattern is complete (Lark's and
// xgrammar's `[lazy]` rules, `Regex(..., lazy=true)`). Built as an automaton, not lowered node by node:
// one new rule per state of the merged automaton (appended to g->rules, unnamed: their indices are
// appended to `*new_rules` for the caller to name); returns an expression for the start state. Throws
// RegexError, or LimitError when the automaton exceeds `limits.max_automaton_states`. `after_chars` > 0: the
// first matches once that many code points are read (xgrammar's max_chars; FirstMatches). With `budget_body`
// (`Regex(..., lazy=true, max_chars=n, budget_close="B")`, Lark's max_chars on a suffix / stop rule): the first
// matches of `pattern` at any length, or, once `after_chars` code points are read, the text ends where the whole of it
// matches `budget_body` (FirstMatchesOrBudget).
int32_t AddFirstMatchRegex(Grammar* g, const std::string& pattern, RegexDot dot, bool ignore_case,
                           int64_t after_chars, const Limits& limits, std::vector<int32_t>* new_rules,
                           const std::string* budget_body = nullptr);

// The first matches of the expression `expr` of `g` (EBNF `r[lazy] ::= ...`): as AddFirstMatchRegex, for a
// body made of literals, classes, sequences, choices and repetitions. Throws InputError naming what else it
// meets (a rule reference: a lazy rule's body is regular).
int32_t AddFirstMatchExpr(Grammar* g, int32_t expr, int64_t after_chars, const Limits& limits,
                          std::vector<int32_t>* new_rules);

// The strings `pattern` matches none of whose proper prefixes `before` matches (MatchesBefore;
// `Regex(..., before_first="P")`), built and emitted as AddFirstMatchRegex does.
int32_t AddRegexBefore(Grammar* g, const std::string& pattern, const std::string& before, RegexDot dot,
                       bool ignore_case, const Limits& limits, std::vector<int32_t>* new_rules);

// A grammar with the single rule `root ::= <pattern>`.
Grammar RegexToGrammar(const std::string& pattern, RegexMode mode = RegexMode::kFullMatch);

}  // namespace xg
