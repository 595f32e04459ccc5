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

namespace {

// A state the walk can step through without Earley machinery: no rule to predict, nothing to
// complete. While the isolated item (origin kTopOrigin) sits alone in such states, scanning a byte
// is one table lookup; the parser set is only materialised when the item leaves them.
bool IsPlainState(const GrammarFsm& fsm, int32_t s) {
  return !fsm.IsFinal(s) && fsm.RuleEdgesBegin(s) == fsm.RuleEdgesEnd(s);
}

}  // namespace

TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state) {
  EarleyParser parser(&fsm);
  parser.ResetToItem(state);
  const int32_t n = tok.NumSorted();
  // Positions in the sorted vocabulary; rejected tokens are the rest and are never listed here
  // (most states reject most of the vocabulary).
  std::vector<int32_t> accepted, uncertain;
  // Per depth d (bytes read): follow_done[d] - a follow rule completed in sets 1..d;
  // plain[d] - the lone isolated item's state when the walk stepped it directly (else -1);
  // sets_at[d] - parser.NumSets() at depth d.
  std::vector<uint8_t> follow_done(1, 0);
  std::vector<int32_t> plain(1, -1), sets_at(1, 1);
  {
    const EarleyItem* b = parser.SetBegin(0);
    if (parser.SetEnd(0) - b == 1 && b->origin == EarleyParser::kTopOrigin) plain[0] = b->state;
  }

  int32_t depth = 0;  // bytes of the current prefix the walk holds
  for (int32_t i = 0; i < n;) {
    std::string_view t = tok.SortedToken(i);
    const int32_t len = static_cast<int32_t>(t.size());
    if (static_cast<int32_t>(follow_done.size()) < len + 1) {
      follow_done.resize(len + 1, 0);
      plain.resize(len + 1, -1);
      sets_at.resize(len + 1, 1);
    }
    // Back to the common prefix with the previous token.
    depth = std::min(depth, i == 0 ? 0 : tok.Lcp(i));
    parser.PopSets(parser.NumSets() - sets_at[depth]);
    bool dead = false;
    for (; depth < len; ++depth) {
      const uint8_t byte = static_cast<uint8_t>(t[depth]);
      const int32_t d = depth;
      if (plain[d] >= 0) {
        int32_t next = fsm.Next(plain[d], byte);
        if (next < 0) {
          dead = true;
          break;
        }
        if (IsPlainState(fsm, next)) {
          plain[d + 1] = next;
          sets_at[d + 1] = sets_at[d];
          follow_done[d + 1] = follow_done[d];
          continue;
        }
        parser.PushSet({next, EarleyParser::kTopOrigin, 0});
      } else if (!parser.Advance(byte)) {
        dead = true;
        break;
      }
      sets_at[d + 1] = parser.NumSets();
      const int32_t k = parser.NumSets() - 1;
      const EarleyItem* b = parser.SetBegin(k);
      plain[d + 1] = (parser.SetEnd(k) - b == 1 && b->origin == EarleyParser::kTopOrigin) ? b->state : -1;
      follow_done[d + 1] = follow_done[d] | ((parser.SetFlags(k) & EarleyParser::kFollowCompleted) != 0);
    }
    if (dead) {
      // Every token sharing the first depth+1 bytes dies at the same byte with the same history.
      int32_t end = tok.RunEnd(i, depth + 1);
      if (follow_done[depth])
        for (int32_t j = i; j < end; ++j) uncertain.push_back(j);
      i = end;
      continue;
    }
    bool ok;
    if (plain[len] >= 0) {
      // The isolated item alone is alive (lineage 0); the parser may not hold this depth's set.
      ok = true;
    } else {
      const int32_t k = parser.NumSets() - 1;
      ok = parser.LastSetHasLineage0() || (parser.SetFlags(k) & EarleyParser::kTopCompleted);
    }
    (ok ? accepted : uncertain).push_back(i);
    ++i;
  }

  TokenMaskEntry e;
  e.num_accepted = static_cast<int32_t>(accepted.size());
  const size_t num_rejected = n - accepted.size() - uncertain.size();
  const size_t bitset_words = tok.MaskWords();
  if (accepted.size() <= num_rejected && accepted.size() < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kAcceptedList;
    for (int32_t p : accepted) e.ids.push_back(tok.SortedId(p));
    std::sort(e.ids.begin(), e.ids.end());
  } else if (num_rejected < accepted.size() && num_rejected < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kRejectedList;
    std::vector<uint8_t> listed(n, 0);
    for (int32_t p : accepted) listed[p] = 1;
    for (int32_t p : uncertain) listed[p] = 1;
    for (int32_t p = 0; p < n; ++p)
      if (!listed[p]) e.ids.push_back(tok.SortedId(p));
    std::sort(e.ids.begin(), e.ids.end());
  } else {
    e.storage = TokenMaskEntry::Storage::kBitset;
    e.bits.assign(bitset_words, 0);
    for (int32_t p : accepted) {
      int32_t id = tok.SortedId(p);
      e.bits[id >> 5] |= 1u << (id & 31);
    }
  }
  e.uncertain = std::move(uncertain);
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
