// Captures: the spans of an output that captured rules (`name[capture] ::=`, grammar.h Rule::capture) derived.
//
// A rule completes over a span when an item of the rule at a final state of its automaton is in Earley set
// `end` with origin `start`: the rule derives the output between the two sets. After each byte of an accepted
// step, the matcher hands the new set to ObserveSet, which records one event (label, start, end) per completed
// item of a captured rule, in the order the parser added them (an inner rule before the rules its completion
// completes). The parser never skips such an item (EarleyParser::LeoItem), so every completion is seen. Mask
// computation and rejected tokens record nothing: only accepted steps are observed.
//
// Events are raw, as xgrammar reports them: every completion of every parse of the output so far, also of
// parses that later died, and one per completion (a rule with body /[0-9]+/ completes after every digit).
// Captures(deduplicate=true) keeps, per (label, start), the longest span, placed where it was recorded.
//
// Positions are offsets in the text a user sees (a special token reads as its text), which the matcher writes
// on each set (EarleyParser::SetPosition); the recorder keeps that text to slice spans from. The matcher
// checkpoints the recorder with each step, so a rejected token, a rollback or an undone step restores it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "parser/earley_parser.h"

namespace xg {

struct CaptureEvent {
  int32_t capture;     // index into GrammarFsm::CaptureLabels()
  int64_t start, end;  // offsets in the output the user sees
};

class CaptureRecorder {
 public:
  struct Checkpoint {
    size_t events;
    size_t output_len;
  };
  Checkpoint Save() const { return {events_.size(), output_.size()}; }
  void Restore(const Checkpoint& c) {
    events_.resize(c.events);
    output_.resize(c.output_len);
  }
  void Clear() { *this = CaptureRecorder(); }

  // Appends an accepted step's text (what the user sees) before its sets are observed.
  void AppendOutput(const std::string& display) { output_ += display; }
  // Records the completions of captured rules in the parser's last set (real items only). Events already
  // recorded since `first_event` (a Save().events of this step) with the same label and span are not repeated:
  // a token read two ways observes its last set twice.
  void ObserveSet(const EarleyParser& parser, size_t first_event = SIZE_MAX);

  // (label, captured text) per event, or deduplicated as described above.
  std::vector<std::pair<std::string, std::string>> Captures(const std::vector<std::string>& labels,
                                                            bool deduplicate) const;
  size_t MemoryBytes() const { return output_.capacity() + events_.capacity() * sizeof(CaptureEvent); }

 private:
  std::string output_;
  std::vector<CaptureEvent> events_;
};

}  // namespace xg
