#include "parser/earley_parser.h"

#include <algorithm>

#include "support/check.h"

namespace xg {

EarleyParser::EarleyParser(const GrammarFsm* fsm) : fsm_(fsm) {
  hash_keys_.assign(1024, 0);
  hash_stamp_.assign(1024, 0);
}

void EarleyParser::BeginSet() {
  set_flags_.push_back(0);
  leo_.resize(set_flags_.size());
  leo_.back().clear();
}

bool EarleyParser::LeoItem(int32_t origin, int32_t rule, int32_t lineage, EarleyItem* out) {
  for (const LeoMemo& m : leo_[origin]) {
    if (m.rule == rule && m.lineage == lineage) {
      *out = m.item;
      return m.valid;
    }
  }
  const GrammarFsm& g = *fsm_;
  const EarleyItem* waiter = nullptr;
  int32_t target = -1, waiters = 0;
  for (int32_t j = set_begin_[origin]; j < set_begin_[origin + 1] && waiters < 2; ++j) {
    const EarleyItem& w = items_[j];
    if (w.lineage != lineage) continue;
    for (const RuleEdge* e = g.RuleEdgesBegin(w.state); e != g.RuleEdgesEnd(w.state); ++e) {
      if (e->rule == rule) {
        waiter = &w;
        target = e->target;
        ++waiters;
      }
    }
  }
  bool valid = waiters == 1 && g.IsFinal(target) && !g.HasBytes(target) &&
               g.RuleEdgesBegin(target) == g.RuleEdgesEnd(target);
  EarleyItem item{-1, -1, lineage};
  if (valid) {
    item = {target, waiter->origin, lineage};
    EarleyItem above;
    // The waiter's rule completes at once too: continue the chain from its origin.
    if (waiter->origin >= 0 && waiter->origin < origin && LeoItem(waiter->origin, g.RuleOf(target), lineage, &above))
      item = above;
  }
  leo_[origin].push_back({rule, lineage, valid, item});
  *out = item;
  return valid;
}

void EarleyParser::Clear(const std::vector<int32_t>* follow) {
  follow_override_ = follow;
  items_.clear();
  set_begin_.assign(1, 0);
  set_flags_.clear();
}

void EarleyParser::StartWith(int32_t state, int32_t origin) {
  BeginSet();
  set_begin_.push_back(0);
  Add(state, origin, 0);
  Close(0);
}

void EarleyParser::Reset() {
  Clear(nullptr);
  StartWith(fsm_->RuleStart(fsm_->Root()), 0);
}

void EarleyParser::ResetToItem(int32_t state, const std::vector<int32_t>* follow) {
  Clear(follow);
  StartWith(state, kTopOrigin);
}

void EarleyParser::ResetEmpty(const std::vector<int32_t>* follow) { Clear(follow); }

void EarleyParser::PushClosedSet(const EarleyItem* items, size_t n, uint8_t flags) {
  BeginSet();
  set_flags_.back() = flags;
  items_.insert(items_.end(), items, items + n);
  set_begin_.push_back(static_cast<int32_t>(items_.size()));
}

void EarleyParser::Add(int32_t state, int32_t origin, int32_t lineage) {
  // Small sets (the common case) are deduplicated by a linear scan; once a set reaches
  // kLinearLimit items its items move into the open-addressing table.
  constexpr size_t kLinearLimit = 16;
  const size_t begin = set_begin_[set_begin_.size() - 2];
  const size_t n = items_.size() - begin;
  auto key_of = [](int32_t s, int32_t o, int32_t l) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(s)) << 32) | (static_cast<uint32_t>(o + 2) << 1) |
           static_cast<uint32_t>(l);
  };
  auto insert = [&](uint64_t key) -> bool {  // true if newly inserted
    size_t mask = hash_keys_.size() - 1;
    for (size_t h = (key * 0x9E3779B97F4A7C15ull) >> 40;; ++h) {
      h &= mask;
      if (hash_stamp_[h] != stamp_) {
        hash_stamp_[h] = stamp_;
        hash_keys_[h] = key;
        return true;
      }
      if (hash_keys_[h] == key) return false;
    }
  };
  if (n < kLinearLimit) {
    for (size_t i = begin; i < items_.size(); ++i) {
      const EarleyItem& it = items_[i];
      if (it.state == state && it.origin == origin && it.lineage == lineage) return;
    }
  } else {
    if (n == kLinearLimit || (n + 1) * 2 > hash_keys_.size()) {
      // (Re)build the table for this set: first use, or growth.
      if ((n + 1) * 2 > hash_keys_.size()) {
        hash_keys_.assign(hash_keys_.size() * 2, 0);
        hash_stamp_.assign(hash_keys_.size(), 0);
      }
      if (++stamp_ == 0) {
        std::fill(hash_stamp_.begin(), hash_stamp_.end(), 0);
        stamp_ = 1;
      }
      for (size_t i = begin; i < items_.size(); ++i) insert(key_of(items_[i].state, items_[i].origin, items_[i].lineage));
    }
    if (!insert(key_of(state, origin, lineage))) return;
  }
  items_.push_back({state, origin, lineage});
  set_begin_.back() = static_cast<int32_t>(items_.size());
}

