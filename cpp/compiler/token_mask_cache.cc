#include "compiler/token_mask_cache.h"

#include <algorithm>

#include "parser/earley_parser.h"

namespace xg {

void TokenMaskEntry::OrAccepted(const TokenizerInfo& tok, uint32_t* words, std::vector<uint32_t>* scratch) const {
  const int32_t n = tok.MaskWords();
  switch (storage) {
    case Storage::kAcceptedList:
      for (int32_t id : ids) words[id >> 5] |= 1u << (id & 31);
      return;
    case Storage::kBitset:
      for (int32_t i = 0; i < n; ++i) words[i] |= bits[i];
      return;
    case Storage::kRejectedList: {
      std::vector<uint32_t>& s = *scratch;
      const std::vector<uint32_t>& normal = tok.NormalMask();
      std::copy(normal.begin(), normal.end(), s.begin());
      for (int32_t id : ids) s[id >> 5] &= ~(1u << (id & 31));
      for (int32_t u : uncertain) {
        int32_t id = tok.SortedId(u);
        s[id >> 5] &= ~(1u << (id & 31));
      }
      for (int32_t i = 0; i < n; ++i) words[i] |= s[i];
      return;
    }
  }
}

void TokenMaskEntry::WriteAccepted(const TokenizerInfo& tok, uint32_t* words) const {
  const int32_t n = tok.MaskWords();
  switch (storage) {
    case Storage::kAcceptedList:
      std::fill(words, words + n, 0u);
      for (int32_t id : ids) words[id >> 5] |= 1u << (id & 31);
      return;
    case Storage::kBitset:
      std::copy(bits.begin(), bits.end(), words);
      return;
    case Storage::kRejectedList: {
      const std::vector<uint32_t>& normal = tok.NormalMask();
      std::copy(normal.begin(), normal.end(), words);
      for (int32_t id : ids) words[id >> 5] &= ~(1u << (id & 31));
      for (int32_t u : uncertain) {
        int32_t id = tok.SortedId(u);
        words[id >> 5] &= ~(1u << (id & 31));
      }
      return;
    }
  }
}

TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state) {
  EarleyParser parser(&fsm);
  parser.ResetToItem(state);
  const int32_t n = tok.NumSorted();
  std::vector<int32_t> accepted, rejected, uncertain;
  std::vector<uint8_t> follow_done(1, 0);  // follow_done[d]: a follow rule completed in sets 1..d

  for (int32_t i = 0; i < n;) {
    std::string_view t = tok.SortedToken(i);
    const int32_t len = static_cast<int32_t>(t.size());
    int32_t depth = parser.NumSets() - 1;
    int32_t keep = std::min(i == 0 ? 0 : tok.Lcp(i), depth);
    parser.PopSets(depth - keep);
    if (static_cast<int32_t>(follow_done.size()) < len + 1) follow_done.resize(len + 1, 0);
    int32_t d = keep;
    bool dead = false;
    for (; d < len; ++d) {
      if (!parser.Advance(static_cast<uint8_t>(t[d]))) {
        dead = true;
        break;
      }
      follow_done[d + 1] = follow_done[d] | ((parser.SetFlags(d + 1) & EarleyParser::kFollowCompleted) != 0);
    }
    if (dead) {
      // Every token sharing the first d+1 bytes dies at the same byte with the same history.
      bool unsure = follow_done[d];
      int32_t j = i;
      do {
        (unsure ? uncertain : rejected).push_back(j);
        ++j;
      } while (j < n && tok.Lcp(j) >= d + 1);
      i = j;
      continue;
    }
    bool ok = parser.LastSetHasLineage0() || (parser.SetFlags(len) & EarleyParser::kTopCompleted);
    (ok ? accepted : uncertain).push_back(i);
    ++i;
  }

  TokenMaskEntry e;
  e.uncertain = std::move(uncertain);
  e.num_accepted = static_cast<int32_t>(accepted.size());
  auto to_ids = [&](std::vector<int32_t>& v) {
    for (auto& x : v) x = tok.SortedId(x);
    std::sort(v.begin(), v.end());
  };
  size_t bitset_words = tok.MaskWords();
  if (accepted.size() <= rejected.size() && accepted.size() < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kAcceptedList;
    to_ids(accepted);
    e.ids = std::move(accepted);
  } else if (rejected.size() < accepted.size() && rejected.size() < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kRejectedList;
    to_ids(rejected);
    e.ids = std::move(rejected);
  } else {
    e.storage = TokenMaskEntry::Storage::kBitset;
    e.bits.assign(bitset_words, 0);
    for (int32_t x : accepted) {
      int32_t id = tok.SortedId(x);
      e.bits[id >> 5] |= 1u << (id & 31);
    }
  }
  return e;
}

}  // namespace xg

namespace xg {

ContextMaskEntry BuildContextMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                       const std::vector<int32_t>& parent_states,
                                       const std::vector<int32_t>& base_uncertain) {
  EarleyParser parser(&fsm);
  parser.ResetToItem(state, &parent_states);
  ContextMaskEntry out;
  std::vector<uint8_t> follow_done(1, 0);
  std::string_view prev;
  int32_t dead_at = -1;
  bool dead_unsure = false;
  for (size_t k = 0; k < base_uncertain.size(); ++k) {
    const int32_t pos = base_uncertain[k];
    std::string_view t = tok.SortedToken(pos);
    int32_t lcp = 0;
    if (k > 0) {
      size_t m = std::min(prev.size(), t.size());
      while (static_cast<size_t>(lcp) < m && prev[lcp] == t[lcp]) ++lcp;
    }
    prev = t;
    if (dead_at >= 0 && lcp > dead_at) {  // shares the prefix that already failed
      if (dead_unsure) out.uncertain.push_back(pos);
      continue;
    }
    dead_at = -1;
    const int32_t len = static_cast<int32_t>(t.size());
    int32_t depth = parser.NumSets() - 1;
    int32_t keep = std::min(lcp, depth);
    parser.PopSets(depth - keep);
    if (static_cast<int32_t>(follow_done.size()) < len + 1) follow_done.resize(len + 1, 0);
    int32_t d = keep;
    for (; d < len; ++d) {
      if (!parser.Advance(static_cast<uint8_t>(t[d]))) {
        dead_at = d;
        break;
      }
      follow_done[d + 1] = follow_done[d] | ((parser.SetFlags(d + 1) & EarleyParser::kFollowCompleted) != 0);
    }
    if (dead_at >= 0) {
      dead_unsure = follow_done[dead_at];
      if (dead_unsure) out.uncertain.push_back(pos);
      continue;
    }
    // Alive at the end in this context (any lineage), or a rule completes exactly at the end.
    out.accepted_ids.push_back(tok.SortedId(pos));
  }
  std::sort(out.accepted_ids.begin(), out.accepted_ids.end());
  return out;
}

}  // namespace xg
