#include "grammar/passes.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "support/check.h"
#include "support/stack_guard.h"
#include "support/utf8.h"

namespace xg {
namespace {

// The names of a grammar's rules, for choosing fresh ones: a pass that adds many rules must not scan every rule
// per candidate name (Grammar::FindRule), or lifting an AnyOrder of n items costs n^2 times the grammar's size.
class RuleNameSet {
 public:
  explicit RuleNameSet(const Grammar& g) {
    names_.reserve(g.rules.size() * 2);
    for (const Rule& r : g.rules) names_.insert(r.name);
  }
  bool Has(const std::string& name) const { return names_.count(name) > 0; }
  void Add(const std::string& name) { names_.insert(name); }

 private:
  std::unordered_set<std::string> names_;
};

// Code points a class matches (a negated class: all those outside its ranges).
int64_t CodePointCount(const Expr& e) {
  int64_t n = 0;
  for (const auto& [lo, hi] : e.ranges) n += static_cast<int64_t>(hi) - lo + 1;
  return e.negated ? 0x110000 - n : n;
}

template <typename F>
void ForEachRef(const Grammar& g, int32_t id, F& f) {
  CheckStackHeadroom("walking grammar expressions");
  const Expr& e = g.exprs[id];
  if (e.kind == ExprKind::kRuleRef) f(e.rule);
  for (int32_t c : e.children) ForEachRef(g, c, f);
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
    // Tarjan's SCC over rules that are not breakers yet, with an explicit stack: a chain of 10^4
    // rules must not become 10^4 native frames.
    std::vector<int32_t> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::pair<int32_t, size_t>> call;  // (rule, next edge to look at)
    int32_t counter = 0;
    bool changed = false;
    for (int32_t root = 0; root < n; ++root) {
      if (breaker[root] || index[root] >= 0) continue;
      call.push_back({root, 0});
      index[root] = low[root] = counter++;
      stack.push_back(root);
      on_stack[root] = true;
      while (!call.empty()) {
        auto& [v, next] = call.back();
        if (next < adj[v].size()) {
          const int32_t w = adj[v][next++];
          if (breaker[w]) continue;
          if (index[w] < 0) {
            index[w] = low[w] = counter++;
            stack.push_back(w);
            on_stack[w] = true;
            call.push_back({w, 0});  // invalidates v/next: re-read on the next iteration
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        const int32_t done = v;
        call.pop_back();
        if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
        if (low[done] != index[done]) continue;
        std::vector<int32_t> scc;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          scc.push_back(w);
        } while (w != done);
        if (scc.size() > 1) {
          int32_t best = scc[0];
          for (int32_t x : scc)
            if (in_degree[x] > in_degree[best] || (in_degree[x] == in_degree[best] && x < best)) best = x;
          breaker[best] = true;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return breaker;
}

// Nullable rules on the IR (least fixpoint). Used only to decide whether a repetition may be counted,
// so it may say "nullable" too often but never too rarely; here it is exact on the expression forms.
bool ExprNullable(const Grammar& g, int32_t id, const std::vector<uint8_t>& rule_nullable) {
  CheckStackHeadroom("normalising the grammar");
  const Expr& e = g.exprs[id];
  switch (e.kind) {
    case ExprKind::kEmpty: return true;
    case ExprKind::kBytes: return e.bytes.empty();
    case ExprKind::kCharClass: return false;
    case ExprKind::kRuleRef: return rule_nullable[e.rule];
    case ExprKind::kSequence:
      for (int32_t c : e.children)
        if (!ExprNullable(g, c, rule_nullable)) return false;
      return true;
    case ExprKind::kChoice:
      for (int32_t c : e.children)
        if (ExprNullable(g, c, rule_nullable)) return true;
      return false;
    case ExprKind::kRepeat: return e.min == 0 || ExprNullable(g, e.children[0], rule_nullable);
    case ExprKind::kAnyOrder:  // items never match "" (LiftAnyOrder): nullable without once-items
      for (uint8_t role : e.roles)
        if (role == kAnyOrderOnce) return false;
      return true;
    case ExprKind::kTagDispatch: return true;  // empty free text
    case ExprKind::kToken:
    case ExprKind::kExcludeToken: return false;
  }
  return true;
}

std::vector<uint8_t> RuleNullable(const Grammar& g) {
  std::vector<uint8_t> nullable(g.rules.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r)
      if (!nullable[r] && ExprNullable(g, g.rules[r].body, nullable)) nullable[r] = 1, changed = true;
  }
  return nullable;
}

}  // namespace

void CompressRepetitions(Grammar* g, int32_t unroll_limit) {
  auto big = [&](const Expr& e) { return e.min > unroll_limit || e.max > unroll_limit; };
  // Most grammars have no large count: the nullability fixpoint and the name set below would be their whole cost.
  if (std::none_of(g->exprs.begin(), g->exprs.end(),
                   [&](const Expr& e) { return e.kind == ExprKind::kRepeat && big(e); })) {
    return;
  }
  std::vector<uint8_t> nullable = RuleNullable(*g);
  int32_t serial = 0;
  RuleNameSet taken(*g);
  auto fresh_name = [&](const std::string& base) {
    std::string name;
    do name = base + "_rep" + std::to_string(serial++);
    while (taken.Has(name));
    return name;
  };
  auto add_rule = [&](std::string name, int32_t body, bool counted, bool is_nullable) {
    taken.Add(name);
    Rule rule;
    rule.name = std::move(name);
    rule.body = body;
    rule.counted = counted;
    g->rules.push_back(std::move(rule));
    nullable.push_back(is_nullable);
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    ref.rule = static_cast<int32_t>(g->rules.size() - 1);
    return ref;
  };
  // A nullable body that is X? or (X | "" | ...) with X not nullable: B{m,n} reads k X's for any k in
  // [0, n] (the other iterations read nothing), so it is X{0,n}, which is counted in linear time
  // instead of being unrolled into n nullable copies (quadratic in the automaton build). Returns X's
  // expression, or -1 when the body has another shape.
  auto non_empty_part = [&](int32_t body) -> int32_t {
    const Expr& b = g->exprs[body];
    if (b.kind == ExprKind::kRepeat && b.min == 0 && b.max == 1 && !ExprNullable(*g, b.children[0], nullable))
      return b.children[0];
    if (b.kind != ExprKind::kChoice) return -1;
    std::vector<int32_t> rest;
    for (int32_t c : b.children) {
      const Expr& x = g->exprs[c];
      const bool empty = x.kind == ExprKind::kEmpty || (x.kind == ExprKind::kBytes && x.bytes.empty());
      if (empty) continue;
      if (ExprNullable(*g, c, nullable)) return -1;
      rest.push_back(c);
    }
    if (rest.empty()) return -1;
    if (rest.size() == 1) return rest[0];
    Expr choice;
    choice.kind = ExprKind::kChoice;
    choice.children = std::move(rest);
    return g->Add(std::move(choice));
  };
  // Post-order, so an inner repetition is a counted rule before its parent is looked at.
  std::function<void(int32_t, int32_t, bool)> visit = [&](int32_t id, int32_t rule, bool is_body) {
    CheckStackHeadroom("normalising the grammar");
    for (int32_t c : std::vector<int32_t>(g->exprs[id].children)) visit(c, rule, false);
    if (g->exprs[id].kind != ExprKind::kRepeat || !big(g->exprs[id])) return;
    if (ExprNullable(*g, g->exprs[id].children[0], nullable)) {
      const int32_t part = non_empty_part(g->exprs[id].children[0]);  // may add an expression
      if (part < 0) return;
      g->exprs[id].children[0] = part;
      g->exprs[id].min = 0;
      if (!big(g->exprs[id])) return;  // X{0,n} with a small n: unrolled
    }
    const Expr& e = g->exprs[id];
    const int32_t child = e.children[0];
    const std::string base = g->rules[rule].name;
    if (g->exprs[child].kind != ExprKind::kRuleRef) {
      Expr item_ref = add_rule(fresh_name(base) + "_item", child, false, false);
      g->exprs[id].children[0] = g->Add(std::move(item_ref));
    }
    if (is_body) {  // `R ::= X{m,n}` already has the counted shape
      g->rules[rule].counted = true;
      return;
    }
    Expr repeat = g->exprs[id];
    const bool repeat_nullable = repeat.min == 0;
    const int32_t body = g->Add(std::move(repeat));
    g->exprs[id] = add_rule(fresh_name(base), body, true, repeat_nullable);
  };
  const size_t n = g->rules.size();
  for (size_t r = 0; r < n; ++r)
    if (!g->rules[r].counted) visit(g->rules[r].body, static_cast<int32_t>(r), true);
}

void LiftAnyOrder(Grammar* g) {
  if (std::none_of(g->exprs.begin(), g->exprs.end(), [](const Expr& e) { return e.kind == ExprKind::kAnyOrder; })) {
    return;  // as in CompressRepetitions: nothing to lift, nothing to set up
  }
  std::vector<uint8_t> nullable = RuleNullable(*g);
  auto is_empty = [&](int32_t id) {
    const Expr& e = g->exprs[id];
    return e.kind == ExprKind::kEmpty || (e.kind == ExprKind::kBytes && e.bytes.empty());
  };
  RuleNameSet taken(*g);
  std::unordered_map<std::string, int> next_k;  // base + suffix -> the first k not yet tried
  auto new_rule = [&](const std::string& base, const std::string& suffix, int32_t body) {
    std::string name;
    int& k = next_k[base + suffix];
    do name = base + suffix + std::to_string(k++);
    while (taken.Has(name));
    taken.Add(name);
    Rule rule;
    rule.name = std::move(name);
    rule.body = body;
    g->rules.push_back(std::move(rule));
    nullable.push_back(ExprNullable(*g, body, nullable));
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    ref.rule = static_cast<int32_t>(g->rules.size() - 1);
    return g->Add(std::move(ref));
  };
  std::function<void(int32_t, int32_t, bool)> visit = [&](int32_t id, int32_t rule, bool is_body) {
    CheckStackHeadroom("normalising the grammar");
    for (size_t i = 0; i < g->exprs[id].children.size(); ++i) visit(g->exprs[id].children[i], rule, false);
    if (g->exprs[id].kind != ExprKind::kAnyOrder) return;
    const std::string base = g->rules[rule].name;
    std::vector<int32_t> children = g->exprs[id].children;
    std::vector<int32_t> used;  // item rules so far: each item needs a rule of its own (its bit)
    for (size_t i = 1; i < children.size(); ++i) {
      XG_USER_CHECK(!ExprNullable(*g, children[i], nullable))
          << "AnyOrder(...) in rule '" << base << "': item " << i << " matches the empty string (make the item "
          << "non-empty and give it the role '?' instead)";
      const Expr& item = g->exprs[children[i]];
      if (item.kind != ExprKind::kRuleRef || std::find(used.begin(), used.end(), item.rule) != used.end())
        children[i] = new_rule(base, "_item", children[i]);
      used.push_back(g->exprs[children[i]].rule);
    }
    if (is_empty(children[0])) {
      children[0] = g->Add(Expr{});
    } else {
      XG_USER_CHECK(!ExprNullable(*g, children[0], nullable))
          << "AnyOrder(...) in rule '" << base << "': the separator matches the empty string (leave separator= "
          << "out for none)";
      if (g->exprs[children[0]].kind != ExprKind::kRuleRef) children[0] = new_rule(base, "_sep", children[0]);
    }
    g->exprs[id].children = std::move(children);
    if (!is_body) {
      const int32_t moved = g->Add(g->exprs[id]);
      const int32_t ref = new_rule(base, "_anyorder", moved);
      g->exprs[id] = g->exprs[ref];
    }
  };
  const size_t n = g->rules.size();
  for (size_t r = 0; r < n; ++r) {
    visit(g->rules[r].body, static_cast<int32_t>(r), true);
    if (g->rules[r].lookahead >= 0) visit(g->rules[r].lookahead, static_cast<int32_t>(r), false);
  }
}

void LiftTagDispatch(Grammar* g) {
  if (std::none_of(g->exprs.begin(), g->exprs.end(), [](const Expr& e) { return e.kind == ExprKind::kTagDispatch; })) {
    return;
  }
  RuleNameSet taken(*g);
  int serial = 0;
  // Post-order by index (a lifted node's children are rule references and literals: nothing below to lift).
  auto visit = [&](auto&& self, int32_t id, int32_t rule, bool is_body, bool in_lookahead) -> void {
    CheckStackHeadroom("normalising the grammar");
    for (size_t i = 0; i < g->exprs[id].children.size(); ++i) self(self, g->exprs[id].children[i], rule, false, in_lookahead);
    if (g->exprs[id].kind != ExprKind::kTagDispatch || is_body) return;
    XG_USER_CHECK(!in_lookahead) << "TagDispatch(...) is not allowed in the lookahead of rule '" << g->rules[rule].name << "'";
    std::string name;
    do name = g->rules[rule].name + "_tag_dispatch" + std::to_string(serial++);
    while (taken.Has(name));
    taken.Add(name);
    Rule lifted;
    lifted.name = std::move(name);
    lifted.body = g->Add(g->exprs[id]);
    g->rules.push_back(std::move(lifted));
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    ref.rule = static_cast<int32_t>(g->rules.size() - 1);
    g->exprs[id] = std::move(ref);
  };
  const size_t n = g->rules.size();
  for (size_t r = 0; r < n; ++r) {
    visit(visit, g->rules[r].body, static_cast<int32_t>(r), true, false);
    if (g->rules[r].lookahead >= 0) visit(visit, g->rules[r].lookahead, static_cast<int32_t>(r), false, true);
  }
}

void WrapBudgetedRoot(Grammar* g) {
  if (g->rules[g->root].max_tokens == 0) return;
  RuleNameSet taken(*g);
  std::string name = g->rules[g->root].name + "_budgeted";
  for (int serial = 0; taken.Has(name); ++serial) name = g->rules[g->root].name + "_budgeted" + std::to_string(serial);
  Expr ref;
  ref.kind = ExprKind::kRuleRef;
  ref.rule = g->root;
  // The wrapper takes the root's name (the normalized grammar prints and parses back with the same root name).
  Rule wrapper;
  wrapper.name = std::move(g->rules[g->root].name);
  g->rules[g->root].name = std::move(name);
  wrapper.body = g->Add(std::move(ref));
  g->rules.push_back(std::move(wrapper));
  g->root = static_cast<int32_t>(g->rules.size() - 1);
}

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
  if (std::find(seen.begin(), seen.end(), false) == seen.end()) return;  // every rule is reachable: nothing moves
  std::vector<int32_t> remap(n, -1);
  std::vector<Rule> kept;
  kept.reserve(n);
  for (size_t r = 0; r < n; ++r) {
    if (seen[r]) {
      remap[r] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(g->rules[r]));
    }
  }
  for (auto& e : g->exprs)
    if (e.kind == ExprKind::kRuleRef && e.rule >= 0) e.rule = remap[e.rule];
  g->root = remap[g->root];
  g->rules = std::move(kept);
}

void InlineSmallRules(Grammar* g, int max_inline_nodes) {
  std::vector<bool> breaker = LoopBreakers(*g);
  const size_t n = g->rules.size();
  // A rule is inlined when its body is small *after* its own inlinable references are expanded
  // (decided callees first; the references among non-breakers form a DAG). Counting only the body
  // as written made chains like `a0 ::= x a1 | a1`, `a1 ::= x a2 | a2`, ... grow exponentially
  // (JSON objects with many optional properties).
  std::vector<bool> inlinable(n, false);
  std::vector<int64_t> expanded(n, -1);  // expanded body size, once decided
  // Per decided rule, with its inlinable references expanded: its body holds a wide class
  // (has_wide_class) / repeats one (wide). Callees are decided before their callers (below), so
  // their flags are final when a caller reads them.
  std::vector<bool> has_wide_class(n, false), wide(n, false);
  // One walk of a body gives what deciding its rule needs: its size with the inlinable references
  // expanded (the sizes are decided callees first: a post-order over references to non-breakers,
  // acyclic since the breakers cut every cycle, walked below with an explicit stack so that a chain of
  // 10^4 rules costs no native recursion), whether it holds a wide class, and whether it repeats one.
  struct BodyFacts {
    int64_t size = 1;
    bool holds_wide_class = false, repeats_wide_class = false;
  };
  auto body_facts = [&](auto&& self, int32_t id) -> BodyFacts {
    CheckStackHeadroom("normalising the grammar");
    const Expr& e = g->exprs[id];
    BodyFacts f;
    if (e.kind == ExprKind::kCharClass) {
      f.holds_wide_class = CodePointCount(e) >= kMinWideClassCodePoints;
      return f;
    }
    if (e.kind == ExprKind::kRuleRef) {
      if (!breaker[e.rule] && inlinable[e.rule]) f.size = expanded[e.rule];
      f.holds_wide_class = inlinable[e.rule] && has_wide_class[e.rule];
      f.repeats_wide_class = inlinable[e.rule] && wide[e.rule];
      return f;
    }
    for (int32_t c : e.children) {
      const BodyFacts child = self(self, c);
      f.size += child.size;
      f.holds_wide_class = f.holds_wide_class || child.holds_wide_class;
      f.repeats_wide_class = f.repeats_wide_class || child.repeats_wide_class;
      if (e.kind == ExprKind::kRepeat && e.max != 1 && child.holds_wide_class) f.repeats_wide_class = true;
    }
    return f;
  };
  auto decide = [&](int32_t r) {
    const BodyFacts facts = body_facts(body_facts, g->rules[r].body);
    const int64_t size = facts.size;
    expanded[r] = size;
    // A rule that repeats a wide class (a JSON string, free text) keeps its own states: they are
    // the costliest to build masks for (most of the vocabulary stays alive), and as a rule of
    // their own they are built once per grammar and shared across grammars by the rule-level cache,
    // where an inlined copy would differ in what follows it in each parent.
    wide[r] = facts.repeats_wide_class;
    has_wide_class[r] = facts.holds_wide_class;
    // A rule with a temperature or a capture stays a rule: the matcher reads both off its items.
    inlinable[r] = !breaker[r] && !g->rules[r].counted && static_cast<int32_t>(r) != g->root &&
                   g->rules[r].temperature < 0 && g->rules[r].capture.empty() && g->rules[r].max_tokens == 0 &&
                   g->rules[r].marker.empty() &&
                   g->exprs[g->rules[r].body].kind != ExprKind::kAnyOrder &&
                   g->exprs[g->rules[r].body].kind != ExprKind::kTagDispatch &&
                   g->rules[r].lookahead < 0 && size <= max_inline_nodes && !wide[r];
  };
  std::vector<std::vector<int32_t>> callees(n);
  for (size_t r = 0; r < n; ++r) {
    auto add = [&](int32_t t) {
      if (!breaker[t]) callees[r].push_back(t);
    };
    ForEachRef(*g, g->rules[r].body, add);
  }
  std::vector<uint8_t> visited(n, 0);
  std::vector<std::pair<int32_t, size_t>> call;  // (rule, next callee to visit)
  for (size_t start = 0; start < n; ++start) {
    if (visited[start]) continue;
    visited[start] = 1;
    call.push_back({static_cast<int32_t>(start), 0});
    while (!call.empty()) {
      auto& [r, next] = call.back();
      if (next < callees[r].size()) {
        const int32_t t = callees[r][next++];
        if (!visited[t]) {
          visited[t] = 1;
          call.push_back({t, 0});
        }
        continue;
      }
      const int32_t done = r;
      call.pop_back();
      decide(done);
    }
  }
  // Replace references until none to inlinable rules remain. Terminates: without the loop breakers
  // the reference graph is acyclic, so each replacement only brings references further down that DAG.
  // A reference becomes a copy of the body's root node, whose children stay shared with the body (the
  // expressions form a DAG from here on; every later pass and the automaton builder read it as the
  // tree it unfolds to, and FuseBytes' in-place rewrites keep each node's language, so sharing is
  // safe). A shared subtree is rewritten once: `done` marks nodes below which no inlinable reference is
  // left.
  std::vector<uint8_t> done(g->exprs.size(), 0);
  auto rewrite = [&](auto&& self, int32_t id, int depth) -> void {
    CheckStackHeadroom("normalising the grammar");
    if (done[id]) return;
    Expr& e = g->exprs[id];
    if (e.kind == ExprKind::kRuleRef && inlinable[e.rule] && depth < 64) {
      g->exprs[id] = g->exprs[g->rules[e.rule].body];
      self(self, id, depth + 1);
      return;
    }
    // An AnyOrder's items and separator, and a TagDispatch's rules, stay rule references.
    if (e.kind == ExprKind::kAnyOrder || e.kind == ExprKind::kTagDispatch) return;
    for (size_t i = 0; i < g->exprs[id].children.size(); ++i) self(self, g->exprs[id].children[i], depth);
    if (depth < 64) done[id] = 1;  // (past the depth limit a reference may stay: visit again from higher up)
  };
  for (size_t r = 0; r < g->rules.size(); ++r) {
    if (g->rules[r].counted) continue;  // the body must stay `X{m,n}` over a rule reference
    // An inlinable rule ends up unreferenced (every reference to it is replaced by a copy that the
    // rewrite expands itself), so expanding its own body first would only be dropped below. (A
    // reference left by the depth limit still names a correct, just less inlined, rule.)
    if (inlinable[r]) continue;
    rewrite(rewrite, g->rules[r].body, 0);
    if (g->rules[r].lookahead >= 0) rewrite(rewrite, g->rules[r].lookahead, 0);
  }
  DropUnreachableRules(g);
}

void FuseBytes(Grammar* g) {
  // Each node is fused once: InlineSmallRules shares subtrees among the rules it copies a body into, and
  // fusing is idempotent. `out` is one buffer for every node (a node's children are fused before it is
  // used).
  std::vector<uint8_t> fused(g->exprs.size(), 0);
  std::vector<int32_t> out;
  std::string run;
  std::function<void(int32_t)> fuse = [&](int32_t id) {
    CheckStackHeadroom("normalising the grammar");
    if (static_cast<size_t>(id) < fused.size()) {
      if (fused[id]) return;
      fused[id] = 1;
    }
    if (g->exprs[id].kind == ExprKind::kTagDispatch) return;  // its pairs keep their (trigger, rule) shape
    // By index: fusing a child may grow g->exprs, but never changes this node's children.
    for (size_t i = 0; i < g->exprs[id].children.size(); ++i) fuse(g->exprs[id].children[i]);
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
    const ExprKind kind = e.kind;
    // Nothing to do (the common case once rules share subtrees): no child to splice or drop, no two
    // adjacent literals in a sequence.
    bool unchanged = e.children.size() > 1;
    for (size_t i = 0; unchanged && i < e.children.size(); ++i) {
      const ExprKind k = g->exprs[e.children[i]].kind;
      unchanged = k != kind && !(kind == ExprKind::kSequence &&
                                 (k == ExprKind::kEmpty ||
                                  (k == ExprKind::kBytes && i > 0 && g->exprs[e.children[i - 1]].kind == ExprKind::kBytes)));
    }
    if (unchanged) return;
    out.clear();
    for (int32_t c : e.children) {
      const Expr& ce = g->exprs[c];
      if (ce.kind == kind) {
        out.insert(out.end(), ce.children.begin(), ce.children.end());
      } else if (kind == ExprKind::kSequence && ce.kind == ExprKind::kEmpty) {
        continue;
      } else {
        out.push_back(c);
      }
    }
    if (kind == ExprKind::kSequence) {  // each run of adjacent literals becomes one literal
      size_t w = 0;
      for (size_t i = 0; i < out.size();) {
        size_t j = i + 1;
        while (j < out.size() && g->exprs[out[i]].kind == ExprKind::kBytes && g->exprs[out[j]].kind == ExprKind::kBytes) ++j;
        if (j == i + 1) {
          out[w++] = out[i];
        } else {
          run.clear();
          for (size_t k = i; k < j; ++k) run += g->exprs[out[k]].bytes;
          out[w++] = g->AddBytes(run);
        }
        i = j;
      }
      out.resize(w);
    }
    Expr& e2 = g->exprs[id];  // g->exprs may have grown
    if (out.empty()) {
      e2 = Expr{};
    } else if (out.size() == 1) {
      e2 = g->exprs[out[0]];
    } else {
      e2.children.assign(out.begin(), out.end());
    }
  };
  for (auto& r : g->rules) {
    fuse(r.body);
    if (r.lookahead >= 0) fuse(r.lookahead);
  }
}

void NormalizeGrammar(Grammar* g) {
  DropUnreachableRules(g);
  LiftAnyOrder(g);
  LiftTagDispatch(g);
  WrapBudgetedRoot(g);
  CompressRepetitions(g);
  InlineSmallRules(g);
  FuseBytes(g);
}

}  // namespace xg
