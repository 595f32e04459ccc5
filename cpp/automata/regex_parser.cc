// Recursive-descent parser for the regex dialect of automata/regex_parser.h, over the pattern's code
// points (decoded once up front, so positions in errors are code-point offsets).
//
//   pattern      ::= ( "^"* sequence "$"* ) ( "|" "^"* sequence "$"* )*     anchors: top level only
//   disjunction  ::= sequence ( "|" sequence )*
//   sequence     ::= quantified*
//   quantified   ::= atom ( quantifier "?"? )?                              "?" = lazy, same language
//   quantifier   ::= "*" | "+" | "?" | "{" m "}" | "{" m ",}" | "{" m "," n "}"
//   atom         ::= literal | "." | escape | class | "(" ( "?:" | "?<" name ">" )? disjunction ")"
//
// Unsupported constructs are recognised explicitly (rather than failing as generic syntax errors)
// so that every error names what the user wrote.
#include "automata/regex_parser.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "automata/unicode_categories.h"
#include "support/utf8.h"

namespace xg {
namespace {

// How a pattern is quoted in an error: one display unit per code point (an invalid byte is one
// unit), control characters and line separators shown as '?', and a window around the error
// position when the pattern is long. Returns the excerpt and the caret's column in it.
std::pair<std::string, size_t> Excerpt(const std::string& pattern, size_t position) {
  std::vector<std::string> units;
  for (size_t i = 0; i < pattern.size();) {
    size_t j = i;
    uint32_t cp;
    if (DecodeUtf8(pattern, &j, &cp)) {
      bool unprintable = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029;
      units.push_back(unprintable ? std::string("?") : pattern.substr(i, j - i));
      i = j;
    } else {
      units.push_back("?");
      ++i;
    }
  }
  constexpr size_t kWindow = 72;
  size_t begin = 0, end = units.size();
  if (units.size() > kWindow) {
    begin = position > kWindow / 2 ? position - kWindow / 2 : 0;
    end = std::min(units.size(), begin + kWindow);
    begin = end - kWindow;
  }
  std::string excerpt = begin > 0 ? "..." : "";
  size_t caret = excerpt.size() + (position - std::min(position, begin));
  for (size_t i = begin; i < end; ++i) excerpt += units[i];
  if (end < units.size()) excerpt += "...";
  return {excerpt, caret};
}

std::string FormatRegexError(const std::string& pattern, size_t position, const std::string& description) {
  auto [excerpt, caret] = Excerpt(pattern, position);
  return "regex error at position " + std::to_string(position) + ": " + description + "\n  " + excerpt + "\n  " +
         std::string(caret, ' ') + "^";
}

}  // namespace

RegexError::RegexError(const std::string& pattern, size_t position, const std::string& description)
    : InputError(FormatRegexError(pattern, position, description)), position_(position), description_(description) {}

namespace regex {
namespace {

constexpr uint32_t kEnd = 0xFFFFFFFFu;  // Peek() past the end of the pattern
constexpr int kMaxGroupDepth = 250;  // keeps the recursive parser (large frames) and lowering off the stack limit, sanitizers included

const CodepointRanges kDigit = {{'0', '9'}};
const CodepointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript WhiteSpace and LineTerminator: \t \n \v \f \r, space, NBSP, OGHAM SPACE MARK, the
// Zs spaces U+2000-U+200A, LS, PS, NNBSP, MMSP, IDEOGRAPHIC SPACE, BOM.
const CodepointRanges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                                {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};

bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int HexValue(uint32_t c) {
  if (IsDigit(c)) return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}
bool IsSurrogate(uint32_t c) { return c >= 0xD800 && c <= 0xDFFF; }

Node Literal(uint32_t cp) {
  Node n;
  n.kind = Node::Kind::kLiteral;
  n.codepoint = cp;
  return n;
}

Node Class(CodepointRanges ranges) {
  Node n;
  n.kind = Node::Kind::kClass;
  n.ranges = std::move(ranges);
  return n;
}

Node Combine(Node::Kind kind, std::vector<Node> items) {
  if (items.empty()) return Node{};
  if (items.size() == 1) return std::move(items[0]);
  Node n;
  n.kind = kind;
  n.children = std::move(items);
  return n;
}

// A decoded escape or class item: one code point, or a set (\d \w \s and their negations).
struct ClassAtom {
  bool is_set = false;
  uint32_t codepoint = 0;
  CodepointRanges set;
};

ClassAtom Single(uint32_t cp) {
  ClassAtom a;
  a.codepoint = cp;
  return a;
}

ClassAtom Set(const CodepointRanges& ranges, bool negate) {
  ClassAtom a;
  a.is_set = true;
  a.set = NormalizeRanges(ranges, negate);
  return a;
}

struct Quantifier {
  int64_t min = 0, max = Node::kUnbounded;
  size_t end = 0;  // one past its last code point
};

class Parser {
 public:
  Parser(const std::string& pattern, const CodepointRanges& dot, bool ignore_case)
      : pattern_(pattern), dot_(dot), ignore_case_(ignore_case) {
    for (size_t i = 0; i < pattern.size();) {
      uint32_t cp;
      size_t before = i;
      if (!DecodeUtf8(pattern, &i, &cp)) {
        Fail(cps_.size(), "invalid UTF-8 in the pattern (byte offset " + std::to_string(before) + ")");
      }
      cps_.push_back(cp);
    }
  }

