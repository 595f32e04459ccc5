// AhoCorasick (automata/aho_corasick.h): on random pattern sets over a small alphabet, after every byte of a
// random text the outputs are exactly the patterns that end there (found by brute force), the state's depth
// is the longest suffix of the text that prefixes a pattern, and the rows are byte runs covering 0..255.
#include "automata/aho_corasick.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace xg {
namespace {

std::string RandomString(std::mt19937& rng, int max_len, const std::string& alphabet) {
  std::uniform_int_distribution<int> len(1, max_len), pick(0, static_cast<int>(alphabet.size()) - 1);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += alphabet[pick(rng)];
  return s;
}

TEST(AhoCorasick, OutputsAreThePatternsEndingAtEachByte) {
  std::mt19937 rng(7);
  const std::string alphabet = std::string("ab\xff") + '\0';
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> patterns;
    for (int i = std::uniform_int_distribution<int>(1, 6)(rng); i > 0; --i) patterns.push_back(RandomString(rng, 4, alphabet));
    const AhoCorasick ac(patterns);
    EXPECT_LE(ac.NumStates(), 1 + static_cast<int32_t>(patterns.size()) * 4);
    for (int32_t s = 0; s < ac.NumStates(); ++s) {
      const AhoCorasick::RunSpan span = ac.Row(s);
      const std::vector<AhoCorasick::Run> row(span.begin(), span.end());
      ASSERT_FALSE(row.empty());
      EXPECT_EQ(row.front().lo, 0);
      EXPECT_EQ(row.back().hi, 255);
      for (size_t i = 1; i < row.size(); ++i) {
        EXPECT_EQ(row[i].lo, row[i - 1].hi + 1);
        EXPECT_NE(row[i].target, row[i - 1].target);  // maximal runs
      }
    }
    const std::string text = RandomString(rng, 24, alphabet);
    int32_t state = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      state = ac.Step(state, static_cast<uint8_t>(text[i]));
      const std::string read = text.substr(0, i + 1);
      std::vector<int32_t> want;
      size_t longest = 0;
      for (size_t p = 0; p < patterns.size(); ++p) {
        if (read.size() >= patterns[p].size() && read.compare(read.size() - patterns[p].size(), std::string::npos, patterns[p]) == 0)
          want.push_back(static_cast<int32_t>(p));
        for (size_t k = 1; k <= std::min(read.size(), patterns[p].size()); ++k)
          if (read.compare(read.size() - k, k, patterns[p], 0, k) == 0) longest = std::max(longest, k);
      }
      EXPECT_EQ(ac.Outputs(state), want) << "after " << i + 1 << " bytes";
      EXPECT_EQ(ac.Depth(state), static_cast<int32_t>(longest)) << "after " << i + 1 << " bytes";
    }
  }
}

TEST(AhoCorasick, RepeatedAndNestedPatterns) {
  const AhoCorasick ac({"he", "she", "his", "hers", "he"});
  EXPECT_EQ(ac.NumStates(), 10);  // root, h, he, her, hers, s, sh, she, hi, his
  int32_t s = 0;
  for (char c : std::string("ushe")) s = ac.Step(s, static_cast<uint8_t>(c));
  EXPECT_EQ(ac.Outputs(s), (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(ac.Depth(s), 3);
}

}  // namespace
}  // namespace xg
