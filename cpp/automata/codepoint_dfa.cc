// Code-point automata (codepoint_dfa.h).
//
// Algorithm. A pattern's syntax tree (automata/regex_parser.h) is lowered by Thompson's construction
// to an NFA whose edges carry code-point ranges (interned: the copies of an unrolled repetition share
// their body's range sets); each top-level alternative without an anchor is wrapped in an any-string
// loop on that side. The alphabet is cut into atoms at every range boundary, and subset construction
// follows, keyed by the NFA states that matter (those with an edge, and the accepting one). Products
// are breadth-first over tuples of component states, on the atoms common to all components. Length
// tracking pairs a product state with a count and drops the count as soon as the shortest and
// longest completions (backward search; Kahn's algorithm on the live states, a cycle meaning
// unbounded) show that the count can no longer decide. Emission trims to the states that reach an
// accepting one (backward search) and merges equivalent states by Moore's partition refinement. First matches
// (FirstMatches) are the same automaton with the accepting states' transitions removed: a string reaches an
// accepting state at its shortest matching prefix, so cutting there leaves exactly the matches with no proper
// matching prefix.
#include "automata/codepoint_dfa.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>

#include "automata/partition_refinement.h"
#include "automata/regex_parser.h"
#include "support/check.h"
#include "support/sequence_interner.h"

namespace xg {

// Sets the private fields; only this file builds automata.
class CodepointDfaBuilder {
 public:
  static CodepointDfa Make(CodepointRanges atoms, int32_t components, std::vector<int32_t> next,
                           std::vector<uint8_t> accepts) {
    CodepointDfa d;
    d.atoms_ = std::move(atoms);
    d.num_components_ = components;
    d.next_ = std::move(next);
    d.accepts_ = std::move(accepts);
    XG_ICHECK(!d.atoms_.empty() && d.next_.size() == d.accepts_.size() / components * d.atoms_.size());
    return d;
  }
};

namespace {

// Atoms: the ranges between consecutive cuts, where the cuts are 0, 0x110000 and every lo and hi+1.
CodepointRanges AtomsFromCuts(std::vector<uint32_t> cuts) {
  cuts.push_back(0);
  cuts.push_back(kMaxCodepoint + 1);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  CodepointRanges atoms;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) atoms.emplace_back(cuts[i], cuts[i + 1] - 1);
  return atoms;
}

// The first atom index whose range starts at or after `cp` is found by binary search on the starts.
int32_t AtomStartingAt(const CodepointRanges& atoms, uint32_t cp) {
  auto it = std::lower_bound(atoms.begin(), atoms.end(), cp,
                             [](const std::pair<uint32_t, uint32_t>& a, uint32_t v) { return a.first < v; });
  return static_cast<int32_t>(it - atoms.begin());
}

// ---------------------------------------------------------------------------------------------
// Thompson's construction

class Nfa {
 public:
  struct Edge {
    int32_t ranges;  // index into range_sets
    int32_t to;
  };

  explicit Nfa(const Limits& limits) : limits_(limits) {}

  int32_t AddState() {
    XG_LIMIT_CHECK(static_cast<int64_t>(eps.size()) < limits_.max_automaton_states)
        << "regex automaton: more than " << limits_.max_automaton_states
        << " NFA states (Limits::max_automaton_states; a bounded repetition is unrolled into copies of its body)";
    eps.emplace_back();
    edges.emplace_back();
    return static_cast<int32_t>(eps.size()) - 1;
  }

  int32_t Intern(const CodepointRanges& r) {
    auto [it, inserted] = range_index_.emplace(r, static_cast<int32_t>(range_sets.size()));
    if (inserted) range_sets.push_back(r);
    return it->second;
  }

