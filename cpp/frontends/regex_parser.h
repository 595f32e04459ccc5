// Internal to the regex front end (frontends/regex.h has the contract): the syntax tree the
// parser produces and the lowering consumes.
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

namespace xg {
namespace regex {

using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

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
// for. Throws RegexError (frontends/regex.h).
std::vector<TopLevelAlternative> ParseRegexPattern(const std::string& pattern, const CodepointRanges& dot);

// The largest m or n accepted in {m,n}: the same limit as the EBNF front end.
constexpr int32_t kMaxRegexRepeatBound = 1 << 20;

}  // namespace regex
}  // namespace xg
