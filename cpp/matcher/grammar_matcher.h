// GrammarMatcher: the state of one generation under a CompiledGrammar, with xgrammar's semantics.
//
// Call order: construct; then per decoding step FillNextTokenBitmask (optional) and AcceptToken;
// Rollback(n) undoes the last n accepted tokens; Reset() starts over; Fork() copies the state.
// Contracts:
//   - A rejected token or string leaves the matcher unchanged.
//   - Stop tokens are allowed exactly when the input so far is a complete sentence; accepting one
//     terminates the matcher. A terminated matcher accepts nothing and its mask allows only the stop
//     tokens (so a batched loop that keeps sampling a finished row emits stop tokens).
//   - Special tokens and padding ids (>= the tokenizer's size) are never allowed.
//   - Memory: the parse keeps the Earley sets rollback may return to. With max_rollback_tokens >= 0,
//     sets older than that window are compacted to what later completions read (amortised, after
//     accepted steps); within one long AcceptString the same happens to the string's own sets. With
//     unlimited rollback every token boundary's set is kept whole.
//   - Token ids outside [0, vocab_size) are user errors (InputError), not rejections.
//   - A resource limit met while parsing (Limits::max_items_per_set, max_work_per_byte) raises
//     LimitError and leaves the parse as it was, and the matcher keeps that error: every later call
//     except Reset() raises it again (a sticky error state, as in llguidance), since its masks could
//     no longer be computed exactly.
// A matcher is not thread-safe; distinct matchers may run on distinct threads concurrently. A call
// that overlaps another call on the same matcher from a different thread throws InputError and
// changes nothing (support/exclusive_use.h); it never corrupts the matcher or the process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compiled_grammar.h"
#include "matcher/capture_recorder.h"
#include "matcher/path_temperature.h"
#include "matcher/tag_tracker.h"
#include "matcher/token_budget.h"
#include "parser/earley_parser.h"
#include "support/exclusive_use.h"

namespace xg {

class GrammarMatcher {
 public:
  // override_stop_tokens replaces the tokenizer's stop tokens when given. max_rollback_tokens < 0
  // means unlimited.
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                 std::optional<std::vector<int32_t>> override_stop_tokens = std::nullopt,
                 int32_t max_rollback_tokens = -1);

  bool AcceptToken(int32_t token_id);
  bool AcceptString(const std::string& bytes);
  // Writes the packed allowed-token mask into words[0, num_words); words past the vocabulary are 0.
  void FillNextTokenBitmask(uint32_t* words, int32_t num_words);
  // The token-by-token oracle: the same mask computed by trying every token with AcceptToken's
  // rules, without the mask cache. Slow (one parse per token); for tests.
  void FillNextTokenBitmaskBruteForce(uint32_t* words, int32_t num_words);
  // The longest byte string every continuation must start with (cut to whole UTF-8 characters), at
  // most kMaxJumpForwardBytes long. The matcher is unchanged, also when a parser limit is raised.
  static constexpr size_t kMaxJumpForwardBytes = 1 << 16;
  std::string FindJumpForwardString();
  void Rollback(int32_t num_tokens);
  // Undoes the token just accepted as if it had never been (for a batch step that fails after some
  // rows advanced): unlike Rollback(1) it leaves the rollback budget as it was before that token.
  // Requires a token accepted since the last Rollback / Reset.
  void UndoLastToken();
  void Reset();
  GrammarMatcher Fork() const {
    ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.fork");
    return *this;
  }