  // A fragment (start, end) for `node`; recursion depth is the tree's, which the parser bounds.
  std::pair<int32_t, int32_t> Build(const regex::Node& node) {
    using Kind = regex::Node::Kind;
    switch (node.kind) {
      case Kind::kEmpty: {
        const int32_t s = AddState();
        return {s, s};
      }
      case Kind::kLiteral:
      case Kind::kClass: {
        const int32_t s = AddState(), e = AddState();
        const int32_t r = node.kind == Kind::kLiteral ? Intern({{node.codepoint, node.codepoint}}) : Intern(node.ranges);
        edges[s].push_back({r, e});
        return {s, e};
      }
      case Kind::kConcat: {
        auto [s, e] = Build(node.children[0]);
        for (size_t i = 1; i < node.children.size(); ++i) {
          auto [cs, ce] = Build(node.children[i]);
          eps[e].push_back(cs);
          e = ce;
        }
        return {s, e};
      }
      case Kind::kAlternate: {
        const int32_t s = AddState(), e = AddState();
        for (const regex::Node& child : node.children) {
          auto [cs, ce] = Build(child);
          eps[s].push_back(cs);
          eps[ce].push_back(e);
        }
        return {s, e};
      }
      case Kind::kRepeat: {
        const regex::Node& body = node.children[0];
        const int32_t s = AddState(), e = AddState();
        int32_t cur = s;
        for (int32_t k = 0; k < node.min; ++k) {
          auto [bs, be] = Build(body);
          eps[cur].push_back(bs);
          cur = be;
        }
        if (node.max == regex::Node::kUnbounded) {
          auto [bs, be] = Build(body);
          eps[cur].push_back(bs);
          eps[cur].push_back(e);
          eps[be].push_back(bs);
          eps[be].push_back(e);
        } else {
          for (int32_t k = node.min; k < node.max; ++k) {
            auto [bs, be] = Build(body);
            eps[cur].push_back(e);
            eps[cur].push_back(bs);
            cur = be;
          }
          eps[cur].push_back(e);
        }
        return {s, e};
      }
    }
    XG_ICHECK(false) << "unknown regex node kind";
    return {0, 0};
  }

  std::vector<std::vector<int32_t>> eps;
  std::vector<std::vector<Edge>> edges;
  std::vector<CodepointRanges> range_sets;

 private:
  const Limits& limits_;
  std::map<CodepointRanges, int32_t> range_index_;
};

const CodepointRanges kEcmaDot = {{0, '\n' - 1}, {'\n' + 1, '\r' - 1}, {'\r' + 1, 0x2027}, {0x202A, kMaxCodepoint}};

// Subset construction from `start` to `accept` (see the file comment).
CodepointDfa Determinize(const Nfa& nfa, int32_t start, int32_t accept, int64_t max_states, const Limits& limits) {
  std::vector<uint32_t> cuts;
  for (const CodepointRanges& r : nfa.range_sets) {
    for (auto [lo, hi] : r) {
      cuts.push_back(lo);
      cuts.push_back(hi + 1);
    }
  }
  CodepointRanges atoms = AtomsFromCuts(std::move(cuts));
  const size_t num_atoms = atoms.size();
  // Per range set, its atoms as [first, last] index spans.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> spans(nfa.range_sets.size());
  for (size_t i = 0; i < nfa.range_sets.size(); ++i) {
    for (auto [lo, hi] : nfa.range_sets[i]) {
      spans[i].emplace_back(AtomStartingAt(atoms, lo), AtomStartingAt(atoms, hi + 1) - 1);
    }
  }

  const int32_t n = static_cast<int32_t>(nfa.eps.size());
  std::vector<int32_t> mark(n, -1);
  int32_t epoch = 0;
  std::vector<int32_t> stack;
  // The closure of `seeds`, reduced to the states that matter, sorted.
  auto closure = [&](const std::vector<int32_t>& seeds) {
    ++epoch;
    std::vector<int32_t> key;
    stack.clear();
    for (int32_t q : seeds) {
      if (mark[q] != epoch) {
        mark[q] = epoch;
        stack.push_back(q);
      }
    }
    while (!stack.empty()) {
      const int32_t q = stack.back();
      stack.pop_back();
      if (!nfa.edges[q].empty() || q == accept) key.push_back(q);
      for (int32_t t : nfa.eps[q]) {
        if (mark[t] != epoch) {
          mark[t] = epoch;
          stack.push_back(t);
        }
      }
    }
    std::sort(key.begin(), key.end());
    return key;
  };

  SequenceInterner subsets;  // DFA state id -> its subset
  int64_t members = 0;
  auto intern = [&](const std::vector<int32_t>& key) {
    const int32_t found = subsets.Find(key.data(), key.size());
    if (found >= 0) return found;
    XG_LIMIT_CHECK(static_cast<int64_t>(subsets.Size()) < max_states)
        << "regex automaton: more than " << max_states << " DFA states";
    members += static_cast<int64_t>(key.size());
    XG_LIMIT_CHECK(members <= limits.max_subset_members)
        << "regex automaton: more than " << limits.max_subset_members
        << " NFA states summed over the DFA's subsets (Limits::max_subset_members)";
    return subsets.Intern(key).first;
  };
  intern(closure({start}));

  std::vector<int32_t> next;
  std::vector<uint8_t> accepts;
  std::vector<std::vector<int32_t>> buckets(num_atoms);
  for (int32_t d = 0; d < static_cast<int32_t>(subsets.Size()); ++d) {
    for (auto& b : buckets) b.clear();
    // A copy: intern() may grow the interner's buffer.
    const std::vector<int32_t> subset(subsets.Data(d), subsets.Data(d) + subsets.Length(d));
    accepts.push_back(std::binary_search(subset.begin(), subset.end(), accept) ? 1 : 0);
    for (int32_t q : subset) {
      for (const Nfa::Edge& edge : nfa.edges[q]) {
        for (auto [a0, a1] : spans[edge.ranges]) {
          for (int32_t a = a0; a <= a1; ++a) buckets[a].push_back(edge.to);
        }
      }
    }
    for (size_t a = 0; a < num_atoms; ++a) {
      next.push_back(buckets[a].empty() ? -1 : intern(closure(buckets[a])));
    }
  }
  return CodepointDfaBuilder::Make(std::move(atoms), 1, std::move(next), std::move(accepts));
}

// For each atom of `common`, the index of the atom of `d` that contains it (common refines d's atoms).
std::vector<int32_t> AtomMap(const CodepointRanges& common, const CodepointDfa& d) {
  std::vector<int32_t> out(common.size());
  int32_t j = 0;
  for (size_t a = 0; a < common.size(); ++a) {
    while (d.atoms()[j].second < common[a].first) ++j;
    out[a] = j;
  }
  return out;
}

// Per state, the states with a transition into it, each once, ascending.
std::vector<std::vector<int32_t>> Predecessors(const CodepointDfa& d) {
  std::vector<std::vector<int32_t>> preds(d.num_states());
  for (int32_t q = 0; q < d.num_states(); ++q) {
    for (int32_t a = 0; a < d.num_atoms(); ++a) {
      const int32_t t = d.Next(q, a);
      if (t >= 0 && (preds[t].empty() || preds[t].back() != q)) preds[t].push_back(q);
    }
  }
  return preds;
}

}  // namespace

