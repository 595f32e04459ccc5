// The work budget of one mask fill (Limits::max_fill_work), across everything the fill parses.
//
// A fill may build mask entries for many states (each a walk of the vocabulary from one state,
// compiler/token_mask_cache.h), build context entries, and check uncertain tokens against the live
// parser. Each byte of each of those parses is bounded by Limits::max_work_per_byte, but the number
// of parses is not: on a grammar with hundreds of states whose entries are costly, a first fill
// could run for minutes. The budget counts parser work (EarleyParser::TotalWork) over all of them.
//
// It is per thread: GrammarMatcher::FillUnchecked opens one for the fill it runs on its thread
// (batch fills run each matcher's fill on one worker thread), and every parse on that thread
// charges it until the fill returns. CompiledGrammar's entry builders open one too, which is a
// no-op inside a fill and bounds each entry on its own outside one (eager builds at compile time,
// prefetch). Past the budget, Charge throws LimitError; an entry being built is then not cached
// (compiler/fenced_lru_cache.h hands the error to its waiters), and a matcher keeps the error as its
// sticky state.
#pragma once

#include <cstdint>
#include <string>

#include "support/check.h"

namespace xg {

class FillWorkBudget {
 public:
  // Opens a budget of `limit` steps on this thread until destroyed; a budget already open stays the
  // one in force (a nested open is a no-op).
  explicit FillWorkBudget(int64_t limit) : owner_(Remaining() < 0) {
    if (owner_) Remaining() = limit, Limit() = limit;
  }
  ~FillWorkBudget() {
    if (owner_) Remaining() = -1;
  }
  FillWorkBudget(const FillWorkBudget&) = delete;
  FillWorkBudget& operator=(const FillWorkBudget&) = delete;

  // Charges `work` steps to this thread's open budget, if any; throws LimitError once it is spent.
  static void Charge(int64_t work) {
    int64_t& remaining = Remaining();
    if (remaining < 0) return;
    remaining -= work;
    if (remaining < 0) {
      remaining = 0;  // stays open (and spent) until the fill returns
      throw LimitError("mask fill: parsing took more than " + std::to_string(Limit()) +
                       " steps (Limits.max_fill_work: mask entries, contexts and uncertain tokens of one fill): "
                       "the grammar is too ambiguous for this vocabulary");
    }
  }

 private:
  static int64_t& Remaining() {
    thread_local int64_t remaining = -1;  // -1: no budget open
    return remaining;
  }
  static int64_t& Limit() {
    thread_local int64_t limit = 0;
    return limit;
  }
  bool owner_;
};

}  // namespace xg
