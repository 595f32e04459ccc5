#include "grammar/passes.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "support/utf8.h"

namespace xg {
namespace {

void ForEachRef(const Grammar& g, int32_t id, const std::function<void(int32_t)>& f) {
  const Expr& e = g.exprs[id];
  if (e.kind == ExprKind::kRuleRef) f(e.rule);
  for (int32_t c : e.children) ForEachRef(g, c, f);
}

int CountNodes(const Grammar& g, int32_t id) {
  int n = 1;
  for (int32_t c : g.exprs[id].children) n += CountNodes(g, c);
  return n;
}

// Copies the subtree at `id` into fresh nodes (children are re-indexed).
int32_t DeepCopy(Grammar* g, int32_t id) {
  Expr copy = g->exprs[id];
  for (auto& c : copy.children) c = DeepCopy(g, c);
  return g->Add(std::move(copy));
}

// Loop breakers: a set of rules whose removal leaves the reference graph acyclic. Every other rule
// may be inlined without the inliner looping. Chosen greedily per strongly connected component: the
// rule referenced from most places (self-recursive rules always break their own loop).
std::vector<bool> LoopBreakers(const Grammar& g) {
  const int32_t n = static_cast<int32_t>(g.rules.size());
  std::vector<std::vector<int32_t>> adj(n);
  std::vector<int32_t> in_degree(n, 0);
  for (int32_t r = 0; r < n; ++r) {
    auto add = [&](int32_t t) {
      adj[r].push_back(t);
      ++in_degree[t];
    };
    ForEachRef(g, g.rules[r].body, add);
    if (g.rules[r].lookahead >= 0) ForEachRef(g, g.rules[r].lookahead, add);
  }
  std::vector<bool> breaker(n, false);
  for (int32_t r = 0; r < n; ++r)
    for (int32_t t : adj[r])
      if (t == r) breaker[r] = true;
  while (true) {
    // Tarjan's SCC over rules that are not breakers yet.
    std::vector<int32_t> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    int32_t counter = 0;
    bool changed = false;
    std::function<void(int32_t)> visit = [&](int32_t v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = true;
      for (int32_t w : adj[v]) {
        if (breaker[w]) continue;
        if (index[w] < 0) {
          visit(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] != index[v]) return;
      std::vector<int32_t> scc;
      int32_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        scc.push_back(w);
      } while (w != v);
      if (scc.size() > 1) {
        int32_t best = scc[0];
        for (int32_t x : scc)
          if (in_degree[x] > in_degree[best] || (in_degree[x] == in_degree[best] && x < best)) best = x;
        breaker[best] = true;
        changed = true;
      }
    };
    for (int32_t r = 0; r < n; ++r)
      if (!breaker[r] && index[r] < 0) visit(r);
    if (!changed) break;
  }
  return breaker;
}

}  // namespace

void DropUnreachableRules(Grammar* g) {
  size_t n = g->rules.size();
  std::vector<bool> seen(n, false);
  std::vector<int32_t> stack = {g->root};
  seen[g->root] = true;
  while (!stack.empty()) {
    int32_t r = stack.back();
    stack.pop_back();
    auto visit = [&](int32_t t) {
      if (!seen[t]) {
        seen[t] = true;
        stack.push_back(t);
      }
    };
    ForEachRef(*g, g->rules[r].body, visit);
    if (g->rules[r].lookahead >= 0) ForEachRef(*g, g->rules[r].lookahead, visit);
  }
  std::vector<int32_t> remap(n, -1);
  std::vector<Rule> kept;
  for (size_t r = 0; r < n; ++r) {
    if (seen[r]) {
      remap[r] = static_cast<int32_t>(kept.size());
      kept.push_back(g->rules[r]);
    }
  }
  for (auto& e : g->exprs)
    if (e.kind == ExprKind::kRuleRef && e.rule >= 0) e.rule = remap[e.rule];
  g->root = remap[g->root];
  g->rules = std::move(kept);
}

void InlineSmallRules(Grammar* g, int max_inline_nodes) {
  std::vector<bool> breaker = LoopBreakers(*g);
  std::vector<bool> inlinable(g->rules.size(), false);
  for (size_t r = 0; r < g->rules.size(); ++r) {
    inlinable[r] = !breaker[r] && static_cast<int32_t>(r) != g->root && g->rules[r].lookahead < 0 &&
                   CountNodes(*g, g->rules[r].body) <= max_inline_nodes;
  }
  // Replace references until none to inlinable rules remain. Terminates: without the loop breakers
  // the reference graph is acyclic, so copies only bring references further down that DAG.
  std::function<void(int32_t, int)> rewrite = [&](int32_t id, int depth) {
    Expr& e = g->exprs[id];
    if (e.kind == ExprKind::kRuleRef && inlinable[e.rule] && depth < 64) {
      int32_t copy = DeepCopy(g, g->rules[g->exprs[id].rule].body);
      g->exprs[id] = g->exprs[copy];
      rewrite(id, depth + 1);
      return;
    }
    std::vector<int32_t> children = e.children;
    for (int32_t c : children) rewrite(c, depth);
  };
  for (size_t r = 0; r < g->rules.size(); ++r) {
    rewrite(g->rules[r].body, 0);
    if (g->rules[r].lookahead >= 0) rewrite(g->rules[r].lookahead, 0);
  }
  DropUnreachableRules(g);
}

void FuseBytes(Grammar* g) {
  std::function<void(int32_t)> fuse = [&](int32_t id) {
    for (int32_t c : std::vector<int32_t>(g->exprs[id].children)) fuse(c);
    Expr& e = g->exprs[id];
    if (e.kind == ExprKind::kCharClass && !e.negated && e.ranges.size() == 1 && e.ranges[0].first == e.ranges[0].second &&
        !(e.ranges[0].first >= 0xD800 && e.ranges[0].first <= 0xDFFF)) {
      std::string b;
      AppendUtf8(e.ranges[0].first, &b);
      e.kind = ExprKind::kBytes;
      e.bytes = std::move(b);
      e.ranges.clear();
      return;
    }
    if (e.kind != ExprKind::kSequence && e.kind != ExprKind::kChoice) return;
    std::vector<int32_t> out;
    for (int32_t c : e.children) {
      const Expr& ce = g->exprs[c];
      if (ce.kind == e.kind) {
        out.insert(out.end(), ce.children.begin(), ce.children.end());
      } else if (e.kind == ExprKind::kSequence && ce.kind == ExprKind::kEmpty) {
        continue;
      } else {
        out.push_back(c);
      }
    }
    if (e.kind == ExprKind::kSequence) {
      std::vector<int32_t> merged;
      for (int32_t c : out) {
        if (!merged.empty() && g->exprs[c].kind == ExprKind::kBytes && g->exprs[merged.back()].kind == ExprKind::kBytes) {
          int32_t joined = g->AddBytes(g->exprs[merged.back()].bytes + g->exprs[c].bytes);
          merged.back() = joined;
        } else {
          merged.push_back(c);
        }
      }
      out.swap(merged);
    }
    Expr& e2 = g->exprs[id];  // g->exprs may have grown
    if (out.empty()) {
      e2 = Expr{};
    } else if (out.size() == 1) {
      e2 = g->exprs[out[0]];
    } else {
      e2.children = std::move(out);
    }
  };
  for (auto& r : g->rules) {
    fuse(r.body);
    if (r.lookahead >= 0) fuse(r.lookahead);
  }
}

void NormalizeGrammar(Grammar* g) {
  DropUnreachableRules(g);
  InlineSmallRules(g);
  FuseBytes(g);
}

}  // namespace xg
