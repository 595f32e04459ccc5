// The regex front end: acceptance through GrammarMatcher on a byte vocabulary (full-match and
// search modes, embedding in EBNF), and the error messages.
#include "frontends/regex.h"

#include <gtest/gtest.h>

#include <memory>

#include "frontends/ebnf_parser.h"
#include "grammar/printer.h"
#include "matcher/grammar_matcher.h"

namespace xg {
namespace {

// One token per byte, plus a stop token.
std::shared_ptr<const TokenizerInfo> ByteVocab() {
  static const auto vocab = [] {
    std::vector<std::string> toks;
    for (int b = 0; b < 256; ++b) toks.emplace_back(1, static_cast<char>(b));
    toks.push_back("<eos>");
    return std::make_shared<const TokenizerInfo>(toks, 257, std::vector<int32_t>{}, std::vector<int32_t>{256});
  }();
  return vocab;
}

bool Accepts(const Grammar& g, const std::string& input) {
  GrammarMatcher m(std::make_shared<const CompiledGrammar>(g, ByteVocab()));
  return m.AcceptString(input) && m.IsCompleted();
}

bool FullMatch(const std::string& pattern, const std::string& input) {
  return Accepts(RegexToGrammar(pattern, RegexMode::kFullMatch), input);
}

bool Search(const std::string& pattern, const std::string& input) {
  return Accepts(RegexToGrammar(pattern, RegexMode::kSearch), input);
}

std::string ErrorOf(const std::string& pattern, RegexMode mode = RegexMode::kFullMatch) {
  try {
    RegexToGrammar(pattern, mode);
  } catch (const RegexError& e) {
    return e.what();
  }
  return "";
}

TEST(Regex, FullMatchBasics) {
  EXPECT_TRUE(FullMatch("^\\d{4}-\\d{2}-\\d{2}$", "2024-05-19"));
  EXPECT_FALSE(FullMatch("^\\d{4}-\\d{2}-\\d{2}$", "2024-5-19"));
  EXPECT_FALSE(FullMatch("^\\d{4}-\\d{2}-\\d{2}$", "x2024-05-19"));
  EXPECT_TRUE(FullMatch("(?:ab|c)+?d*?", "abcab"));
  EXPECT_FALSE(FullMatch("(?:ab|c)+?d*?", ""));
  EXPECT_TRUE(FullMatch("(?<year>\\d\\d)|x", "42"));
  EXPECT_TRUE(FullMatch("a|", ""));
  EXPECT_TRUE(FullMatch("", ""));
  EXPECT_FALSE(FullMatch("", "a"));
  EXPECT_TRUE(FullMatch("^a$|^b$", "b"));
  EXPECT_TRUE(FullMatch("a{0}b", "b"));
  EXPECT_FALSE(FullMatch("a{2,3}", "aaaa"));
}

TEST(Regex, DotAndClasses) {
  EXPECT_TRUE(FullMatch("a.c", "a\xE4\xB8\xAD" "c"));  // 中
  EXPECT_FALSE(FullMatch("a.c", "a\nc"));
  EXPECT_FALSE(FullMatch("a.c", "a\xE2\x80\xA8" "c"));  // U+2028
  EXPECT_TRUE(FullMatch("a[^]c", "a\nc"));
  EXPECT_TRUE(FullMatch("a[\\s\\S]c", "a\nc"));
  EXPECT_TRUE(FullMatch("\\s", "\xE3\x80\x80"));  // U+3000 IDEOGRAPHIC SPACE
  EXPECT_FALSE(FullMatch("\\s", "\x1C"));         // Python's \s has it, ECMAScript's does not
  EXPECT_TRUE(FullMatch("[^\\d\\s]", "a"));
  EXPECT_FALSE(FullMatch("[^\\d\\s]", "7"));
  EXPECT_TRUE(FullMatch("\\w+", "a_Z9"));
  EXPECT_FALSE(FullMatch("\\w", "\xC3\xA9"));  // é: \w is ASCII
  EXPECT_TRUE(FullMatch("[\\b]", "\b"));
  EXPECT_TRUE(FullMatch("[a\\-z]+", "-az"));
  EXPECT_FALSE(FullMatch("[a\\-z]+", "b"));
  EXPECT_TRUE(FullMatch("[а-я]+", "привет"));
}

TEST(Regex, Escapes) {
  EXPECT_TRUE(FullMatch("\\u{1F600}\\uD83D\\uDE00\\u00e9\\x41\\cJ", "\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xC3\xA9" "A\n"));
  EXPECT_TRUE(FullMatch("\\.\\*\\\\\\/\\-\\\"", ".*\\/-\""));
  EXPECT_TRUE(FullMatch("\\t\\n\\r\\f\\v\\0", std::string("\t\n\r\f\v\0", 6)));
}

TEST(Regex, AnnexBLiterals) {
  // a{,2}: Annex B reads the text "a{,2}", Python a{0,2}: refused rather than guessed.
  EXPECT_THROW(FullMatch("a{,2}", "a{,2}"), RegexError);
  EXPECT_TRUE(FullMatch("a{,x}", "a{,x}"));
  EXPECT_TRUE(FullMatch("x{2,3", "x{2,3"));
  EXPECT_TRUE(FullMatch("a}]", "a}]"));
  EXPECT_TRUE(FullMatch("{", "{"));
}

TEST(Regex, SearchMode) {
  EXPECT_TRUE(Search("abc", "xx abc\nyy"));
  EXPECT_TRUE(Search("abc", "abc"));
  EXPECT_FALSE(Search("abc", "ab c"));
  EXPECT_TRUE(Search("^abc", "abc and more"));
  EXPECT_FALSE(Search("^abc", " abc"));
  EXPECT_TRUE(Search("abc$", "more abc"));
  EXPECT_FALSE(Search("abc$", "abc "));
  EXPECT_TRUE(Search("^abc$", "abc"));
  EXPECT_FALSE(Search("^abc$", "abcabc"));
  // Anchors belong to each top-level alternative.
  EXPECT_TRUE(Search("^a|b$", "a..."));
  EXPECT_TRUE(Search("^a|b$", "...b"));
  EXPECT_FALSE(Search("^a|b$", ".a.b."));
  EXPECT_TRUE(Search("", "anything"));
  EXPECT_TRUE(Search("^$|^https://", ""));
  EXPECT_TRUE(Search("^$|^https://", "https://x"));
  EXPECT_FALSE(Search("^$|^https://", " https://x"));
  EXPECT_NE(ErrorOf("a^b", RegexMode::kSearch).find("position 1: anchor '^' is only supported"), std::string::npos);
}

TEST(Regex, SearchWithManyAlternativesStaysSmall) {
  // One "any string" prefix/suffix per alternative made the subset construction exponential in the
  // number of alternatives; the shared ones keep the automaton Aho-Corasick sized.
  std::string pattern;
  for (int i = 0; i < 40; ++i) pattern += (i ? "|" : "") + std::string("w") + std::to_string(i * 7919) + "x";
  pattern += "|^start|end$|^whole$";
  Grammar g = RegexToGrammar(pattern, RegexMode::kSearch);
  auto compiled = std::make_shared<const CompiledGrammar>(g, ByteVocab());
  EXPECT_LT(compiled->fsm().NumStates(), 2000);
  GrammarMatcher m(compiled);
  EXPECT_TRUE(m.AcceptString("..w15838x..") && m.IsCompleted());
  EXPECT_TRUE(Accepts(g, "start..."));
  EXPECT_FALSE(Accepts(g, ".start..."));
  EXPECT_TRUE(Accepts(g, "...end"));
  EXPECT_TRUE(Accepts(g, "whole"));
  EXPECT_FALSE(Accepts(g, "whole."));
}

TEST(Regex, EmbedsInAGrammar) {
  // AddRegex appends nodes to an existing grammar; the EBNF front end uses it for Regex("...").
  Grammar g = ParseEbnf("root ::= \"<\" x \">\"\nx ::= \"placeholder\"");
  g.rules[1].body = AddRegex(&g, "[a-c]+|\\d{2}", RegexMode::kFullMatch);
  EXPECT_TRUE(Accepts(g, "<abca>"));
  EXPECT_TRUE(Accepts(g, "<42>"));
  EXPECT_FALSE(Accepts(g, "<4>"));
  EXPECT_FALSE(Accepts(g, "<placeholder>"));
}

TEST(Regex, EbnfBuiltin) {
  Grammar g = ParseEbnf("root ::= \"x\" Regex(\"\\\\d+(\\\\.\\\\d*)?\") (\"y\" | Regex('[^a]'))");
  EXPECT_TRUE(Accepts(g, "x3.14y"));
  EXPECT_TRUE(Accepts(g, "x3b"));
  EXPECT_FALSE(Accepts(g, "x3.a"));
  // xgrammar's macro: `.` is any code point, newlines included.
  EXPECT_TRUE(Accepts(ParseEbnf("root ::= Regex(\"a.b\")"), "a\nb"));
  // The printed grammar is plain EBNF and parses back to itself.
  std::string printed = PrintGrammar(g);
  EXPECT_EQ(PrintGrammar(ParseEbnf(printed)), printed);
}

TEST(Regex, ErrorMessageFormat) {
  EXPECT_EQ(ErrorOf("ab(?=c)"),
            "regex error at position 2: Lookahead assertion '(?=' is not supported\n  ab(?=c)\n    ^");
  EXPECT_EQ(ErrorOf("(a|b"), "regex error at position 0: unbalanced '(': no matching ')'\n  (a|b\n  ^");
  // Positions count code points: 中 is one.
  EXPECT_EQ(ErrorOf("\xE4\xB8\xAD\\1"),
            "regex error at position 1: Backreference '\\1' is not supported\n  \xE4\xB8\xAD\\1\n   ^");
  try {
    RegexToGrammar("x{3,2}");
    FAIL() << "no error";
  } catch (const RegexError& e) {
    EXPECT_EQ(e.position(), 1u);
    EXPECT_EQ(e.description(), "repetition {3,2} has max < min");
  }
  // A long pattern is quoted as a window around the error.
  std::string long_pattern = std::string(200, 'a') + "\\b" + std::string(200, 'b');
  std::string msg = ErrorOf(long_pattern);
  EXPECT_EQ(msg.rfind("regex error at position 200: Word boundary assertion '\\b' is not supported\n  ...", 0), 0u) << msg;
  EXPECT_LT(msg.size(), 200u);
  // Invalid UTF-8: the position of the bad byte, in code points.
  const std::string invalid = ErrorOf("a\xE4\xB8\xAD\xFF");
  EXPECT_EQ(invalid.rfind("regex error at position 2: invalid UTF-8 in the pattern (byte offset 4)", 0), 0u) << invalid;
}

TEST(Regex, UnsupportedConstructsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "Backreference '\\1' is not supported"},
      {"(?<n>a)\\k<n>", "Backreference '\\k<name>' is not supported"},
      {"a(?!b)", "Negative lookahead assertion '(?!' is not supported"},
      {"(?<=a)b", "Lookbehind assertion '(?<=' is not supported"},
      {"(?<!a)b", "Negative lookbehind assertion '(?<!' is not supported"},
      {"\\bword", "Word boundary assertion '\\b' is not supported"},
      {"\\Bx", "Word boundary assertion '\\B' is not supported"},
      {"\\p{Script=Greek}", "Unicode property escape '\\p{Script=Greek}' is not supported"},
      {"\\P{Emoji}", "Unicode property escape '\\P{Emoji}' is not supported"},
      {"a(?i)bc", "inline modifier '(?i)' is not supported"},
      {"(?i:abc)", "inline modifier '(?i:' is not supported"},
      {"(?>abc)", "atomic group '(?>' is not supported"},
      {"a*+", "possessive quantifier '*+' is not supported"},
      {"a{2}+", "possessive quantifier '{2}+' is not supported"},
      {"a^b", "anchor '^' is only supported at the start"},
      {"(^a)", "anchor '^' is only supported at the start"},
      {"a$b", "anchor '$' is only supported at the end"},
      {"(a$)", "anchor '$' is only supported at the end"},
      {"[z-a]", "character class range is reversed"},
      {"[\\d-z]", "cannot be a range endpoint"},
      {"*a", "quantifier '*' has nothing to repeat"},
      {"{2}", "quantifier '{2}' has nothing to repeat"},
      {"a**", "has nothing to repeat"},
      {"a{3,2}", "repetition {3,2} has max < min"},
      {"a{1048577}", "repetition bound too large (the limit is 1048576)"},
      {"a{1,99999999999999999999}", "repetition bound too large"},
      {"[abc", "unterminated character class '['"},
      {"[]", "Empty character class '[]' matches nothing"},
      {"[^\\s\\S]", "character class matches no character"},
      {"\\q", "unknown escape '\\q'"},
      {"\\a", "unknown escape '\\a'"},
      {"\\x4", "expected 2 hex digits after '\\x'"},
      {"\\u12", "'\\u' must be followed by four hexadecimal digits"},
      {"\\u{110000}", "beyond U+10FFFF"},
      {"\\uDC00", "lone surrogate"},
      {"\\c1", "'\\c' must be followed by a letter"},
      {"\\01", "octal escape '\\01' is not supported"},
      {"a\\", "'\\' at the end of the pattern"},
      {"(?<1a>x)", "invalid group name"},
      {"(?Q)", "invalid group '(?Q'"},
  };
  for (auto [pattern, fragment] : cases) {
    std::string msg = ErrorOf(pattern);
    EXPECT_NE(msg.find(fragment), std::string::npos) << pattern << " -> " << msg;
  }
  EXPECT_NE(ErrorOf(std::string(2000, '(') + std::string(2000, ')')).find("nested too deeply"), std::string::npos);
}

TEST(Regex, EbnfReportsRegexErrorsAtTheirSourceColumn) {
  try {
    ParseEbnf("root ::= \"x\"\n  | Regex(\"ab\\\\1\")");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "EBNF parser error at line 2, column 14: in the Regex(...) pattern at position 2: Backreference '\\1' is not "
                 "supported\n    | Regex(\"ab\\\\1\")\n               ^");
  }
}

}  // namespace
}  // namespace xg