int32_t CodepointDfa::AtomOf(uint32_t cp) const {
  auto it = std::upper_bound(atoms_.begin(), atoms_.end(), cp,
                             [](uint32_t v, const std::pair<uint32_t, uint32_t>& a) { return v < a.first; });
  return static_cast<int32_t>(it - atoms_.begin()) - 1;
}

int32_t CodepointDfa::Run(const std::vector<uint32_t>& codepoints) const {
  int32_t q = 0;
  for (uint32_t cp : codepoints) {
    if (cp > kMaxCodepoint) return -1;
    q = Next(q, AtomOf(cp));
    if (q < 0) return -1;
  }
  return q;
}

CodepointDfa CodepointDfa::WithAccepting(const std::vector<int32_t>& states) const {
  std::vector<uint8_t> accepts(num_states(), 0);
  for (int32_t q : states) {
    XG_USER_CHECK(q >= 0 && q < num_states()) << "automaton state " << q << " out of range [0, " << num_states() << ")";
    accepts[q] = 1;
  }
  return CodepointDfaBuilder::Make(atoms_, 1, next_, std::move(accepts));
}

CodepointDfa SearchDfa(const std::string& pattern, int64_t max_states, const Limits& limits) {
  const std::vector<regex::TopLevelAlternative> alternatives = regex::ParseRegexPattern(pattern, kEcmaDot);
  Nfa nfa(limits);
  const int32_t start = nfa.AddState(), accept = nfa.AddState();
  const int32_t any = nfa.Intern({{0, kMaxCodepoint}});
  for (const regex::TopLevelAlternative& alt : alternatives) {
    auto [s, e] = nfa.Build(alt.body);
    if (alt.anchored_start) {
      nfa.eps[start].push_back(s);
    } else {
      const int32_t loop = nfa.AddState();
      nfa.eps[start].push_back(loop);
      nfa.edges[loop].push_back({any, loop});
      nfa.eps[loop].push_back(s);
    }
    if (alt.anchored_end) {
      nfa.eps[e].push_back(accept);
    } else {
      const int32_t tail = nfa.AddState();
      nfa.eps[e].push_back(tail);
      nfa.edges[tail].push_back({any, tail});
      nfa.eps[tail].push_back(accept);
    }
  }
  return Determinize(nfa, start, accept, max_states, limits);
}

