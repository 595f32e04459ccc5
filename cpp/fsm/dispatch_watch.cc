// See dispatch_watch.h.
#include "fsm/dispatch_watch.h"

#include <algorithm>

namespace xg {

DispatchWatch::DispatchWatch(const Grammar& g, const GrammarFsm& fsm) {
  const int32_t n_rules = fsm.NumRules(), n_states = fsm.NumStates();
  bool any = false;
  for (int32_t r = 0; r < n_rules && !any; ++r) any = fsm.IsTagDispatchRule(r);
  if (!any) return;
  // The rules each rule references (over its states' rule edges).
  std::vector<std::vector<int32_t>> refs(n_rules);
  for (int32_t s = 0; s < n_states; ++s)
    for (const RuleEdge* e = fsm.RuleEdgesBegin(s); e != fsm.RuleEdgesEnd(s); ++e) refs[fsm.RuleOf(s)].push_back(e->rule);
  // Reachable from the root, not through a dispatch's tag rules.
  std::vector<uint8_t> seen(n_rules, 0), watched(n_rules, 0);
  std::vector<int32_t> stack{fsm.Root()};
  seen[fsm.Root()] = 1;
  while (!stack.empty()) {
    const int32_t r = stack.back();
    stack.pop_back();
    if (fsm.IsTagDispatchRule(r)) {
      watched[r] = 1;
      continue;
    }
    for (int32_t t : refs[r])
      if (!seen[t]) seen[t] = 1, stack.push_back(t);
  }
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!watched[r]) continue;
    const Expr& e = g.exprs[g.rules[r].body];
    for (int32_t i = 0; i < e.min; ++i) {
      const Expr& tag = g.exprs[e.children[i]];
      tags_.push_back({g.exprs[tag.children[0]].bytes, g.exprs[tag.children[1]].rule, r});
      max_trigger_bytes_ = std::max<int64_t>(max_trigger_bytes_, static_cast<int64_t>(tags_.back().trigger.size()));
    }
  }
  if (tags_.empty()) return;
  kind_.assign(n_states, kNone);
  for (int32_t s = 0; s < n_states; ++s) {
    if (!watched[fsm.RuleOf(s)]) continue;
    if (fsm.IsFinal(s)) {
      kind_[s] = kFree;
    } else if (fsm.RuleEdgesBegin(s) != fsm.RuleEdgesEnd(s)) {
      kind_[s] = kTrigger;
    }
  }
}

int32_t DispatchWatch::TagAt(const GrammarFsm& fsm, int32_t state, std::string_view text) const {
  const int32_t dispatch = fsm.RuleOf(state);
  int32_t best = -1;
  for (const RuleEdge* e = fsm.RuleEdgesBegin(state); e != fsm.RuleEdgesEnd(state); ++e) {
    for (size_t i = 0; i < tags_.size(); ++i) {
      const Tag& t = tags_[i];
      if (t.dispatch_rule != dispatch || t.rule != e->rule || t.trigger.size() > text.size()) continue;
      if (text.substr(text.size() - t.trigger.size()) != t.trigger) continue;
      if (best < 0 || t.trigger.size() > tags_[best].trigger.size()) best = static_cast<int32_t>(i);
    }
  }
  return best;
}

}  // namespace xg
