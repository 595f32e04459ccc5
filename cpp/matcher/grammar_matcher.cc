#include "matcher/grammar_matcher.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "grammar/grammar.h"
#include "support/check.h"
#include "support/exclusive_use.h"
#include "support/fill_budget.h"
#include "support/limits.h"
#include "support/thread_pool.h"
#include "support/utf8.h"

namespace xg {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::optional<std::vector<int32_t>> override_stop_tokens, int32_t max_rollback_tokens)
    : grammar_(std::move(grammar)), parser_(&grammar_->fsm()), max_rollback_tokens_(max_rollback_tokens) {
  parser_.SetLimits(&grammar_->limits());
  XG_USER_CHECK(max_rollback_tokens >= -1)
      << "GrammarMatcher: max_rollback_tokens must be -1 (unlimited) or >= 0, got " << max_rollback_tokens;
  const TokenizerInfo& tok = grammar_->tokenizer();
  if (override_stop_tokens) {
    for (int32_t id : *override_stop_tokens)
      XG_USER_CHECK(id >= 0 && id < tok.NumTokens())
          << "GrammarMatcher: stop token id " << id << " is out of range [0, " << tok.NumTokens() << ")";
    stop_ids_ = *override_stop_tokens;
  } else {
    stop_ids_ = tok.StopIds();
  }
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());
  parser_.Reset();
}

void GrammarMatcher::ThrowIfFailed() const {
  if (!sticky_error_.empty()) throw LimitError(sticky_error_ + " (the matcher stays failed until reset())");
}

template <typename F>
auto GrammarMatcher::RecordingLimits(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const LimitError& e) {
    sticky_error_ = e.what();
    throw;
  }
}

bool GrammarMatcher::IsStop(int32_t id) const { return std::binary_search(stop_ids_.begin(), stop_ids_.end(), id); }

bool GrammarMatcher::TryAdvance(const std::string& bytes, const std::string* display) {
  // A long string compacts its own sets as it goes: rollback and failure return to the set before
  // the string, never into it, so only its last set must stay whole. Doubling the interval keeps the
  // work linear in the string's length.
  constexpr int32_t kCompactAfter = 1 << 16;  // also: strings this long release memory after a failure
  const int32_t first = parser_.NumSets();  // the string's first set once pushed
  int32_t pushed = 0, next_compaction = kCompactAfter;
  const DispatchWatch& watch = grammar_->dispatch_watch();
  const bool track = display != nullptr && !watch.Empty();
  const TagTracker::Checkpoint tags_before = tags_.Save();
  const int64_t token_index = NumAcceptedTokens();
  if (track) tags_.BeginStep(bytes, *display, token_index);
  // Captures and token budgets: each set is labelled with its offset in the text the user sees (a special token's
  // sentinel bytes are one unit: the sets inside it sit at its start, the last at its end).
  const GrammarFsm& fsm = grammar_->fsm();
  const bool capture = display != nullptr && !fsm.CaptureLabels().empty();
  const bool label = capture || (display != nullptr && fsm.HasTokenBudgets());
  const CaptureRecorder::Checkpoint captures_before = captures_.Save();
  const int64_t display_begin = parser_.SetPosition(parser_.NumSets() - 1);
  const bool display_is_bytes = label && (display == &bytes || *display == bytes);
  if (capture) captures_.AppendOutput(*display);
  return RecordingLimits([&] {
    try {
      for (size_t i = 0; i < bytes.size(); ++i) {
        if (!parser_.Advance(static_cast<uint8_t>(bytes[i]))) {
          parser_.PopSets(pushed);
          if (track) tags_.Restore(tags_before, token_index);
          if (capture) captures_.Restore(captures_before);
          if (bytes.size() >= kCompactAfter) parser_.ReleaseUnusedMemory();
          return false;
        }
        if (track) tags_.ObserveSet(watch, parser_, i);
        if (label) {
          const int64_t offset = display_is_bytes        ? static_cast<int64_t>(i) + 1
                                 : i + 1 == bytes.size() ? static_cast<int64_t>(display->size())
                                                         : 0;
          parser_.SetPosition(parser_.NumSets() - 1, display_begin + offset);
          if (capture) captures_.ObserveSet(parser_, captures_before.events);
        }
        if (++pushed >= next_compaction) {
          pushed -= parser_.CompactSets(first, parser_.NumSets() - 1);
          next_compaction = std::max(2 * pushed, pushed + kCompactAfter);
        }
      }
    } catch (const LimitError&) {
      parser_.PopSets(pushed);  // as a rejection would: the token leaves no trace
      if (track) tags_.Restore(tags_before, token_index);
      if (capture) captures_.Restore(captures_before);
      if (bytes.size() >= kCompactAfter) parser_.ReleaseUnusedMemory();
      throw;
    }
    return true;
  });
}

