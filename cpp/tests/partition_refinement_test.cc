// RefineBlocks (automata/partition_refinement.h): on random complete and partial DFAs it finds the same
// partition as plain Moore refinement from final / not final, and it gives up past its work budget.
#include "automata/partition_refinement.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace xg {
namespace {

// A DFA over `k` letters; next[s * k + a] < 0: no transition.
struct TableDfa {
  int32_t n = 0, k = 0;
  std::vector<int32_t> next;
  std::vector<uint8_t> final;
  int32_t Size() const { return n; }
  bool Final(int32_t s) const { return final[s]; }
  template <class F>
  void ForEachTarget(int32_t s, F f) const {
    for (int32_t a = 0; a < k; ++a)
      if (next[s * k + a] >= 0) f(next[s * k + a]);
  }
  void Signature(int32_t s, const std::vector<int32_t>& block, std::vector<int32_t>* sig) const {
    sig->clear();
    for (int32_t a = 0; a < k; ++a) sig->push_back(next[s * k + a] < 0 ? -1 : block[next[s * k + a]]);
  }
};

// Plain Moore: rounds of (finality, successors' classes) until the class count is stable.
std::vector<int32_t> MooreClasses(const TableDfa& d) {
  std::vector<int32_t> cls(d.n);
  for (int32_t s = 0; s < d.n; ++s) cls[s] = d.final[s];
  for (size_t count = 0;;) {
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<int32_t> next(d.n);
    for (int32_t s = 0; s < d.n; ++s) {
      std::vector<int32_t> key{cls[s]};
      for (int32_t a = 0; a < d.k; ++a) key.push_back(d.next[s * d.k + a] < 0 ? -1 : cls[d.next[s * d.k + a]]);
      next[s] = ids.emplace(key, static_cast<int32_t>(ids.size())).first->second;
    }
    cls = next;
    if (ids.size() == count) return cls;
    count = ids.size();
  }
}

TEST(PartitionRefinement, AgreesWithPlainMooreOnRandomDfas) {
  std::mt19937 rng(11);
  PartitionScratch scratch;  // reused across automata, as the callers do
  for (int trial = 0; trial < 400; ++trial) {
    TableDfa d;
    d.n = 1 + static_cast<int32_t>(rng() % 40);
    d.k = 1 + static_cast<int32_t>(rng() % 4);
    const bool partial = trial % 2 == 1;
    // Few targets per trial so that many states are equivalent.
    const int32_t targets = 1 + static_cast<int32_t>(rng() % d.n);
    for (int32_t i = 0; i < d.n * d.k; ++i)
      d.next.push_back(partial && rng() % 3 == 0 ? -1 : static_cast<int32_t>(rng() % targets));
    for (int32_t s = 0; s < d.n; ++s) d.final.push_back(rng() % 3 == 0);
    int32_t num_blocks = 0;
    ASSERT_TRUE(RefineBlocks(d, 1 << 20, &scratch, &num_blocks));
    const std::vector<int32_t> moore = MooreClasses(d);
    int32_t moore_count = 0;
    for (int32_t c : moore) moore_count = std::max(moore_count, c + 1);
    EXPECT_EQ(num_blocks, moore_count) << "trial " << trial;
    for (int32_t s = 0; s < d.n; ++s) {
      ASSERT_GE(scratch.block[s], 0);
      ASSERT_LT(scratch.block[s], num_blocks);
      for (int32_t t = 0; t < d.n; ++t)
        ASSERT_EQ(scratch.block[s] == scratch.block[t], moore[s] == moore[t]) << "trial " << trial << " " << s << " " << t;
    }
  }
}

TEST(PartitionRefinement, GivesUpPastItsWorkBudget) {
  // A chain of 100 non-final states into one final state: every state is its own class.
  TableDfa d;
  d.n = 101;
  d.k = 1;
  for (int32_t s = 0; s < d.n; ++s) d.next.push_back(s + 1 < d.n ? s + 1 : -1), d.final.push_back(s + 1 == d.n);
  PartitionScratch scratch;
  int32_t num_blocks = 0;
  ASSERT_TRUE(RefineBlocks(d, 1 << 20, &scratch, &num_blocks));
  EXPECT_EQ(num_blocks, 101);
  // Two 2-cycles of final / non-final states: blocks {0, 2} and {1, 3}. Examining one 2-state block costs 2
  // signatures, past a budget of 1.
  TableDfa cycle;
  cycle.n = 4;
  cycle.k = 1;
  cycle.next = {1, 0, 3, 2};
  cycle.final = {1, 0, 1, 0};
  EXPECT_FALSE(RefineBlocks(cycle, 1, &scratch, &num_blocks));
  ASSERT_TRUE(RefineBlocks(cycle, 100, &scratch, &num_blocks));
  EXPECT_EQ(num_blocks, 2);
}

}  // namespace
}  // namespace xg
