#include "parser/earley_parser.h"

#include <algorithm>
#include <cstdint>

#include "support/check.h"

namespace xg {

namespace {
// The count after one more X (sentinels stay what they are).
int32_t Incremented(int32_t count) { return count < 0 ? count : count + 1; }
}  // namespace

int32_t CountClass(const GrammarFsm& fsm, int32_t rule, int32_t count_after, int32_t max_token_bytes) {
  const int64_t need = static_cast<int64_t>(fsm.RepeatMin(rule)) - count_after;
  const int64_t room = fsm.RepeatMax(rule) == Expr::kUnbounded ? INT64_MAX
                                                                : static_cast<int64_t>(fsm.RepeatMax(rule)) - count_after;
  if (room < max_token_bytes) return count_after;  // the upper bound may be reached within the token
  if (need <= 0) return kCountFree;
  if (need > max_token_bytes) return kCountBelowMin;
  return count_after;  // the lower bound may be reached within the token
}

bool EarleyParser::CanComplete(const EarleyItem& it) const {
  const GrammarFsm& g = *fsm_;
  if (!g.IsFinal(it.state)) return false;
  if (!g.HasCount(it.state)) return true;
  if (g.IsAnyOrderState(it.state)) return g.AnyOrderCanComplete(it.count, g.RuleOf(it.state));
  return it.count == kCountFree || (it.count >= 0 && it.count >= g.RepeatMin(g.RuleOf(it.state)));
}

bool EarleyParser::CanContinue(const EarleyItem& it) const {
  const GrammarFsm& g = *fsm_;
  // (An AnyOrder item is asked edge by edge: GrammarFsm::AnyOrderEdgeAllowed.)
  if (it.count < 0 || !g.IsCountedState(it.state)) return true;
  const int32_t max = g.RepeatMax(g.RuleOf(it.state));
  return max == Expr::kUnbounded || it.count < max;
}

// The item hash table is allocated on first use (a set over kLinearLimit items): most parsers,
// such as the one per mask entry, never need it.
EarleyParser::EarleyParser(const GrammarFsm* fsm) : fsm_(fsm) {}

void EarleyParser::BeginSet() {
  set_pos_.push_back(set_pos_.empty() ? 0 : set_pos_.back() + 1);
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
    ++work_;  // the scan is memoised per (set, rule), but its first run reads the whole origin set
    if (w.lineage != lineage) continue;
    work_ += g.RuleEdgesEnd(w.state) - g.RuleEdgesBegin(w.state);
    for (const RuleEdge* e = g.RuleEdgesBegin(w.state); e != g.RuleEdgesEnd(w.state); ++e) {
      if (e->rule == rule) {
        waiter = &w;
        target = e->target;
        ++waiters;
      }
    }
  }
  // (An AnyOrder waiter never resumes in a pure tail: its states all have edges or count.)
  // (A TagDispatch item is never skipped: its done state marks where a tag ends, matcher/tag_tracker.h. Nor are a
  // captured or budgeted rule's: the matcher reads their completions, matcher/capture_recorder.h, token_budget.h.)
  bool valid = waiters == 1 && g.IsPureTail(target) && !g.IsAnyOrderState(waiter->state) &&
               !g.KeepsCompletions(g.RuleOf(target));
  EarleyItem item{-1, -1, lineage};
  if (valid) {
    item = {target, waiter->origin, lineage};
    EarleyItem above;
    // The waiter's rule completes at once too: continue the chain from its origin. Never past the root rule
    // completing over the whole input (origin 0): CanAcceptEnd looks for that item, so it must be in the set
    // even where the root is referenced from inside (`cr ::= root | ...`) and its completion goes on upward.
    const bool whole_input_root = g.RuleOf(target) == g.Root() && waiter->origin == 0;
    if (!whole_input_root && waiter->origin >= 0 && waiter->origin < origin &&
        LeoItem(waiter->origin, g.RuleOf(target), lineage, &above))
      item = above;
  }
  leo_[origin].push_back({rule, lineage, valid, item});
  *out = item;
  return valid;
}

void EarleyParser::Clear(const std::vector<int32_t>* follow) {
  follow_override_ = follow;
  follow_level_begin_.clear();
  if (follow) {
    follow_level_begin_.push_back(0);
    for (size_t p = 0; p < follow->size(); ++p)
      if ((*follow)[p] == kFollowLevelSeparator) follow_level_begin_.push_back(p + 1);
  }
  items_.clear();
  set_begin_.assign(1, 0);
  set_flags_.clear();
  set_pos_.clear();
}

