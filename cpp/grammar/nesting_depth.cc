// Depth by an explicit post-order stack: a node is pushed once unexpanded, then again expanded after
// its children, when its depth is one more than the deepest child's. Shared subtrees (after inlining
// a node may be referenced from several parents) are measured once.
#include "grammar/nesting_depth.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "support/check.h"

namespace xg {
namespace {

int32_t ExprDepth(const Grammar& g, int32_t root, std::vector<int32_t>* depth) {
  std::vector<std::pair<int32_t, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [id, expanded] = stack.back();
    stack.pop_back();
    const Expr& e = g.exprs[id];
    if (expanded) {
      int32_t d = 0;
      for (int32_t c : e.children) d = std::max(d, (*depth)[c]);
      (*depth)[id] = d + 1;
      continue;
    }
    if ((*depth)[id] > 0) continue;
    stack.push_back({id, true});
    for (int32_t c : e.children)
      if ((*depth)[c] == 0) stack.push_back({c, false});
  }
  return (*depth)[root];
}

}  // namespace

int32_t RuleNestingDepth(const Grammar& g, int32_t rule) {
  std::vector<int32_t> depth(g.exprs.size(), 0);
  int32_t d = ExprDepth(g, g.rules[rule].body, &depth);
  if (g.rules[rule].lookahead >= 0) d = std::max(d, ExprDepth(g, g.rules[rule].lookahead, &depth));
  return d;
}

void CheckNestingDepth(const Grammar& g, int32_t limit) {
  std::vector<int32_t> depth(g.exprs.size(), 0);  // shared: a node's depth does not depend on its rule
  for (size_t r = 0; r < g.rules.size(); ++r) {
    const Rule& rule = g.rules[r];
    int32_t d = rule.body >= 0 ? ExprDepth(g, rule.body, &depth) : 0;
    if (rule.lookahead >= 0) d = std::max(d, ExprDepth(g, rule.lookahead, &depth));
    XG_USER_CHECK(d <= limit) << "grammar: rule '" << rule.name << "' nests expressions " << d
                              << " levels deep (groups and repetition operators); the limit is " << limit
                              << " (Limits.max_nesting_depth)";
  }
}

}  // namespace xg
