#include "support/utf8.h"

#include <gtest/gtest.h>

namespace xg {
namespace {

// Every code point in [lo, hi] must match exactly one sequence, and nothing outside may match.
bool Matches(const std::vector<Utf8Sequence>& seqs, uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  int hits = 0;
  for (auto& seq : seqs) {
    if (seq.size() != s.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < s.size(); ++i) {
      uint8_t b = static_cast<uint8_t>(s[i]);
      ok &= b >= seq[i].lo && b <= seq[i].hi;
    }
    hits += ok;
  }
  EXPECT_LE(hits, 1) << "code point " << cp << " matched twice";
  return hits == 1;
}

TEST(Utf8Sequences, ExactCoverOfRanges) {
  const std::pair<uint32_t, uint32_t> ranges[] = {{0, 0x7F},       {0x41, 0x5A},     {0x80, 0x7FF},
                                                   {0x430, 0x44F},  {0x4E00, 0x9FA5}, {0x7F0, 0x10FFFF},
                                                   {0x1F600, 0x1F64F}, {0xD000, 0xE100}};
  for (auto [lo, hi] : ranges) {
    auto seqs = Utf8Sequences(lo, hi);
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x12000 ? 1 : 97)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      bool inside = cp >= lo && cp <= hi;
      ASSERT_EQ(Matches(seqs, cp), inside) << "range [" << lo << "," << hi << "] cp " << cp;
    }
  }
}

TEST(Utf8, DecodeRejectsInvalid) {
  uint32_t cp;
  size_t pos = 0;
  EXPECT_FALSE(DecodeUtf8(std::string("\xC0\x80"), &pos, &cp));          // overlong
  EXPECT_FALSE(DecodeUtf8(std::string("\xED\xA0\x80"), &pos, &cp));      // surrogate
  EXPECT_FALSE(DecodeUtf8(std::string("\xF4\x90\x80\x80"), &pos, &cp));  // > U+10FFFF
  EXPECT_FALSE(DecodeUtf8(std::string("\xE4\xB8"), &pos, &cp));          // truncated
  EXPECT_EQ(pos, 0u);
  EXPECT_TRUE(DecodeUtf8(std::string("\xE4\xB8\xAD"), &pos, &cp));
  EXPECT_EQ(cp, 0x4E2Du);
  EXPECT_EQ(pos, 3u);
}

TEST(NormalizeRanges, NegationDropsSurrogatesAndMerges) {
  auto r = NormalizeRanges({{'a', 'c'}, {'b', 'f'}, {'x', 'x'}}, false);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], std::make_pair(uint32_t('a'), uint32_t('f')));
  auto n = NormalizeRanges({{0, 0x7F}}, true);
  ASSERT_EQ(n.size(), 2u);  // [0x80, 0xD7FF] and [0xE000, 0x10FFFF]
  EXPECT_EQ(n[0].second, 0xD7FFu);
  EXPECT_EQ(n[1].first, 0xE000u);
}

// CharClassIsEmpty is NormalizeRanges(...).empty() without the allocation: checked on classes built from
// the boundary code points (0, the surrogates' ends, the maximum) where the two could part.
TEST(CharClassIsEmpty, AgreesWithNormalizeRanges) {
  const uint32_t points[] = {0, 'a', 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, kMaxCodepoint - 1, kMaxCodepoint};
  std::vector<std::pair<uint32_t, uint32_t>> singles;
  for (uint32_t lo : points)
    for (uint32_t hi : points)
      if (lo <= hi) singles.push_back({lo, hi});
  int empties = 0;
  for (size_t i = 0; i < singles.size(); ++i) {
    for (size_t j = i; j < singles.size(); ++j) {
      for (bool negate : {false, true}) {
        const CodepointRanges one = {singles[i]}, two = {singles[i], singles[j]};
        for (const CodepointRanges& r : {one, two}) {
          const bool empty = NormalizeRanges(r, negate).empty();
          empties += empty;
          ASSERT_EQ(CharClassIsEmpty(r, negate), empty)
              << "negate=" << negate << " [" << r[0].first << "," << r[0].second << "]" << (r.size() > 1 ? " +1" : "");
        }
      }
    }
  }
  EXPECT_GT(empties, 0);  // the surrogate-only classes and the complements of everything
  EXPECT_TRUE(CharClassIsEmpty({{0, kMaxCodepoint}}, true));
  EXPECT_TRUE(CharClassIsEmpty({{0xD800, 0xDFFF}}, false));
  EXPECT_FALSE(CharClassIsEmpty({{0, 0xD7FF}, {0xE000, kMaxCodepoint - 1}}, true));
}

}  // namespace
}  // namespace xg
