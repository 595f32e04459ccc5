// See tag_dispatch_dfa.h.
#include "fsm/tag_dispatch_dfa.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "automata/aho_corasick.h"
#include "fsm/sentinel_digits.h"
#include "support/check.h"

namespace xg {

namespace {

ByteRun Run(int lo, int hi, int32_t target) { return {static_cast<int16_t>(lo), static_cast<int16_t>(hi), target}; }

// TokenTagDispatch: free text over tokens. The free state F (the start, final) reads a token sentinel (grammar.h):
// 0xFF, then the id's digits along the 8-ary trie of the trigger and exclude ids; a digit under which no such id
// lies goes to a shared chain that reads the remaining digits back to F (any other token is free text), a whole
// trigger id reaches its trigger state (not final, rule edges to F or to the done state), a whole exclude id has no
// edge. States: the chain's 7, about 7 per trigger and exclude, one per trigger, F and the done state.
LocalDfa TokenDispatchDfa(const Expr& e, const std::vector<std::string>& patterns, const std::vector<int32_t>& tag_rule,
                          int64_t max_states) {
  struct State {
    std::vector<ByteRun> runs;  // ascending
    std::vector<std::pair<int32_t, int32_t>> edges;  // (rule, target)
    bool final = false;
  };
  const int32_t num_tags = e.min;
  const bool loop = e.max != 0;
  // (id, pattern index) of the triggers and excludes, by id; a trigger may name several rules.
  std::vector<std::pair<int32_t, int32_t>> special;
  for (size_t i = 0; i < patterns.size(); ++i) {
    const int32_t id = TokenSentinelId(patterns[i]);
    XG_ICHECK(id >= 0) << "TokenTagDispatch: triggers and excludes are token sentinels (the parser writes them)";
    special.push_back({id, static_cast<int32_t>(i)});
  }
  std::sort(special.begin(), special.end());
  std::vector<State> states(1);  // 0: F
  states[0].final = true;
  auto add = [&]() {
    XG_LIMIT_CHECK(static_cast<int64_t>(states.size()) + 1 < max_states)
        << "a TokenTagDispatch(...) automaton would exceed " << max_states << " states (Limits.max_automaton_states)";
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  };
  const int32_t done = loop ? 0 : add();
  if (!loop) states[done].final = true;
  std::array<int32_t, kSentinelDigits + 1> chain;  // chain[k]: any k digits back to F
  chain[0] = 0;
  for (int k = 1; k <= kSentinelDigits; ++k) {
    chain[k] = add();
    states[chain[k]].runs.push_back(Run(kFirstReservedByte, 0xFF, chain[k - 1]));
  }
  std::vector<IdInterval> ids;  // the trigger and exclude ids, one interval each (an id may repeat: several rules)
  for (auto [id, pattern] : special)
    if (ids.empty() || ids.back().first != static_cast<uint32_t>(id)) ids.push_back({id, id});
  const int32_t root = add();
  states[0].runs.push_back(Run(0xFF, 0xFF, root));
  SentinelDigitTrie(
      ids.data(), ids.data() + ids.size(), root, 0, 0, chain, add,
      [&](int32_t a, int lo, int hi, int32_t b) { states[a].runs.push_back(Run(lo, hi, b)); },
      [&](int32_t state, int byte, int64_t id, int) {  // the whole id: a trigger's state, or an exclude's no edge
        std::vector<int32_t> rules;
        bool exclude = false;
        for (auto it = std::lower_bound(special.begin(), special.end(), std::make_pair(static_cast<int32_t>(id), -1));
             it != special.end() && it->first == id; ++it) {
          if (it->second < num_tags) rules.push_back(tag_rule[it->second]);
          else exclude = true;
        }
        if (exclude) return;
        const int32_t trigger = add();
        states[state].runs.push_back(Run(byte, byte, trigger));
        std::sort(rules.begin(), rules.end());
        rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
        for (int32_t rule : rules) states[trigger].edges.push_back({rule, done});
      });
  LocalDfa dfa;
  for (const State& st : states) {
    for (const ByteRun& r : st.runs) dfa.AppendRun(r.lo, r.hi, r.target);
    for (auto [rule, target] : st.edges) dfa.AddEdge(rule, target);
    dfa.final.push_back(st.final);
    dfa.CloseState();
  }
  return dfa;
}

}  // namespace

LocalDfa TagDispatchDfa(const Grammar& g, int32_t body, int64_t max_states) {
  const Expr& e = g.exprs[body];
  XG_ICHECK(e.kind == ExprKind::kTagDispatch) << "TagDispatchDfa: not a TagDispatch";
  const int32_t num_tags = e.min;
  const bool loop = e.max != 0;
  std::vector<std::string> patterns;  // triggers 0..num_tags-1, then excludes
  std::vector<int32_t> tag_rule;
  int64_t bytes = 0;
  for (size_t i = 0; i < e.children.size(); ++i) {
    const Expr& c = g.exprs[e.children[i]];
    if (static_cast<int32_t>(i) < num_tags) {
      XG_ICHECK(c.kind == ExprKind::kSequence && c.children.size() == 2 &&
                g.exprs[c.children[0]].kind == ExprKind::kBytes && g.exprs[c.children[1]].kind == ExprKind::kRuleRef)
          << "TagDispatch: a tag must be (trigger bytes, rule reference)";
      patterns.push_back(g.exprs[c.children[0]].bytes);
      tag_rule.push_back(g.exprs[c.children[1]].rule);
    } else {
      XG_ICHECK(c.kind == ExprKind::kBytes) << "TagDispatch: an exclude must be bytes";
      patterns.push_back(c.bytes);
    }
    XG_ICHECK(!patterns.back().empty()) << "TagDispatch: triggers and excludes are non-empty (the parser checks)";
    bytes += static_cast<int64_t>(patterns.back().size());
  }
  if (e.token_free_text) return TokenDispatchDfa(e, patterns, tag_rule, max_states);
  XG_LIMIT_CHECK(bytes + 2 < max_states)
      << "a TagDispatch(...) automaton would exceed " << max_states
      << " states (Limits.max_automaton_states; its triggers and excludes have " << bytes << " bytes)";
  const AhoCorasick ac(patterns);
  const int32_t n = ac.NumStates();
  std::vector<uint8_t> dead(n, 0), dispatches(n, 0), leads_to_trigger(n, 0);
  for (int32_t s = 0; s < n; ++s) {
    for (int32_t p : ac.Outputs(s)) {
      if (p >= num_tags) dead[s] = 1;
      else dispatches[s] = 1;
    }
  }
  // A trie child on the way to a trigger: by depth, deepest first (children are one deeper).
  std::vector<int32_t> by_depth(n);
  for (int32_t s = 0; s < n; ++s) by_depth[s] = s;
  std::stable_sort(by_depth.begin(), by_depth.end(), [&](int32_t a, int32_t b) { return ac.Depth(a) > ac.Depth(b); });
  for (int32_t s : by_depth) {
    if (dead[s]) continue;
    bool leads = false;
    for (int32_t p : ac.Outputs(s))
      if (p < num_tags && static_cast<int32_t>(patterns[p].size()) == ac.Depth(s)) leads = true;
    for (const AhoCorasick::Run& r : ac.Row(s))
      if (ac.Depth(r.target) == ac.Depth(s) + 1 && leads_to_trigger[r.target]) leads = true;
    leads_to_trigger[s] = leads;
  }
  // Local numbering: live states in Aho-Corasick order (the root first), then the done state.
  std::vector<int32_t> local(n, -1);
  int32_t size = 0;
  for (int32_t s = 0; s < n; ++s)
    if (!dead[s]) local[s] = size++;
  const int32_t done = loop ? 0 : size;
  LocalDfa dfa;
  std::vector<int32_t> rules;
  for (int32_t s = 0; s < n; ++s) {
    if (dead[s]) continue;
    const bool dispatch = dispatches[s];
    auto toward_trigger = [&](int32_t t) { return ac.Depth(t) == ac.Depth(s) + 1 && leads_to_trigger[t]; };
    for (const AhoCorasick::Run& r : ac.Row(s)) {
      if (dead[r.target] || (dispatch && !toward_trigger(r.target))) continue;
      // Reserved bytes (token sentinels, grammar.h) only on the way into a trigger, never as free text.
      const int free_hi = std::min<int>(r.hi, kFirstReservedByte - 1);
      if (r.lo <= free_hi) dfa.AppendRun(r.lo, free_hi, local[r.target]);
      if (r.hi >= kFirstReservedByte && toward_trigger(r.target)) {
        dfa.AppendRun(std::max<int>(r.lo, kFirstReservedByte), r.hi, local[r.target]);
      }
    }
    if (dispatch) {
      rules.clear();
      for (int32_t p : ac.Outputs(s))
        if (p < num_tags) rules.push_back(tag_rule[p]);
      std::sort(rules.begin(), rules.end());
      rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
      for (int32_t rule : rules) dfa.AddEdge(rule, done);
    }
    dfa.final.push_back(!dispatch);
    dfa.CloseState();
  }
  if (!loop) {
    dfa.final.push_back(1);
    dfa.CloseState();
  }
  return dfa;
}

}  // namespace xg