void EarleyParser::AddFollowLevel(size_t level) {
  const std::vector<int32_t>& f = *follow_override_;
  const int32_t origin = FollowOrigin(static_cast<int32_t>(level));
  for (size_t p = follow_level_begin_[level]; p + 1 < f.size() && f[p] != kFollowLevelSeparator; p += 2)
    Add(f[p], origin, 1, f[p + 1]);
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

void EarleyParser::Add(int32_t state, int32_t origin, int32_t lineage, int32_t count) {
  // Small sets (the common case) are deduplicated by a linear scan; once a set reaches
  // kLinearLimit items, the indices of its items move into the open-addressing table.
  constexpr size_t kLinearLimit = 16;
  const size_t begin = set_begin_[set_begin_.size() - 2];
  const size_t n = items_.size() - begin;
  auto same = [&](const EarleyItem& it) {
    return it.state == state && it.origin == origin && it.lineage == lineage && it.count == count;
  };
  auto hash_of = [](const EarleyItem& it) {
    uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(it.state)) << 32) ^
                 (static_cast<uint64_t>(static_cast<uint32_t>(it.origin + 2)) << 1) ^ static_cast<uint64_t>(it.lineage) ^
                 (static_cast<uint64_t>(static_cast<uint32_t>(it.count)) * 0xC2B2AE3D27D4EB4Full);
    return (h * 0x9E3779B97F4A7C15ull) >> 40;
  };
  // Finds the slot of `probe`: true if an equal item is listed, else the free slot is claimed.
  auto find_or_claim = [&](const EarleyItem& probe, uint32_t index) -> bool {
    size_t mask = hash_keys_.size() - 1;
    for (size_t h = hash_of(probe);; ++h) {
      h &= mask;
      if (hash_stamp_[h] != stamp_) {
        hash_stamp_[h] = stamp_;
        hash_keys_[h] = index;
        return false;
      }
      const EarleyItem& it = items_[hash_keys_[h]];
      if (it.state == probe.state && it.origin == probe.origin && it.lineage == probe.lineage &&
          it.count == probe.count)
        return true;
    }
  };
  const EarleyItem item{state, origin, lineage, count};
  if (n < kLinearLimit) {
    for (size_t i = begin; i < items_.size(); ++i)
      if (same(items_[i])) return;
  } else {
    if (n == kLinearLimit || (n + 1) * 2 > hash_keys_.size()) {
      // (Re)build the table for this set: first use, or growth.
      if ((n + 1) * 2 > hash_keys_.size()) {
        hash_keys_.assign(std::max<size_t>(1024, hash_keys_.size() * 2), 0);
        hash_stamp_.assign(hash_keys_.size(), 0);
      }
      if (++stamp_ == 0) {
        std::fill(hash_stamp_.begin(), hash_stamp_.end(), 0);
        stamp_ = 1;
      }
      for (size_t i = begin; i < items_.size(); ++i) find_or_claim(items_[i], static_cast<uint32_t>(i));
    }
    if (find_or_claim(item, static_cast<uint32_t>(items_.size()))) return;
  }
  if (static_cast<int64_t>(n) >= limits_->max_items_per_set) {
    throw LimitError("Earley parser: a set grew past " + std::to_string(limits_->max_items_per_set) +
                     " items (Limits.max_items_per_set): the grammar is too ambiguous for this input");
  }
  items_.push_back(item);
  set_begin_.back() = static_cast<int32_t>(items_.size());
}