CodepointDfa MatchDfa(const std::string& pattern, const CodepointRanges& dot, bool ignore_case, int64_t max_states,
                      const Limits& limits) {
  const std::vector<regex::TopLevelAlternative> alternatives = regex::ParseRegexPattern(pattern, dot, ignore_case);
  Nfa nfa(limits);
  const int32_t start = nfa.AddState(), accept = nfa.AddState();
  for (const regex::TopLevelAlternative& alt : alternatives) {
    auto [s, e] = nfa.Build(alt.body);
    nfa.eps[start].push_back(s);
    nfa.eps[e].push_back(accept);
  }
  return Determinize(nfa, start, accept, max_states, limits);
}

CodepointDfa FlagsMatchDfa(const std::string& pattern, const std::string& flags, int64_t max_states,
                           const Limits& limits) {
  static const CodepointRanges kAny = {{0, kMaxCodepoint}};
  static const CodepointRanges kNoNewline = {{0, '\n' - 1}, {'\n' + 1, kMaxCodepoint}};
  const bool dot_all = flags.find('s') != std::string::npos, ignore_case = flags.find('i') != std::string::npos;
  return MatchDfa(pattern, dot_all ? kAny : kNoNewline, ignore_case, max_states, limits);
}

CodepointDfa NodeDfa(const regex::Node& body, int64_t max_states, const Limits& limits) {
  Nfa nfa(limits);
  const int32_t start = nfa.AddState(), accept = nfa.AddState();
  auto [s, e] = nfa.Build(body);
  nfa.eps[start].push_back(s);
  nfa.eps[e].push_back(accept);
  return Determinize(nfa, start, accept, max_states, limits);
}

namespace {

// The (state, count) automaton of FirstMatches: `decide(q, count)` gives (accepting, ends) for a state of `dfa` after
// `count` code points (saturating at `after_chars`); a state that ends loses its transitions.
template <typename Decide>
CodepointDfa CountedFirstMatches(const CodepointDfa& dfa, int64_t after_chars, int64_t max_states, Decide decide) {
  XG_USER_CHECK(after_chars >= 0) << "FirstMatches: after_chars must be non-negative, got " << after_chars;
  const size_t num_atoms = dfa.atoms().size();
  // States (q, count) with count saturating at after_chars, numbered breadth-first from (start, 0); with
  // after_chars = 0 that is the automaton itself (count is always 0).
  std::map<std::pair<int32_t, int64_t>, int32_t> id;
  std::vector<std::pair<int32_t, int64_t>> states = {{0, 0}};
  id[{0, 0}] = 0;
  std::vector<int32_t> next;
  std::vector<uint8_t> accepts;
  for (size_t k = 0; k < states.size(); ++k) {
    const auto [q, count] = states[k];
    const auto [accepting, ends] = decide(q, count);
    accepts.push_back(accepting);
    for (size_t a = 0; a < num_atoms; ++a) {
      const int32_t t = ends ? -1 : dfa.Next(q, static_cast<int32_t>(a));
      if (t < 0) {
        next.push_back(-1);
        continue;
      }
      const std::pair<int32_t, int64_t> key = {t, std::min(count + 1, after_chars)};
      auto [it, inserted] = id.emplace(key, static_cast<int32_t>(states.size()));
      if (inserted) {
        XG_LIMIT_CHECK(static_cast<int64_t>(states.size()) < max_states)
            << "first-match automaton: more than " << max_states << " states (Limits::max_automaton_states; "
            << "max_chars pairs each state with a count up to it)";
        states.push_back(key);
      }
      next.push_back(it->second);
    }
  }
  return CodepointDfaBuilder::Make(dfa.atoms(), 1, std::move(next), std::move(accepts));
}

}  // namespace

