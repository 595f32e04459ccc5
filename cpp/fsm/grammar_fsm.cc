#include "fsm/grammar_fsm.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "support/check.h"
#include "support/sequence_interner.h"
#include "support/utf8.h"

namespace xg {
namespace {

// ---- NFA (Thompson construction) ----------------------------------------------------------------

struct NfaEdge {
  int16_t lo, hi;  // byte range, or lo == -1 for rule/epsilon
  int32_t rule;    // >= 0: rule reference; -1 with lo == -1: epsilon
  int32_t target;
};

class Nfa {
 public:
  explicit Nfa(int64_t max_states) : max_states_(max_states) {}
  std::vector<std::vector<NfaEdge>> edges;

  int32_t NewState() {
    XG_USER_CHECK(static_cast<int64_t>(edges.size()) < max_states_)
        << "grammar too large: a rule's automaton would exceed " << max_states_
        << " states (a very large bounded repetition?)";
    edges.emplace_back();
    return static_cast<int32_t>(edges.size() - 1);
  }
  void Eps(int32_t a, int32_t b) { edges[a].push_back({-1, -1, -1, b}); }
  void Byte(int32_t a, int lo, int hi, int32_t b) {
    edges[a].push_back({static_cast<int16_t>(lo), static_cast<int16_t>(hi), -1, b});
  }
  void Ref(int32_t a, int32_t rule, int32_t b) { edges[a].push_back({-1, -1, rule, b}); }

  // Adds transitions from `from` to `to` that read exactly the language of expr `id`.
  void Build(const Grammar& g, int32_t id, int32_t from, int32_t to) {
    const Expr& e = g.exprs[id];
    switch (e.kind) {
      case ExprKind::kEmpty: Eps(from, to); return;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (size_t i = 0; i < e.bytes.size(); ++i) {
          int32_t nxt = i + 1 == e.bytes.size() ? to : NewState();
          uint8_t b = static_cast<uint8_t>(e.bytes[i]);
          Byte(cur, b, b, nxt);
          cur = nxt;
        }
        return;
      }
      case ExprKind::kCharClass: {
        auto ranges = NormalizeRanges(e.ranges, e.negated);
        XG_USER_CHECK(!ranges.empty()) << "grammar: a character class matches no character";
        // Sequences share their common suffixes (RE2's UTF-8 suffix sharing): "[\x{800}-\x{FFFF}]"
        // ends every lead byte in the same continuation states instead of a chain per sequence,
        // so subset construction sees (and minimisation has to merge) far fewer states.
        std::vector<std::pair<std::array<int32_t, 3>, int32_t>> suffix;  // (lo, hi, next) -> state
        for (auto [lo, hi] : ranges) {
          for (const Utf8Sequence& seq : Utf8Sequences(lo, hi)) {
            int32_t cur = to;
            for (size_t i = seq.size() - 1; i > 0; --i) {
              const std::array<int32_t, 3> key = {seq[i].lo, seq[i].hi, cur};
              int32_t state = -1;
              for (const auto& [k, s] : suffix)
                if (k == key) state = s;
              if (state < 0) {
                state = NewState();
                Byte(state, seq[i].lo, seq[i].hi, cur);
                suffix.push_back({key, state});
              }
              cur = state;
            }
            Byte(from, seq[0].lo, seq[0].hi, cur);
          }
        }
        return;
      }
      case ExprKind::kRuleRef: Ref(from, e.rule, to); return;
      case ExprKind::kSequence: {
        int32_t cur = from;
        for (size_t i = 0; i < e.children.size(); ++i) {
          int32_t nxt = i + 1 == e.children.size() ? to : NewState();
          Build(g, e.children[i], cur, nxt);
          cur = nxt;
        }
        return;
      }
      case ExprKind::kChoice:
        for (int32_t c : e.children) Build(g, c, from, to);
        return;
      case ExprKind::kRepeat: {
        int32_t child = e.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < e.min; ++i) {
          int32_t nxt = NewState();
          Build(g, child, cur, nxt);
          cur = nxt;
        }
        if (e.max == Expr::kUnbounded) {
          int32_t loop = NewState(), back = NewState();
          Eps(cur, loop);
          Build(g, child, loop, back);
          Eps(back, loop);
          Eps(loop, to);
        } else {
          for (int32_t i = e.min; i < e.max; ++i) {
            int32_t nxt = NewState();
            Eps(cur, to);
            Build(g, child, cur, nxt);
            cur = nxt;
          }
          Eps(cur, to);
        }
        return;
      }
    }
  }

