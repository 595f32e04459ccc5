#include "frontends/ebnf_parser.h"

#include <gtest/gtest.h>

#include "grammar/passes.h"
#include "grammar/printer.h"
#include "grammar/productivity.h"
#include "support/check.h"

namespace xg {
namespace {

std::string ErrorOf(const std::string& text, const std::string& root = "root") {
  try {
    ParseEbnf(text, root);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(EbnfParser, PrintsBackToTheSameGrammar) {
  const char* grammars[] = {
      "root ::= \"a\" | \"b\" root",
      "root ::= (\"a\" | [b-d]+)* x{2,5} \"\\n\\t\\\"\\\\\"\nx ::= [^\\]\\-\\\\a-z] | \"\" | .",
      "root ::= [\\u4E00-\\u9FA5]{0,3} \"\\U0001F600\" x\nx ::= \"q\"{2,} (= \"z\" | [0-9])",
      "root ::= ((\"a\")?)* ((\"b\")*)?",
  };
  for (const char* text : grammars) {
    std::string once = PrintGrammar(ParseEbnf(text));
    std::string twice = PrintGrammar(ParseEbnf(once));
    EXPECT_EQ(once, twice) << text;
    Grammar normalized = ParseEbnf(text);
    NormalizeGrammar(&normalized);
    std::string n1 = PrintGrammar(normalized);
    EXPECT_EQ(n1, PrintGrammar(ParseEbnf(n1, normalized.RootName()))) << text;
  }
}

TEST(EbnfParser, ErrorsNameLineAndColumn) {
  EXPECT_NE(ErrorOf("root ::= \"a\"\nx ::= (\"b\"").find("line 2, column 7: unbalanced '('"), std::string::npos)
      << ErrorOf("root ::= \"a\"\nx ::= (\"b\"");
  EXPECT_NE(ErrorOf("root ::= foo").find("undefined rule 'foo'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\q\"").find("unknown escape '\\q'"), std::string::npos);
  EXPECT_NE(ErrorOf("start ::= \"a\"").find("root rule 'root' is not defined"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("empty"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [z-a]").find("reversed"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{3,2}").find("max < min"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= JSONSchema(\"{}\")").find("not supported"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= TagDispatch((\"ab\", b), excludes=(\"a\"))\nb ::= \"b\"").find("is a prefix of the trigger"),
            std::string::npos);
}

TEST(EbnfParser, InlinesSmallNonRecursiveRules) {
  Grammar g = ParseEbnf("root ::= a b root | a\na ::= \"x\" ws\nb ::= [0-9]\nws ::= \" \"*");
  NormalizeGrammar(&g);
  EXPECT_EQ(g.rules.size(), 1u) << PrintGrammar(g);
}

// A rule repeating a wide class (a JSON string body) keeps its own states, however small, so its
// masks are built once per grammar and shared across grammars; its narrow or unrepeated helpers
// are still inlined into it.
TEST(EbnfParser, KeepsRulesThatRepeatAWideClass) {
  Grammar g = ParseEbnf(
      "root ::= \"{\" str \":\" str \",\" digits \"}\"\n"
      "str ::= \"\\\"\" char* \"\\\"\"\nchar ::= [^\"\\\\] | \"\\\\\" [nt]\ndigits ::= [0-9]+");
  NormalizeGrammar(&g);
  std::vector<std::string> names;
  for (const Rule& r : g.rules) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"root", "str"})) << PrintGrammar(g);
}

// A chain where every rule references the next twice (JSON objects with optional properties): the
// normalised grammar must grow linearly with the chain, not double at every link.
TEST(EbnfParser, InliningStaysLinearOnBranchingChains) {
  std::string text = "root ::= a0\n";
  const int n = 40;
  for (int i = 0; i < n; ++i)
    text += "a" + std::to_string(i) + " ::= \"x" + std::to_string(i) + "\" a" + std::to_string(i + 1) + " | a" +
            std::to_string(i + 1) + "\n";
  text += "a" + std::to_string(n) + " ::= \"end\"\n";
  Grammar g = ParseEbnf(text);
  NormalizeGrammar(&g);
  EXPECT_LT(PrintGrammar(g).size(), 60u * n) << "inlining blew up";
}

}  // namespace
}  // namespace xg

namespace xg {
namespace {

std::vector<std::string> Unproductive(const std::string& ebnf) {
  const Grammar g = ParseEbnf(ebnf);
  const std::vector<uint8_t> productive = ProductiveRules(g);
  std::vector<std::string> out;
  for (size_t r = 0; r < productive.size(); ++r) {
    if (!productive[r]) out.push_back(g.rules[r].name);
  }
  return out;
}

TEST(ProductiveRules, LeastFixpoint) {
  EXPECT_EQ(Unproductive("root ::= root | \"a\""), std::vector<std::string>{});
  EXPECT_EQ(Unproductive("root ::= a\na ::= b\nb ::= a"), (std::vector<std::string>{"root", "a", "b"}));
  EXPECT_EQ(Unproductive("root ::= \"x\" root"), std::vector<std::string>{"root"});
  EXPECT_EQ(Unproductive("root ::= a*\na ::= \"(\" a \")\""), std::vector<std::string>{"a"});
  EXPECT_EQ(Unproductive("root ::= a a\na ::= \"x\" | a"), std::vector<std::string>{});
  EXPECT_EQ(Unproductive("root ::= \"a\" | b c\nb ::= b{2}\nc ::= \"c\""), std::vector<std::string>{"b"});
}

TEST(ProductiveRules, LongChainsNeedNoRecursion) {
  std::string ebnf = "root ::= r0\n";
  const int n = 200000;
  for (int i = 0; i < n; ++i) ebnf += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string(i + 1) + "\n";
  ebnf += "r" + std::to_string(n) + " ::= \"b\"\n";
  EXPECT_TRUE(Unproductive(ebnf).empty());
}

}  // namespace
}  // namespace xg
