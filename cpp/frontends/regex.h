// Regex front end: ECMAScript-style regular expressions lowered to the grammar IR.
//
// Contract
//   * The pattern is UTF-8 and is read as a sequence of Unicode code points (as ECMAScript's `u`
//     flag does, without its stricter escape rules); the language is a set of UTF-8 strings.
//   * Supported: literals (any code point), `.` (any code point except \n \r U+2028 U+2029, or any
//     code point at all with RegexDot::kAnyCodePoint), escapes \n \r \t \f \v \0 \xHH \uHHHH
//     \u{H...} \cX (a surrogate pair \uD83D\uDE00 is one code point), identity escapes of any
//     character that is not an ASCII letter or digit (\. \* \\ \/ \- \" ...), classes [...] with
//     ranges, negation [^...], escapes and \d \w \s \D \W \S inside them ([\b] is backspace, [^]
//     any code point), the shorthands \d \w \s \D \W \S (ASCII digits, ASCII word characters,
//     ECMAScript white space and line terminators), quantifiers * + ? {m} {m,} {m,n} and their
//     lazy forms (same language), groups ( ), (?: ), (?<name> ) (and Python's (?P<name> )),
//     alternation | with empty alternatives. `{` that does not start a valid quantifier, and `}`
//     and `]` outside a class, are literals (ECMAScript Annex B).
//   * Anchors: `^` only at the start and `$` only at the end of a top-level alternative
//     (`^a$|^b$`). In kFullMatch they are no-ops; in kSearch they decide whether the alternative
//     may be preceded / followed by any string.
//   * Everything else raises RegexError (an InputError, so a Python ValueError) naming the
//     construct: backreferences, lookaround, \b \B, \p{...}, flags and inline modifiers, atomic
//     groups, possessive quantifiers, anchors elsewhere, syntax errors (unbalanced brackets,
//     nothing to repeat, {3,2}, reversed ranges, unknown escapes such as \q, invalid UTF-8),
//     bounds above 1048576 (the EBNF limit), and classes that match no character ([], [^\s\S]).
//   * Error messages read `regex error at position P: <what>\n  <pattern>\n  <caret>`, where P is
//     the 0-based CODE-POINT offset in the pattern (an invalid UTF-8 byte counts as one) and the
//     caret sits under it; long patterns are shown as a window around P.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "grammar/grammar.h"
#include "support/check.h"

namespace xg {

enum class RegexMode {
  kFullMatch,  // the whole output must match the pattern
  kSearch,     // JSON Schema `pattern`: the output must contain a match (unless anchored)
};

// What `.` matches. ECMAScript excludes line terminators; xgrammar's EBNF Regex(...) macro does not.
enum class RegexDot {
  kNoLineTerminators,  // [^\n\r\u2028\u2029]
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

// A regex that cannot be compiled. what() is the full message (with the quoted pattern and caret);
// position() and description() let an embedding front end report it in its own coordinates.
class RegexError : public InputError {
 public:
  RegexError(const std::string& pattern, size_t position, const std::string& description);
  size_t position() const { return position_; }  // code-point offset in the pattern
  const std::string& description() const { return description_; }

 private:
  size_t position_;
  std::string description_;
};

// Appends expression nodes for `pattern` to `g` (no rules are added) and returns the index of the
// root expression. Throws RegexError; `g` may then hold unreferenced nodes.
int32_t AddRegex(Grammar* g, const std::string& pattern, RegexMode mode,
                 RegexDot dot = RegexDot::kNoLineTerminators, RegexSpelling spelling = RegexSpelling::kRaw);

// A grammar with the single rule `root ::= <pattern>`.
Grammar RegexToGrammar(const std::string& pattern, RegexMode mode = RegexMode::kFullMatch);

}  // namespace xg