bool GrammarMatcher::TryAdvanceToken(int32_t id, bool accepting) {
  const TokenizerInfo& tok = grammar_->tokenizer();
  const std::string& text = tok.Token(id);
  const bool as_text = tok.MatchesText(id), as_element = grammar_->NamesToken(id);
  if (as_text && as_element) return TryAdvanceEither(text, TokenSentinel(id), accepting);
  if (as_text) return TryAdvance(text, accepting ? &text : nullptr);
  if (as_element) return TryAdvance(TokenSentinel(id), accepting ? &text : nullptr);  // a token element (grammar.h)
  return false;  // special tokens the grammar does not name never match
}

namespace {

// The union of two parses' last sets, as one set: each (state, origin, lineage, count) once.
void SortUniqueItems(std::vector<EarleyItem>* items) {
  auto key = [](const EarleyItem& a) { return std::make_tuple(a.state, a.origin, a.lineage, a.count); };
  std::sort(items->begin(), items->end(), [&](const EarleyItem& a, const EarleyItem& b) { return key(a) < key(b); });
  items->erase(std::unique(items->begin(), items->end(),
                           [&](const EarleyItem& a, const EarleyItem& b) { return key(a) == key(b); }),
               items->end());
}

}  // namespace

bool GrammarMatcher::TryAdvanceEither(const std::string& text, const std::string& sentinel, bool accepting) {
  // Two readings of one token: its text, and the token element that names it. The parse after the token is
  // the union of both last sets; the first reading's other sets stay below the second's (completions read
  // them as origins), so rollback pops them all as one step.
  const int32_t base = parser_.NumSets() - 1;
  const TagTracker::Checkpoint tags_before = tags_.Save();
  const CaptureRecorder::Checkpoint captures_before = captures_.Save();
  const bool text_ok = TryAdvance(text, accepting ? &text : nullptr);
  if (!text_ok) return TryAdvance(sentinel, accepting ? &text : nullptr);
  if (!accepting) return true;  // a probe: either reading is enough
  const int32_t first_index = parser_.NumSets() - 1;
  const std::vector<EarleyItem> first(parser_.SetBegin(first_index), parser_.SetEnd(first_index));
  const uint8_t first_flags = parser_.SetFlags(first_index);
  const int64_t end_position = parser_.SetPosition(first_index);  // both readings end at the token's end
  parser_.PopSets(1);
  int32_t pushed = 0;
  auto restore_first = [&] {
    parser_.PopSets(pushed);
    parser_.PushClosedSet(first.data(), first.size(), first_flags);
    parser_.SetPosition(parser_.NumSets() - 1, end_position);
  };
  const bool element_ok = RecordingLimits([&] {
    try {
      for (size_t i = 0; i < sentinel.size(); ++i) {
        const uint8_t byte = static_cast<uint8_t>(sentinel[i]);
        if (!(i == 0 ? parser_.AdvanceFrom(base, byte) : parser_.Advance(byte))) return false;
        ++pushed;
      }
    } catch (const LimitError&) {
      restore_first();  // then back before the token: a limit leaves the parse as it was, as for any token
      parser_.PopSets(parser_.NumSets() - 1 - base);
      tags_.Restore(tags_before, NumAcceptedTokens());
      captures_.Restore(captures_before);
      throw;
    }
    return true;
  });
  if (!element_ok) {
    restore_first();
    return true;
  }
  // The union of both last sets. The first reading's last set moves to the merged set's index: what it
  // predicted starts there now.
  const int32_t merged_index = parser_.NumSets() - 1;
  std::vector<EarleyItem> merged(parser_.SetBegin(merged_index), parser_.SetEnd(merged_index));
  const uint8_t flags = first_flags | parser_.SetFlags(merged_index);
  parser_.PopSets(1);
  for (EarleyItem it : first) merged.push_back({it.state, it.origin == first_index ? merged_index : it.origin,
                                                it.lineage, it.count});
  SortUniqueItems(&merged);
  parser_.PushClosedSet(merged.data(), merged.size(), flags);
  parser_.SetPosition(merged_index, end_position);
  if (!grammar_->fsm().CaptureLabels().empty()) captures_.ObserveSet(parser_, captures_before.events);
  return true;
}

