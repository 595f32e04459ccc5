// Code-point automata (automata/codepoint_dfa.h): search semantics, names, lengths, products, length
// tracking and the emission plan, each checked against a direct definition on every string over a
// small alphabet; budgets raise LimitError.
#include "automata/codepoint_dfa.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "automata/regex_parser.h"
#include "support/check.h"

namespace xg {
namespace {

std::vector<uint32_t> Cps(const std::u32string& s) { return {s.begin(), s.end()}; }

bool Accepts(const CodepointDfa& d, const std::u32string& s, int32_t component = 0) {
  const int32_t q = d.Run(Cps(s));
  return q >= 0 && d.Accepts(q, component);
}

// Every string over `alphabet` of length <= max_len.
std::vector<std::u32string> AllStrings(const std::u32string& alphabet, int max_len) {
  std::vector<std::u32string> out = {U""};
  for (size_t begin = 0; begin < out.size(); ++begin) {
    if (static_cast<int>(out[begin].size()) == max_len) continue;
    for (char32_t c : alphabet) out.push_back(out[begin] + c);
  }
  return out;
}

// Whether the plan (states reached by following its edges) accepts s.
bool PlanAccepts(const EmissionPlan& plan, const std::u32string& s) {
  if (plan.start < 0) return false;
  std::map<int32_t, const EmissionPlan::State*> by_id;
  for (const auto& st : plan.states) by_id[st.id] = &st;
  auto contains = [](const CodepointRanges& r, uint32_t cp) {
    for (auto [lo, hi] : r) {
      if (lo <= cp && cp <= hi) return true;
    }
    return false;
  };
  const EmissionPlan::State* q = by_id.at(plan.start);
  for (char32_t c : s) {
    if (contains(q->loop, c)) continue;
    const EmissionPlan::State* next = nullptr;
    for (const auto& [t, r] : q->edges) {
      if (contains(r, c)) next = by_id.at(t);
    }
    if (next == nullptr) return false;
    q = next;
  }
  return q->accepting;
}

TEST(CodepointDfa, SearchSemanticsFollowAnchors) {
  struct Case {
    const char* pattern;
    std::function<bool(const std::u32string&)> want;
  } cases[] = {
      {"ab", [](const std::u32string& s) { return s.find(U"ab") != std::u32string::npos; }},
      {"^ab", [](const std::u32string& s) { return s.rfind(U"ab", 0) == 0; }},
      {"ab$", [](const std::u32string& s) { return s.size() >= 2 && s.substr(s.size() - 2) == U"ab"; }},
      {"^(ab|c)+$",
       [](const std::u32string& s) {
         if (s.empty()) return false;
         for (size_t i = 0; i < s.size();) {
           if (s[i] == 'c') ++i;
           else if (s.compare(i, 2, U"ab") == 0) i += 2;
           else return false;
         }
         return true;
       }},
      {"^a{2,3}$", [](const std::u32string& s) { return s == U"aa" || s == U"aaa"; }},
      {"^[^a]b?$", [](const std::u32string& s) { return !s.empty() && s[0] != 'a' && (s.size() == 1 || s == s.substr(0, 1) + U"b"); }},
      {"^a$|b", [](const std::u32string& s) { return s == U"a" || s.find(U"b") != std::u32string::npos; }},
  };
  for (const Case& c : cases) {
    const CodepointDfa d = SearchDfa(c.pattern, 1000);
    for (const std::u32string& s : AllStrings(U"abc", 5)) {
      EXPECT_EQ(Accepts(d, s), c.want(s)) << c.pattern << " on a string of length " << s.size();
    }
  }
}

// MatchDfa is the whole-string language; FirstMatches keeps the strings with no proper prefix in it.
TEST(CodepointDfa, FirstMatchesEndAtTheFirstCompleteMatch) {
  struct Case {
    const char* pattern;
    std::function<bool(const std::u32string&)> match;
  } cases[] = {
      {"a+", [](const std::u32string& s) { return !s.empty() && s.find_first_not_of(U'a') == std::u32string::npos; }},
      {"[ab]*c", [](const std::u32string& s) {
         return !s.empty() && s.back() == 'c' && s.substr(0, s.size() - 1).find(U'c') == std::u32string::npos;
       }},
      {"ab|abc", [](const std::u32string& s) { return s == U"ab" || s == U"abc"; }},
      {"(a|b)*cc", [](const std::u32string& s) {
         return s.size() >= 2 && s.substr(s.size() - 2) == U"cc" &&
                s.substr(0, s.size() - 2).find(U'c') == std::u32string::npos;
       }},
      {".*c", [](const std::u32string& s) { return !s.empty() && s.back() == 'c'; }},
      {"a*", [](const std::u32string& s) { return s.find_first_not_of(U'a') == std::u32string::npos; }},
  };
  for (const Case& c : cases) {
    const CodepointDfa whole = MatchDfa(c.pattern, {{0, kMaxCodepoint}}, false, 1000);
    const CodepointDfa first = FirstMatches(whole);
    for (const std::u32string& s : AllStrings(U"abc", 6)) {
      EXPECT_EQ(Accepts(whole, s), c.match(s)) << c.pattern << " whole, length " << s.size();
      bool prefix_matches = false;
      for (size_t k = 0; k < s.size(); ++k) prefix_matches = prefix_matches || c.match(s.substr(0, k));
      EXPECT_EQ(Accepts(first, s), c.match(s) && !prefix_matches) << c.pattern << " first, length " << s.size();
    }
  }
  // After n code points (xgrammar's max_chars): no proper prefix of at least n code points matches.
  for (const Case& c : cases) {
    const CodepointDfa whole = MatchDfa(c.pattern, {{0, kMaxCodepoint}}, false, 1000);
    for (int64_t n : {1, 2, 3}) {
      const CodepointDfa after = FirstMatches(whole, n);
      for (const std::u32string& s : AllStrings(U"abc", 6)) {
        bool long_prefix_matches = false;
        for (size_t k = static_cast<size_t>(n); k < s.size(); ++k)
          long_prefix_matches = long_prefix_matches || c.match(s.substr(0, k));
        EXPECT_EQ(Accepts(after, s), c.match(s) && !long_prefix_matches) << c.pattern << " after " << n;
      }
    }
  }
  EXPECT_THROW(FirstMatches(MatchDfa(".*", {{0, kMaxCodepoint}}, false, 100), 1000, 100), LimitError);
  // A budget that closes a body without its marker (Lark's max_chars with suffix): the text ends at its first point
  // that is a body and the marker, or, n code points in, a whole body.
  for (const Case& c : cases) {
    const CodepointDfa marked = MatchDfa(std::string("(?:") + c.pattern + ")c", {{0, kMaxCodepoint}}, false, 1000);
    const CodepointDfa body = MatchDfa(c.pattern, {{0, kMaxCodepoint}}, false, 1000);
    for (int64_t n : {0, 2, 3}) {
      const CodepointDfa closed = FirstMatchesOrBudget(marked, body, n);
      auto ends = [&](const std::u32string& t) {
        return (!t.empty() && t.back() == U'c' && c.match(t.substr(0, t.size() - 1))) ||
               (static_cast<int64_t>(t.size()) >= n && c.match(t));
      };
      for (const std::u32string& s : AllStrings(U"abc", 6)) {
        bool prefix_ends = false;
        for (size_t k = 0; k < s.size(); ++k) prefix_ends = prefix_ends || ends(s.substr(0, k));
        EXPECT_EQ(Accepts(closed, s), ends(s) && !prefix_ends) << c.pattern << " closed after " << n;
      }
    }
    // The body before the first body-and-marker (a suffix rule's body that its token budget closes).
    const CodepointDfa before = MatchesBefore(body, marked);
    for (const std::u32string& s : AllStrings(U"abc", 6)) {
      bool marked_prefix = false;
      for (size_t k = 0; k < s.size(); ++k)
        marked_prefix = marked_prefix || (s[k] == U'c' && c.match(s.substr(0, k)) && k + 1 < s.size());
      EXPECT_EQ(Accepts(before, s), c.match(s) && !marked_prefix) << c.pattern << " before its marker";
    }
  }
  // Case folding and the caller's `.`.
  const CodepointDfa folded = MatchDfa("ab", {{0, kMaxCodepoint}}, true, 100);
  EXPECT_TRUE(Accepts(folded, U"aB"));
  const CodepointDfa no_newline = MatchDfa(".", {{0, '\n' - 1}, {'\n' + 1, kMaxCodepoint}}, false, 100);
  EXPECT_FALSE(Accepts(no_newline, U"\n"));
  EXPECT_TRUE(Accepts(no_newline, U"x"));
}

TEST(CodepointDfa, LargeCountsAndUnicodeCategories) {
  const CodepointDfa d = SearchDfa("^[a-z0-9_-]{1,128}$", 1000);
  EXPECT_TRUE(Accepts(d, std::u32string(128, 'a')));
  EXPECT_FALSE(Accepts(d, std::u32string(129, 'a')));
  EXPECT_FALSE(Accepts(d, U""));
  const CodepointDfa letters = SearchDfa("^\\p{L}+$", 1000);
  EXPECT_TRUE(Accepts(letters, U"a\u00e9\u03a9\u4e2d"));
  EXPECT_FALSE(Accepts(letters, U"a1"));
  EXPECT_FALSE(Accepts(SearchDfa("^.$", 10), U"\n"));
}

TEST(CodepointDfa, BudgetsRaiseLimitError) {
  EXPECT_THROW(SearchDfa("^(a|b)*a(a|b){12}$", 1000), LimitError);  // 2^13 subsets
  Limits small;
  small.max_automaton_states = 1000;
  EXPECT_THROW(SearchDfa("(a{100}){100}", 100000, small), LimitError);
  EXPECT_THROW(SearchDfa("(a", 1000), RegexError);
  EXPECT_THROW(LengthDfa(0, 5000, 1000), LimitError);
}

TEST(CodepointDfa, NamesLengthsAndProducts) {
  const CodepointDfa names = NamesDfa({"ab", "a", "\xc3\xa9"});
  const CodepointDfa len = LengthDfa(1, 2, 100);
  const CodepointDfa pat = SearchDfa("b", 100);
  const CodepointDfa p = ProductDfa({&names, &len, &pat}, 1000);
  ASSERT_EQ(p.num_components(), 3);
  for (const std::u32string& s : AllStrings(U"ab\u00e9", 4)) {
    const bool is_name = s == U"ab" || s == U"a" || s == U"\u00e9";
    EXPECT_EQ(Accepts(p, s, 0), is_name);
    EXPECT_EQ(Accepts(p, s, 1), s.size() >= 1 && s.size() <= 2);
    EXPECT_EQ(Accepts(p, s, 2), s.find(U"b") != std::u32string::npos);
    // Required: the pattern; excluded: the names; length 1..3, tracked through the product.
    const CodepointDfa req = ProductWithLength({&pat, &names}, 1, 1, 3, 1000);
    EXPECT_EQ(Accepts(req, s), !is_name && s.size() >= 1 && s.size() <= 3 && s.find(U"b") != std::u32string::npos);
  }
  EXPECT_EQ(NamesDfa({}).num_states(), 1);
}

TEST(CodepointDfa, ProductWithLengthDropsTheCountOnceItCannotDecide) {
  // "x" then anything: from the second code point on, every completion is within [0, unbounded).
  const CodepointDfa any = SearchDfa("^x", 100);
  const CodepointDfa d = ProductWithLength({&any}, 1, 3, -1, 100);
  EXPECT_LE(d.num_states(), 5);
  EXPECT_FALSE(Accepts(d, U"xa"));
  EXPECT_TRUE(Accepts(d, U"xab"));
  EXPECT_TRUE(Accepts(d, std::u32string(500, 'x')));
  const CodepointDfa none = ProductWithLength({&any}, 1, 3, 2, 100);  // empty bounds: nothing
  EXPECT_FALSE(Accepts(none, U"xa"));
}

TEST(CodepointDfa, EmissionPlanKeepsTheLanguageAndMerges) {
  for (const char* pattern : {"^(a|b)*c$", "^(ab|ac|ad)$", "a", "^(a|ab)(c|bcd)$", "^a{0,6}$"}) {
    const CodepointDfa d = SearchDfa(pattern, 1000);
    const EmissionPlan merged = PlanEmission(d, 1 << 20);
    const EmissionPlan unmerged = PlanEmission(d, 0);
    EXPECT_LE(merged.states.size(), unmerged.states.size()) << pattern;
    for (const std::u32string& s : AllStrings(U"abcd", 6)) {
      EXPECT_EQ(PlanAccepts(merged, s), Accepts(d, s)) << pattern;
      EXPECT_EQ(PlanAccepts(unmerged, s), Accepts(d, s)) << pattern;
    }
  }
  // "^(ab|ac|ad)$": the states after b, c and d are one class.
  EXPECT_EQ(PlanEmission(SearchDfa("^(ab|ac|ad)$", 100), 1 << 20).states.size(), 3u);
  // `.*` after a match is one state whose transitions are a loop.
  const EmissionPlan tail = PlanEmission(SearchDfa("^a", 100), 1 << 20);
  ASSERT_EQ(tail.states.size(), 2u);
  EXPECT_FALSE(tail.states[1].loop.empty());
  // An empty language has no start.
  EXPECT_EQ(PlanEmission(NamesDfa({}), 1 << 20).start, -1);
}

}  // namespace
}  // namespace xg