  std::vector<TopLevelAlternative> Parse() {
    ParseLeadingFlags();
    std::vector<TopLevelAlternative> alternatives;
    while (true) {
      TopLevelAlternative alt;
      while (Peek() == '^') {
        alt.anchored_start = true;
        ++pos_;
      }
      alt.body = ParseSequence(/*top_level=*/true, &alt.anchored_end);
      alternatives.push_back(std::move(alt));
      if (Peek() != '|') break;
      ++pos_;
    }
    if (!AtEnd()) Fail(pos_, "unbalanced ')': no matching '('");  // only ')' ends a top-level sequence
    return alternatives;
  }

 private:
  [[noreturn]] void Fail(size_t position, const std::string& what) const {
    throw RegexError(pattern_, position, what);
  }

  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t k = 0) const { return pos_ + k < cps_.size() ? cps_[pos_ + k] : kEnd; }

  // The pattern text [begin, end) as UTF-8, for messages.
  std::string Text(size_t begin, size_t end) const {
    std::string out;
    for (size_t i = begin; i < end && i < cps_.size(); ++i) AppendUtf8(cps_[i], &out);
    return out;
  }

  Node ParseSequence(bool top_level, bool* anchored_end) {
    std::vector<Node> items;
    while (true) {
      uint32_t c = Peek();
      if (c == kEnd || c == '|' || c == ')') break;
      if (c == '$') {
        size_t after = pos_;
        while (after < cps_.size() && cps_[after] == '$') ++after;
        if (!top_level || !(after == cps_.size() || cps_[after] == '|')) {
          Fail(pos_, "anchor '$' is only supported at the end of the pattern or of a top-level alternative");
        }
        *anchored_end = true;
        pos_ = after;
        break;
      }
      if (c == '^') {
        Fail(pos_, "anchor '^' is only supported at the start of the pattern or of a top-level alternative");
      }
      items.push_back(ParseQuantified());
    }
    // Adjacent literals stay separate nodes here; the lowering joins them into one byte string.
    return Combine(Node::Kind::kConcat, std::move(items));
  }

  Node ParseDisjunction() {
    std::vector<Node> alternatives;
    bool unused_anchor = false;  // anchors inside groups are rejected by ParseSequence
    alternatives.push_back(ParseSequence(/*top_level=*/false, &unused_anchor));
    while (Peek() == '|') {
      ++pos_;
      alternatives.push_back(ParseSequence(/*top_level=*/false, &unused_anchor));
    }
    return Combine(Node::Kind::kAlternate, std::move(alternatives));
  }