bool GrammarMatcher::AcceptToken(int32_t id) {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.accept_token");
  ThrowIfFailed();
  const TokenizerInfo& tok = grammar_->tokenizer();
  XG_USER_CHECK(id >= 0 && id < tok.VocabSize())
      << "GrammarMatcher.accept_token: token id " << id << " is out of range [0, " << tok.VocabSize() << ")";
  if (terminated_) return false;
  Step step{parser_.NumSets(), false, undoable_, tags_.Save(), captures_.Save(), budgets_.Save()};
  if (IsStop(id)) {
    if (!parser_.CanAcceptEnd()) return false;
    tags_.BeginStep("", "", NumAcceptedTokens());  // no switch at a stop token
    terminated_ = true;
    step.terminated = true;
    history_.push_back(step);
    CompactHistory();
    return true;
  }
  if (id >= tok.NumTokens() || !TryAdvanceToken(id, /*accepting=*/true)) return false;
  ApplyTokenBudgets(/*counted=*/true, step.captures_before.events);
  history_.push_back(step);
  CompactHistory();
  return true;
}

void GrammarMatcher::ApplyTokenBudgets(bool counted, size_t step_events) {
  if (!grammar_->fsm().HasTokenBudgets()) return;
  const int64_t end = parser_.SetPosition(parser_.NumSets() - 1);
  if (counted) budgets_.CountToken(end);
  // A gate's completions are seen before the pruning, which drops them with the rest of their occurrence.
  if (grammar_->HasBudgetGates() && OpenBudgetGates() && !grammar_->fsm().CaptureLabels().empty())
    captures_.ObserveSet(parser_, step_events);
  budgets_.CloseSpentOccurrences(&parser_);
}

bool GrammarMatcher::OpenBudgetGates() {
  const GrammarFsm& g = grammar_->fsm();
  const int32_t last = parser_.NumSets() - 1;
  if (last == 0) return false;
  const std::string sentinel = TokenSentinel(kBudgetGateId);
  std::vector<EarleyItem> at_gate;
  for (const EarleyItem* it = parser_.SetBegin(last); it != parser_.SetEnd(last); ++it) {
    if (it->lineage != 0 || it->origin < 0) continue;
    const int32_t budget = g.RuleMaxTokens(g.RuleOf(it->state));
    if (budget <= 0 || budgets_.TokensAfter(parser_.SetPosition(it->origin)) < budget) continue;
    int32_t s = it->state;
    for (size_t i = 0; i < sentinel.size() && s >= 0; ++i) s = g.Next(s, static_cast<uint8_t>(sentinel[i]));
    if (s >= 0) at_gate.push_back(*it);
  }
  if (at_gate.empty()) return false;
  const std::vector<EarleyItem> items(parser_.SetBegin(last), parser_.SetEnd(last));
  const uint8_t flags = parser_.SetFlags(last);
  const int64_t position = parser_.SetPosition(last);
  auto restore = [&] {
    parser_.PopSets(parser_.NumSets() - last);
    parser_.PushClosedSet(items.data(), items.size(), flags);
    parser_.SetPosition(last, position);
  };
  // Only the gate items read the sentinel: another item that reads any token element (ExcludeToken) must not.
  parser_.PopSets(1);
  parser_.PushClosedSet(at_gate.data(), at_gate.size(), 0);
  RecordingLimits([&] {
    try {
      for (char c : sentinel) XG_ICHECK(parser_.Advance(static_cast<uint8_t>(c))) << "a budget gate did not open";
    } catch (...) {
      restore();
      throw;
    }
  });
  // The sentinel's inner sets hold digits of the sentinel only (no item predicts there): what the last of them
  // predicted starts at the last set.
  const int32_t through = parser_.NumSets() - 1;
  std::vector<EarleyItem> merged(parser_.SetBegin(through), parser_.SetEnd(through));
  const uint8_t through_flags = parser_.SetFlags(through);
  for (EarleyItem& it : merged) {
    XG_ICHECK(it.origin < 0 || it.origin <= last || it.origin == through) << "a budget gate's item starts inside it";
    if (it.origin == through) it.origin = last;
  }
  parser_.PopSets(through - last + 1);
  merged.insert(merged.end(), items.begin(), items.end());
  SortUniqueItems(&merged);
  parser_.PushClosedSet(merged.data(), merged.size(), flags | through_flags);
  parser_.SetPosition(last, position);
  return true;
}