CodepointDfa FirstMatches(const CodepointDfa& dfa, int64_t after_chars, int64_t max_states) {
  XG_ICHECK(dfa.num_components() == 1) << "FirstMatches of a product";
  return CountedFirstMatches(dfa, after_chars, max_states, [&](int32_t q, int64_t count) {
    const bool accepting = dfa.Accepts(q);
    // The match is complete with enough read: it ends here.
    return std::make_pair(accepting, accepting && count >= after_chars);
  });
}

CodepointDfa FirstMatchesOrBudget(const CodepointDfa& pattern, const CodepointDfa& budget_body, int64_t after_chars,
                                  int64_t max_states) {
  const CodepointDfa both = ProductDfa({&pattern, &budget_body}, max_states);
  return CountedFirstMatches(both, after_chars, max_states, [&](int32_t q, int64_t count) {
    const bool accepting = both.Accepts(q, 0) || (both.Accepts(q, 1) && count >= after_chars);
    return std::make_pair(accepting, accepting);
  });
}

CodepointDfa MatchesBefore(const CodepointDfa& body, const CodepointDfa& stop, int64_t max_states) {
  const CodepointDfa both = ProductDfa({&body, &stop}, max_states);
  return CountedFirstMatches(both, 0, max_states, [&](int32_t q, int64_t) {
    return std::make_pair(both.Accepts(q, 0), both.Accepts(q, 1));
  });
}

CodepointDfa NamesDfa(const std::vector<std::string>& names) {
  std::vector<std::vector<uint32_t>> decoded;
  std::vector<uint32_t> cuts;
  for (const std::string& name : names) {
    std::vector<uint32_t> cps;
    for (size_t i = 0; i < name.size();) {
      uint32_t cp;
      XG_USER_CHECK(DecodeUtf8(name, &i, &cp)) << "name " << EscapeBytes(name) << " is not valid UTF-8";
      cps.push_back(cp);
      cuts.push_back(cp);
      cuts.push_back(cp + 1);
    }
    decoded.push_back(std::move(cps));
  }
  CodepointRanges atoms = AtomsFromCuts(std::move(cuts));
  const size_t num_atoms = atoms.size();
  std::vector<int32_t> next(num_atoms, -1);  // the trie, one row per node
  std::vector<uint8_t> accepts(1, 0);
  for (const std::vector<uint32_t>& cps : decoded) {
    int32_t q = 0;
    for (uint32_t cp : cps) {
      const size_t cell = static_cast<size_t>(q) * num_atoms + AtomStartingAt(atoms, cp);
      if (next[cell] < 0) {
        next[cell] = static_cast<int32_t>(accepts.size());
        accepts.push_back(0);
        next.resize(next.size() + num_atoms, -1);
      }
      q = next[cell];
    }
    accepts[q] = 1;
  }
  return CodepointDfaBuilder::Make(std::move(atoms), 1, std::move(next), std::move(accepts));
}

CodepointDfa LengthDfa(int64_t lo, int64_t hi, int64_t max_states) {
  XG_USER_CHECK(lo >= 0 && (hi < 0 || hi >= lo)) << "length bounds [" << lo << ", " << hi << "] are empty";
  const int64_t top = hi < 0 ? lo : hi;
  XG_LIMIT_CHECK(top < max_states) << "length automaton: a bound of " << top << " needs more than " << max_states
                                   << " states";
  std::vector<int32_t> next;
  std::vector<uint8_t> accepts;
  for (int64_t q = 0; q <= top; ++q) {
    next.push_back(q < top ? static_cast<int32_t>(q + 1) : (hi < 0 ? static_cast<int32_t>(top) : -1));
    accepts.push_back(q >= lo ? 1 : 0);
  }
  return CodepointDfaBuilder::Make({{0, kMaxCodepoint}}, 1, std::move(next), std::move(accepts));
}

