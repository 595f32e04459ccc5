// See capture_recorder.h.
#include "matcher/capture_recorder.h"

#include <algorithm>
#include <map>

#include "support/utf8.h"

namespace xg {

void CaptureRecorder::Record(const CaptureEvent& e, size_t step_begin) {
  // One item per (state, origin, count) is in a set, but several final states of a rule may share an origin. In one
  // step (a string read at once) a span may first end unmarked (a dispatch head's text before its marker) and later
  // be cut from a marked completion: the marked event replaces it, recorded where it is seen (after its marker).
  const auto first = events_.begin() + static_cast<std::ptrdiff_t>(std::min(step_begin, events_.size()));
  const auto same = std::find_if(first, events_.end(), [&](const CaptureEvent& o) {
    return o.capture == e.capture && o.rule == e.rule && o.start == e.start && o.end == e.end;
  });
  if (same == events_.end()) {
    events_.push_back(e);
  } else if (same->unmarked && !e.unmarked) {
    events_.erase(same);
    events_.push_back(e);
  }
}

int64_t CaptureRecorder::MarkerStart(const GrammarFsm::MarkerSplit& split, int64_t start, int64_t end) const {
  // The code points of the span and their byte offsets (the output is UTF-8; a stray byte counts as itself).
  std::vector<uint32_t> cps;
  std::vector<int64_t> at;
  for (size_t i = static_cast<size_t>(start); i < static_cast<size_t>(end);) {
    at.push_back(static_cast<int64_t>(i));
    uint32_t cp = 0;
    if (!DecodeUtf8(output_, &i, &cp)) cp = static_cast<uint8_t>(output_[i++]);
    cps.push_back(cp);
  }
  at.push_back(end);
  auto accepts = [](const CodepointDfa& dfa, const uint32_t* b, const uint32_t* e) {
    int32_t state = 0;
    for (; b != e && state >= 0; ++b) state = dfa.Next(state, dfa.AtomOf(*b));
    return state >= 0 && dfa.Accepts(state);
  };
  // Markers longer than this are not looked for (the search is quadratic in the marker's length).
  constexpr size_t kMaxMarkerCodePoints = 4096;
  const size_t n = cps.size();
  for (size_t k = n + 1; k-- > (n > kMaxMarkerCodePoints ? n - kMaxMarkerCodePoints : 0);) {
    if (accepts(split.marker, cps.data() + k, cps.data() + n) && accepts(split.body, cps.data(), cps.data() + k))
      return at[k];
  }
  return -1;
}

void CaptureRecorder::ObserveSet(const EarleyParser& parser, size_t first_event) {
  const GrammarFsm& g = parser.fsm();
  const int32_t last = parser.NumSets() - 1;
  const int64_t end = parser.SetPosition(last);
  const size_t step_begin = std::min(first_event, events_.size());
  for (const EarleyItem* it = parser.SetBegin(last); it != parser.SetEnd(last); ++it) {
    if (it->lineage != 0 || it->origin < 0) continue;
    const int32_t rule = g.RuleOf(it->state), capture = g.RuleCapture(rule);
    const GrammarFsm::MarkerSplit* split = g.RuleMarkerSplit(rule);
    if ((capture < 0 && split == nullptr) || !parser.CanComplete(*it)) continue;
    const int64_t start = parser.SetPosition(it->origin);
    if (split == nullptr) {
      Record({capture, rule, start, end}, step_begin);
      continue;
    }
    // A completion without its marker (a head read as a dispatch may end without one) captures its whole span, as
    // an unmarked event: deduplication prefers a marked one of the same start.
    const int64_t marker = MarkerStart(*split, start, end);
    if (marker < 0) {
      if (capture >= 0) Record({capture, rule, start, end, /*unmarked=*/true}, step_begin);
      continue;
    }
    if (split->marker_capture >= 0) Record({split->marker_capture, rule, marker, end}, step_begin);
    if (split->hide) Record({CaptureEvent::kHidden, rule, marker, end}, step_begin);
    if (capture >= 0) Record({capture, rule, start, marker}, step_begin);
  }
}

std::vector<std::pair<std::string, std::string>> CaptureRecorder::Captures(const GrammarFsm& fsm,
                                                                           bool deduplicate) const {
  const std::vector<std::string>& labels = fsm.CaptureLabels();
  std::vector<size_t> kept;  // indices into events_, in recording order
  if (deduplicate) {
    std::map<std::pair<int32_t, int64_t>, size_t> longest;  // (label, start) -> the event with the longest span
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i].capture == CaptureEvent::kHidden) continue;
      auto [at, inserted] = longest.emplace(std::make_pair(events_[i].capture, events_[i].start), i);
      const CaptureEvent &e = events_[i], &best = events_[at->second];
      if (!inserted && (best.unmarked > e.unmarked || (best.unmarked == e.unmarked && e.end > best.end)))
        at->second = i;
    }
    for (const auto& [key, i] : longest) kept.push_back(i);
    std::sort(kept.begin(), kept.end());
  } else {
    for (size_t i = 0; i < events_.size(); ++i)
      if (events_[i].capture != CaptureEvent::kHidden) kept.push_back(i);
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(kept.size());
  std::vector<std::pair<int64_t, int64_t>> hidden;
  for (size_t i : kept) {
    const CaptureEvent& e = events_[i];
    // The hidden markers inside the span, of rules this rule reaches, recorded before it (inner rules first).
    hidden.clear();
    for (size_t j = 0; j < i; ++j) {
      const CaptureEvent& h = events_[j];
      if (h.capture == CaptureEvent::kHidden && h.start >= e.start && h.end <= e.end && h.start < h.end &&
          fsm.HidesMarker(e.rule, h.rule))
        hidden.push_back({h.start, h.end});
    }
    std::sort(hidden.begin(), hidden.end());
    std::string text;
    int64_t at = e.start;
    for (auto [b, end] : hidden) {
      if (b > at) text.append(output_, static_cast<size_t>(at), static_cast<size_t>(b - at));
      at = std::max(at, end);
    }
    if (e.end > at) text.append(output_, static_cast<size_t>(at), static_cast<size_t>(e.end - at));
    out.emplace_back(labels[e.capture], std::move(text));
  }
  return out;
}

}  // namespace xg