void GrammarMatcher::CompactHistory() {
  if (max_rollback_tokens_ < 0 || history_.empty()) return;
  undoable_ = std::min(undoable_ + 1, max_rollback_tokens_);
  // The last `undoable_` steps, and one more so that UndoLastToken can give the budget back.
  const size_t keep = std::min(history_.size(), static_cast<size_t>(undoable_) + 1);
  if (history_.size() >= 2 * keep + 64) {  // in batches, so each step costs O(1) amortised
    const size_t drop = history_.size() - keep;
    history_.erase(history_.begin(), history_.begin() + drop);
    dropped_steps_ += drop;
  }
  // The tag tracker's output before the oldest step rollback can undo is read no more.
  if (!grammar_->dispatch_watch().Empty())
    tags_.Trim(history_[history_.size() - keep].tags_before, grammar_->dispatch_watch().MaxTriggerBytes());
  // Rolling back the last `keep` steps makes set floor - 1 the last set again: it and the sets above
  // it stay whole.
  const int32_t floor = history_[history_.size() - keep].sets_before;
  const int32_t hi = floor - 1;
  // Amortised: compact once the sets out of reach since the last time outnumber the compacted prefix.
  constexpr int32_t kMinNewSets = 1 << 12;
  if (hi - compacted_until_ < std::max(kMinNewSets, compacted_until_)) return;
  const int32_t removed = parser_.CompactSets(1, hi);
  for (Step& s : history_) s.sets_before -= removed;
  compacted_until_ = hi - removed;
  if (history_.capacity() > 2 * history_.size() + 1024) history_.shrink_to_fit();
}

bool GrammarMatcher::AcceptString(const std::string& bytes) {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.accept_string");
  ThrowIfFailed();
  if (terminated_) return false;
  Step step{parser_.NumSets(), false, undoable_, tags_.Save(), captures_.Save(), budgets_.Save()};
  if (!TryAdvance(bytes, &bytes)) return false;
  ApplyTokenBudgets(/*counted=*/false, step.captures_before.events);  // not counted, but may let one end
  history_.push_back(step);
  CompactHistory();
  return true;
}

void GrammarMatcher::Rollback(int32_t n) {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.rollback");
  ThrowIfFailed();
  XG_USER_CHECK(n >= 0) << "GrammarMatcher.rollback: num_tokens must be >= 0, got " << n;
  XG_USER_CHECK(max_rollback_tokens_ < 0 || n <= max_rollback_tokens_)
      << "GrammarMatcher.rollback: cannot roll back " << n << " tokens, max_rollback_tokens is " << max_rollback_tokens_;
  XG_USER_CHECK(n <= NumAcceptedTokens())
      << "GrammarMatcher.rollback: cannot roll back " << n << " tokens, only " << NumAcceptedTokens() << " accepted";
  XG_USER_CHECK(n <= UndoableSteps())
      << "GrammarMatcher.rollback: cannot roll back " << n << " tokens, only the last " << UndoableSteps()
      << " can be undone (max_rollback_tokens is " << max_rollback_tokens_ << ", less the tokens rolled back since)";
  if (max_rollback_tokens_ >= 0) undoable_ -= n;
  for (int32_t i = 0; i < n; ++i) PopStep();
}