void EarleyParser::Close(size_t from) {
  const int32_t k = NumSets() - 1;  // index of the set being built
  const GrammarFsm& g = *fsm_;
  if (from == 0) {
    total_work_ += work_;
    work_ = 0;
  }
  for (size_t i = set_begin_[k] + from; i < items_.size(); ++i) {
    const EarleyItem it = items_[i];
    if (++work_ > limits_->max_work_per_byte) ThrowWorkLimit();
    // Predict (a counted item at its max reads no more X's).
    if (CanContinue(it)) {
      const int32_t next_count = g.IsCountedState(it.state) ? Incremented(it.count) : 0;
      const bool any_order = g.IsAnyOrderState(it.state);
      work_ += g.RuleEdgesEnd(it.state) - g.RuleEdgesBegin(it.state);  // a state may predict hundreds of rules
      for (const RuleEdge* e = g.RuleEdgesBegin(it.state); e != g.RuleEdgesEnd(it.state); ++e) {
        if (any_order && !g.AnyOrderEdgeAllowed(it.count, g.RuleOf(it.state), e)) continue;
        Add(g.RuleStart(e->rule), k, it.lineage);
        // (never an AnyOrder edge: its items and separator are not nullable)
        if (g.RuleNullable(e->rule)) Add(e->target, it.origin, it.lineage, next_count);
      }
    }
    // Complete.
    if (!CanComplete(it)) continue;
    int32_t rule = g.RuleOf(it.state);
    if (it.origin >= 0) {
      if (it.origin == k) continue;  // empty completion: handled by the nullable rule at prediction
      EarleyItem top;
      if (LeoItem(it.origin, rule, it.lineage, &top)) {
        Add(top.state, top.origin, top.lineage, top.count);
        continue;
      }
      // Items of the origin set waiting on `rule`. The origin set is frozen; copy bounds first
      // because Add may reallocate items_.
      int32_t b = set_begin_[it.origin], e = set_begin_[it.origin + 1];
      work_ += e - b;
      if (work_ > limits_->max_work_per_byte) ThrowWorkLimit();
      for (int32_t j = b; j < e; ++j) {
        const EarleyItem w = items_[j];
        if (w.lineage != it.lineage) continue;
        const bool counted = g.IsCountedState(w.state);
        if (counted && !CanContinue(w)) continue;
        const bool any_order = g.IsAnyOrderState(w.state);
        work_ += g.RuleEdgesEnd(w.state) - g.RuleEdgesBegin(w.state);
        if (work_ > limits_->max_work_per_byte) ThrowWorkLimit();
        for (const RuleEdge* re = g.RuleEdgesBegin(w.state); re != g.RuleEdgesEnd(w.state); ++re) {
          if (re->rule != rule) continue;
          if (any_order) {
            if (g.AnyOrderEdgeAllowed(w.count, g.RuleOf(w.state), re))
              Add(re->target, w.origin, w.lineage, g.AnyOrderAfter(w.count, g.RuleOf(w.state), re));
            continue;
          }
          Add(re->target, w.origin, w.lineage, counted ? Incremented(w.count) : 0);
        }
      }
    } else if (it.origin == kTopOrigin) {
      if (k == 0) continue;
      set_flags_[k] |= kTopCompleted;
      if (follow_override_) {
        AddFollowLevel(0);
      } else {
        for (int32_t t : g.RuleFollow(rule)) Add(t, kFollowOrigin, 1, g.HasCount(t) ? kCountFree : 0);
      }
    } else if (it.origin <= kFollowOrigin && FollowLevelOf(it.origin) + 1 < follow_level_begin_.size()) {
      AddFollowLevel(FollowLevelOf(it.origin) + 1);  // a follow level completed: the next one resumes
    } else {
      set_flags_[k] |= kFollowCompleted;
    }
  }
}

void EarleyParser::ThrowWorkLimit() const {
  throw LimitError("Earley parser: reading one byte took more than " + std::to_string(limits_->max_work_per_byte) +
                   " steps (Limits.max_work_per_byte): the grammar is too ambiguous for this input");
}

bool EarleyParser::Advance(uint8_t byte) { return AdvanceFrom(NumSets() - 1, byte); }

bool EarleyParser::AdvanceFrom(int32_t k, uint8_t byte) {
  XG_ICHECK(k >= 0 && k < NumSets()) << "AdvanceFrom(" << k << ") with " << NumSets() << " sets";
  const int32_t b = set_begin_[k], e = set_begin_[k + 1];
  const size_t before = items_.size();
  BeginSet();
  set_pos_.back() = set_pos_[k] + 1;
  set_begin_.push_back(static_cast<int32_t>(items_.size()));
  auto drop_new_set = [&] {
    items_.resize(before);
    set_begin_.pop_back();
    set_flags_.pop_back();
    set_pos_.pop_back();
    leo_.pop_back();
  };
  try {
    for (int32_t j = b; j < e; ++j) {
      const EarleyItem it = items_[j];
      int32_t t = fsm_->Next(it.state, byte);
      if (t >= 0) Add(t, it.origin, it.lineage, it.count);
    }
    if (static_cast<int32_t>(items_.size()) == e) {
      drop_new_set();
      return false;
    }
    Close(0);
  } catch (...) {  // a limit: the parser is left as it was before this byte
    drop_new_set();
    throw;
  }
  return true;
}