CodepointDfa ProductDfa(const std::vector<const CodepointDfa*>& dfas, int64_t max_states) {
  XG_USER_CHECK(!dfas.empty()) << "a product needs at least one automaton";
  std::vector<uint32_t> cuts;
  for (const CodepointDfa* d : dfas) {
    XG_USER_CHECK(d->num_components() == 1) << "a product's inputs must have one component each";
    for (auto [lo, hi] : d->atoms()) cuts.push_back(lo);
  }
  CodepointRanges atoms = AtomsFromCuts(std::move(cuts));
  const size_t k = dfas.size(), num_atoms = atoms.size();
  std::vector<std::vector<int32_t>> maps;
  for (const CodepointDfa* d : dfas) maps.push_back(AtomMap(atoms, *d));

  SequenceInterner tuples;  // product state id -> its components' states
  auto intern = [&](const std::vector<int32_t>& tuple) {
    const int32_t found = tuples.Find(tuple.data(), k);
    if (found >= 0) return found;
    XG_LIMIT_CHECK(static_cast<int64_t>(tuples.Size()) < max_states)
        << "product automaton: more than " << max_states << " states";
    return tuples.Intern(tuple).first;
  };
  intern(std::vector<int32_t>(k, 0));
  std::vector<int32_t> next;
  std::vector<uint8_t> accepts;
  std::vector<int32_t> current(k), tuple(k);
  for (int32_t s = 0; s < static_cast<int32_t>(tuples.Size()); ++s) {
    current.assign(tuples.Data(s), tuples.Data(s) + k);
    for (size_t i = 0; i < k; ++i) accepts.push_back(current[i] >= 0 && dfas[i]->Accepts(current[i]) ? 1 : 0);
    for (size_t a = 0; a < num_atoms; ++a) {
      for (size_t i = 0; i < k; ++i) tuple[i] = current[i] < 0 ? -1 : dfas[i]->Next(current[i], maps[i][a]);
      // Every component dead is a state too: "matches none of them" may be what a caller wants.
      next.push_back(intern(tuple));
    }
  }
  return CodepointDfaBuilder::Make(std::move(atoms), static_cast<int32_t>(k), std::move(next), std::move(accepts));
}

CodepointDfa ProductWithLength(const std::vector<const CodepointDfa*>& dfas, int32_t num_required, int64_t lo,
                               int64_t hi, int64_t max_states) {
  XG_USER_CHECK(lo >= 0 && lo < INT32_MAX && hi < INT32_MAX) << "length bounds [" << lo << ", " << hi << "] out of range";
  const CodepointDfa p = ProductDfa(dfas, max_states);
  const int32_t n = p.num_states(), num_atoms = p.num_atoms(), k = p.num_components();
  std::vector<uint8_t> good(n);
  for (int32_t q = 0; q < n; ++q) {
    bool ok = true;
    for (int32_t i = 0; i < k && ok; ++i) ok = p.Accepts(q, i) == (i < num_required);
    good[q] = ok;
  }
  const std::vector<std::vector<int32_t>> preds = Predecessors(p);
  // Shortest completion (backward BFS from the good states); unset = cannot reach one (not live).
  constexpr int64_t kUnset = -1, kInfinite = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> shortest(n, kUnset);
  std::deque<int32_t> queue;
  for (int32_t q = 0; q < n; ++q) {
    if (good[q]) {
      shortest[q] = 0;
      queue.push_back(q);
    }
  }
  while (!queue.empty()) {
    const int32_t t = queue.front();
    queue.pop_front();
    for (int32_t q : preds[t]) {
      if (shortest[q] == kUnset) {
        shortest[q] = shortest[t] + 1;
        queue.push_back(q);
      }
    }
  }
  auto live = [&](int32_t q) { return q >= 0 && shortest[q] != kUnset; };
  // Longest completion over live states: Kahn's algorithm on reversed edges; a state left over lies
  // on or before a cycle (unbounded).
  std::vector<std::vector<int32_t>> succ(n);
  std::vector<int32_t> outdeg(n, 0);
  std::vector<int64_t> longest(n, kInfinite);
  std::vector<int32_t> ready;
  for (int32_t q = 0; q < n; ++q) {
    if (!live(q)) continue;
    for (int32_t a = 0; a < num_atoms; ++a) {
      const int32_t t = p.Next(q, a);
      if (live(t)) succ[q].push_back(t);
    }
    std::sort(succ[q].begin(), succ[q].end());
    succ[q].erase(std::unique(succ[q].begin(), succ[q].end()), succ[q].end());
    outdeg[q] = static_cast<int32_t>(succ[q].size());
    if (outdeg[q] == 0) {
      longest[q] = 0;
      ready.push_back(q);
    }
  }
  while (!ready.empty()) {
    const int32_t t = ready.back();
    ready.pop_back();
    for (int32_t q : preds[t]) {
      if (!live(q) || --outdeg[q] != 0) continue;
      int64_t best = 0;
      for (int32_t s : succ[q]) best = std::max(best, longest[s]);
      longest[q] = best + 1;
      ready.push_back(q);
    }
  }
  // A length state is (product state, count), count -1 once the count no longer matters.
  constexpr int64_t kDropped = -1;
  auto norm = [&](int32_t q, int64_t c, std::pair<int32_t, int64_t>* out) {
    if (!live(q)) return false;
    if (c != kDropped) {
      if (hi >= 0 && c > hi) return false;
      const bool within_lo = c + shortest[q] >= lo;
      const bool within_hi = hi < 0 || (longest[q] != kInfinite && c + longest[q] <= hi);
      if (within_lo && within_hi) c = kDropped;
    }
    *out = {q, c};
    return true;
  };
  std::pair<int32_t, int64_t> first;
  if (!norm(0, 0, &first)) {
    return CodepointDfaBuilder::Make(p.atoms(), 1, std::vector<int32_t>(num_atoms, -1), {0});
  }
  SequenceInterner pairs;  // length state id -> (product state, count or kDropped)
  const int64_t budget = 5 * max_states;
  auto intern = [&](const std::pair<int32_t, int64_t>& st) {
    const int32_t key[2] = {st.first, static_cast<int32_t>(st.second)};
    const int32_t found = pairs.Find(key, 2);
    if (found >= 0) return found;
    XG_LIMIT_CHECK(static_cast<int64_t>(pairs.Size()) < budget)
        << "pattern and length automaton: more than " << budget << " states (5x the automaton state limit)";
    return pairs.Intern(key, 2).first;
  };
  intern(first);
  std::vector<int32_t> next;
  std::vector<uint8_t> accepts;
  for (int32_t i = 0; i < static_cast<int32_t>(pairs.Size()); ++i) {
    const int32_t q = pairs.Data(i)[0];
    const int64_t c = pairs.Data(i)[1];
    accepts.push_back(good[q] && (c == kDropped || c >= lo) ? 1 : 0);
    for (int32_t a = 0; a < num_atoms; ++a) {
      std::pair<int32_t, int64_t> st;
      const int32_t t = p.Next(q, a);
      next.push_back(t >= 0 && norm(t, c == kDropped ? kDropped : c + 1, &st) ? intern(st) : -1);
    }
  }
  return CodepointDfaBuilder::Make(p.atoms(), 1, std::move(next), std::move(accepts));
}