GrammarMatcher::Step GrammarMatcher::PopStep() {
  const Step s = history_.back();
  history_.pop_back();
  if (s.terminated) {
    terminated_ = false;
  } else {
    parser_.PopSets(parser_.NumSets() - s.sets_before);
  }
  tags_.Restore(s.tags_before, NumAcceptedTokens());  // drops the undone token's switches not yet taken
  captures_.Restore(s.captures_before);
  budgets_.Restore(s.budgets_before);
  return s;
}

void GrammarMatcher::UndoLastToken() {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.undo_last_token");
  XG_ICHECK(!history_.empty()) << "UndoLastToken without an accepted token";
  const Step s = PopStep();
  if (max_rollback_tokens_ >= 0) undoable_ = s.undoable_before;
}

void GrammarMatcher::Reset() {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.reset");
  sticky_error_.clear();
  tags_.Clear();
  captures_.Clear();
  budgets_.Clear();
  parser_.Reset();
  history_.clear();
  dropped_steps_ = 0;
  undoable_ = 0;
  compacted_until_ = 1;
  terminated_ = false;
}

void GrammarMatcher::CheckUncertain(const std::vector<int32_t>& positions, uint32_t* words) {
  const TokenizerInfo& tok = grammar_->tokenizer();
  const int32_t base = parser_.NumSets();
  std::string_view prev;
  bool has_prev = false;
  int32_t dead_at = -1;  // the previous token died reading byte dead_at (relative), or -1
  int64_t work_charged = parser_.TotalWork();
  for (int32_t pos : positions) {
    FillWorkBudget::Charge(parser_.TotalWork() - work_charged);  // the previous token's parse
    work_charged = parser_.TotalWork();
    int32_t id = tok.SortedId(pos);
    if (words[id >> 5] & (1u << (id & 31))) continue;  // already accepted by another state
    std::string_view t = tok.SortedToken(pos);
    int32_t lcp = 0;
    if (has_prev) {
      size_t m = std::min(prev.size(), t.size());
      while (static_cast<size_t>(lcp) < m && prev[lcp] == t[lcp]) ++lcp;
    }
    prev = t;
    has_prev = true;
    if (dead_at >= 0 && lcp > dead_at) continue;  // shares the prefix that already failed
    int32_t depth = parser_.NumSets() - base;
    int32_t keep = std::min(lcp, depth);
    parser_.PopSets(depth - keep);
    dead_at = -1;
    int32_t d = keep;
    for (; d < static_cast<int32_t>(t.size()); ++d) {
      if (!parser_.Advance(static_cast<uint8_t>(t[d]))) {
        dead_at = d;
        break;
      }
    }
    if (dead_at < 0) words[id >> 5] |= 1u << (id & 31);
  }
  parser_.PopSets(parser_.NumSets() - base);
}

const EarleyItem* GrammarMatcher::AppendWaiters(int32_t rule, int32_t origin, std::vector<int32_t>* pairs) {
  const GrammarFsm& fsm = grammar_->fsm();
  const int32_t max_token_bytes = grammar_->tokenizer().MaxTokenBytes();
  parent_pairs_.clear();
  const EarleyItem* lone = nullptr;
  int32_t waiters = 0;
  for (const EarleyItem* w = parser_.SetBegin(origin); w != parser_.SetEnd(origin); ++w) {
    int32_t count = 0;
    if (fsm.IsCountedState(w->state)) {
      const int32_t max = fsm.RepeatMax(fsm.RuleOf(w->state));
      if (max != Expr::kUnbounded && w->count >= max) continue;  // reads no more X's
      count = CountClass(fsm, fsm.RuleOf(w->state), w->count + 1, max_token_bytes);
    }
    const bool any_order = fsm.IsAnyOrderState(w->state);
    for (const RuleEdge* e = fsm.RuleEdgesBegin(w->state); e != fsm.RuleEdgesEnd(w->state); ++e) {
      if (e->rule != rule) continue;
      if (any_order) {  // the exact set of items read: an AnyOrder context is never shared across sets
        if (!fsm.AnyOrderEdgeAllowed(w->count, fsm.RuleOf(w->state), e)) continue;
        count = fsm.AnyOrderAfter(w->count, fsm.RuleOf(w->state), e);
      }
      parent_pairs_.push_back({e->target, count});
      lone = w;
      ++waiters;
    }
  }
  std::sort(parent_pairs_.begin(), parent_pairs_.end());
  parent_pairs_.erase(std::unique(parent_pairs_.begin(), parent_pairs_.end()), parent_pairs_.end());
  for (auto [state, count] : parent_pairs_) pairs->push_back(state), pairs->push_back(count);
  return waiters == 1 ? lone : nullptr;
}