 private:
  int64_t max_states_;
};

// ---- Subset construction -------------------------------------------------------------------------

// One byte edge range of a DFA state: bytes [lo, hi] go to `target`.
struct ByteRun {
  int16_t lo, hi;
  int32_t target;
};

// A rule's automaton while it is built: byte edges as sorted, disjoint runs (rows are a handful of
// ranges, so every pass costs the runs, not 256 bytes), expanded to dense rows once at the end.
struct LocalDfa {
  std::vector<std::vector<ByteRun>> runs;
  std::vector<std::vector<RuleEdge>> rule_edges;  // sorted by rule
  std::vector<uint8_t> final;
  int32_t Size() const { return static_cast<int32_t>(final.size()); }
  // Appends [lo, hi] -> target to state s's runs (in ascending byte order), merging with the last
  // run when contiguous with the same target.
  static void Append(std::vector<ByteRun>* runs, int lo, int hi, int32_t target) {
    if (!runs->empty() && runs->back().target == target && runs->back().hi + 1 == lo) {
      runs->back().hi = static_cast<int16_t>(hi);
    } else {
      runs->push_back({static_cast<int16_t>(lo), static_cast<int16_t>(hi), target});
    }
  }
};

// Epsilon closures, with a visit stamp per NFA state so that a closure costs its own size rather
// than the NFA's (a rule with thousands of NFA states takes as many closures).
class ClosureBuilder {
 public:
  explicit ClosureBuilder(const Nfa& nfa) : nfa_(nfa), stamp_(nfa.edges.size(), 0) {}
  std::vector<int32_t> operator()(std::vector<int32_t> set) {
    if (++gen_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), gen_ = 1;
    stack_.clear();
    for (int32_t s : set) {
      if (stamp_[s] != gen_) stamp_[s] = gen_, stack_.push_back(s);
    }
    set.clear();
    while (!stack_.empty()) {
      int32_t s = stack_.back();
      stack_.pop_back();
      set.push_back(s);
      for (const NfaEdge& e : nfa_.edges[s])
        if (e.lo < 0 && e.rule < 0 && stamp_[e.target] != gen_) stamp_[e.target] = gen_, stack_.push_back(e.target);
    }
    std::sort(set.begin(), set.end());
    return set;
  }

 private:
  const Nfa& nfa_;
  std::vector<uint32_t> stamp_;
  uint32_t gen_ = 0;
  std::vector<int32_t> stack_;
};


LocalDfa Determinize(const Nfa& nfa, int32_t start, int32_t end, int64_t* budget) {
  LocalDfa dfa;
  ClosureBuilder closure(nfa);
  SequenceInterner sets;  // DFA state id -> its NFA-state set (sorted)
  auto intern = [&](const std::vector<int32_t>& set) -> int32_t {
    auto [id, inserted] = sets.Intern(set);
    if (!inserted) return id;
    XG_USER_CHECK(--*budget > 0) << "grammar too large: the automata exceed the state limit (each DFA state "
                                 << "costs a 1 KiB transition row)";
    dfa.final.push_back(std::binary_search(set.begin(), set.end(), end));
    dfa.runs.emplace_back();
    dfa.rule_edges.emplace_back();
    return id;
  };
  intern(closure({start}));
  std::vector<const NfaEdge*> byte_edges;
  std::vector<std::pair<int32_t, int32_t>> rule_targets;  // (rule, NFA target), grouped by rule below
  std::vector<int32_t> members, cuts, targets;
  std::vector<std::pair<std::vector<int32_t>, int32_t>> local;  // this state's byte targets -> DFA state
  for (int32_t d = 0; d < static_cast<int32_t>(sets.Size()); ++d) {
    byte_edges.clear();
    rule_targets.clear();
    members.assign(sets.Data(d), sets.Data(d) + sets.Length(d));  // Data() moves as sets grow
    for (int32_t s : members) {
      for (const NfaEdge& e : nfa.edges[s]) {
        if (e.lo >= 0) {
          byte_edges.push_back(&e);
        } else if (e.rule >= 0) {
          rule_targets.push_back({e.rule, e.target});
        }
      }
    }
    // Elementary byte intervals.
    cuts.assign({0, 256});
    for (auto* e : byte_edges) cuts.push_back(e->lo), cuts.push_back(e->hi + 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    local.clear();
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      int a = cuts[i], b = cuts[i + 1];
      targets.clear();
      for (auto* e : byte_edges)
        if (e->lo <= a && e->hi >= a) targets.push_back(e->target);
      if (targets.empty()) continue;
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      int32_t t = -1;
      for (const auto& [seen, id] : local)  // few distinct target sets per state
        if (seen == targets) t = id;
      if (t < 0) {
        t = intern(closure(targets));
        local.push_back({targets, t});
      }
      LocalDfa::Append(&dfa.runs[d], a, b - 1, t);
    }
    std::sort(rule_targets.begin(), rule_targets.end());
    for (size_t i = 0; i < rule_targets.size();) {
      const int32_t rule = rule_targets[i].first;
      targets.clear();
      for (; i < rule_targets.size() && rule_targets[i].first == rule; ++i) targets.push_back(rule_targets[i].second);
      int32_t t = intern(closure(targets));
      dfa.rule_edges[d].push_back({rule, t});
    }
  }
  return dfa;
}

