// See path_temperature.h. A walk up the parent relation over (rule, origin set) nodes, each visited once: a node
// of a tempered rule gives its temperature and stops the walk there (the innermost one wins); a node with no parent
// (the root, or a virtual origin) ends an untempered path. What the walk gives is a union, so the order of the
// visits and the cycles of left recursion do not change it.
#include "matcher/path_temperature.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace xg {

PathTemperatures CurrentPathTemperatures(const EarleyParser& parser) {
  PathTemperatures out;
  if (parser.NumSets() == 0) return out;
  const GrammarFsm& fsm = parser.fsm();
  std::unordered_set<int64_t> seen;
  std::vector<std::pair<int32_t, int32_t>> todo;  // (rule, origin)
  auto visit = [&](int32_t rule, int32_t origin) {
    if (seen.insert((static_cast<int64_t>(origin) << 32) | static_cast<uint32_t>(rule)).second)
      todo.push_back({rule, origin});
  };
  const int32_t last = parser.NumSets() - 1;
  for (const EarleyItem* it = parser.SetBegin(last); it != parser.SetEnd(last); ++it)
    if (it->lineage == 0 && fsm.HasBytes(it->state)) visit(fsm.RuleOf(it->state), it->origin);
  while (!todo.empty()) {
    const auto [rule, origin] = todo.back();
    todo.pop_back();
    const float t = fsm.RuleTemperature(rule);
    if (t >= 0) {
      out.min = out.max < 0 ? t : std::min(out.min, t);
      out.max = std::max(out.max, t);
      continue;
    }
    bool has_parent = false;
    if (origin >= 0) {
      for (const EarleyItem* p = parser.SetBegin(origin); p != parser.SetEnd(origin); ++p) {
        if (p->lineage != 0) continue;
        for (const RuleEdge* e = fsm.RuleEdgesBegin(p->state); e != fsm.RuleEdgesEnd(p->state); ++e) {
          if (e->rule != rule) continue;
          has_parent = true;
          visit(fsm.RuleOf(p->state), p->origin);
          break;
        }
      }
    }
    if (!has_parent) out.untempered = true;
  }
  return out;
}

}  // namespace xg
