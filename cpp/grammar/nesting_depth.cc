// Depth by an explicit post-order stack: a node is pushed once unexpanded, then again expanded after
// its children, when its depth is one more than the deepest child's. Shared subtrees (after inlining
// a node may be referenced from several parents) are measured once. A whole grammar is measured in
// one pass over the expression arena instead when every child precedes its parent there (the parser
// and the passes build children first, so this is the usual case).
#include "grammar/nesting_depth.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "support/check.h"

namespace xg {
namespace {

// `stack`: scratch, empty on entry and on return (shared by the calls of one check: no allocation per rule).
int32_t ExprDepth(const Grammar& g, int32_t root, std::vector<int32_t>* depth,
                  std::vector<std::pair<int32_t, bool>>* stack_buffer) {
  if ((*depth)[root] > 0) return (*depth)[root];
  std::vector<std::pair<int32_t, bool>>& stack = *stack_buffer;
  stack.push_back({root, false});
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
  std::vector<std::pair<int32_t, bool>> stack;
  int32_t d = ExprDepth(g, g.rules[rule].body, &depth, &stack);
  if (g.rules[rule].lookahead >= 0) d = std::max(d, ExprDepth(g, g.rules[rule].lookahead, &depth, &stack));
  return d;
}

// Every expression's depth in one pass by index, or false when some child does not precede its parent.
bool ArenaDepths(const Grammar& g, std::vector<int32_t>* depth) {
  for (size_t id = 0; id < g.exprs.size(); ++id) {
    int32_t d = 0;
    for (int32_t c : g.exprs[id].children) {
      if (static_cast<size_t>(c) >= id) return false;
      d = std::max(d, (*depth)[c]);
    }
    (*depth)[id] = d + 1;
  }
  return true;
}

void CheckNestingDepth(const Grammar& g, int32_t limit) {
  std::vector<int32_t> depth(g.exprs.size(), 0);  // shared: a node's depth does not depend on its rule
  if (!ArenaDepths(g, &depth)) std::fill(depth.begin(), depth.end(), 0);  // measured per rule below
  std::vector<std::pair<int32_t, bool>> stack;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    const Rule& rule = g.rules[r];
    int32_t d = rule.body >= 0 ? ExprDepth(g, rule.body, &depth, &stack) : 0;
    if (rule.lookahead >= 0) d = std::max(d, ExprDepth(g, rule.lookahead, &depth, &stack));
    XG_USER_CHECK(d <= limit) << "grammar: rule '" << rule.name << "' nests expressions " << d
                              << " levels deep (groups and repetition operators); the limit is " << limit
                              << " (Limits.max_nesting_depth)";
  }
}

}  // namespace xg
