// DispatchWatch: the TagDispatch rules (grammar.h) whose tags a decode loop reports, and what each
// automaton state of theirs means for it (matcher/tag_tracker.h reads the Earley sets with it).
//
// The watched dispatches are the TagDispatch rules reachable from the root without going through a
// dispatch's tag rule (the outermost ones: a dispatch inside a tag's content is part of that tag). In their
// automata (fsm/tag_dispatch_dfa.h) the final states are free text (or done after the last tag), and the
// non-final states with a rule edge are trigger states: a trigger has just completed and the text must go on
// with its tag's rule (or a longer trigger). Built once per compiled grammar, in O(states + rule edges).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fsm/grammar_fsm.h"
#include "grammar/grammar.h"

namespace xg {

// What a compiled grammar's watched dispatches are; built once per CompiledGrammar.
class DispatchWatch {
 public:
  struct Tag {
    std::string trigger;     // the trigger's bytes (a token sentinel for a special-token trigger)
    int32_t rule;            // the tag's rule
    int32_t dispatch_rule;   // the watched dispatch it belongs to
  };
  enum StateKind : uint8_t { kNone = 0, kFree = 1, kTrigger = 2 };

  DispatchWatch() = default;
  DispatchWatch(const Grammar& g, const GrammarFsm& fsm);

  bool Empty() const { return tags_.empty(); }
  // The longest trigger, in bytes (a token trigger is its sentinel's 8).
  int64_t MaxTriggerBytes() const { return max_trigger_bytes_; }
  // The tags of every watched dispatch, dispatches in rule order, each one's tags as written.
  const std::vector<Tag>& Tags() const { return tags_; }
  StateKind Kind(int32_t state) const { return kind_.empty() ? kNone : static_cast<StateKind>(kind_[state]); }
  // The tag whose trigger, of those that lead from `state` (a trigger state) to a tag rule, is the
  // longest suffix of `text`; -1 if none.
  int32_t TagAt(const GrammarFsm& fsm, int32_t state, std::string_view text) const;

 private:
  std::vector<Tag> tags_;
  std::vector<uint8_t> kind_;  // per FSM state (empty when no dispatch is watched)
  int64_t max_trigger_bytes_ = 0;
};

}  // namespace xg