  bool IsTerminated() const { return terminated_; }
  // True when the input so far is a complete sentence (a stop token would be accepted now).
  bool IsCompleted() const {
    ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.is_completed");
    return terminated_ || parser_.CanAcceptEnd();
  }
  // The rule temperatures of the paths the next token may take (matcher/path_temperature.h); none once terminated.
  PathTemperatures NextTokenTemperatures() const {
    ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.temperature");
    return terminated_ ? PathTemperatures{} : CurrentPathTemperatures(parser_);
  }
  // Appends the scannable states of the current Earley set (none once terminated).
  void CurrentScannableStates(std::vector<int32_t>* out) const {
    if (!terminated_) parser_.ScannableStates(out);
  }
  // True if the next fill must first build the mask entry of some current state (a first visit).
  bool NextFillBuildsEntries() const;
  // Tokens the last FillNextTokenBitmask left to the live parser (uncertain in every mask entry
  // and context entry of the current items): the part of a fill that is not a cached lookup.
  int32_t LastFillLiveChecks() const { return last_fill_live_checks_; }
  int32_t NumAcceptedTokens() const { return static_cast<int32_t>(dropped_steps_ + history_.size()); }
  // Bytes held by the parse and the rollback history (not the shared compiled grammar).
  size_t MemoryBytes() const {
    ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.memory_size_bytes");
    return parser_.MemoryBytes() + history_.capacity() * sizeof(Step) + tags_.MemoryBytes() + captures_.MemoryBytes() +
           budgets_.MemoryBytes();
  }
  // TagDispatch mode (matcher/tag_tracker.h): StepStatus bits 8..10 and the tag index + 1 from bit 16, with
  // or without the switches of the last accepted token; and the switches not yet taken, oldest first.
  int32_t TagStatusBits(bool with_last_step_switches) const { return tags_.StatusBits(with_last_step_switches); }
  bool InTag() const { return tags_.InTag(); }
  std::vector<TagEvent> TakeTagEvents() { return tags_.TakeEvents(); }
  // The spans captured rules derived in the output so far (matcher/capture_recorder.h): (label, text) per
  // completion, or per (label, start) the longest with `deduplicate`.
  std::vector<std::pair<std::string, std::string>> Captures(bool deduplicate) const {
    ExclusiveUse::Scope in_use(in_use_, "GrammarMatcher.get_captures");
    return captures_.Captures(grammar_->fsm(), deduplicate);
  }
  const std::vector<int32_t>& StopTokenIds() const { return stop_ids_; }
  int32_t MaxRollbackTokens() const { return max_rollback_tokens_; }
  const CompiledGrammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const CompiledGrammar>& grammar_ptr() const { return grammar_; }

 private:
  struct Step {
    int32_t sets_before;      // parser set count before the step
    bool terminated;          // the step was a stop token
    int32_t undoable_before;  // undoable_ before the step (UndoLastToken restores it)
    TagTracker::Checkpoint tags_before;
    CaptureRecorder::Checkpoint captures_before;
    TokenBudgets::Checkpoint budgets_before;
  };
  // Undoes the last step of history_ (its sets, or the termination) and returns it.
  Step PopStep();
  // Parses `bytes` on top of the current state; on failure pops what it pushed. Returns success. With
  // `display` (what the user sees of these bytes) the step is an accepted one and the tag tracker follows it.
  bool TryAdvance(const std::string& bytes, const std::string* display = nullptr);
  // One non-stop token's bytes: its text, or the sentinel of a token element the grammar names (grammar.h), or
  // both for a text token a Token() element names (TryAdvanceEither).
  bool TryAdvanceToken(int32_t id, bool accepting = false);
  // Parses `text` and, from the same set, `sentinel`; accepted, the last set is the union of both readings'.
  // The tag tracker follows the text reading.
  bool TryAdvanceEither(const std::string& text, const std::string& sentinel, bool accepting);
  // FillNextTokenBitmask without the use guard and the sticky-error bookkeeping.
  void FillUnchecked(uint32_t* words, int32_t num_words);
  bool IsStop(int32_t id) const;
  // Re-checks uncertain tokens (positions in the sorted vocabulary, ascending) against the live
  // parser and sets the bits of those that parse.
  void CheckUncertain(const std::vector<int32_t>& sorted_positions, uint32_t* words);
  // The follow list of a context entry for live item `it` (see ContextMaskEntry): flat (state,
  // count) pairs where its parent resumes, then one more level per lone ancestor that can end right
  // after what is below it (EarleyParser::ResetToItem), up to a small bound.
  void ContextFollow(const EarleyItem& it, std::vector<int32_t>* follow);
  // AppendWaiters, then, while the lone waiter resumes in a pure tail (its rule completes at once),
  // the waiters of that rule in its place. Returns the lone waiter last found, or null.
  const EarleyItem* AppendResumeStates(int32_t rule, int32_t origin, std::vector<int32_t>* pairs);
  // Appends the (state, count class) pairs where the items of set `origin` waiting on `rule` resume;
  // returns the waiting item when there is exactly one.
  const EarleyItem* AppendWaiters(int32_t rule, int32_t origin, std::vector<int32_t>* pairs);

