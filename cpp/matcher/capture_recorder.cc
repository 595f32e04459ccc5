// See capture_recorder.h.
#include "matcher/capture_recorder.h"

#include <algorithm>
#include <map>

namespace xg {

void CaptureRecorder::ObserveSet(const EarleyParser& parser, size_t first_event) {
  const GrammarFsm& g = parser.fsm();
  const int32_t last = parser.NumSets() - 1;
  const int64_t end = parser.SetPosition(last);
  const size_t step_begin = std::min(first_event, events_.size());
  for (const EarleyItem* it = parser.SetBegin(last); it != parser.SetEnd(last); ++it) {
    if (it->lineage != 0 || it->origin < 0) continue;
    const int32_t capture = g.RuleCapture(g.RuleOf(it->state));
    if (capture < 0 || !parser.CanComplete(*it)) continue;
    const CaptureEvent e{capture, parser.SetPosition(it->origin), end};
    // One item per (state, origin, count) is in a set, but several final states of a rule may share an origin.
    const bool seen = std::any_of(events_.begin() + static_cast<std::ptrdiff_t>(step_begin), events_.end(),
                                  [&](const CaptureEvent& o) {
                                    return o.capture == e.capture && o.start == e.start && o.end == e.end;
                                  });
    if (!seen) events_.push_back(e);
  }
}

std::vector<std::pair<std::string, std::string>> CaptureRecorder::Captures(const std::vector<std::string>& labels,
                                                                           bool deduplicate) const {
  std::vector<size_t> kept;  // indices into events_, in recording order
  if (deduplicate) {
    std::map<std::pair<int32_t, int64_t>, size_t> longest;  // (label, start) -> the event with the longest span
    for (size_t i = 0; i < events_.size(); ++i) {
      auto [at, inserted] = longest.emplace(std::make_pair(events_[i].capture, events_[i].start), i);
      if (!inserted && events_[i].end > events_[at->second].end) at->second = i;
    }
    for (const auto& [key, i] : longest) kept.push_back(i);
    std::sort(kept.begin(), kept.end());
  } else {
    for (size_t i = 0; i < events_.size(); ++i) kept.push_back(i);
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(kept.size());
  for (size_t i : kept) {
    const CaptureEvent& e = events_[i];
    out.emplace_back(labels[e.capture], output_.substr(static_cast<size_t>(e.start),
                                                       static_cast<size_t>(e.end - e.start)));
  }
  return out;
}

}  // namespace xg