namespace {

// Follow levels a context entry may hold: each level is one more lone ancestor whose completion the
// entry resolves instead of the live parser. Deep enough for a JSON value inside an object's chain of
// optional properties (string -> value -> property chain -> the object's closing brace).
constexpr int kMaxFollowLevels = 4;

// Whether the parser, resuming in state `s`, can complete s's rule without reading a byte: s is
// final, or a nullable rule it refers to leads to such a state (bounded: such chains are short).
bool CanEndWithoutBytes(const GrammarFsm& fsm, int32_t s, int depth = 0) {
  if (fsm.IsFinal(s)) return true;
  if (depth == 4) return false;
  for (const RuleEdge* e = fsm.RuleEdgesBegin(s); e != fsm.RuleEdgesEnd(s); ++e)
    if (fsm.RuleNullable(e->rule) && CanEndWithoutBytes(fsm, e->target, depth + 1)) return true;
  return false;
}

}  // namespace

const EarleyItem* GrammarMatcher::AppendResumeStates(int32_t rule, int32_t origin, std::vector<int32_t>* pairs) {
  const GrammarFsm& fsm = grammar_->fsm();
  const size_t begin = pairs->size();
  const EarleyItem* lone = AppendWaiters(rule, origin, pairs);
  // A lone waiter resuming in a pure tail completes its own rule at once: list where that rule's
  // waiters resume instead. Bounded: a cycle of unit rules (`root ::= root | ...`) makes the lone
  // waiter its own waiter; stopping anywhere on the chain is exact (the tail listed is where parsing
  // resumes), it only leaves more to the live parser.
  for (int32_t climbed = 0; lone != nullptr && lone->origin >= 0 && fsm.IsPureTail((*pairs)[begin]); ++climbed) {
    if (climbed == grammar_->limits().max_resume_chain) break;
    const size_t mark = pairs->size();
    const EarleyItem* up = AppendWaiters(fsm.RuleOf(lone->state), lone->origin, pairs);
    if (pairs->size() == mark) break;  // nothing waits above (the root's end): keep the tail
    if (up == lone) {                   // the waiter waits on itself: the same pairs again
      pairs->resize(mark);
      break;
    }
    pairs->erase(pairs->begin() + static_cast<std::ptrdiff_t>(begin), pairs->begin() + static_cast<std::ptrdiff_t>(mark));
    lone = up;
  }
  return lone;
}

void GrammarMatcher::ContextFollow(const EarleyItem& it, std::vector<int32_t>* follow) {
  const GrammarFsm& fsm = grammar_->fsm();
  follow->clear();
  const EarleyItem* parent = AppendResumeStates(fsm.RuleOf(it.state), it.origin, follow);
  // Climb while the lone ancestor can end right after what is below it, where the next ancestor
  // decides (exact: each is the only waiter). Either it is counted (a string's character inside
  // `char{0,n}`), or it can complete with nothing more read (a string that ends a JSON value, a
  // value followed only by optional properties: the enclosing object decides what may follow).
  size_t level_begin = 0;
  for (int level = 1; level < kMaxFollowLevels; ++level) {
    if (parent == nullptr || parent->origin < 0) return;
    bool may_end = fsm.IsCountedState(parent->state);
    for (size_t p = level_begin; p < follow->size() && !may_end; p += 2)
      may_end = CanEndWithoutBytes(fsm, (*follow)[p]);
    if (!may_end) return;
    const size_t before = follow->size();
    follow->push_back(EarleyParser::kFollowLevelSeparator);
    parent = AppendResumeStates(fsm.RuleOf(parent->state), parent->origin, follow);
    if (follow->size() == before + 1) {  // no ancestor (the root repeats)
      follow->resize(before);
      return;
    }
    level_begin = before + 1;
  }
}

