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

#include "automata/regex_parser.h"
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

// A grammar with the single rule `root ::= <pattern>`.
Grammar RegexToGrammar(const std::string& pattern, RegexMode mode = RegexMode::kFullMatch);

}  // namespace xg