  // A quantifier at `at`, without consuming it. `{` that does not form one is a literal (Annex B).
  bool PeekQuantifier(size_t at, Quantifier* q) const {
    auto cp = [&](size_t i) { return i < cps_.size() ? cps_[i] : kEnd; };
    uint32_t c = cp(at);
    if (c == '*' || c == '+' || c == '?') {
      q->min = c == '+' ? 1 : 0;
      q->max = c == '?' ? 1 : Node::kUnbounded;
      q->end = at + 1;
      return true;
    }
    if (c != '{') return false;
    // Saturating reads: a bound too large is reported by the caller, once the syntax is known valid.
    auto read_number = [&](size_t* i, int64_t* v) {
      size_t start = *i;
      *v = 0;
      while (IsDigit(cp(*i))) {
        *v = std::min<int64_t>(*v * 10 + (cp(*i) - '0'), int64_t{1} << 40);
        ++*i;
      }
      return *i > start;
    };
    size_t i = at + 1;
    if (!read_number(&i, &q->min)) return false;
    if (cp(i) == '}') {
      q->max = q->min;
    } else if (cp(i) == ',') {
      ++i;
      if (!read_number(&i, &q->max)) q->max = Node::kUnbounded;
    } else {
      return false;
    }
    if (cp(i) != '}') return false;
    q->end = i + 1;
    return true;
  }

  // `{,n}` at `at` (digits, possibly none, then `}`).
  bool IsUpperBoundOnly(size_t at) const {
    auto cp = [&](size_t i) { return i < cps_.size() ? cps_[i] : kEnd; };
    if (cp(at) != '{' || cp(at + 1) != ',') return false;
    size_t i = at + 2;
    while (IsDigit(cp(i))) ++i;
    return cp(i) == '}';
  }

  Node ParseQuantified() {
    if (++depth_ > kMaxGroupDepth) Fail(pos_, "groups are nested too deeply (the limit is 250)");
    Node atom = ParseAtom();
    --depth_;
    size_t q_pos = pos_;
    Quantifier q;
    if (IsUpperBoundOnly(pos_)) {
      // Annex B reads `a{,3}` as the text "a{,3}", Python as a{0,3}: refused rather than guessed (xgrammar refuses it).
      Fail(q_pos, "'{,n}' has no lower bound: write {0,n} for a repetition, or \\{ for a literal brace");
    }
    if (!PeekQuantifier(pos_, &q)) return atom;
    if (q.min > kMaxRegexRepeatBound || q.max > kMaxRegexRepeatBound) {
      Fail(q_pos, "repetition bound too large (the limit is " + std::to_string(kMaxRegexRepeatBound) + ")");
    }
    if (q.max != Node::kUnbounded && q.max < q.min) {
      Fail(q_pos, "repetition {" + std::to_string(q.min) + "," + std::to_string(q.max) + "} has max < min");
    }
    pos_ = q.end;
    if (Peek() == '?') {
      ++pos_;  // lazy: the same language
    } else if (Peek() == '+') {
      Fail(q_pos, "possessive quantifier '" + Text(q_pos, pos_ + 1) + "' is not supported");
    }
    Quantifier again;
    if (PeekQuantifier(pos_, &again)) {
      Fail(pos_, "quantifier '" + Text(pos_, again.end) + "' has nothing to repeat (it follows another quantifier)");
    }
    Node repeat;
    repeat.kind = Node::Kind::kRepeat;
    repeat.min = static_cast<int32_t>(q.min);
    repeat.max = static_cast<int32_t>(q.max);
    repeat.children.push_back(std::move(atom));
    return repeat;
  }

  Node ParseAtom() {
    const uint32_t c = Peek();
    const size_t at = pos_;
    switch (c) {
      case '(': return ParseGroup();
      case '[': return ParseClass();
      case '.': ++pos_; return Class(dot_.get());
      case '\\': {
        ClassAtom a = ParseEscape(/*in_class=*/false);
        return a.is_set ? Class(std::move(a.set)) : Char(a.codepoint);
      }
      case '*': case '+': case '?': {
        Fail(at, "quantifier '" + Text(at, at + 1) + "' has nothing to repeat");
      }
      case '{': {
        Quantifier q;
        if (PeekQuantifier(at, &q)) Fail(at, "quantifier '" + Text(at, q.end) + "' has nothing to repeat");
        ++pos_;
        return Literal('{');
      }
      default: ++pos_; return Char(c);
    }
  }