void GrammarMatcher::FillNextTokenBitmask(uint32_t* words, int32_t num_words) {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.fill_next_token_bitmask");
  ThrowIfFailed();
  RecordingLimits([&] { FillUnchecked(words, num_words); });  // mask entries parse too
}

void GrammarMatcher::FillUnchecked(uint32_t* words, int32_t num_words) {
  const TokenizerInfo& tok = grammar_->tokenizer();
  FillWorkBudget budget(grammar_->limits().max_fill_work);  // everything this fill parses, entries included
  XG_USER_CHECK(num_words >= tok.MaskWords()) << "token bitmask: the bitmask row has " << num_words
                                              << " int32 words, but vocab_size " << tok.VocabSize() << " needs "
                                              << tok.MaskWords();
  const int32_t n = tok.MaskWords();
  std::memset(words + n, 0, sizeof(uint32_t) * (num_words - n));
  auto set_stops = [&] {
    for (int32_t id : stop_ids_) words[id >> 5] |= 1u << (id & 31);
  };
  states_.clear();
  if (!terminated_) parser_.ScannableStates(&states_);
  if (states_.empty()) std::memset(words, 0, sizeof(uint32_t) * n);
  if (terminated_) {
    set_stops();
    return;
  }
  uncertain_.clear();
  last_fill_live_checks_ = 0;
  bool any_uncertain = false;
  for (size_t i = 0; i < states_.size(); ++i) {
    const TokenMaskEntry& e = grammar_->Entry(states_[i]);
    if (i == 0) {
      e.WriteAccepted(tok, words);
    } else {
      e.OrAccepted(tok, words, &scratch_);
    }
    any_uncertain |= !grammar_->Uncertain(states_[i]).empty();
  }
  if (any_uncertain) {
    // Resolve uncertain tokens in their known context: per live item (s, origin), the states where
    // its parent resumes (and a few lone ancestors above, see ContextFollow). What stays uncertain
    // there is checked against the live parser.
    const GrammarFsm& fsm = grammar_->fsm();
    const int32_t k = parser_.NumSets() - 1;
    size_t n_entries = 0;
    for (const EarleyItem* it = parser_.SetBegin(k); it != parser_.SetEnd(k); ++it) {
      if (!fsm.HasBytes(it->state) || grammar_->Uncertain(it->state).empty()) continue;
      ContextFollow(*it, &parents_);
      const ContextMaskEntry& ce = grammar_->ContextEntry(it->state, parents_);
      ce.OrAccepted(words);
      uncertain_.insert(uncertain_.end(), ce.uncertain.begin(), ce.uncertain.end());
      ++n_entries;
    }
    if (!uncertain_.empty()) {
      if (n_entries > 1) {
        std::sort(uncertain_.begin(), uncertain_.end());
        uncertain_.erase(std::unique(uncertain_.begin(), uncertain_.end()), uncertain_.end());
      }
      last_fill_live_checks_ = static_cast<int32_t>(uncertain_.size());
      const int32_t base = parser_.NumSets();
      RecordingLimits([&] {
        try {
          CheckUncertain(uncertain_, words);
        } catch (const LimitError&) {
          parser_.PopSets(parser_.NumSets() - base);
          throw;
        }
      });
    }
  }
  // Token elements: the mask entries hold text tokens only; a named special token is allowed where its sentinel
  // goes on.
  for (int32_t id : grammar_->TokenElements()) {
    const int32_t before = parser_.NumSets();
    if (TryAdvance(TokenSentinel(id))) {
      parser_.PopSets(parser_.NumSets() - before);
      words[id >> 5] |= 1u << (id & 31);
    }
  }
  if (grammar_->ReadsAnyToken()) {  // ExcludeToken(...): every token whose sentinel a live state reads
    std::vector<uint32_t> stop_words;  // stop tokens are never read as tokens (they end the output)
    for (int32_t id : stop_ids_) stop_words.push_back(words[id >> 5]);
    for (int32_t s : states_) grammar_->OrSentinelTokens(s, words);
    for (size_t i = 0; i < stop_ids_.size(); ++i) {
      const uint32_t bit = 1u << (stop_ids_[i] & 31);
      uint32_t& w = words[stop_ids_[i] >> 5];
      w = (w & ~bit) | (stop_words[i] & bit);
    }
  }
  if (parser_.CanAcceptEnd()) set_stops();
}

