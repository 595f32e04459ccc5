// Grammars shaped to break the engine (deep nesting, long rule chains, unit cycles) and a matcher
// shared between threads: each must end in a precise InputError or a bounded, exact result, never a
// crash, a hang or a corrupted matcher.
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compiled_grammar.h"
#include "frontends/ebnf_parser.h"
#include "grammar/nesting_depth.h"
#include "grammar/printer.h"
#include "latch.h"
#include "matcher/grammar_matcher.h"
#include "support/check.h"
#include "support/exclusive_use.h"
#include "support/limits.h"

namespace xg {
namespace {

std::shared_ptr<const TokenizerInfo> Vocab(const std::vector<std::string>& toks) {
  std::vector<std::string> all = toks;
  all.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(all.size());
  return std::make_shared<TokenizerInfo>(all, n, std::vector<int32_t>{n - 1}, std::vector<int32_t>{n - 1});
}

// Sets the process-wide nesting depth for one test and restores it after.
class ScopedProcessNestingDepth {
 public:
  explicit ScopedProcessNestingDepth(int32_t depth) : before_(ProcessNestingDepth()) { SetProcessNestingDepth(depth); }
  ~ScopedProcessNestingDepth() { SetProcessNestingDepth(before_); }

 private:
  int32_t before_;
};

// Runs `f` on a new thread whose stack is `bytes` (std::thread cannot set it) and waits for it.
void RunOnThreadWithStack(size_t bytes, const std::function<void()>& f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  std::function<void()> task = f;
  const int rc = pthread_create(&thread, &attr, [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  }, &task);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(rc, 0);
  pthread_join(thread, nullptr);
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void ExpectMaskEqualsOracle(GrammarMatcher* m, const TokenizerInfo& tok) {
  std::vector<uint32_t> mask(tok.MaskWords()), oracle(tok.MaskWords());
  m->FillNextTokenBitmask(mask.data(), tok.MaskWords());
  m->FillNextTokenBitmaskBruteForce(oracle.data(), tok.MaskWords());
  EXPECT_EQ(mask, oracle);
}

TEST(UntrustedGrammarTest, DeeplyNestedGroupsAreAnErrorNotAStackOverflow) {
  ScopedProcessNestingDepth depth(1000);
  const int n = 10000;
  const std::string text = "root ::= " + std::string(n, '(') + "\"a\"" + std::string(n, ')');
  const std::string err = ErrorOf([&] { ParseEbnf(text); });
  EXPECT_NE(err.find("groups nest more than 1000 deep (Limits.max_nesting_depth)"), std::string::npos) << err;
}

TEST(UntrustedGrammarTest, StackedRepetitionOperatorsAreAnError) {
  // A second quantifier is refused at once (as xgrammar does), so 30,000 of them cost one error, not a deep tree.
  const std::string text = "root ::= \"a\"" + std::string(30000, '?');
  const std::string err = ErrorOf([&] { ParseEbnf(text); });
  EXPECT_NE(err.find("EBNF parser error at line 1, column 14: Expect element, but got ?"), std::string::npos) << err;
}

TEST(UntrustedGrammarTest, NestingAtTheLimitCompilesPrintsAndMatches) {
  // 999 groups, each with a `?`: a group of one element adds no node, its `?` one level, so the
  // depth is exactly the limit (the literal is level 1).
  ScopedProcessNestingDepth depth(1000);
  std::string body = "\"a\"";
  for (int i = 0; i < 999; ++i) body = "(" + body + ")?";
  Grammar g = ParseEbnf("root ::= " + body);
  EXPECT_EQ(RuleNestingDepth(g, g.root), NestingDepth(DefaultLimits()));
  EXPECT_FALSE(PrintGrammar(g).empty());
  auto tok = Vocab({"a", "aa"});
  auto cg = std::make_shared<const CompiledGrammar>(std::move(g), tok);
  GrammarMatcher m(cg);
  ExpectMaskEqualsOracle(&m, *tok);
  EXPECT_TRUE(m.AcceptToken(0));
  EXPECT_FALSE(m.AcceptToken(0));
}

TEST(UntrustedGrammarTest, GrammarFromAnyFrontEndIsCheckedBeforeCompiling) {
  // A Grammar built in code, bypassing the parser's check.
  ScopedProcessNestingDepth depth(1000);
  Grammar g;
  int32_t e = g.AddBytes("a");
  for (int i = 0; i < 5000; ++i) {
    Expr r;
    r.kind = ExprKind::kRepeat;
    r.children = {e};
    r.min = 0;
    r.max = 1;
    e = g.Add(std::move(r));
  }
  g.rules.push_back(Rule{"root", e, -1});
  g.root = 0;
  auto tok = Vocab({"a"});
  const std::string err = ErrorOf([&] { CompiledGrammar cg(g, tok); });
  EXPECT_NE(err.find("nests expressions 5001 levels deep"), std::string::npos) << err;
}

// Within the nesting depth but deeper than the calling thread's stack holds: every recursive pass checks the stack
// it has left (support/stack_guard.h), so 9000 levels raise LimitError on a 256 KB thread instead of crashing (on
// 1 MB they may do either: a level's frames differ between builds), and 1500 levels compile and match on 64 MB
// (an AddressSanitizer build's automaton builder takes several KB per level).
TEST(UntrustedGrammarTest, NestingDeeperThanTheThreadStackIsALimitError) {
  ScopedProcessNestingDepth depth(kMaxProcessNestingDepth);
  const auto nested = [](const std::string& open, const std::string& close, int n) {
    std::string body = "\"a\"";
    for (int i = 0; i < n; ++i) body = open + body + close;
    return "root ::= " + body;
  };
  struct Case {
    std::string open, close;
    int32_t first;  // a token the grammar accepts first: 0 is "a", 1 is "b"
  };
  const std::vector<Case> shapes = {{"(", ")?", 0}, {"(\"b\" | ", ")", 1}, {"(\"b\" ", ")", 1}, {"(\"b\" ", ")*", 1}};
  for (const Case& shape : shapes) {
    for (const size_t stack_kb : {256, 1024, 65536}) {
      const int levels = stack_kb == 65536 ? 1500 : shape.close == ")*" ? 4900 : 9000;
      const std::string text = nested(shape.open, shape.close, levels);
      std::string err;
      bool matched = false;
      RunOnThreadWithStack(stack_kb * 1024, [&] {
        try {
          auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(text), Vocab({"a", "b"}));
          GrammarMatcher m(cg);
          matched = m.AcceptToken(shape.first);
        } catch (const LimitError& e) {
          err = e.what();
        }
      });
      const std::string where = text.substr(0, 40) + "... on " + std::to_string(stack_kb) + " KB: " + err;
      if (stack_kb == 256)
        EXPECT_NE(err.find("needs more stack than this thread has left"), std::string::npos) << where;
      if (stack_kb == 1024 && !err.empty()) EXPECT_NE(err.find("needs more stack"), std::string::npos) << where;
      if (stack_kb == 65536) EXPECT_TRUE(err.empty() && matched) << where;
    }
  }
}

TEST(UntrustedGrammarTest, LongRuleChainCompilesAndMatches) {
  const int n = 40000;
  std::string text = "root ::= r0\n";
  for (int i = 0; i < n; ++i) text += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string(i + 1) + "\n";
  text += "r" + std::to_string(n) + " ::= \"b\"\n";
  auto tok = Vocab({"a", "b", "ab"});
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(text), tok);
  GrammarMatcher m(cg);
  ExpectMaskEqualsOracle(&m, *tok);
  EXPECT_FALSE(m.AcceptToken(1));  // "b" only after 40000 "a"s
  EXPECT_TRUE(m.AcceptString(std::string(n - 1, 'a')));
  ExpectMaskEqualsOracle(&m, *tok);
  EXPECT_TRUE(m.AcceptToken(2));  // "ab": the last "a", then "b"
  EXPECT_TRUE(m.IsCompleted());
}

TEST(UntrustedGrammarTest, UnitCycleFillReturnsTheExactMask) {
  // `root ::= root` makes the root's only waiter wait on itself; "axy" reads past the sentence.
  auto tok = Vocab({"a", "x", "ax", "axy", "y"});
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= root | \"ax\""), tok);
  GrammarMatcher m(cg);
  ExpectMaskEqualsOracle(&m, *tok);
  EXPECT_TRUE(m.AcceptToken(0));
  ExpectMaskEqualsOracle(&m, *tok);
}

