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
// A rule whose text is a body followed by a marker (Lark's suffix / stop rules; GrammarFsm::MarkerSplit) is cut
// where the shortest marker that leaves a valid body begins (the marker's and the body's automata decide, read
// from the end of the span): its capture is the body, its `stop_capture` the marker (recorded first), and with
// `hide_marker` the marker span is recorded as hidden: left out of the text of every capture of a rule that
// reaches this one in the grammar and encloses the span. A completion with no such cut (a head read as a dispatch
// may end without its marker) captures its whole span, and deduplication prefers a cut one of the same start. (Which enclosing captures lose it is decided on the
// grammar, not on the parse tree, which an Earley parse does not keep: an enclosing rule of an unrelated branch
// that reaches the stop rule through another path and covers the span would lose it too.)
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
  int32_t capture;     // index into GrammarFsm::CaptureLabels(), or kHidden: a hide_marker rule's marker
  int32_t rule;        // the completed rule
  int64_t start, end;  // offsets in the output the user sees
  bool unmarked = false;  // a marker rule's completion without its marker (see the file comment)
  static constexpr int32_t kHidden = -1;
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
  std::vector<std::pair<std::string, std::string>> Captures(const GrammarFsm& fsm, bool deduplicate) const;
  size_t MemoryBytes() const { return output_.capacity() + events_.capacity() * sizeof(CaptureEvent); }

 private:
  // Appends `e` unless an event of this step (from `step_begin`) is the same.
  void Record(const CaptureEvent& e, size_t step_begin);
  // The offset in [start, end] where the marker of a split rule's span begins, or -1.
  int64_t MarkerStart(const GrammarFsm::MarkerSplit& split, int64_t start, int64_t end) const;
  std::string output_;
  std::vector<CaptureEvent> events_;
};

}  // namespace xg