namespace {

// The live states of a DFA as partition_refinement.h's Graph (dense ids; m: the dead state).
struct LiveGraph {
  const CodepointDfa& dfa;
  const std::vector<int32_t>& states;  // live index -> state
  const std::vector<int32_t>& dense;   // state -> live index (m: dead)
  int32_t m, num_atoms;
  int32_t Size() const { return m; }
  bool Final(int32_t i) const { return dfa.Accepts(states[i]); }
  int32_t Target(int32_t i, int32_t a) const {
    const int32_t t = dfa.Next(states[i], a);
    return t < 0 ? m : dense[t];
  }
  template <class F>
  void ForEachTarget(int32_t i, F f) const {
    int32_t last = m;
    for (int32_t a = 0; a < num_atoms; ++a) {
      const int32_t t = Target(i, a);
      if (t != m && t != last) f(t);
      last = t;
    }
  }
  // (first atom, block) wherever the block reached changes along the atoms (-1: dead).
  void Signature(int32_t i, const std::vector<int32_t>& block, std::vector<int32_t>* sig) const {
    sig->clear();
    int32_t last = -2;
    for (int32_t a = 0; a < num_atoms; ++a) {
      const int32_t t = Target(i, a);
      const int32_t b = t == m ? -1 : block[t];
      if (b != last) sig->push_back(a), sig->push_back(b), last = b;
    }
  }
};

}  // namespace