  Node ParseGroup() {
    const size_t open = pos_;
    ++pos_;
    if (Peek() == '?') {
      const uint32_t k = Peek(1), k2 = Peek(2);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '<' && k2 != '=' && k2 != '!') {
        pos_ += 2;
        ParseGroupName();
      } else if (k == 'P' && k2 == '<') {  // Python's spelling of a named group
        pos_ += 3;
        ParseGroupName();
      } else {
        Fail(open, UnsupportedGroup(open));
      }
    }
    Node inner = ParseDisjunction();
    if (Peek() != ')') Fail(open, "unbalanced '(': no matching ')'");
    ++pos_;
    return inner;
  }

  // A literal code point, or with ignore_case an ASCII letter and its other case.
  Node Char(uint32_t c) const {
    if (ignore_case_ && IsAsciiLetter(c)) return Class(NormalizeRanges(FoldAsciiCase({{c, c}}), false));
    return Literal(c);
  }

  // `ranges` plus the other case of every ASCII letter in them (only ASCII folds, as in xgrammar).
  static CodepointRanges FoldAsciiCase(CodepointRanges ranges) {
    const size_t n = ranges.size();
    for (size_t i = 0; i < n; ++i) {
      for (const auto [lo, hi] : {std::pair<uint32_t, uint32_t>{'a', 'z'}, {'A', 'Z'}}) {
        const uint32_t a = std::max(ranges[i].first, lo), b = std::min(ranges[i].second, hi);
        if (a > b) continue;
        const uint32_t shift = 'a' - 'A';
        ranges.push_back(lo == 'a' ? std::make_pair(a - shift, b - shift) : std::make_pair(a + shift, b + shift));
      }
    }
    return ranges;
  }

  // A leading inline flag group `(?i)`, `(?s)`, `(?u)` or a combination (`(?is)`): i = ASCII case
  // folding, s = `.` matches every code point, u = no effect (patterns are code points anyway).
  void ParseLeadingFlags() {
    if (Peek() != '(' || Peek(1) != '?') return;
    size_t i = 2;
    while (Peek(i) == 'i' || Peek(i) == 's' || Peek(i) == 'u') ++i;
    if (i == 2 || Peek(i) != ')') return;
    for (size_t k = 2; k < i; ++k) {
      if (Peek(k) == 'i') ignore_case_ = true;
      if (Peek(k) == 's') dot_storage_ = {{0, kMaxCodepoint}}, dot_ = dot_storage_;
    }
    pos_ += i + 1;
  }

  // The message for `(?` followed by anything but `:`, `<name>` or `P<name>`.
  std::string UnsupportedGroup(size_t open) const {
    const uint32_t k = Peek(1), k2 = Peek(2);
    if (k == '=') return "Lookahead assertion '(?=' is not supported";
    if (k == '!') return "Negative lookahead assertion '(?!' is not supported";
    if (k == '<' && k2 == '=') return "Lookbehind assertion '(?<=' is not supported";
    if (k == '<' && k2 == '!') return "Negative lookbehind assertion '(?<!' is not supported";
    if (k == '>') return "atomic group '(?>' is not supported";
    if (k == 'P' && k2 == '=') return "Backreference '(?P=name)' is not supported";
    if (k == 'P' && k2 == '>') return "recursion '(?P>name)' is not supported";
    if (k == '#') return "comment group '(?#...)' is not supported";
    if (k == '(') return "conditional group '(?(...)' is not supported";
    // Flag letters of ECMAScript, Python and PCRE modifiers: (?i) (?s-m) (?x:...).
    auto is_flag = [](uint32_t c) {
      return c < 0x80 && std::string("aimsuxLnUJ-").find(static_cast<char>(c)) != std::string::npos;
    };
    size_t i = open + 2;
    while (i < cps_.size() && is_flag(cps_[i])) ++i;
    if (i > open + 2 && i < cps_.size() && (cps_[i] == ')' || cps_[i] == ':')) {
      return "inline modifier '" + Text(open, i + 1) +
             "' is not supported (flags apply only as a leading group: (?i), (?s), (?u))";
    }
    return "invalid group '" + Text(open, std::min(open + 3, cps_.size())) +
           "' (expected '(?:', '(?<name>' or a plain '(')";
  }

