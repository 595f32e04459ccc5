// See token_budget.h. The walk: collect the (rule, origin) nodes of the last set's items and, up the parent
// relation, every ancestor node, recording child edges; then mark as kept, downward from the nodes without parents,
// every node reached without entering an occurrence that must end. The walk runs only when such an occurrence exists.
#include "matcher/token_budget.h"

#include <unordered_map>

namespace xg {

namespace {

int64_t Key(int32_t rule, int32_t origin) { return (static_cast<int64_t>(origin) << 32) | static_cast<uint32_t>(rule); }

}  // namespace

bool TokenBudgets::CloseSpentOccurrences(EarleyParser* parser) const {
  const GrammarFsm& fsm = parser->fsm();
  const int32_t last = parser->NumSets() - 1;
  if (last == 0) return false;  // no token read yet
  std::vector<int64_t> closing;  // occurrences that must end here
  for (const EarleyItem* it = parser->SetBegin(last); it != parser->SetEnd(last); ++it) {
    if (it->lineage != 0 || it->origin < 0) continue;
    const int32_t rule = fsm.RuleOf(it->state), budget = fsm.RuleMaxTokens(rule);
    if (budget > 0 && parser->CanComplete(*it) && TokensAfter(parser->SetPosition(it->origin)) >= budget)
      closing.push_back(Key(rule, it->origin));
  }
  if (closing.empty()) return false;

  struct Node {
    int32_t rule, origin;
    bool top = true;   // no parent
    bool kept = false;
    std::vector<int32_t> children;
  };
  std::vector<Node> nodes;
  std::unordered_map<int64_t, int32_t> index;
  auto node_of = [&](int32_t rule, int32_t origin) {
    auto [at, inserted] = index.emplace(Key(rule, origin), static_cast<int32_t>(nodes.size()));
    if (inserted) nodes.push_back({rule, origin});
    return at->second;
  };
  for (const EarleyItem* it = parser->SetBegin(last); it != parser->SetEnd(last); ++it)
    if (it->lineage == 0) node_of(fsm.RuleOf(it->state), it->origin);
  for (size_t i = 0; i < nodes.size(); ++i) {  // nodes grows: every ancestor is visited once
    const int32_t rule = nodes[i].rule, origin = nodes[i].origin;
    if (origin < 0) continue;
    for (const EarleyItem* p = parser->SetBegin(origin); p != parser->SetEnd(origin); ++p) {
      if (p->lineage != 0) continue;
      for (const RuleEdge* e = fsm.RuleEdgesBegin(p->state); e != fsm.RuleEdgesEnd(p->state); ++e) {
        if (e->rule != rule) continue;
        const int32_t parent = node_of(fsm.RuleOf(p->state), p->origin);
        nodes[parent].children.push_back(static_cast<int32_t>(i));
        nodes[i].top = false;
        break;
      }
    }
  }
  std::sort(closing.begin(), closing.end());
  auto is_closing = [&](const Node& n) { return std::binary_search(closing.begin(), closing.end(), Key(n.rule, n.origin)); };
  std::vector<int32_t> todo;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].top && !is_closing(nodes[i])) {
      nodes[i].kept = true;
      todo.push_back(static_cast<int32_t>(i));
    }
  }
  while (!todo.empty()) {
    const int32_t i = todo.back();
    todo.pop_back();
    for (int32_t c : nodes[i].children) {
      if (nodes[c].kept || is_closing(nodes[c])) continue;
      nodes[c].kept = true;
      todo.push_back(c);
    }
  }
  std::vector<EarleyItem> kept;
  const size_t before = parser->SetEnd(last) - parser->SetBegin(last);
  for (const EarleyItem* it = parser->SetBegin(last); it != parser->SetEnd(last); ++it)
    if (it->lineage != 0 || nodes[index.at(Key(fsm.RuleOf(it->state), it->origin))].kept) kept.push_back(*it);
  if (kept.size() == before || kept.empty()) return false;  // (empty: every parse is inside; nothing to end into)
  const uint8_t flags = parser->SetFlags(last);
  const int64_t position = parser->SetPosition(last);
  parser->PopSets(1);
  parser->PushClosedSet(kept.data(), kept.size(), flags);
  parser->SetPosition(last, position);
  return true;
}

}  // namespace xg