void EarleyParser::PopSets(int32_t n) {
  XG_ICHECK(n >= 0 && n < static_cast<int32_t>(set_begin_.size()) - 1) << "PopSets(" << n << ")";
  if (n == 0) return;
  set_begin_.resize(set_begin_.size() - n);
  set_flags_.resize(set_flags_.size() - n);
  set_pos_.resize(set_flags_.size());
  leo_.resize(set_flags_.size());
  items_.resize(set_begin_.back());
}

int32_t EarleyParser::CompactSets(int32_t lo, int32_t hi) {
  const int32_t n = NumSets();
  XG_ICHECK(1 <= lo && lo <= hi && hi < n) << "CompactSets(" << lo << ", " << hi << ") with " << n << " sets";
  if (lo == hi) return 0;
  const GrammarFsm& g = *fsm_;
  auto waits = [&](const EarleyItem& it) { return g.RuleEdgesBegin(it.state) != g.RuleEdgesEnd(it.state); };
  // Mark the sets of the range reached as origins: origins point to the same or an earlier set, so
  // one pass from the top down sees every set's marks before the set itself.
  std::vector<uint8_t> live(hi - lo, 0);
  auto mark = [&](int32_t origin) {
    if (origin >= lo && origin < hi) live[origin - lo] = 1;
  };
  for (size_t i = set_begin_[hi]; i < items_.size(); ++i) mark(items_[i].origin);
  for (int32_t j = hi - 1; j >= lo; --j) {
    if (!live[j - lo]) continue;
    for (int32_t i = set_begin_[j]; i < set_begin_[j + 1]; ++i)
      if (waits(items_[i])) mark(items_[i].origin);
  }
  std::vector<int32_t> renumbered(hi - lo, -1);
  int32_t next = lo;
  for (int32_t j = lo; j < hi; ++j)
    if (live[j - lo]) renumbered[j - lo] = next++;
  const int32_t removed = hi - next;
  auto remap = [&](int32_t origin) {
    if (origin < lo) return origin;  // also the virtual origins (negative)
    return origin < hi ? renumbered[origin - lo] : origin - removed;
  };
  // Move the kept sets down in place. Set j's bounds are read before set_begin_[out <= j] is written.
  size_t w = set_begin_[lo];
  int32_t out = lo;
  int32_t begin = set_begin_[lo];
  for (int32_t j = lo; j < n; ++j) {
    const int32_t b = begin, e = set_begin_[j + 1];
    begin = e;
    const bool in_range = j < hi;
    if (in_range && !live[j - lo]) continue;
    set_begin_[out] = static_cast<int32_t>(w);
    for (int32_t i = b; i < e; ++i) {
      EarleyItem it = items_[i];
      if (in_range && !waits(it)) continue;
      it.origin = remap(it.origin);
      items_[w++] = it;
    }
    set_flags_[out] = set_flags_[j];
    set_pos_[out] = set_pos_[j];
    ++out;
  }
  set_begin_[out] = static_cast<int32_t>(w);
  set_begin_.resize(out + 1);
  set_flags_.resize(out);
  set_pos_.resize(out);
  items_.resize(w);
  // Leo memos name origins: drop them all (they are a cache, rebuilt on demand from the same waiters).
  std::vector<std::vector<LeoMemo>>(out).swap(leo_);
  ReleaseUnusedMemory();
  return removed;
}

void EarleyParser::ReleaseUnusedMemory() {
  auto trim = [](auto& v) {
    if (v.capacity() > 2 * v.size() + 1024) v.shrink_to_fit();
  };
  trim(items_);
  trim(set_begin_);
  trim(set_flags_);
  trim(set_pos_);
  trim(leo_);
}

bool EarleyParser::CanAcceptEnd() const {
  int32_t k = NumSets() - 1;
  int32_t root = fsm_->Root();
  for (const EarleyItem* it = SetBegin(k); it != SetEnd(k); ++it)
    if (it->origin == 0 && fsm_->RuleOf(it->state) == root && CanComplete(*it)) return true;
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
