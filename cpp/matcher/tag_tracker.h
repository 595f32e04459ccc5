// Mode events of TagDispatch grammars: where an output switches between free text and a tag.
//
// A tool-calling grammar is free text watched by a TagDispatch (grammar.h): when a trigger completes, the
// text goes on with that tag's rule, then free text again. A decode loop wants to know, per token, whether a
// row is in free text or inside a tag, and when it entered or left one. The Earley sets say so directly:
//   - The watched dispatches are the outermost TagDispatch rules (fsm/dispatch_watch.h).
//   - An item of a watched dispatch at a final state of its automaton (free text, or done after the last
//     tag) means the parse may be in free text here: a tag that was open has ended at this byte.
//   - An item at a trigger state (a trigger has just completed; its only way on is the tag's rule, or
//     a longer trigger) with no free-text item beside it means a tag has begun at this byte.
// The parser never skips a dispatch's items (GrammarFsm::IsTagDispatchRule), so both are seen at the exact
// byte. "In a tag" thus means "every parse of the output so far is inside a tag of a watched dispatch".
//
// The tracker keeps the output (the parsed bytes, and the text a user sees, where a special token's
// sentinel reads as the token's text) so that each tag's exact text can be reported when it ends: from
// the first byte of its trigger to the last byte of the tag. Events carry the index of the token whose
// bytes caused them. The matcher checkpoints the tracker with each step, so a rejected token, a
// rollback or an undone step restores it (and drops the events of the undone tokens not yet taken).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fsm/dispatch_watch.h"
#include "parser/earley_parser.h"

namespace xg {

// One switch between free text and a tag.
struct TagEvent {
  bool start;           // true: the tag began (text: its trigger); false: it ended (text: the whole tag)
  int32_t tag;          // index into DispatchWatch::Tags()
  int64_t token_index;  // the 0-based index of the accepted token whose bytes made the switch
  std::string text;     // what the user sees (special tokens as their text)
};

// Per-matcher state; see the file comment.
class TagTracker {
 public:
  // StepStatus bits (xla_ffi/grammar_step.h) the tracker reports.
  static constexpr int32_t kInTag = 1 << 8, kEntered = 1 << 9, kLeft = 1 << 10, kTagShift = 16;

  struct Checkpoint {
    bool in_tag;
    int32_t tag;
    int64_t tag_start, parse_len, display_len;
    int32_t step_bits;
  };

  // Offsets are absolute (bytes since the output began), so checkpoints stay valid when Trim drops a prefix.
  Checkpoint Save() const {
    return {in_tag_, tag_, tag_start_, parse_base_ + static_cast<int64_t>(parse_.size()),
            display_base_ + static_cast<int64_t>(display_.size()), step_bits_};
  }
  // Back to a checkpoint; events of tokens from `first_dropped_token` on are dropped.
  void Restore(const Checkpoint& c, int64_t first_dropped_token);
  void Clear() { *this = TagTracker(); }
  // Forgets the output no later step can read once the matcher can no longer roll back before `oldest`: what a
  // trigger's suffix match needs (`max_trigger_bytes` before it) and the text of a tag open there. Amortised: it
  // copies only when at least half of the kept text would go.
  void Trim(const Checkpoint& oldest, int64_t max_trigger_bytes);

  // Appends one step's bytes (`display`: what the user sees; equal to `bytes` except for a special token)
  // before the parser reads them; ObserveSet is then called after each byte's set.
  void BeginStep(const std::string& bytes, const std::string& display, int64_t token_index);
  void ObserveSet(const DispatchWatch& watch, const EarleyParser& parser, size_t byte_in_step);

  bool InTag() const { return in_tag_; }
  // kInTag, the switches of the last step (kEntered / kLeft), and the current tag (or the tag left) + 1 from
  // bit kTagShift.
  int32_t StatusBits(bool with_step_switches) const;
  std::vector<TagEvent> TakeEvents() {
    std::vector<TagEvent> out;
    out.swap(events_);
    return out;
  }
  size_t MemoryBytes() const {
    size_t n = parse_.capacity() + display_.capacity() + events_.capacity() * sizeof(TagEvent);
    for (const TagEvent& e : events_) n += e.text.capacity();
    return n;
  }

 private:
  // The (absolute) display offset of the step's byte offset `p` (may be negative: an earlier step's text).
  int64_t DisplayOffset(int64_t p) const;

  bool in_tag_ = false;
  int32_t tag_ = -1;        // the current tag, or the last one
  int64_t tag_start_ = 0;   // display offset of the current tag's first byte
  std::string parse_, display_;
  int64_t parse_base_ = 0, display_base_ = 0;  // bytes trimmed from the front of parse_ / display_
  std::vector<TagEvent> events_;
  int32_t step_bits_ = 0;
  // The step being parsed.
  int64_t step_parse_begin_ = 0, step_display_begin_ = 0, step_display_len_ = 0, step_token_ = 0;
  bool step_is_text_ = true;
};

}  // namespace xg
