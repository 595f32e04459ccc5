// SequenceInterner: ids in order of first appearance, equal sequences share an id, through growth
// and after Clear().
#include "support/sequence_interner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace xg {
namespace {

TEST(SequenceInterner, EqualSequencesShareIdsInOrderOfFirstAppearance) {
  SequenceInterner in;
  EXPECT_EQ(in.Intern(std::vector<int32_t>{1, 2, 3}), std::make_pair(0, true));
  EXPECT_EQ(in.Intern(std::vector<int32_t>{}), std::make_pair(1, true));
  EXPECT_EQ(in.Intern(std::vector<int32_t>{1, 2}), std::make_pair(2, true));  // a prefix is another sequence
  EXPECT_EQ(in.Intern(std::vector<int32_t>{1, 2, 3}), std::make_pair(0, false));
  EXPECT_EQ(in.Intern(std::vector<int32_t>{}), std::make_pair(1, false));
  ASSERT_EQ(in.Size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(in.Data(2), in.Data(2) + in.Length(2)), (std::vector<int32_t>{1, 2}));
}

TEST(SequenceInterner, AgreesWithAMapThroughGrowthAndClear) {
  std::mt19937 rng(7);
  SequenceInterner in;
  for (int round = 0; round < 2; ++round) {
    std::map<std::vector<int32_t>, int32_t> reference;
    for (int i = 0; i < 20000; ++i) {
      std::vector<int32_t> v(rng() % 4);
      for (int32_t& x : v) x = static_cast<int32_t>(rng() % 16) - 2;  // many repeats, negatives too
      auto [it, inserted] = reference.emplace(v, static_cast<int32_t>(reference.size()));
      ASSERT_EQ(in.Intern(v), std::make_pair(it->second, inserted)) << "round " << round << " step " << i;
    }
    EXPECT_EQ(in.Size(), reference.size());
    in.Clear();
    EXPECT_EQ(in.Size(), 0u);
  }
}

}  // namespace
}  // namespace xg