TEST(UntrustedGrammarTest, UnitCycleThroughSeveralRules) {
  auto tok = Vocab({"a", "x", "ax", "axy", "y", "xa"});
  auto cg = std::make_shared<const CompiledGrammar>(
      ParseEbnf("root ::= b | \"ax\"\nb ::= c | \"x\"\nc ::= root | b \"a\""), tok);
  GrammarMatcher m(cg);
  for (int step = 0; step < 4; ++step) {
    ExpectMaskEqualsOracle(&m, *tok);
    if (!m.AcceptToken(1)) break;
  }
}

// Reads "a" until the limit is met; returns the tokens accepted before it.
int AcceptUntilLimit(GrammarMatcher* m, std::string* error) {
  for (int n = 0; n < 100000; ++n) {
    try {
      if (!m->AcceptToken(0)) return -1;
    } catch (const LimitError& e) {
      *error = e.what();
      return n;
    }
  }
  return -2;
}

TEST(UntrustedGrammarTest, AmbiguousGrammarMeetsTheWorkLimitWithAStickyError) {
  // `root ::= root root | "a"`: reading the n-th "a" scans every earlier set, O(n^2) work per byte
  // overall O(n^3): bounded per byte by max_work_per_byte.
  auto tok = Vocab({"a"});
  Limits limits;
  limits.max_work_per_byte = 20000;
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= root root | \"a\""), tok, nullptr, limits);
  GrammarMatcher m(cg);
  std::string error;
  const int accepted = AcceptUntilLimit(&m, &error);
  ASSERT_GT(accepted, 10);
  EXPECT_NE(error.find("(Limits.max_work_per_byte)"), std::string::npos) << error;
  EXPECT_EQ(m.NumAcceptedTokens(), accepted) << "the token that met the limit left no trace";
  // Sticky: every later call reports it.
  std::vector<uint32_t> mask(tok->MaskWords());
  const std::string again = ErrorOf([&] { m.FillNextTokenBitmask(mask.data(), tok->MaskWords()); });
  EXPECT_NE(again.find("(Limits.max_work_per_byte)"), std::string::npos) << again;
  EXPECT_NE(again.find("stays failed until reset()"), std::string::npos) << again;
  EXPECT_NE(ErrorOf([&] { m.AcceptToken(0); }), "");
  EXPECT_NE(ErrorOf([&] { m.Rollback(1); }), "");
  m.Reset();
  EXPECT_TRUE(m.AcceptToken(0));
  ExpectMaskEqualsOracle(&m, *tok);
}