void EarleyParser::Close(size_t from) {
  const int32_t k = NumSets() - 1;  // index of the set being built
  const GrammarFsm& g = *fsm_;
  for (size_t i = set_begin_[k] + from; i < items_.size(); ++i) {
    const EarleyItem it = items_[i];
    // Predict.
    for (const RuleEdge* e = g.RuleEdgesBegin(it.state); e != g.RuleEdgesEnd(it.state); ++e) {
      Add(g.RuleStart(e->rule), k, it.lineage);
      if (g.RuleNullable(e->rule)) Add(e->target, it.origin, it.lineage);
    }
    // Complete.
    if (!g.IsFinal(it.state)) continue;
    int32_t rule = g.RuleOf(it.state);
    if (it.origin >= 0) {
      if (it.origin == k) continue;  // empty completion: handled by the nullable rule at prediction
      EarleyItem top;
      if (LeoItem(it.origin, rule, it.lineage, &top)) {
        Add(top.state, top.origin, top.lineage);
        continue;
      }
      // Items of the origin set waiting on `rule`. The origin set is frozen; copy bounds first
      // because Add may reallocate items_.
      int32_t b = set_begin_[it.origin], e = set_begin_[it.origin + 1];
      for (int32_t j = b; j < e; ++j) {
        const EarleyItem w = items_[j];
        if (w.lineage != it.lineage) continue;
        for (const RuleEdge* re = g.RuleEdgesBegin(w.state); re != g.RuleEdgesEnd(w.state); ++re)
          if (re->rule == rule) Add(re->target, w.origin, w.lineage);
      }
    } else if (it.origin == kTopOrigin) {
      if (k == 0) continue;
      set_flags_[k] |= kTopCompleted;
      for (int32_t t : follow_override_ ? *follow_override_ : g.RuleFollow(rule)) Add(t, kFollowOrigin, 1);
    } else {
      set_flags_[k] |= kFollowCompleted;
    }
  }
}

bool EarleyParser::Advance(uint8_t byte) {
  const int32_t k = NumSets() - 1;
  const int32_t b = set_begin_[k], e = set_begin_[k + 1];
  BeginSet();
  set_begin_.push_back(static_cast<int32_t>(items_.size()));
  for (int32_t j = b; j < e; ++j) {
    const EarleyItem it = items_[j];
    int32_t t = fsm_->Next(it.state, byte);
    if (t >= 0) Add(t, it.origin, it.lineage);
  }
  if (static_cast<int32_t>(items_.size()) == e) {
    set_begin_.pop_back();
    set_flags_.pop_back();
    leo_.pop_back();
    return false;
  }
  Close(0);
  return true;
}

void EarleyParser::PopSets(int32_t n) {
  XG_ICHECK(n >= 0 && n < static_cast<int32_t>(set_begin_.size()) - 1) << "PopSets(" << n << ")";
  if (n == 0) return;
  set_begin_.resize(set_begin_.size() - n);
  set_flags_.resize(set_flags_.size() - n);
  leo_.resize(set_flags_.size());
  items_.resize(set_begin_.back());
}

bool EarleyParser::CanAcceptEnd() const {
  int32_t k = NumSets() - 1;
  int32_t root = fsm_->Root();
  for (const EarleyItem* it = SetBegin(k); it != SetEnd(k); ++it)
    if (it->origin == 0 && fsm_->IsFinal(it->state) && fsm_->RuleOf(it->state) == root) return true;
  return false;
}

void EarleyParser::ScannableStates(std::vector<int32_t>* out) const {
  int32_t k = NumSets() - 1;
  size_t start = out->size();
  for (const EarleyItem* it = SetBegin(k); it != SetEnd(k); ++it)
    if (it->lineage == 0 && fsm_->HasBytes(it->state)) out->push_back(it->state);
  std::sort(out->begin() + start, out->end());
  out->erase(std::unique(out->begin() + start, out->end()), out->end());
}

}  // namespace xg