// Moore's partition refinement: merges states with the same future (same finality, and the same
// blocks reached on every byte and every rule). Fewer states means fewer token-mask entries to
// build; e.g. a string body's "after an escape" and "after a plain character" states merge.
// Moore needs up to one round per state on long chains (an unrolled `x{0,2048}`), so past a work
// budget the automaton is kept as it is: minimisation only saves work, it never changes the
// language (counted repetition will keep such chains short).
LocalDfa Minimize(LocalDfa d) {
  const int32_t n = d.Size();
  constexpr int64_t kWorkBudget = 200'000;  // state-rounds, each costs the state's runs
  int64_t work = 0;
  std::vector<int32_t> block(n);
  for (int32_t s = 0; s < n; ++s) block[s] = d.final[s];
  int32_t num_blocks = 0;
  SequenceInterner ids;  // one round's signatures
  std::vector<int32_t> next_block(n), sig;
  for (int iter = 0;; ++iter) {
    ids.Clear();
    for (int32_t s = 0; s < n; ++s) {
      sig.clear();
      sig.push_back(block[s]);
      // Runs over blocks, contiguous runs into one block merged: (lo, hi, block) each.
      int32_t last_block = -1, last_hi = -2;
      for (const ByteRun& run : d.runs[s]) {
        const int32_t tb = block[run.target];
        if (tb == last_block && run.lo == last_hi + 1) {
          sig.back() = run.hi;
        } else {
          sig.push_back(tb), sig.push_back(run.lo), sig.push_back(run.hi);
        }
        last_block = tb, last_hi = run.hi;
      }
      sig.push_back(-2);
      for (const RuleEdge& e : d.rule_edges[s]) sig.push_back(e.rule), sig.push_back(block[e.target]);
      next_block[s] = ids.Intern(sig).first;
    }
    int32_t count = static_cast<int32_t>(ids.Size());
    block.swap(next_block);
    if (count == num_blocks) break;
    num_blocks = count;
    work += n;
    if (work > kWorkBudget) return d;
  }
  if (num_blocks == n) return d;
  // Renumber so the start state's block is 0, then build the quotient automaton.
  std::vector<int32_t> remap(num_blocks, -1);
  std::vector<int32_t> order;
  remap[block[0]] = 0;
  order.push_back(0);
  for (int32_t s = 1; s < n; ++s)
    if (remap[block[s]] < 0) remap[block[s]] = static_cast<int32_t>(order.size()), order.push_back(s);
  LocalDfa out;
  for (int32_t rep : order) {
    std::vector<ByteRun> runs;
    for (const ByteRun& run : d.runs[rep]) LocalDfa::Append(&runs, run.lo, run.hi, remap[block[run.target]]);
    out.runs.push_back(std::move(runs));
    std::vector<RuleEdge> edges;
    for (const RuleEdge& e : d.rule_edges[rep]) edges.push_back({e.rule, remap[block[e.target]]});
    out.rule_edges.push_back(std::move(edges));
    out.final.push_back(d.final[rep]);
  }
  return out;
}

}  // namespace