  // The name of (?<name>...): ECMAScript identifier characters, then '>'.
  void ParseGroupName() {
    const size_t start = pos_;
    while (Peek() != kEnd && Peek() != '>') {
      uint32_t c = Peek();
      bool ok = IsAsciiLetter(c) || c == '_' || c == '$' || c >= 0x80 || (IsDigit(c) && pos_ > start);
      if (!ok) break;
      ++pos_;
    }
    if (Peek() != '>' || pos_ == start) {
      Fail(pos_, "invalid group name (expected '(?<name>...)', the name made of letters, digits, '_' or '$')");
    }
    ++pos_;
  }

  Node ParseClass() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    if (Peek() == ']') {  // ECMAScript: [] matches nothing, [^] any code point
      ++pos_;
      if (!negated) Fail(open, "Empty character class '[]' matches nothing (write '[\\]]' for a literal ']')");
      return Class({{0, kMaxCodepoint}});
    }
    CodepointRanges ranges;
    while (true) {
      if (AtEnd()) Fail(open, "unterminated character class '['");
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      const size_t item = pos_;
      ClassAtom lo = ParseClassAtom();
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != kEnd) {
        ++pos_;
        ClassAtom hi = ParseClassAtom();
        if (lo.is_set || hi.is_set) {
          Fail(item, "a class escape such as '\\d' cannot be a range endpoint (write '\\-' for a literal '-')");
        }
        if (hi.codepoint < lo.codepoint) Fail(item, "character class range is reversed (start > end)");
        ranges.push_back({lo.codepoint, hi.codepoint});
      } else if (lo.is_set) {
        ranges.insert(ranges.end(), lo.set.begin(), lo.set.end());
      } else {
        ranges.push_back({lo.codepoint, lo.codepoint});
      }
    }
    if (ignore_case_) ranges = FoldAsciiCase(std::move(ranges));  // before negation: [^a]/i excludes 'A' too
    CodepointRanges set = NormalizeRanges(std::move(ranges), negated);
    if (set.empty()) Fail(open, "character class matches no character");
    return Class(std::move(set));
  }

  ClassAtom ParseClassAtom() {
    if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
    return Single(cps_[pos_++]);
  }

  // Reads exactly n hex digits at pos_ (consuming them only on success).
  bool ReadHex(int n, uint32_t* value) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      int d = HexValue(Peek(i));
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    pos_ += n;
    *value = v;
    return true;
  }

  // After `\u` (the backslash at `at`): \uHHHH, a \uHHHH\uHHHH surrogate pair, or \u{H...}.
  uint32_t ParseUnicodeEscape(size_t at) {
    uint32_t v = 0;
    if (Peek() == '{') {
      ++pos_;
      int digits = 0;
      for (int d; (d = HexValue(Peek())) >= 0; ++pos_, ++digits) {
        v = v * 16 + static_cast<uint32_t>(d);
        if (v > kMaxCodepoint) Fail(at, "escape '\\u{...}' is beyond U+10FFFF");
      }
      if (digits == 0 || Peek() != '}') Fail(at, "expected hex digits and '}' in the escape '\\u{...}'");
      ++pos_;
    } else {
      if (!ReadHex(4, &v)) Fail(at, "'\\u' must be followed by four hexadecimal digits (or '{...}')");
      if (v >= 0xD800 && v <= 0xDBFF && Peek() == '\\' && Peek(1) == 'u') {
        const size_t save = pos_;
        pos_ += 2;
        uint32_t low;
        if (ReadHex(4, &low) && low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
        pos_ = save;
      }
    }
    if (IsSurrogate(v)) {
      Fail(at, "escape '" + Text(at, pos_) +
                   "' is a lone surrogate, not a Unicode scalar value (UTF-8 cannot encode it)");
    }
    return v;
  }

  ClassAtom ParseEscape(bool in_class) {
    const size_t at = pos_;  // the backslash
    ++pos_;
    const uint32_t c = Peek();
    if (c == kEnd) Fail(at, "'\\' at the end of the pattern");
    ++pos_;
    switch (c) {
      case 'd': return Set(kDigit, false);
      case 'D': return Set(kDigit, true);
      case 'w': return Set(kWord, false);
      case 'W': return Set(kWord, true);
      case 's': return Set(kSpace, false);
      case 'S': return Set(kSpace, true);
      case 'n': return Single('\n');
      case 'r': return Single('\r');
      case 't': return Single('\t');
      case 'f': return Single('\f');
      case 'v': return Single('\v');
      case '0':
        if (IsDigit(Peek())) Fail(at, "octal escape '" + Text(at, pos_ + 1) + "' is not supported");
        return Single(0);
      case 'x': {
        uint32_t v;
        if (!ReadHex(2, &v)) Fail(at, "expected 2 hex digits after '\\x'");
        return Single(v);
      }
      case 'u': return Single(ParseUnicodeEscape(at));
      case 'c': {
        const uint32_t letter = Peek();
        if (!IsAsciiLetter(letter)) Fail(at, "'\\c' must be followed by a letter (A-Z or a-z)");
        ++pos_;
        return Single(letter % 32);
      }
      case 'b':
        if (in_class) return Single(0x08);  // [\b] is backspace
        Fail(at, "Word boundary assertion '\\b' is not supported");
      case 'B':
        if (in_class) Fail(at, "unknown escape '\\B' in a character class");
        Fail(at, "Word boundary assertion '\\B' is not supported");
      case 'k': Fail(at, "Backreference '\\k<name>' is not supported");
      case 'p': case 'P': {
        if (Peek() != '{') Fail(at, std::string("expected '{' after '\\") + static_cast<char>(c) + "'");
        const size_t name_start = pos_ + 1;
        size_t close = name_start;
        while (close < cps_.size() && cps_[close] != '}') ++close;
        if (close == cps_.size()) Fail(at, "unterminated Unicode property escape '" + Text(at, close) + "'");
        pos_ = close + 1;
        CodepointRanges ranges;
        if (!UnicodeCategoryRanges(Text(name_start, close), &ranges)) {
          Fail(at, "Unicode property escape '" + Text(at, pos_) +
                       "' is not supported (only general categories such as \\p{L} or \\p{Letter})");
        }
        return Set(ranges, /*negate=*/c == 'P');
      }
      default: break;
    }
    if (c >= '1' && c <= '9') {
      while (IsDigit(Peek())) ++pos_;
      Fail(at, (in_class ? "octal escape '" : "Backreference '") + Text(at, pos_) + "' is not supported");
    }
    // Identity escapes: anything but an ASCII letter or digit stands for itself (\. \\ \/ \- \" ...).
    // Unknown letters are errors, not literals: \a, \e, \A, \Z mean different things in other dialects.
    if (IsAsciiLetter(c) || IsDigit(c)) Fail(at, "unknown escape '" + Text(at, pos_) + "'");
    return Single(c);
  }

  const std::string& pattern_;
  CodepointRanges dot_storage_;
  std::reference_wrapper<const CodepointRanges> dot_;
  bool ignore_case_;
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<TopLevelAlternative> ParseRegexPattern(const std::string& pattern, const CodepointRanges& dot,
                                                   bool ignore_case) {
  return Parser(pattern, dot, ignore_case).Parse();
}

}  // namespace regex
}  // namespace xg
