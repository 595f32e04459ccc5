// FencedLruCache under concurrency, deterministically: computations block on gates the test opens,
// threads meet at latches, there are no sleeps, and every wait is bounded (5 s) so a regression
// fails instead of hanging. A guard declared after the futures opens every gate when a test leaves
// early, so blocked computations finish before the futures' destructors join them.
//
// Every scenario runs for both instantiations GrammarCompiler uses: whole grammars (here a string
// key and value stand in for them; the cache logic is the same template) and the rule-level cache
// (StructuralKey -> TokenMaskEntry, exactly as CompiledGrammar uses it).
#include "compiler/fenced_lru_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

#include "compiler/rule_mask_cache.h"

namespace xg {
namespace {

constexpr auto kBound = std::chrono::seconds(5);

// A one-shot gate: Wait() blocks until Open() (bounded).
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Opens every gate when the test scope ends (declare it after the futures).
struct OpenGatesOnExit {
  std::vector<Gate*> gates;
  ~OpenGatesOnExit() {
    for (Gate* g : gates) g->Open();
  }
};

struct GrammarLevel {
  using Key = std::string;
  using Value = std::string;
  using Cache = FencedLruCache<Key, Value>;
  static Key MakeKey(int i) { return "grammar-" + std::to_string(i); }
  static std::shared_ptr<const Value> MakeValue(int64_t size) { return std::make_shared<const Value>(size, 'x'); }
  static int64_t SizeOf(const Value& v) { return static_cast<int64_t>(v.size()); }
};

struct RuleLevel {
  using Key = StructuralKey;
  using Value = TokenMaskEntry;
  using Cache = RuleMaskCache;
  static Key MakeKey(int i) {
    StructuralKey k;
    k.structure_id = i;
    k.position = 0;
    k.hash = static_cast<uint64_t>(i) % 3;  // deliberate bucket collisions: equality must decide
    return k;
  }
  static std::shared_ptr<const Value> MakeValue(int64_t size) {
    auto e = std::make_shared<TokenMaskEntry>();
    e->ids.assign(static_cast<size_t>(size), 7);
    return e;
  }
  static int64_t SizeOf(const Value& v) { return static_cast<int64_t>(v.ids.size()); }
};

template <typename T>
class FencedLruCacheTest : public ::testing::Test {
 protected:
  using Cache = typename T::Cache;
  using ValuePtr = std::shared_ptr<const typename T::Value>;

