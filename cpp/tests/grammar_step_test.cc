// The batch grammar step behind the XLA FFI handlers: whole-batch validation (an error changes no
// matcher), strict rejection rollback, and concurrent shards (threads start at a latch; every wait is
// bounded at 5 s so a deadlock fails the test instead of hanging it).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "frontends/ebnf_parser.h"
#include "grammar_step.h"
#include "handle_registry.h"
#include "latch.h"

namespace xg {
namespace {

constexpr int32_t kEos = 256;

std::shared_ptr<const CompiledGrammar> MakeGrammar(const std::string& ebnf) {
  std::vector<std::string> toks;
  for (int c = 0; c < 256; ++c) toks.push_back(std::string(1, static_cast<char>(c)));
  toks.push_back("<eos>");
  auto tok = std::make_shared<TokenizerInfo>(toks, 257, std::vector<int32_t>{kEos}, std::vector<int32_t>{kEos});
  return std::make_shared<const CompiledGrammar>(ParseEbnf(ebnf, "root"), tok);
}

struct Batch {
  std::vector<int32_t> handles, tokens, status;
  std::vector<uint32_t> mask;
  explicit Batch(std::vector<int32_t> h) : handles(std::move(h)), tokens(handles.size(), -1), status(handles.size()) {
    mask.resize(handles.size() * 9);
  }
  std::string Step(bool strict = true) {
    return GrammarStep(handles.data(), tokens.data(), static_cast<int64_t>(handles.size()), mask.data(), 9,
                       status.data(), StepOptions{strict, 2}, StepSource::kHostCallback);
  }
};

int32_t Accepted(int32_t h) { return HandleRegistry::Global().Snapshot(h).NumAcceptedTokens(); }

TEST(GrammarStep, ErrorsChangeNoMatcher) {
  auto g = MakeGrammar("root ::= \"ab\" [0-9]+");
  auto& reg = HandleRegistry::Global();
  int32_t a = reg.Add(GrammarMatcher(g)), b = reg.Add(GrammarMatcher(g));
  Batch batch({a, b, -1});
  batch.tokens = {'a', 'x', 5};
  std::string err = batch.Step();
  EXPECT_NE(err.find("row 1 (grammar handle " + std::to_string(b) + "): token 120 ('x') is rejected"),
            std::string::npos)
      << err;
  EXPECT_EQ(Accepted(a), 0);  // row 0 was advanced, then rolled back
  batch.tokens = {'a', 300, -1};
  EXPECT_NE(batch.Step().find("row 1: token id 300 is out of range [0, 257)"), std::string::npos);
  batch.handles = {a, a, -1};
  batch.tokens = {-1, -1, -1};
  EXPECT_NE(batch.Step().find("is used by rows 0 and 1"), std::string::npos);
  EXPECT_EQ(Accepted(a), 0);
  // Non-strict: the rejected row is flagged and unchanged, the others advance.
  batch.handles = {a, b, -1};
  batch.tokens = {'a', 'x', 7};
  EXPECT_EQ(batch.Step(/*strict=*/false), "");
  EXPECT_EQ(batch.status[0], kStepAdvanced);
  EXPECT_EQ(batch.status[1], kStepRejected);
  EXPECT_EQ(batch.status[2], kStepUnconstrained);
  EXPECT_EQ(Accepted(a), 1);
  EXPECT_EQ(Accepted(b), 0);
  for (int w = 0; w < 9; ++w) EXPECT_EQ(batch.mask[2 * 9 + w], 0xffffffffu);
  reg.Free(a);
  reg.Free(b);
  EXPECT_NE(batch.Step().find("row 0: grammar handle " + std::to_string(a) + " is unknown or already freed"),
            std::string::npos);
}

TEST(GrammarStep, MatchersThatCannotRollBackAreRestored) {
  auto g = MakeGrammar("root ::= \"ab\" [0-9]+");
  auto& reg = HandleRegistry::Global();
  int32_t a = reg.Add(GrammarMatcher(g, std::nullopt, /*max_rollback_tokens=*/0));
  int32_t b = reg.Add(GrammarMatcher(g));
  Batch batch({a, b});
  batch.tokens = {'a', 'z'};
  EXPECT_NE(batch.Step().find("row 1"), std::string::npos);
  GrammarMatcher m = reg.Snapshot(a);
  EXPECT_TRUE(m.AcceptToken('a'));  // still at the start: 'a' is accepted again
  reg.Free(a);
  reg.Free(b);
}

// TagDispatch mode in the status bits; a batch that fails in a later row undoes an earlier row's switch (its
// event too), whether the row rolls back a token or is restored from a copy (max_rollback_tokens = 0).
TEST(GrammarStep, TagSwitchesInStatusAndUndoneWithTheBatch) {
  auto g = MakeGrammar("root ::= TagDispatch((\"<c>\", call), loop_after_dispatch=true)\ncall ::= [0-9] \"</c>\"");
  auto& reg = HandleRegistry::Global();
  for (int32_t rollback : {-1, 0}) {
    int32_t a = reg.Add(GrammarMatcher(g, std::nullopt, rollback)), b = reg.Add(GrammarMatcher(g));
    Batch batch({a, b});
    for (char c : std::string("x<c")) {
      batch.tokens = {c, 'y'};
      ASSERT_EQ(batch.Step(), "");
      EXPECT_EQ(batch.status[0] & 0xffff00, 0);
    }
    batch.tokens = {'>', 255};  // row 1 fails (a byte that is never text): row 0's entry into the tag is undone
    EXPECT_NE(batch.Step().find("row 1"), std::string::npos);
    EXPECT_FALSE(reg.Snapshot(a).InTag());
    EXPECT_TRUE(reg.Snapshot(a).TakeTagEvents().empty());
    batch.tokens = {'>', 'y'};
    ASSERT_EQ(batch.Step(), "");
    EXPECT_EQ(batch.status[0] & 0xffff00, kStepInTag | kStepTagEntered | (1 << kStepTagIndexShift));
    EXPECT_EQ(batch.status[1] & 0xffff00, 0);
    for (char c : std::string("7</c")) {
      batch.tokens = {c, 'y'};
      ASSERT_EQ(batch.Step(), "");
      EXPECT_EQ(batch.status[0] & 0xffff00, kStepInTag | (1 << kStepTagIndexShift));
    }
    batch.tokens = {'>', 'y'};
    ASSERT_EQ(batch.Step(), "");
    EXPECT_EQ(batch.status[0] & 0xffff00, kStepTagLeft | (1 << kStepTagIndexShift));
    batch.tokens = {-1, 'y'};  // no token: no switch reported again
    ASSERT_EQ(batch.Step(), "");
    EXPECT_EQ(batch.status[0] & 0xffff00, 0);
    std::shared_ptr<HandleRegistry::Slot> slot = reg.Find(a);
    std::vector<TagEvent> events = slot->matcher.TakeTagEvents();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_TRUE(events[0].start);
    EXPECT_EQ(events[0].token_index, 3);
    EXPECT_EQ(events[1].text, "<c>7</c>");
    EXPECT_EQ(events[1].token_index, 8);
    reg.Free(a);
    reg.Free(b);
  }
}

// Shards call the step concurrently; two "shards" whose batches hold the same two handles in opposite
// orders must neither deadlock nor lose an advance (the slots are locked in handle order).
TEST(GrammarStep, ConcurrentShardsWithOverlappingHandlesDoNotDeadlock) {
  auto g = MakeGrammar("root ::= [a-z]*");
  auto& reg = HandleRegistry::Global();
  int32_t a = reg.Add(GrammarMatcher(g)), b = reg.Add(GrammarMatcher(g));
  constexpr int kThreads = 8, kSteps = 50;
  Latch start(kThreads);
  std::vector<std::future<std::string>> done;
  for (int t = 0; t < kThreads; ++t) {
    done.push_back(std::async(std::launch::async, [&, t] {
      Batch batch(t % 2 ? std::vector<int32_t>{a, b} : std::vector<int32_t>{b, a});
      if (!start.ArriveAndWait()) return std::string("latch timeout");
      for (int s = 0; s < kSteps; ++s) {
        batch.tokens = {'q', 'q'};
        std::string err = batch.Step();
        if (!err.empty()) return err;
      }
      return std::string();
    }));
  }
  for (auto& f : done) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "deadlock";
    EXPECT_EQ(f.get(), "");
  }
  EXPECT_EQ(Accepted(a), kThreads * kSteps);
  EXPECT_EQ(Accepted(b), kThreads * kSteps);
  reg.Free(a);
  reg.Free(b);
}

// A handle freed while a step holds its slot: the step finishes on the live matcher; later steps fail.
TEST(GrammarStep, FreeDuringStepIsSafe) {
  auto g = MakeGrammar("root ::= [a-z]*");
  auto& reg = HandleRegistry::Global();
  int32_t a = reg.Add(GrammarMatcher(g));
  auto slot = reg.Find(a);
  std::unique_lock hold(slot->mu);  // a step in flight
  auto step = std::async(std::launch::async, [&] {
    Batch batch({a});
    batch.tokens = {'q'};
    return batch.Step();
  });
  // The step has found the slot once it blocks on its lock; freeing now must not invalidate it.
  // (Free only takes the registry lock, never a slot lock, so it cannot deadlock with the step.)
  while (slot.use_count() < 3 && step.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    std::this_thread::yield();
  }
  reg.Free(a);
  hold.unlock();
  ASSERT_EQ(step.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(step.get(), "");
  EXPECT_EQ(slot->matcher.NumAcceptedTokens(), 1);
  Batch later({a});
  EXPECT_NE(later.Step().find("unknown or already freed"), std::string::npos);
}

}  // namespace
}  // namespace xg
