// Deterministic concurrency tests: threads start together at a latch (no sleeps), every wait is
// bounded (5 s) so a regression fails instead of hanging.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "frontends/ebnf_parser.h"
#include "latch.h"
#include "matcher/grammar_matcher.h"
#include "support/thread_pool.h"

namespace xg {
namespace {

TEST(ThreadPool, RunsEveryIndexOnceAndRethrows) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.ParallelFor(hits.size(), 4, [&](size_t i) { hits[i]++; });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_THROW(pool.ParallelFor(100, 4,
                                [&](size_t i) {
                                  if (i == 57) throw std::runtime_error("boom");
                                }),
               std::runtime_error);
  // Still usable after an exception.
  std::atomic<int> total{0};
  pool.ParallelFor(10, 4, [&](size_t i) { total += static_cast<int>(i); });
  EXPECT_EQ(total.load(), 45);
}

TEST(CompiledGrammar, ConcurrentMatchersBuildMasksOnceAndAgree) {
  std::vector<std::string> toks;
  for (int c = 0; c < 128; ++c) toks.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"\"a", "a\"", "\",", "\"}", "{\"", "\":", "true", "null", "12", "},"}) toks.push_back(t);
  toks.push_back("<eos>");
  int32_t n = static_cast<int32_t>(toks.size());
  auto tok = std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{}, std::vector<int32_t>{n - 1});
  auto cg = std::make_shared<const CompiledGrammar>(
      ParseEbnf("root ::= \"{\" (s \":\" v (\",\" s \":\" v)*)? \"}\"\nv ::= s | [0-9]+ | \"true\" | \"null\" | root\n"
                "s ::= \"\\\"\" [a-z]* \"\\\"\""),
      tok);
  const std::string text = "{\"ab\":12,\"c\":{\"d\":true},\"e\":\"f\"}";
  // Reference, single-threaded on a separate compiled grammar.
  auto ref_cg = std::make_shared<const CompiledGrammar>(cg->grammar(), tok);
  std::vector<std::vector<uint32_t>> ref;
  {
    GrammarMatcher m(ref_cg);
    for (char c : text) {
      ref.emplace_back(tok->MaskWords());
      m.FillNextTokenBitmask(ref.back().data(), tok->MaskWords());
      ASSERT_TRUE(m.AcceptToken(static_cast<uint8_t>(c)));
    }
  }
  constexpr int kThreads = 8;
  Latch start(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (!start.ArriveAndWait()) {
        failures[t] = "latch timed out";
        return;
      }
      GrammarMatcher m(cg);
      std::vector<uint32_t> mask(tok->MaskWords());
      for (size_t i = 0; i < text.size(); ++i) {
        m.FillNextTokenBitmask(mask.data(), tok->MaskWords());
        if (mask != ref[i]) failures[t] = "mask differs at step " + std::to_string(i);
        if (!m.AcceptToken(static_cast<uint8_t>(text[i]))) failures[t] = "token rejected";
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  EXPECT_EQ(cg->NumBuiltEntries(), ref_cg->NumBuiltEntries()) << "each entry is built exactly once";
}

}  // namespace
}  // namespace xg