  std::shared_ptr<const CompiledGrammar> grammar_;
  EarleyParser parser_;
  std::vector<int32_t> stop_ids_;
  int32_t max_rollback_tokens_;
  bool terminated_ = false;
  int32_t last_fill_live_checks_ = 0;
  TagTracker tags_;
  CaptureRecorder captures_;  // records only when the grammar captures
  TokenBudgets budgets_;      // counts only when the grammar has budgets
  // After an accepted step: counts the token (`counted`), opens the budget gates of occurrences whose budget is spent
  // (captures observe the gates' completions as events of the step from `step_events` on) and ends those
  // occurrences.
  void ApplyTokenBudgets(bool counted, size_t step_events);
  // The items of the last set at a budget gate (BudgetSpent(), grammar.h) of an occurrence whose budget is spent pass
  // it: read as the gate's sentinel from a set of those items only, the set the reading ends in joins the last set.
  // Returns whether any gate opened.
  bool OpenBudgetGates();
  std::vector<Step> history_;  // the steps rollback can undo (the last max_rollback_tokens_ when bounded)
  int64_t dropped_steps_ = 0;   // accepted steps no longer in history_ (beyond max_rollback_tokens_)
  // With max_rollback_tokens_ >= 0: how many of the last steps rollback may still undo (at most
  // max_rollback_tokens_; a rollback uses some up, as in xgrammar). Older sets may be compacted.
  int32_t undoable_ = 0;
  int32_t UndoableSteps() const {
    return max_rollback_tokens_ < 0 ? static_cast<int32_t>(history_.size()) : undoable_;
  }
  // Sets [1, compacted_until_) were compacted by the last CompactHistory (see there).
  int32_t compacted_until_ = 1;
  // Called after each accepted step: forgets the steps beyond max_rollback_tokens_ and, once enough
  // sets have gone out of rollback's reach since the last time, compacts them (EarleyParser::CompactSets),
  // so a long generation with bounded rollback keeps memory in proportion to its open constructs.
  void CompactHistory();
  // Scratch buffers reused across calls.
  std::vector<int32_t> states_, uncertain_, parents_;  // parents_: flat (state, count) pairs
  std::vector<std::pair<int32_t, int32_t>> parent_pairs_;
  std::vector<uint32_t> scratch_;
  std::string sticky_error_;  // the LimitError met, or empty
  // Raises the sticky error, if any (every entry point but Reset calls it first).
  void ThrowIfFailed() const;
  // Runs f; a LimitError it raises becomes the sticky error (and is rethrown).
  template <typename F>
  auto RecordingLimits(F&& f) -> decltype(f());
  ExclusiveUse in_use_;
};

// Fills rows of one bitmask for many matchers on up to num_threads threads. words points at a
// [rows, words_per_row] int32 array; matchers[i] writes row indices[i].
void BatchFillNextTokenBitmask(const std::vector<GrammarMatcher*>& matchers, uint32_t* words, int32_t words_per_row,
                               const std::vector<int32_t>& indices, int num_threads);

}  // namespace xg
