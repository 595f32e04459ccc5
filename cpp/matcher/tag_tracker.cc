// See tag_tracker.h.
#include "matcher/tag_tracker.h"

#include <algorithm>
#include <string_view>

namespace xg {

void TagTracker::Restore(const Checkpoint& c, int64_t first_dropped_token) {
  in_tag_ = c.in_tag;
  tag_ = c.tag;
  tag_start_ = c.tag_start;
  parse_.resize(static_cast<size_t>(c.parse_len - parse_base_));
  display_.resize(static_cast<size_t>(c.display_len - display_base_));
  step_bits_ = c.step_bits;
  while (!events_.empty() && events_.back().token_index >= first_dropped_token) events_.pop_back();
}

void TagTracker::BeginStep(const std::string& bytes, const std::string& display, int64_t token_index) {
  step_parse_begin_ = parse_base_ + static_cast<int64_t>(parse_.size());
  step_display_begin_ = display_base_ + static_cast<int64_t>(display_.size());
  step_display_len_ = static_cast<int64_t>(display.size());
  step_is_text_ = &bytes == &display || bytes == display;
  step_token_ = token_index;
  step_bits_ = 0;
  parse_ += bytes;
  display_ += display;
}

int64_t TagTracker::DisplayOffset(int64_t p) const {
  // Text steps map byte for byte (a text trigger spans text steps only: sentinel bytes are reserved); a
  // special token is one unit, so an offset inside it means its end.
  if (!step_is_text_ && p > 0) return step_display_begin_ + step_display_len_;
  return std::clamp<int64_t>(step_display_begin_ + p, display_base_,
                             display_base_ + static_cast<int64_t>(display_.size()));
}

void TagTracker::ObserveSet(const DispatchWatch& watch, const EarleyParser& parser, size_t byte_in_step) {
  const int32_t last = parser.NumSets() - 1;
  bool free = false;
  int32_t trigger_state = -1;
  for (const EarleyItem* it = parser.SetBegin(last); it != parser.SetEnd(last); ++it) {
    const DispatchWatch::StateKind k = watch.Kind(it->state);
    if (k == DispatchWatch::kFree) {
      free = true;
      break;
    }
    if (k == DispatchWatch::kTrigger && trigger_state < 0) trigger_state = it->state;
  }
  const int64_t end = static_cast<int64_t>(byte_in_step) + 1;  // step offset just past this byte
  if (in_tag_ && free) {
    const int64_t stop = DisplayOffset(end);
    events_.push_back({false, tag_, step_token_, display_.substr(tag_start_ - display_base_, stop - tag_start_)});
    in_tag_ = false;
    step_bits_ |= kLeft;
    return;
  }
  if (free || trigger_state < 0) return;
  // A trigger completed: a tag begins (or, inside one, a longer trigger was taken instead of a shorter one).
  const std::string_view prefix(parse_.data(), static_cast<size_t>(step_parse_begin_ + end - parse_base_));
  const int32_t tag = watch.TagAt(parser.fsm(), trigger_state, prefix);
  const int64_t len = tag >= 0 ? static_cast<int64_t>(watch.Tags()[tag].trigger.size()) : 0;
  const int64_t start = DisplayOffset(end - len), stop = DisplayOffset(end);
  std::string trigger_text = display_.substr(start - display_base_, stop - start);
  if (!in_tag_) {
    in_tag_ = true;
    step_bits_ |= kEntered;
    events_.push_back({true, tag, step_token_, std::move(trigger_text)});
  } else if (!events_.empty() && events_.back().start) {
    events_.back().tag = tag;
    events_.back().text = std::move(trigger_text);
  }
  tag_ = tag;
  tag_start_ = start;
}

void TagTracker::Trim(const Checkpoint& oldest, int64_t max_trigger_bytes) {
  const int64_t parse_from = std::max(parse_base_, oldest.parse_len - max_trigger_bytes);
  int64_t display_from = oldest.display_len - max_trigger_bytes;  // a text trigger's bytes are its display bytes
  if (oldest.in_tag) display_from = std::min(display_from, oldest.tag_start);
  if (in_tag_) display_from = std::min(display_from, tag_start_);
  display_from = std::max(display_base_, display_from);
  constexpr int64_t kMinDrop = 4096;
  if (parse_from - parse_base_ >= std::max<int64_t>(kMinDrop, static_cast<int64_t>(parse_.size()) / 2)) {
    parse_.erase(0, static_cast<size_t>(parse_from - parse_base_));
    parse_base_ = parse_from;
  }
  if (display_from - display_base_ >= std::max<int64_t>(kMinDrop, static_cast<int64_t>(display_.size()) / 2)) {
    display_.erase(0, static_cast<size_t>(display_from - display_base_));
    display_base_ = display_from;
  }
}

int32_t TagTracker::StatusBits(bool with_step_switches) const {
  int32_t bits = in_tag_ ? kInTag : 0;
  if (with_step_switches) bits |= step_bits_ & (kEntered | kLeft);
  const bool name_tag = in_tag_ || (bits & kLeft);
  const int32_t index = name_tag ? std::min(tag_ + 1, 0x7fff) : 0;  // saturates: the events name every tag
  return bits | (std::max(index, 0) << kTagShift);
}

}  // namespace xg