  // Gets key i, computing a value of `size` bytes.
  static ValuePtr Get(Cache& c, int i, int64_t size) {
    return c.GetOrCompute(T::MakeKey(i), [&] { return T::MakeValue(size); }, T::SizeOf);
  }
  // Gets key i with a computation that signals `started`, waits for `release`, then returns a value
  // of `size` bytes (or throws when size < 0). Counts computations in `calls`.
  static std::future<ValuePtr> GetBlocked(Cache& c, int i, int64_t size, Gate* started, Gate* release,
                                          std::atomic<int>* calls) {
    return std::async(std::launch::async, [&c, i, size, started, release, calls] {
      return c.GetOrCompute(
          T::MakeKey(i),
          [&] {
            ++*calls;
            started->Open();
            if (!release->Wait()) throw std::runtime_error("release gate timed out");
            if (size < 0) throw std::runtime_error("compile error");
            return T::MakeValue(size);
          },
          T::SizeOf);
    });
  }
  static void ExpectCountMatchesEntries(const Cache& c) {
    auto sizes = c.EntrySizes();
    EXPECT_EQ(c.SizeBytes(), std::accumulate(sizes.begin(), sizes.end(), int64_t{0}));
    EXPECT_EQ(c.NumEntries(), sizes.size());
  }
};

using Levels = ::testing::Types<GrammarLevel, RuleLevel>;
TYPED_TEST_SUITE(FencedLruCacheTest, Levels);

TYPED_TEST(FencedLruCacheTest, ClearWithNothingInFlightResetsTheCountToZero) {
  typename TestFixture::Cache c(-1);
  this->Get(c, 1, 10);
  this->Get(c, 2, 20);
  this->Get(c, 3, 30);
  EXPECT_EQ(c.SizeBytes(), 60);
  this->ExpectCountMatchesEntries(c);
  c.Clear();
  EXPECT_EQ(c.SizeBytes(), 0);
  EXPECT_EQ(c.NumEntries(), 0u);
  this->Get(c, 1, 10);
  EXPECT_EQ(c.SizeBytes(), 10);
}

TYPED_TEST(FencedLruCacheTest, ComputationFinishingAfterAClearIsNeitherCountedNorCached) {
  typename TestFixture::Cache c(-1);
  Gate started, release;
  std::atomic<int> calls{0};
  auto result = this->GetBlocked(c, 1, 100, &started, &release, &calls);
  OpenGatesOnExit guard{{&release}};
  ASSERT_TRUE(started.Wait());
  c.Clear();
  release.Open();
  ASSERT_EQ(result.wait_for(kBound), std::future_status::ready);
  EXPECT_EQ(TypeParam::SizeOf(*result.get()), 100);  // the caller still gets its value
  EXPECT_EQ(c.SizeBytes(), 0);
  EXPECT_EQ(c.NumEntries(), 0u);
  // The same key after the clear compiles again and counts exactly once.
  this->Get(c, 1, 100);
  this->Get(c, 1, 100);
  EXPECT_EQ(c.SizeBytes(), 100);
  EXPECT_EQ(c.NumEntries(), 1u);
  EXPECT_EQ(calls.load(), 1);
}

TYPED_TEST(FencedLruCacheTest, ComputationThrowingAfterAClearIsNeitherCountedNorCached) {
  // A (started before the clear) throws while B (the same key, started after it) is computing: A's
  // failure must not remove B's slot, so a third caller C waits for B instead of compiling again.
  typename TestFixture::Cache c(-1);
  Gate a_started, a_release, b_started, b_release, c_started, never, c_waits;
  c.SetWaitHookForTesting([&] { c_waits.Open(); });
  std::atomic<int> calls{0};
  std::future<typename TestFixture::ValuePtr> b, third;
  auto a = this->GetBlocked(c, 1, -1, &a_started, &a_release, &calls);
  OpenGatesOnExit guard{{&a_release, &b_release, &never}};
  ASSERT_TRUE(a_started.Wait());
  c.Clear();
  b = this->GetBlocked(c, 1, 100, &b_started, &b_release, &calls);
  ASSERT_TRUE(b_started.Wait());
  a_release.Open();
  ASSERT_EQ(a.wait_for(kBound), std::future_status::ready);
  EXPECT_THROW(a.get(), std::runtime_error);
  EXPECT_EQ(c.SizeBytes(), 0);
  third = this->GetBlocked(c, 1, 100, &c_started, &never, &calls);
  ASSERT_TRUE(c_waits.Wait()) << "the third caller compiled again instead of waiting for B";
  b_release.Open();
  ASSERT_EQ(b.wait_for(kBound), std::future_status::ready);
  ASSERT_EQ(third.wait_for(kBound), std::future_status::ready);
  EXPECT_EQ(b.get(), third.get());
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(c.SizeBytes(), 100);
  EXPECT_EQ(c.NumEntries(), 1u);
  this->ExpectCountMatchesEntries(c);
}

TYPED_TEST(FencedLruCacheTest, ThrowingComputationIsNotCachedAndWaitersGetTheException) {
  typename TestFixture::Cache c(-1);
  Gate started, release, never, second_waits;
  c.SetWaitHookForTesting([&] { second_waits.Open(); });
  std::atomic<int> calls{0};
  Gate second_started;  // opened only if the second caller computes, which it must not
  std::future<typename TestFixture::ValuePtr> second;
  auto first = this->GetBlocked(c, 1, -1, &started, &release, &calls);
  OpenGatesOnExit guard{{&release, &never}};
  ASSERT_TRUE(started.Wait());
  second = this->GetBlocked(c, 1, 10, &second_started, &never, &calls);
  ASSERT_TRUE(second_waits.Wait());  // the second caller waits on the first's computation
  release.Open();
  ASSERT_EQ(first.wait_for(kBound), std::future_status::ready);
  ASSERT_EQ(second.wait_for(kBound), std::future_status::ready);
  EXPECT_THROW(first.get(), std::runtime_error);
  EXPECT_THROW(second.get(), std::runtime_error);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c.SizeBytes(), 0);
  EXPECT_EQ(c.NumEntries(), 0u);
}

TYPED_TEST(FencedLruCacheTest, ClearDoesNotWaitForComputationsInFlight) {
  typename TestFixture::Cache c(-1);
  Gate started, release, never, waiter_waits;
  c.SetWaitHookForTesting([&] { waiter_waits.Open(); });
  std::atomic<int> calls{0};
  Gate waiter_started;
  std::future<typename TestFixture::ValuePtr> waiting;
  std::future<void> cleared;
  auto computing = this->GetBlocked(c, 1, 100, &started, &release, &calls);
  OpenGatesOnExit guard{{&release, &never}};
  ASSERT_TRUE(started.Wait());
  // A second caller waits on the same computation across the clear.
  waiting = this->GetBlocked(c, 1, 7, &waiter_started, &never, &calls);
  ASSERT_TRUE(waiter_waits.Wait());
  cleared = std::async(std::launch::async, [&] { c.Clear(); });
  ASSERT_EQ(cleared.wait_for(kBound), std::future_status::ready) << "Clear() blocked on a computation in flight";
  EXPECT_EQ(computing.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  release.Open();
  ASSERT_EQ(computing.wait_for(kBound), std::future_status::ready);
  ASSERT_EQ(waiting.wait_for(kBound), std::future_status::ready);
  EXPECT_EQ(computing.get(), waiting.get());  // one computation, one value for both
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c.SizeBytes(), 0);
}

TYPED_TEST(FencedLruCacheTest, ConcurrentRequestsForOneKeyComputeOnce) {
  typename TestFixture::Cache c(-1);
  Gate started, release, never;
  std::atomic<int> calls{0};
  std::vector<Gate> unused(4);
  std::vector<std::future<typename TestFixture::ValuePtr>> others;
  std::atomic<int> waiting{0};
  Gate all_waiting;
  c.SetWaitHookForTesting([&] {
    if (++waiting == 4) all_waiting.Open();
  });
  auto first = this->GetBlocked(c, 1, 40, &started, &release, &calls);
  OpenGatesOnExit guard{{&release, &never}};
  ASSERT_TRUE(started.Wait());
  for (auto& g : unused) others.push_back(this->GetBlocked(c, 1, 40, &g, &never, &calls));
  ASSERT_TRUE(all_waiting.Wait());
  release.Open();
  ASSERT_EQ(first.wait_for(kBound), std::future_status::ready);
  auto value = first.get();
  for (auto& f : others) {
    ASSERT_EQ(f.wait_for(kBound), std::future_status::ready);
    EXPECT_EQ(f.get(), value);
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c.SizeBytes(), 40);
}

TYPED_TEST(FencedLruCacheTest, BudgetEvictionKeepsTheCountExact) {
  typename TestFixture::Cache c(100);
  this->Get(c, 1, 40);
  this->Get(c, 2, 40);
  this->Get(c, 1, 40);  // key 1 is now the most recently used
  this->Get(c, 3, 40);  // 120 > 100: evicts key 2 (least recently used)
  EXPECT_EQ(c.SizeBytes(), 80);
  this->ExpectCountMatchesEntries(c);
  std::atomic<int> calls{0};
  c.GetOrCompute(TypeParam::MakeKey(1), [&] { ++calls; return TypeParam::MakeValue(40); }, TypeParam::SizeOf);
  EXPECT_EQ(calls.load(), 0) << "key 1 should have survived";
  c.GetOrCompute(TypeParam::MakeKey(2), [&] { ++calls; return TypeParam::MakeValue(40); }, TypeParam::SizeOf);
  EXPECT_EQ(calls.load(), 1) << "key 2 should have been evicted";
  this->ExpectCountMatchesEntries(c);
  // Larger than the whole budget: returned, not kept, count unchanged.
  const int64_t before = c.SizeBytes();
  auto big = this->Get(c, 9, 150);
  EXPECT_EQ(TypeParam::SizeOf(*big), 150);
  EXPECT_EQ(c.SizeBytes(), before);
  this->ExpectCountMatchesEntries(c);
}

TYPED_TEST(FencedLruCacheTest, BudgetEvictionOfASizeKnownOnlyAfterAClearRace) {
  // A computation of unknown size races a clear and other insertions in budget mode: the count stays
  // the sum of what is held.
  typename TestFixture::Cache c(100);
  Gate started, release;
  std::atomic<int> calls{0};
  this->Get(c, 1, 60);
  auto late = this->GetBlocked(c, 2, 90, &started, &release, &calls);
  OpenGatesOnExit guard{{&release}};
  ASSERT_TRUE(started.Wait());
  c.Clear();
  this->Get(c, 3, 70);
  release.Open();
  ASSERT_EQ(late.wait_for(kBound), std::future_status::ready);
  late.get();
  EXPECT_EQ(c.SizeBytes(), 70);
  this->ExpectCountMatchesEntries(c);
}

}  // namespace
}  // namespace xg