EmissionPlan PlanEmission(const CodepointDfa& dfa, int64_t max_merge_work) {
  const int32_t n = dfa.num_states(), num_atoms = dfa.num_atoms();
  // Live: reaches an accepting state (backward search over flat predecessor lists).
  std::vector<int32_t> pred_begin(n + 1, 0), preds;
  for (int32_t q = 0; q < n; ++q) {
    int32_t last = -1;
    for (int32_t a = 0; a < num_atoms; ++a) {
      const int32_t t = dfa.Next(q, a);
      if (t >= 0 && t != last) ++pred_begin[t + 1];
      last = t;
    }
  }
  for (int32_t q = 0; q < n; ++q) pred_begin[q + 1] += pred_begin[q];
  preds.resize(pred_begin[n]);
  {
    std::vector<int32_t> cursor(pred_begin.begin(), pred_begin.end() - 1);
    for (int32_t q = 0; q < n; ++q) {
      int32_t last = -1;
      for (int32_t a = 0; a < num_atoms; ++a) {
        const int32_t t = dfa.Next(q, a);
        if (t >= 0 && t != last) preds[cursor[t]++] = q;
        last = t;
      }
    }
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (int32_t q = 0; q < n; ++q) {
    if (dfa.Accepts(q)) {
      live[q] = 1;
      stack.push_back(q);
    }
  }
  while (!stack.empty()) {
    const int32_t t = stack.back();
    stack.pop_back();
    for (int32_t k = pred_begin[t]; k < pred_begin[t + 1]; ++k) {
      const int32_t q = preds[k];
      if (!live[q]) {
        live[q] = 1;
        stack.push_back(q);
      }
    }
  }
  EmissionPlan plan;
  if (!live[0]) return plan;
  std::vector<int32_t> states;
  for (int32_t q = 0; q < n; ++q) {
    if (live[q]) states.push_back(q);
  }
  const int32_t m = static_cast<int32_t>(states.size());
  std::vector<int32_t> dense(n, m);  // m: dead
  for (int32_t i = 0; i < m; ++i) dense[states[i]] = i;

  // The live states' coarsest partition by future (partition_refinement.h); over its work budget, none.
  PartitionScratch partition;
  int32_t num_blocks = 0;
  const bool merged = RefineBlocks(LiveGraph{dfa, states, dense, m, num_atoms},
                                   max_merge_work / (num_atoms + 1), &partition, &num_blocks);
  const std::vector<int32_t>& block = partition.block;
  // Each state's representative: the smallest state of its class.
  std::vector<int32_t> rep(m);
  {
    std::vector<int32_t> first(merged ? num_blocks : 0, -1);
    for (int32_t i = 0; i < m; ++i) {
      if (!merged) {
        rep[i] = states[i];
      } else {
        if (first[block[i]] < 0) first[block[i]] = states[i];
        rep[i] = first[block[i]];
      }
    }
  }
  // A representative's transitions grouped by target in first-seen order; adjacent atoms (sorted, disjoint)
  // into one target extend its last range.
  std::vector<int32_t> slot(m, -1);  // live index of a target -> its group in `groups`
  std::vector<std::pair<int32_t, CodepointRanges>> groups;
  for (int32_t i = 0; i < m; ++i) {
    if (rep[i] != states[i]) continue;
    EmissionPlan::State st;
    st.id = states[i];
    st.accepting = dfa.Accepts(states[i]);
    groups.clear();
    for (int32_t a = 0; a < num_atoms; ++a) {
      const int32_t t = dfa.Next(states[i], a);
      if (t < 0 || !live[t]) continue;
      const int32_t r = rep[dense[t]];
      int32_t& g = slot[dense[r]];
      if (g < 0) g = static_cast<int32_t>(groups.size()), groups.emplace_back(r, CodepointRanges{});
      CodepointRanges& ranges = groups[g].second;
      const auto& atom = dfa.atoms()[a];
      if (!ranges.empty() && ranges.back().second + 1 == atom.first) {
        ranges.back().second = atom.second;
      } else {
        ranges.push_back(atom);
      }
    }
    for (auto& [t, atoms] : groups) {
      slot[dense[t]] = -1;
      CodepointRanges ranges = NormalizeRanges(std::move(atoms), /*negate=*/false);
      if (ranges.empty()) continue;  // surrogates only: no UTF-8 string reads them
      if (t == st.id) {
        st.loop = std::move(ranges);
      } else {
        st.edges.emplace_back(t, std::move(ranges));
      }
    }
    plan.states.push_back(std::move(st));
  }
  plan.start = rep[dense[0]];
  return plan;
}

}  // namespace xg
