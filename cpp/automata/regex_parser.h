// The automata library's regex syntax: ECMAScript-style patterns parsed into a simplified syntax
// tree, which the grammar front end lowers to grammar expressions (frontends/regex.h) and the
// code-point automata lower to NFAs (automata/codepoint_dfa.h).
//
// The dialect
//   * The pattern is UTF-8 and is read as a sequence of Unicode code points (as ECMAScript's `u`
//     flag does, without its stricter escape rules); the language is a set of UTF-8 strings.
//   * Supported: literals (any code point), `.` (the `dot` set the caller passes: ECMAScript's is any
//     code point except \n \r U+2028 U+2029), escapes \n \r \t \f \v \0 \xHH \uHHHH
//     \u{H...} \cX (a surrogate pair \uD83D\uDE00 is one code point), identity escapes of any
//     character that is not an ASCII letter or digit (\. \* \\ \/ \- \" ...), classes [...] with
//     ranges, negation [^...], escapes and \d \w \s \D \W \S inside them ([\b] is backspace, [^]
//     any code point), the shorthands \d \w \s \D \W \S (ASCII digits, ASCII word characters,
//     ECMAScript white space and line terminators), Unicode general categories \p{L} \p{Letter}
//     \p{gc=Lu} and their complements \P{...} (automata/unicode_categories.h), quantifiers * + ? {m} {m,} {m,n} and their
//     lazy forms (same language), groups ( ), (?: ), (?<name> ) (and Python's (?P<name> )),
//     alternation | with empty alternatives; a leading inline flag group (?i) (?s) (?u) or a
//     combination (ASCII case folding, `.` matching every code point, no effect). `{` that does not start a valid quantifier, and `}`
//     and `]` outside a class, are literals (ECMAScript Annex B).
//   * Anchors: `^` only at the start and `$` only at the end of a top-level alternative
//     (`^a$|^b$`). What they mean is the consumer's (frontends/regex.h, automata/codepoint_dfa.h).
//   * Everything else raises RegexError (an InputError, so a Python ValueError) naming the
//     construct: backreferences, lookaround, \b \B, Unicode properties other than general categories
//     (\p{Script=Greek}), flags and inline modifiers, atomic
//     groups, possessive quantifiers, anchors elsewhere, syntax errors (unbalanced brackets,
//     nothing to repeat, {3,2}, reversed ranges, unknown escapes such as \q, invalid UTF-8),
//     bounds above 1048576 (the EBNF limit), and classes that match no character ([], [^\s\S]).
//   * Error messages read `regex error at position P: <what>\n  <pattern>\n  <caret>`, where P is
//     the 0-based CODE-POINT offset in the pattern (an invalid UTF-8 byte counts as one) and the
//     caret sits under it; long patterns are shown as a window around P.
//
// The tree is already simplified: escapes are decoded, classes are sets of code points, groups are
// gone (a group is its disjunction), lazy quantifiers are plain repeats, and anchors are not nodes
// but flags on the top-level alternatives, the only place they are allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/check.h"
#include "support/utf8.h"

namespace xg {

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

namespace regex {

using xg::CodepointRanges;

struct Node {
  enum class Kind : uint8_t {
    kEmpty,      // matches ""
    kLiteral,    // one code point
    kClass,      // one code point of `ranges`
    kConcat,     // children in order
    kAlternate,  // one of the children
    kRepeat,     // children[0] repeated min..max times (max == kUnbounded: no upper bound)
  };
  static constexpr int32_t kUnbounded = -1;

  Kind kind = Kind::kEmpty;
  uint32_t codepoint = 0;   // kLiteral
  CodepointRanges ranges;   // kClass: sorted, merged, non-empty, surrogates excluded
  std::vector<Node> children;
  int32_t min = 0, max = kUnbounded;  // kRepeat
};

// One alternative of the top-level disjunction, with its anchors.
struct TopLevelAlternative {
  bool anchored_start = false;  // written with a leading ^
  bool anchored_end = false;    // written with a trailing $
  Node body;
};

// Parses a pattern into its top-level alternatives (at least one). `dot` is the class `.` stands
// for; `ignore_case` folds ASCII letters (literals and classes, before a class's negation; other
// scripts are not folded, as in xgrammar). A leading `(?i)`, `(?s)` or `(?u)` group (or a combination)
// sets the same from the pattern: `s` makes `.` every code point. Throws RegexError.
std::vector<TopLevelAlternative> ParseRegexPattern(const std::string& pattern, const CodepointRanges& dot,
                                                   bool ignore_case = false);

// The largest m or n accepted in {m,n}: the same limit as the EBNF front end.
constexpr int32_t kMaxRegexRepeatBound = 1 << 20;

}  // namespace regex
}  // namespace xg
