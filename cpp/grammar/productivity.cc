// Productive rules (productivity.h): Horn-clause propagation over the expression graph.
#include "grammar/productivity.h"

#include "support/utf8.h"

namespace xg {

std::vector<uint8_t> ProductiveRules(const Grammar& g) {
  const int32_t num_exprs = static_cast<int32_t>(g.exprs.size());
  const int32_t num_rules = static_cast<int32_t>(g.rules.size());
  // Nodes: expressions 0..num_exprs-1, then rules. A node is proven once; `pending` counts the
  // children a sequence (or a repetition with min > 0, or a rule) still waits for.
  const int32_t num_nodes = num_exprs + num_rules;
  std::vector<uint8_t> proven(num_nodes, 0);
  std::vector<int32_t> pending(num_nodes, 0);
  std::vector<std::vector<int32_t>> parents(num_nodes);
  std::vector<int32_t> work;
  auto prove = [&](int32_t node) {
    if (!proven[node]) {
      proven[node] = 1;
      work.push_back(node);
    }
  };
  for (int32_t e = 0; e < num_exprs; ++e) {
    const Expr& x = g.exprs[e];
    switch (x.kind) {
      case ExprKind::kEmpty:
      case ExprKind::kBytes:
        prove(e);
        break;
      case ExprKind::kCharClass:
        if (!CharClassIsEmpty(x.ranges, x.negated)) prove(e);
        break;
      case ExprKind::kRuleRef:
        if (x.rule >= 0 && x.rule < num_rules) parents[num_exprs + x.rule].push_back(e), pending[e] = 1;
        break;
      case ExprKind::kSequence:
        pending[e] = static_cast<int32_t>(x.children.size());
        for (int32_t c : x.children) parents[c].push_back(e);
        if (x.children.empty()) prove(e);
        break;
      case ExprKind::kChoice:
        pending[e] = 1;  // any one child
        for (int32_t c : x.children) parents[c].push_back(e);
        break;
      case ExprKind::kRepeat:
        if (x.min == 0) {
          prove(e);
        } else {
          pending[e] = 1;
          parents[x.children[0]].push_back(e);
        }
        break;
      case ExprKind::kAnyOrder: {
        // Every once-item, and the separator between two of them; optional and repeated items may
        // be left out.
        int32_t once = 0;
        for (size_t i = 1; i < x.children.size(); ++i)
          if (x.roles[i - 1] == kAnyOrderOnce) ++once, parents[x.children[i]].push_back(e);
        if (once >= 2) ++pending[e], parents[x.children[0]].push_back(e);
        pending[e] += once;
        if (pending[e] == 0) prove(e);
        break;
      }
      case ExprKind::kTagDispatch:  // empty free text is a sentence of it
      case ExprKind::kToken:
        prove(e);
        break;
      case ExprKind::kExcludeToken: {  // a sentinel of some id outside the excluded ones
        int64_t excluded = 0;
        for (auto [lo, hi] : x.ranges) excluded += static_cast<int64_t>(hi) - lo + 1;
        if (excluded <= kMaxTokenElementId) prove(e);
        break;
      }
    }
  }
  for (int32_t r = 0; r < num_rules; ++r) {
    const int32_t body = g.rules[r].body;
    if (body >= 0) {
      pending[num_exprs + r] = 1;
      parents[body].push_back(num_exprs + r);
    }
  }
  // A child listed twice in a sequence has two parent edges, matching its two pending counts.
  while (!work.empty()) {
    const int32_t node = work.back();
    work.pop_back();
    for (int32_t p : parents[node]) {
      if (!proven[p] && --pending[p] == 0) prove(p);
    }
  }
  std::vector<uint8_t> out(num_rules);
  for (int32_t r = 0; r < num_rules; ++r) out[r] = proven[num_exprs + r];
  return out;
}

}  // namespace xg