void GrammarMatcher::FillNextTokenBitmaskBruteForce(uint32_t* words, int32_t num_words) {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher brute-force fill");
  const TokenizerInfo& tok = grammar_->tokenizer();
  XG_USER_CHECK(num_words >= tok.MaskWords()) << "brute-force fill: the bitmask row is too short";
  std::memset(words, 0, sizeof(uint32_t) * num_words);
  for (int32_t id = 0; id < tok.NumTokens(); ++id) {
    bool ok;
    if (terminated_) {
      ok = false;
    } else if (IsStop(id)) {
      ok = parser_.CanAcceptEnd();
    } else {
      int32_t before = parser_.NumSets();
      ok = TryAdvanceToken(id);
      if (ok) parser_.PopSets(parser_.NumSets() - before);
    }
    if (ok) words[id >> 5] |= 1u << (id & 31);
  }
  if (terminated_)
    for (int32_t id : stop_ids_) words[id >> 5] |= 1u << (id & 31);
}

std::string GrammarMatcher::FindJumpForwardString() {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.find_jump_forward_string");
  ThrowIfFailed();
  if (terminated_) return "";
  const GrammarFsm& fsm = grammar_->fsm();
  std::string out;
  int32_t pushed = 0;
  // A forced string can be as long as the grammar's largest count allows ("ab"{1000000}): stop at
  // kMaxJumpForwardBytes (one parser set per byte is held meanwhile); the caller accepts it and asks again.
  while (!parser_.CanAcceptEnd() && out.size() < kMaxJumpForwardBytes) {
    int32_t k = parser_.NumSets() - 1;
    int only = -1;
    bool many = false;
    for (const EarleyItem* it = parser_.SetBegin(k); it != parser_.SetEnd(k) && !many; ++it) {
      if (!fsm.HasBytes(it->state)) continue;
      const ByteRow row = fsm.NextRow(it->state);
      for (int b = 0; b < 256; ++b) {
        if (row[b] < 0) continue;
        if (only < 0) {
          only = b;
        } else if (only != b) {
          many = true;
          break;
        }
      }
    }
    if (many || only < 0) break;
    try {
      parser_.Advance(static_cast<uint8_t>(only));
    } catch (...) {  // a parser limit: the matcher must be left as it was
      parser_.PopSets(pushed);
      throw;
    }
    ++pushed;
    out.push_back(static_cast<char>(only));
  }
  parser_.PopSets(pushed);
  // Cut an incomplete UTF-8 character at the end.
  size_t pos = 0, good = 0;
  uint32_t cp;
  while (pos < out.size() && DecodeUtf8(out, &pos, &cp)) good = pos;
  out.resize(good);
  return out;
}

bool GrammarMatcher::NextFillBuildsEntries() const {
  ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher prefetch check");
  if (terminated_) return false;
  thread_local std::vector<int32_t> states;  // scratch: this is called once per row per step
  states.clear();
  parser_.ScannableStates(&states);
  for (int32_t s : states) {
    if (grammar_->BuiltEntry(s) == nullptr) return true;
  }
  return false;
}

void BatchFillNextTokenBitmask(const std::vector<GrammarMatcher*>& matchers, uint32_t* words, int32_t words_per_row,
                               const std::vector<int32_t>& indices, int num_threads) {
  XG_USER_CHECK(matchers.size() == indices.size())
      << "batch_fill_next_token_bitmask: " << matchers.size() << " matchers but " << indices.size() << " indices";
  ThreadPool::Global().ParallelFor(matchers.size(), num_threads, [&](size_t i) {
    matchers[i]->FillNextTokenBitmask(words + static_cast<size_t>(indices[i]) * words_per_row, words_per_row);
  });
}

}  // namespace xg