TEST(UntrustedGrammarTest, ItemsPerSetLimit) {
  auto tok = Vocab({"a"});
  Limits limits;
  limits.max_items_per_set = 200;
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= root root | \"a\""), tok, nullptr, limits);
  GrammarMatcher m(cg);
  std::string error;
  const int accepted = AcceptUntilLimit(&m, &error);
  ASSERT_GT(accepted, 10);
  EXPECT_NE(error.find("a set grew past 200 items (Limits.max_items_per_set)"), std::string::npos) << error;
  EXPECT_EQ(m.NumAcceptedTokens(), accepted);
}

TEST(UntrustedGrammarTest, ExclusiveUseRefusesOverlapAndAllowsTurns) {
  ExclusiveUse use;
  Latch entered(2), checked(2);
  std::string err;
  std::thread holder([&] {
    ExclusiveUse::Scope scope(use, "holder");
    entered.ArriveAndWait();
    checked.ArriveAndWait();  // keep the scope open until the other thread has tried
  });
  ASSERT_TRUE(entered.ArriveAndWait());
  err = ErrorOf([&] { ExclusiveUse::Scope scope(use, "GrammarMatcher.accept_token"); });
  checked.ArriveAndWait();
  holder.join();
  EXPECT_NE(err.find("GrammarMatcher.accept_token: called while another thread is using the same matcher"),
            std::string::npos)
      << err;
  // Taking turns is fine, and a copy of an object in use starts out unused.
  EXPECT_EQ(ErrorOf([&] { ExclusiveUse::Scope scope(use, "after"); }), "");
  ExclusiveUse::Scope open(use, "open");
  ExclusiveUse copy = use;
  EXPECT_EQ(ErrorOf([&] { ExclusiveUse::Scope scope(copy, "copy"); }), "");
}

}  // namespace
}  // namespace xg