GrammarFsm GrammarFsm::Build(const Grammar& g, int64_t max_states) {
  const int32_t n_rules = static_cast<int32_t>(g.rules.size());
  std::vector<LocalDfa> dfas(n_rules);
  int64_t budget = max_states;
  std::vector<uint8_t> counted(n_rules, 0);
  std::vector<std::pair<int32_t, int32_t>> repeat(n_rules, {0, 0});
  std::vector<int32_t> counted_item(n_rules, -1);  // X of a counted rule X{m,n}
  for (int32_t r = 0; r < n_rules; ++r) {
    if (g.rules[r].counted) {
      const Expr& body = g.exprs[g.rules[r].body];
      XG_ICHECK(body.kind == ExprKind::kRepeat && g.exprs[body.children[0]].kind == ExprKind::kRuleRef)
          << "counted rule '" << g.rules[r].name << "' must have the body X{m,n} over a rule reference";
      counted[r] = 1;
      repeat[r] = {body.min, body.max};
      counted_item[r] = g.exprs[body.children[0]].rule;
      LocalDfa loop;  // one final state reading X back into itself
      loop.runs.emplace_back();
      loop.rule_edges.push_back({{counted_item[r], 0}});
      loop.final.push_back(1);
      XG_USER_CHECK(--budget > 0) << "grammar too large: the automata exceed the state limit";
      dfas[r] = std::move(loop);
      continue;
    }
    Nfa nfa(max_states);
    int32_t s = nfa.NewState(), e = nfa.NewState();
    nfa.Build(g, g.rules[r].body, s, e);
    dfas[r] = Minimize(Determinize(nfa, s, e, &budget));
  }

  // Productive rules: least fixpoint of "start reaches a final through bytes and productive rules".
  std::vector<uint8_t> productive(n_rules, 0);
  auto reaches_final = [&](int32_t r, const std::vector<uint8_t>& rule_ok, bool bytes_ok) {
    const LocalDfa& d = dfas[r];
    std::vector<uint8_t> seen(d.Size(), 0);
    std::vector<int32_t> stack = {0};
    seen[0] = 1;
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      if (d.final[s]) return true;
      auto push = [&](int32_t t) {
        if (t >= 0 && !seen[t]) seen[t] = 1, stack.push_back(t);
      };
      if (bytes_ok)
        for (const ByteRun& run : d.runs[s]) push(run.target);
      for (const RuleEdge& e : d.rule_edges[s])
        if (rule_ok[e.rule]) push(e.target);
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n_rules; ++r) {
      if (productive[r]) continue;
      // A counted rule's lone state is final only once min X's are read.
      bool ok = counted[r] ? repeat[r].first == 0 || productive[counted_item[r]] : reaches_final(r, productive, true);
      if (ok) productive[r] = 1, changed = true;
    }
  }
  if (!productive[g.root]) {
    std::string stuck;
    for (int32_t r = 0; r < n_rules; ++r)
      if (!productive[r]) stuck += (stuck.empty() ? "'" : ", '") + g.rules[r].name + "'";
    XG_USER_ERROR() << "grammar: the root rule '" << g.rules[g.root].name
                    << "' cannot match any finite string: rules that can never finish: " << stuck
                    << " (every alternative recurses forever)";
  }

  // Drop edges into unproductive rules, then trim each automaton to useful states.
  for (auto& d : dfas)
    for (auto& edges : d.rule_edges)
      edges.erase(std::remove_if(edges.begin(), edges.end(), [&](const RuleEdge& e) { return !productive[e.rule]; }),
                  edges.end());

  GrammarFsm out;
  out.root_ = g.root;
  out.rule_start_.assign(n_rules, -1);
  out.rule_nullable_.assign(n_rules, 0);
  out.rule_follow_.assign(n_rules, {});
  out.rule_counted_ = counted;
  out.rule_repeat_ = repeat;
  for (auto& r : g.rules) out.rule_names_.push_back(r.name);
  std::vector<std::vector<int32_t>> local_to_global(n_rules);
  int32_t total = 0;
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    LocalDfa& d = dfas[r];
    int32_t n = d.Size();
    std::vector<uint8_t> fwd(n, 0), bwd(n, 0);
    std::vector<std::vector<int32_t>> rev(n);
    std::vector<int32_t> stack = {0};
    fwd[0] = 1;
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      auto edge = [&](int32_t t) {
        if (t < 0) return;
        rev[t].push_back(s);
        if (!fwd[t]) fwd[t] = 1, stack.push_back(t);
      };
      for (const ByteRun& run : d.runs[s]) edge(run.target);
      for (auto& e : d.rule_edges[s]) edge(e.target);
    }
    for (int32_t s = 0; s < n; ++s)
      if (fwd[s] && d.final[s]) bwd[s] = 1, stack.push_back(s);
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      for (int32_t p : rev[s])
        if (!bwd[p]) bwd[p] = 1, stack.push_back(p);
    }
    local_to_global[r].assign(n, -1);
    for (int32_t s = 0; s < n; ++s)
      if (fwd[s] && bwd[s]) local_to_global[r][s] = total++;
    XG_ICHECK(local_to_global[r][0] >= 0) << "productive rule without a useful start state";
    out.rule_start_[r] = local_to_global[r][0];
  }

  out.state_rule_.assign(total, -1);
  out.is_final_.assign(total, 0);
  out.has_bytes_.assign(total, 0);
  out.live_bytes_.assign(static_cast<size_t>(total) * 4, 0);
  out.byte_next_.assign(static_cast<size_t>(total) * 256, -1);
  out.rule_edge_offset_.assign(total + 1, 0);
  std::vector<std::vector<RuleEdge>> edges_of(total);
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    const LocalDfa& d = dfas[r];
    for (int32_t s = 0; s < d.Size(); ++s) {
      int32_t gs = local_to_global[r][s];
      if (gs < 0) continue;
      out.state_rule_[gs] = r;
      out.is_final_[gs] = d.final[s];
      for (const ByteRun& run : d.runs[s]) {
        const int32_t gt = local_to_global[r][run.target];
        if (gt < 0) continue;
        std::fill(&out.byte_next_[static_cast<size_t>(gs) * 256 + run.lo],
                  &out.byte_next_[static_cast<size_t>(gs) * 256 + run.hi + 1], gt);
        out.has_bytes_[gs] = 1;
        for (int b = run.lo; b <= run.hi; ++b) out.live_bytes_[static_cast<size_t>(gs) * 4 + b / 64] |= 1ull << (b % 64);
      }
      for (const RuleEdge& e : d.rule_edges[s]) {
        int32_t gt = local_to_global[r][e.target];
        if (gt >= 0) edges_of[gs].push_back({e.rule, gt});
      }
    }
  }
  for (int32_t s = 0; s < total; ++s) {
    out.rule_edge_offset_[s + 1] = out.rule_edge_offset_[s] + static_cast<int32_t>(edges_of[s].size());
    for (auto& e : edges_of[s]) {
      out.rule_edges_.push_back(e);
      out.rule_follow_[e.rule].push_back(e.target);
    }
  }
  for (auto& f : out.rule_follow_) {
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
  }

  // Nullable rules: least fixpoint of "start reaches a final through nullable rule edges only". A
  // counted rule's X is never nullable (CompressRepetitions), so it is nullable exactly when min is 0.
  for (int32_t r = 0; r < n_rules; ++r)
    if (counted[r] && out.rule_start_[r] >= 0) out.rule_nullable_[r] = repeat[r].first == 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n_rules; ++r) {
      if (out.rule_start_[r] < 0 || out.rule_nullable_[r] || counted[r]) continue;
      std::vector<int32_t> stack = {out.rule_start_[r]};
      std::vector<int32_t> seen = stack;
      bool nullable = false;
      while (!stack.empty() && !nullable) {
        int32_t s = stack.back();
        stack.pop_back();
        if (out.is_final_[s]) nullable = true;
        for (const RuleEdge* e = out.RuleEdgesBegin(s); e != out.RuleEdgesEnd(s); ++e) {
          if (out.rule_nullable_[e->rule] && std::find(seen.begin(), seen.end(), e->target) == seen.end()) {
            seen.push_back(e->target);
            stack.push_back(e->target);
          }
        }
      }
      if (nullable) out.rule_nullable_[r] = 1, changed = true;
    }
  }
  for (int32_t r = 0; r < n_rules; ++r)
    XG_ICHECK(!counted[r] || out.rule_start_[r] < 0 || !out.rule_nullable_[counted_item[r]])
        << "counted rule '" << g.rules[r].name << "' repeats a nullable rule";
  return out;
}

size_t GrammarFsm::MemoryBytes() const {
  size_t n = byte_next_.size() * sizeof(int32_t) + live_bytes_.size() * sizeof(uint64_t) +
             rule_edges_.size() * sizeof(RuleEdge) +
             state_rule_.size() * (sizeof(int32_t) * 2 + 2);
  for (auto& f : rule_follow_) n += f.size() * sizeof(int32_t);
  return n;
}

}  // namespace xg
