#include "fsm/grammar_fsm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "automata/partition_refinement.h"
#include "fsm/rule_dfa_cache.h"
#include "fsm/sentinel_digits.h"
#include "fsm/tag_dispatch_dfa.h"
#include "support/check.h"
#include "support/limits.h"
#include "support/sequence_interner.h"
#include "support/stack_guard.h"
#include "support/utf8.h"

namespace xg {
namespace {

constexpr const char* kNfaTooLarge = "grammar too large: a rule's automaton would exceed ";
constexpr const char* kNfaTooLargeWhy = " states (Limits.max_automaton_states; a very large bounded repetition?)";
constexpr const char* kDfaTooLarge =
    "grammar too large: the automata exceed the state limit (Limits.max_automaton_states; each DFA state costs a "
    "transition row of up to 1 KiB)";
constexpr const char* kSubsetsTooLarge =
    "grammar too large: building the automata took more NFA states in DFA subsets than the limit "
    "(Limits.max_subset_members); nested bounded repetitions of ambiguous bodies, such as ((x{1,20} y){1,20}){0,50}, "
    "grow them";
static_assert(GrammarFsm::kDefaultMaxStates == Limits{}.max_automaton_states &&
                  GrammarFsm::kDefaultMaxSubsetMembers == Limits{}.max_subset_members,
              "GrammarFsm's defaults are Limits' defaults");

// ---- NFA (Thompson construction) ----------------------------------------------------------------

struct NfaEdge {
  int16_t lo, hi;  // byte range, or lo == -1 for rule/epsilon
  int32_t rule;    // >= 0: rule reference; -1 with lo == -1: epsilon
  int32_t target;
  int32_t next;    // the state's next edge in Nfa::edges, or -1
};

// The UTF-8 byte sequences of each distinct character class, computed once per GrammarFsm::Build:
// after inlining, one class (a JSON string character, a hex digit of \uXXXX) occurs in many rules.
class CharClassSequences {
 public:
  const std::vector<Utf8Sequence>& Of(const Expr& e) {
    key_.assign(1, e.negated ? '1' : '0');
    for (auto [lo, hi] : e.ranges) {
      const uint32_t both[2] = {lo, hi};
      key_.append(reinterpret_cast<const char*>(both), sizeof(both));
    }
    auto [it, inserted] = memo_.try_emplace(key_);
    if (inserted) {
      const auto ranges = NormalizeRanges(e.ranges, e.negated);
      XG_USER_CHECK(!ranges.empty()) << "grammar: a character class matches no character";
      for (auto [lo, hi] : ranges)
        for (Utf8Sequence& seq : Utf8Sequences(lo, hi)) it->second.push_back(std::move(seq));
    }
    return it->second;
  }

 private:
  std::string key_;
  std::unordered_map<std::string, std::vector<Utf8Sequence>> memo_;
};

// Rule references are written as local references: `local_ref[rule]` (see BodyKey).
class Nfa {
 public:
  Nfa(int64_t max_states, const std::vector<int32_t>& local_ref, CharClassSequences& classes)
      : max_states_(max_states), local_ref_(local_ref), classes_(classes) {}
  // Edges in one array, each state's as a list from head[state] (one allocation for the whole
  // automaton instead of one per state; edge order is immaterial to the subset construction).
  std::vector<int32_t> head;
  std::vector<NfaEdge> edges;
  int32_t NumStates() const { return static_cast<int32_t>(head.size()); }
  // Empties the automaton for the next rule (keeping the buffers' capacity).
  void Clear() {
    head.clear();
    edges.clear();
  }
  template <typename F>
  void ForEachEdge(int32_t s, F&& f) const {
    for (int32_t i = head[s]; i >= 0; i = edges[i].next) f(edges[i]);
  }

  int32_t NewState() {
    XG_LIMIT_CHECK(static_cast<int64_t>(head.size()) < max_states_) << kNfaTooLarge << max_states_ << kNfaTooLargeWhy;
    head.push_back(-1);
    return NumStates() - 1;
  }
  void Add(int32_t a, int lo, int hi, int32_t rule, int32_t b) {
    edges.push_back({static_cast<int16_t>(lo), static_cast<int16_t>(hi), rule, b, head[a]});
    head[a] = static_cast<int32_t>(edges.size() - 1);
  }
  void Eps(int32_t a, int32_t b) { Add(a, -1, -1, -1, b); }
  void Byte(int32_t a, int lo, int hi, int32_t b) {
    Add(a, lo, hi, -1, b);
  }
  void Ref(int32_t a, int32_t rule, int32_t b) { Add(a, -1, -1, rule, b); }

  // The leaves of Build: a byte string, a character class (UTF-8 sequences), a token's sentinel, the sentinels of
  // every id but some (ExcludeToken). Out of line: their locals stay off the recursion's frames.
  [[gnu::noinline]] void BuildLeaf(const Expr& e, int32_t from, int32_t to) {
    switch (e.kind) {
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
        // Sequences share their common suffixes (RE2's UTF-8 suffix sharing): "[\x{800}-\x{FFFF}]"
        // ends every lead byte in the same continuation states instead of a chain per sequence,
        // so subset construction sees (and minimisation has to merge) far fewer states.
        std::vector<std::pair<std::array<int32_t, 3>, int32_t>> suffix;  // (lo, hi, next) -> state
        for (const Utf8Sequence& seq : classes_.Of(e)) {
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
        return;
      }
      case ExprKind::kToken: {  // its sentinel (grammar.h)
        const std::string sentinel = TokenSentinel(e.min);
        int32_t cur = from;
        for (size_t i = 0; i < sentinel.size(); ++i) {
          const int32_t nxt = i + 1 == sentinel.size() ? to : NewState();
          const uint8_t b = static_cast<uint8_t>(sentinel[i]);
          Byte(cur, b, b, nxt);
          cur = nxt;
        }
        return;
      }
      case ExprKind::kExcludeToken: {  // the sentinels of every id outside e.ranges (grammar.h)
        // free[k]: a state from which any k digits lead to `to`, shared by every subtree without an excluded id.
        std::array<int32_t, kSentinelDigits + 1> free;
        free[0] = to;
        for (int k = 1; k <= kSentinelDigits; ++k) {
          free[k] = NewState();
          Byte(free[k], kFirstReservedByte, 0xFF, free[k - 1]);
        }
        const int32_t digits = NewState();
        Byte(from, 0xFF, 0xFF, digits);
        SentinelDigitTrie(e.ranges.data(), e.ranges.data() + e.ranges.size(), digits, 0, 0, free,
                          [&] { return NewState(); },
                          [&](int32_t a, int lo, int hi, int32_t b) { Byte(a, lo, hi, b); },
                          [](int32_t, int, int64_t, int) {});  // every id under this digit is excluded: no edge
        return;
      }
      default: XG_ICHECK(false) << "BuildLeaf on an inner node"; return;
    }
  }

  // Adds transitions from `from` to `to` that read exactly the language of expr `id`. Recursive once per level of
  // nesting, so its frame holds only what the inner nodes need; the leaves are built out of line (BuildLeaf).
  void Build(const Grammar& g, int32_t id, int32_t from, int32_t to) {
    CheckStackHeadroom("building rule automata");
    const Expr& e = g.exprs[id];
    switch (e.kind) {
      case ExprKind::kEmpty: Eps(from, to); return;
      case ExprKind::kBytes:
      case ExprKind::kCharClass:
      case ExprKind::kToken:
      case ExprKind::kExcludeToken: BuildLeaf(e, from, to); return;
      case ExprKind::kRuleRef: Ref(from, local_ref_[e.rule], to); return;
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
      case ExprKind::kAnyOrder:
      case ExprKind::kTagDispatch: FailWholeBodyOnly(e.kind); return;
    }
  }

  // (Out of line: an error message's stream would otherwise take room in every recursive frame of Build.)
  [[noreturn]] [[gnu::noinline]] static void FailWholeBodyOnly(ExprKind kind) {
    if (kind == ExprKind::kAnyOrder)
      XG_ICHECK(false) << "AnyOrder(...) must be a rule's whole body (LiftAnyOrder) and is built by GrammarFsm::Build";
    XG_ICHECK(false) << "TagDispatch(...) must be a rule's whole body (LiftTagDispatch) and is built by TagDispatchDfa";
    __builtin_unreachable();
  }

 private:

  int64_t max_states_;
  const std::vector<int32_t>& local_ref_;
  CharClassSequences& classes_;
};

// The canonical text of a rule body, the key of its automaton in a RuleDfaCache: the expression tree
// in prefix order, rule references written as local references (numbered by first appearance, the
// same order Nfa::Build meets them). Appends each newly referenced rule to `refs` and sets
// `local_ref[rule]` to its index; the caller resets those entries to -1 afterwards. `hash` gets a
// 64-bit hash of the same text; `key` (null without a cache) the text itself.
void PutKeyInt(std::string* key, int64_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof(v)); }
constexpr uint64_t kBodyKeySeed = 0x243f6a8885a308d3ULL;
uint64_t BodyKeyStep(uint64_t hash, int64_t v) {
  hash = (hash ^ static_cast<uint64_t>(v)) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}
struct BodyKeyWriter {
  std::string* key;  // or null
  uint64_t hash = kBodyKeySeed;
  void Put(int64_t v) {
    hash = BodyKeyStep(hash, v);
    if (key) PutKeyInt(key, v);
  }
};
void BodyKey(const Grammar& g, int32_t id, std::vector<int32_t>* local_ref, std::vector<int32_t>* refs,
             BodyKeyWriter* out) {
  CheckStackHeadroom("building rule automata");
  const Expr& e = g.exprs[id];
  out->Put(static_cast<int64_t>(e.kind));
  switch (e.kind) {
    case ExprKind::kEmpty: return;
    case ExprKind::kBytes:
      out->Put(static_cast<int64_t>(e.bytes.size()));
      for (size_t i = 0; i < e.bytes.size(); i += 8) {
        uint64_t word = 0;
        std::memcpy(&word, e.bytes.data() + i, std::min<size_t>(8, e.bytes.size() - i));
        out->Put(static_cast<int64_t>(word));
      }
      return;
    case ExprKind::kCharClass:
      out->Put(e.negated ? 1 : 0);
      out->Put(static_cast<int64_t>(e.ranges.size()));
      for (auto [lo, hi] : e.ranges) out->Put((static_cast<int64_t>(lo) << 32) | hi);
      return;
    case ExprKind::kRuleRef:
      if ((*local_ref)[e.rule] < 0) (*local_ref)[e.rule] = static_cast<int32_t>(refs->size()), refs->push_back(e.rule);
      out->Put((*local_ref)[e.rule]);
      return;
    case ExprKind::kRepeat: out->Put(e.min), out->Put(e.max); break;
    case ExprKind::kAnyOrder:
      for (uint8_t role : e.roles) out->Put(role);
      for (auto [i, j] : e.implies) out->Put((static_cast<int64_t>(i) << 32) | j);
      break;
    case ExprKind::kTagDispatch: out->Put(e.min), out->Put(e.max), out->Put(e.token_free_text ? 1 : 0); break;
    case ExprKind::kToken: out->Put(e.min); return;
    case ExprKind::kExcludeToken:
      out->Put(static_cast<int64_t>(e.ranges.size()));
      for (auto [lo, hi] : e.ranges) out->Put((static_cast<int64_t>(lo) << 32) | hi);
      return;
    case ExprKind::kSequence:
    case ExprKind::kChoice: break;
  }
  out->Put(static_cast<int64_t>(e.children.size()));
  for (int32_t c : e.children) BodyKey(g, c, local_ref, refs, out);
}

// Whether bodies `a` and `b` have the same BodyKey: the same tree, with a's references numbered by
// `a_ref` and b's by `b_ref` (each filled by BodyKey).
bool SameBody(const Grammar& g, int32_t a, int32_t b, const std::vector<int32_t>& a_ref,
              const std::vector<int32_t>& b_ref) {
  CheckStackHeadroom("building rule automata");
  const Expr& x = g.exprs[a];
  const Expr& y = g.exprs[b];
  if (x.kind != y.kind || x.children.size() != y.children.size()) return false;
  switch (x.kind) {
    case ExprKind::kEmpty: return true;
    case ExprKind::kBytes: return x.bytes == y.bytes;
    case ExprKind::kCharClass: return x.negated == y.negated && x.ranges == y.ranges;
    case ExprKind::kRuleRef: return a_ref[x.rule] == b_ref[y.rule];
    case ExprKind::kRepeat:
      if (x.min != y.min || x.max != y.max) return false;
      break;
    case ExprKind::kAnyOrder:
      if (x.roles != y.roles || x.implies != y.implies) return false;
      break;
    case ExprKind::kTagDispatch:
      if (x.min != y.min || x.max != y.max || x.token_free_text != y.token_free_text) return false;
      break;
    case ExprKind::kToken: return x.min == y.min;
    case ExprKind::kExcludeToken: return x.ranges == y.ranges;
    case ExprKind::kSequence:
    case ExprKind::kChoice: break;
  }
  for (size_t i = 0; i < x.children.size(); ++i)
    if (!SameBody(g, x.children[i], y.children[i], a_ref, b_ref)) return false;
  return true;
}

// ---- Subset construction -------------------------------------------------------------------------

// Epsilon closures, with a visit stamp per NFA state so that a closure costs its own size rather
// than the NFA's (a rule with thousands of NFA states takes as many closures). A closure keeps only
// the important states (Aho, Sethi and Ullman's term): those with a byte or rule edge, and the end
// state, which carries finality. Two closures with the same important states have the same moves
// and the same finality, so they are one DFA state; keeping the states that only have epsilon edges
// would split it, e.g. `[ \t]*` before and after its first blank (the loop's entry and its back
// edge), which doubled the states of a JSON Schema object rule until minimisation merged them.
class ClosureBuilder {
 public:
  // Starts on `nfa` (which must outlive the closures taken), whose end state is `end`. One builder
  // serves every rule of a grammar: its buffers keep their capacity.
  void Reset(const Nfa& nfa, int32_t end) {
    nfa_ = &nfa;
    stamp_.assign(nfa.NumStates(), 0);
    gen_ = 0;
    important_.assign(nfa.NumStates(), 0);
    has_epsilon_.assign(nfa.NumStates(), 0);
    for (int32_t s = 0; s < nfa.NumStates(); ++s)
      nfa.ForEachEdge(s, [&](const NfaEdge& e) {
        (e.lo >= 0 || e.rule >= 0 ? important_ : has_epsilon_)[s] = 1;
      });
    important_[end] = 1;
  }
  bool Important(int32_t s) const { return important_[s]; }
  bool HasEpsilon(int32_t s) const { return has_epsilon_[s]; }
  // The important states of the closure of `set`, sorted; valid until the next call (one buffer for
  // every closure).
  const std::vector<int32_t>& operator()(const std::vector<int32_t>& set) {
    if (++gen_ == 0) std::fill(stamp_.begin(), stamp_.end(), 0), gen_ = 1;
    stack_.clear();
    for (int32_t s : set) {
      if (stamp_[s] != gen_) stamp_[s] = gen_, stack_.push_back(s);
    }
    out_.clear();
    while (!stack_.empty()) {
      int32_t s = stack_.back();
      stack_.pop_back();
      if (important_[s]) out_.push_back(s);
      nfa_->ForEachEdge(s, [&](const NfaEdge& e) {
        if (e.lo < 0 && e.rule < 0 && stamp_[e.target] != gen_) stamp_[e.target] = gen_, stack_.push_back(e.target);
      });
    }
    std::sort(out_.begin(), out_.end());
    return out_;
  }

 private:
  const Nfa* nfa_ = nullptr;
  std::vector<uint32_t> stamp_;
  std::vector<uint8_t> important_, has_epsilon_;
  uint32_t gen_ = 0;
  std::vector<int32_t> stack_, out_;
};


// The working memory of Determinize, kept from rule to rule of one grammar: most rules' automata are
// small, so allocating these afresh for each rule was a visible share of building them (malloc and
// free were among the top symbols of a compile's profile).
struct DeterminizeScratch {
  ClosureBuilder closure;
  SequenceInterner sets;          // DFA state id -> its important NFA-state set (sorted)
  SequenceInterner target_sets;   // sets of NFA targets, see state_of_targets
  std::vector<int32_t> target_state;
  std::vector<const NfaEdge*> byte_edges, active;
  std::vector<std::pair<int32_t, int32_t>> rule_targets;
  std::vector<int32_t> members, cuts, targets, singleton_state;
};

// `budget`: DFA states left; `members_left`: NFA states left to the subsets interned (Limits::max_subset_members).
LocalDfa Determinize(const Nfa& nfa, int32_t start, int32_t end, int64_t* budget, int64_t* members_left,
                     DeterminizeScratch* scratch) {
  LocalDfa dfa;
  // Sized for about one DFA state per NFA state (literal chains, most of a JSON Schema rule; capped, as a large NFA
  // may well determinize to fewer states): no regrowth there.
  const size_t expected = std::min<size_t>(nfa.NumStates(), 4096);
  dfa.runs.reserve(expected);
  dfa.final.reserve(expected);
  dfa.run_begin.reserve(expected + 1);
  dfa.edge_begin.reserve(expected + 1);
  ClosureBuilder& closure = scratch->closure;
  closure.Reset(nfa, end);
  SequenceInterner& sets = scratch->sets;
  sets.Clear(expected);
  auto intern = [&](const std::vector<int32_t>& set) -> int32_t {
    auto [id, inserted] = sets.Intern(set);
    if (!inserted) return id;
    XG_LIMIT_CHECK(--*budget > 0) << kDfaTooLarge;
    *members_left -= static_cast<int64_t>(set.size());
    if (*members_left < 0) throw LimitError(kSubsetsTooLarge);
    dfa.final.push_back(std::binary_search(set.begin(), set.end(), end));
    return id;
  };
  std::vector<const NfaEdge*>& byte_edges = scratch->byte_edges;
  std::vector<const NfaEdge*>& active = scratch->active;
  // (rule, NFA target), grouped by rule below
  std::vector<std::pair<int32_t, int32_t>>& rule_targets = scratch->rule_targets;
  std::vector<int32_t>& members = scratch->members;
  std::vector<int32_t>& cuts = scratch->cuts;
  std::vector<int32_t>& targets = scratch->targets;
  targets.assign(1, start);
  intern(closure(targets));
  // A set of NFA targets -> the DFA state of its closure: the same sets recur across states (every
  // state of a loop steps into the loop body), and a lookup is cheaper than a closure.
  SequenceInterner& target_sets = scratch->target_sets;
  target_sets.Clear(expected);
  std::vector<int32_t>& target_state = scratch->target_state;
  target_state.clear();
  auto state_of_targets = [&]() {
    auto [id, inserted] = target_sets.Intern(targets);
    if (inserted) target_state.push_back(intern(closure(targets)));
    return target_state[id];
  };
  // Chains (a literal's bytes, one reference after another) are most states: a singleton set whose one NFA
  // state has one edge, into an important state with no epsilon edges (so the target's closure is itself). Their step
  // skips the interval sweep and both set lookups; by NFA state, the DFA state of the singleton {t}
  // (states are created in the same order as on the general path, so the automaton is the same).
  std::vector<int32_t>& singleton_state = scratch->singleton_state;
  singleton_state.assign(nfa.NumStates(), -1);
  for (int32_t d = 0; d < static_cast<int32_t>(sets.Size()); ++d) {
    if (sets.Length(d) == 1) {
      const int32_t s = *sets.Data(d);
      const int32_t only = nfa.head[s];
      if (only >= 0 && nfa.edges[only].next < 0) {
        const NfaEdge& e = nfa.edges[only];
        if ((e.lo >= 0 || e.rule >= 0) && !closure.HasEpsilon(e.target) && closure.Important(e.target)) {
          int32_t& t = singleton_state[e.target];
          if (t < 0) targets.assign(1, e.target), t = intern(targets);
          if (e.lo >= 0) {
            dfa.AppendRun(e.lo, e.hi, t);
          } else {
            dfa.AddEdge(e.rule, t);
          }
          dfa.CloseState();
          continue;
        }
      }
    }
    byte_edges.clear();
    rule_targets.clear();
    members.assign(sets.Data(d), sets.Data(d) + sets.Length(d));  // Data() moves as sets grow
    for (int32_t s : members) {
      nfa.ForEachEdge(s, [&](const NfaEdge& e) {
        if (e.lo >= 0) {
          byte_edges.push_back(&e);
        } else if (e.rule >= 0) {
          rule_targets.push_back({e.rule, e.target});
        }
      });
    }
    // Elementary byte intervals: a sweep over the edges in order of their first byte, keeping those
    // that cover the current interval (most states have a few edges, often one).
    cuts.resize(2 * byte_edges.size());
    for (size_t i = 0; i < byte_edges.size(); ++i) cuts[2 * i] = byte_edges[i]->lo, cuts[2 * i + 1] = byte_edges[i]->hi + 1;
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::sort(byte_edges.begin(), byte_edges.end(), [](const NfaEdge* x, const NfaEdge* y) { return x->lo < y->lo; });
    active.clear();
    size_t next_edge = 0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const int a = cuts[i], b = cuts[i + 1];
      while (next_edge < byte_edges.size() && byte_edges[next_edge]->lo <= a) active.push_back(byte_edges[next_edge++]);
      active.erase(std::remove_if(active.begin(), active.end(), [&](const NfaEdge* e) { return e->hi < a; }),
                   active.end());
      if (active.empty()) continue;
      targets.resize(active.size());
      for (size_t k = 0; k < active.size(); ++k) targets[k] = active[k]->target;
      std::sort(targets.begin(), targets.end());
      targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
      const int32_t t = state_of_targets();
      dfa.AppendRun(a, b - 1, t);
    }
    std::sort(rule_targets.begin(), rule_targets.end());
    for (size_t i = 0; i < rule_targets.size();) {
      const int32_t rule = rule_targets[i].first;
      targets.clear();
      for (; i < rule_targets.size() && rule_targets[i].first == rule; ++i) targets.push_back(rule_targets[i].second);
      const int32_t t = state_of_targets();
      dfa.AddEdge(rule, t);
    }
    dfa.CloseState();
  }
  return dfa;
}

// Minimisation merges states with the same future (same finality, and the same blocks reached on
// every byte and every rule). Fewer states means fewer token-mask entries to build; e.g. a string
// body's "after an escape" and "after a plain character" states merge. The quotient is numbered
// by first member (the start state's block is 0).

// A state's signature over blocks: runs over blocks with contiguous runs into one block merged (lo,
// hi, block each), -2, then (rule, block) per rule edge. (Finality needs no place: the refinement
// starts from blocks by distance to a final state, distance 0 being the final states, and only compares
// states of one block.)
void Signature(const LocalDfa& d, int32_t s, const std::vector<int32_t>& block, std::vector<int32_t>* sig) {
  // Written through a pointer into a buffer sized for the longest form (one call per state, not per word).
  sig->resize(3 * d.Runs(s).size() + 1 + 2 * d.Edges(s).size());
  int32_t* out = sig->data();
  int32_t last_block = -1, last_hi = -2;
  for (const ByteRun& run : d.Runs(s)) {
    const int32_t tb = block[run.target];
    if (tb == last_block && run.lo == last_hi + 1) {
      out[-1] = run.hi;
    } else {
      *out++ = tb, *out++ = run.lo, *out++ = run.hi;
    }
    last_block = tb, last_hi = run.hi;
  }
  *out++ = -2;
  for (const RuleEdge& e : d.Edges(s)) *out++ = e.rule, *out++ = block[e.target];
  sig->resize(out - sig->data());
}

// LocalDfa as partition_refinement.h's Graph: transitions are byte runs and rule edges.
struct LocalDfaGraph {
  const LocalDfa& d;
  int32_t Size() const { return d.Size(); }
  bool Final(int32_t s) const { return d.final[s]; }
  template <class F>
  void ForEachTarget(int32_t s, F f) const {
    for (const ByteRun& run : d.Runs(s)) f(run.target);
    for (const RuleEdge& e : d.Edges(s)) f(e.target);
  }
  void Signature(int32_t s, const std::vector<int32_t>& block, std::vector<int32_t>* sig) const {
    xg::Signature(d, s, block, sig);
  }
};

// The working memory of Minimize, kept from rule to rule as DeterminizeScratch is.
struct MinimizeScratch {
  PartitionScratch partition;
  std::vector<int32_t> remap, order;
};

// Past this many signatures (very long unrolled chains) a rule's automaton is kept unminimised.
constexpr int64_t kMinimizeWorkBudget = 2'000'000;

LocalDfa Minimize(LocalDfa d, MinimizeScratch* scratch) {
  const int32_t n = d.Size();
  int32_t num_blocks = 0;
  if (!RefineBlocks(LocalDfaGraph{d}, kMinimizeWorkBudget, &scratch->partition, &num_blocks) || num_blocks == n)
    return d;
  const std::vector<int32_t>& block = scratch->partition.block;
  // Renumber so the start state's block is 0, the others by first member, then build the quotient.
  std::vector<int32_t>& remap = scratch->remap;
  remap.assign(num_blocks, -1);
  std::vector<int32_t>& order = scratch->order;
  order.clear();
  for (int32_t s = 0; s < n; ++s)
    if (remap[block[s]] < 0) remap[block[s]] = static_cast<int32_t>(order.size()), order.push_back(s);
  LocalDfa out;
  out.runs.reserve(d.runs.size());
  out.rule_edges.reserve(d.rule_edges.size());
  out.run_begin.reserve(order.size() + 1);
  out.edge_begin.reserve(order.size() + 1);
  out.final.reserve(order.size());
  for (int32_t rep : order) {
    for (const ByteRun& run : d.Runs(rep)) out.AppendRun(run.lo, run.hi, remap[block[run.target]]);
    for (const RuleEdge& e : d.Edges(rep)) out.AddEdge(e.rule, remap[block[e.target]]);
    out.final.push_back(d.final[rep]);
    out.CloseState();
  }
  return out;
}

// The byte classes of the automata (see grammar_fsm.h): bytes b and c share a class iff every run of
// a useful state contains both or neither, which makes every row constant on each class. Refines the
// partition by each distinct run range once; the ranges number in the hundreds, so this costs far
// less than the 256-wide rows it saves. Writes class ids (0..n-1, in order of first byte) to `out`
// and returns n.
int32_t ComputeByteClasses(const std::vector<LocalDfa>& dfas, const std::vector<uint8_t>& productive,
                           const std::vector<std::vector<int32_t>>& local_to_global, uint8_t out[256]) {
  // The distinct ranges as a set of (lo, hi) pairs: bit lo * 256 + hi (big grammars have ~10^5 runs,
  // so this is cheaper than sorting them).
  std::vector<uint64_t> seen(256 * 256 / 64, 0);
  std::vector<int32_t> words;  // the words of `seen` with a bit set (a small grammar sets a few of its 1024)
  for (size_t r = 0; r < dfas.size(); ++r) {
    if (!productive[r]) continue;
    const LocalDfa& d = dfas[r];
    for (int32_t s = 0; s < d.Size(); ++s) {
      if (local_to_global[r][s] < 0) continue;
      for (const ByteRun& run : d.Runs(s)) {
        if (local_to_global[r][run.target] < 0) continue;
        const int bit = run.lo * 256 + run.hi;
        if (!seen[bit >> 6]) words.push_back(bit >> 6);
        seen[bit >> 6] |= 1ull << (bit & 63);
      }
    }
  }
  std::sort(words.begin(), words.end());  // the partition does not depend on the order; this fixes the work's
  // cls[b] < 512 always: a split adds at most one id per class it touches, and ids are renumbered
  // densely (at most 256) whenever they pass 256.
  std::array<int32_t, 256> cls{};
  int32_t next_id = 1;
  // split[c]: the id class c's bytes inside the current range move to, valid when stamp[c] == round (a
  // round per range, so no 512-entry reset per range).
  std::array<int32_t, 512> split;
  std::array<uint32_t, 512> stamp{};
  uint32_t round = 0;
  auto renumber = [&] {
    split.fill(-1);
    next_id = 0;
    for (int b = 0; b < 256; ++b) {
      if (split[cls[b]] < 0) split[cls[b]] = next_id++;
      cls[b] = split[cls[b]];
    }
    stamp.fill(0), round = 0;
  };
  for (const int32_t w : words) {
    for (uint64_t bits = seen[w]; bits; bits &= bits - 1) {
      const int bit = (w << 6) + __builtin_ctzll(bits), lo = bit >> 8, hi = bit & 255;
      if (lo == 0 && hi == 255) continue;  // splits nothing
      ++round;
      for (int b = lo; b <= hi; ++b) {
        const int32_t c = cls[b];
        if (stamp[c] != round) stamp[c] = round, split[c] = next_id++;
        cls[b] = split[c];
      }
      if (next_id > 256) renumber();
    }
  }
  renumber();
  for (int b = 0; b < 256; ++b) out[b] = static_cast<uint8_t>(cls[b]);
  return next_id;
}

}  // namespace

uint64_t BodyKeyHash(const std::string& key) {
  uint64_t hash = kBodyKeySeed;
  for (size_t i = 0; i + sizeof(int64_t) <= key.size(); i += sizeof(int64_t)) {
    int64_t v;
    std::memcpy(&v, key.data() + i, sizeof(v));
    hash = BodyKeyStep(hash, v);
  }
  return hash;
}

void GrammarFsm::BuildCaptureTables(const Grammar& g, int64_t max_states) {
  const int32_t n_rules = static_cast<int32_t>(g.rules.size());
  auto label_index = [&](const std::string& label) {
    const auto index = static_cast<int32_t>(
        std::find(capture_labels_.begin(), capture_labels_.end(), label) - capture_labels_.begin());
    if (index == static_cast<int32_t>(capture_labels_.size())) capture_labels_.push_back(label);
    return index;
  };
  rule_capture_.assign(n_rules, -1);
  rule_split_.assign(n_rules, nullptr);
  hidden_in_.assign(n_rules, {});
  bool any_hide = false;
  for (int32_t r = 0; r < n_rules; ++r) {
    const Rule& rule = g.rules[r];
    if (!rule.capture.empty()) rule_capture_[r] = label_index(rule.capture);
    if (rule.marker.empty()) continue;
    auto split = std::make_shared<MarkerSplit>(MarkerSplit{
        FlagsMatchDfa(rule.marker_body, rule.marker_flags, max_states),
        FlagsMatchDfa(rule.marker, rule.marker_flags, max_states),
        rule.stop_capture.empty() ? -1 : label_index(rule.stop_capture), rule.hide_marker});
    any_hide |= rule.hide_marker;
    rule_split_[r] = std::move(split);
  }
  if (!any_hide) return;
  // Rules each captured rule reaches through rule references (a walk over its body's expressions).
  for (int32_t r = 0; r < n_rules; ++r) {
    if (rule_capture_[r] < 0) continue;
    std::vector<uint8_t> seen(n_rules, 0);
    std::vector<int32_t> rules{r}, exprs;
    seen[r] = 1;
    while (!rules.empty()) {
      const int32_t at = rules.back();
      rules.pop_back();
      exprs.push_back(g.rules[at].body);
      while (!exprs.empty()) {
        const Expr& e = g.exprs[exprs.back()];
        exprs.pop_back();
        if (e.kind == ExprKind::kRuleRef && e.rule >= 0 && !seen[e.rule]) {
          seen[e.rule] = 1;
          rules.push_back(e.rule);
          if (rule_split_[e.rule] && rule_split_[e.rule]->hide) hidden_in_[r].push_back(e.rule);
        }
        exprs.insert(exprs.end(), e.children.begin(), e.children.end());
      }
    }
    std::sort(hidden_in_[r].begin(), hidden_in_[r].end());
  }
}

GrammarFsm GrammarFsm::Build(const Grammar& g, int64_t max_states, RuleDfaCache* cache,
                             std::optional<uint64_t> cache_generation, int64_t max_subset_members,
                             const PrebuiltRuleDfas* prebuilt) {
  int64_t members = max_subset_members;
  const int32_t n_rules = static_cast<int32_t>(g.rules.size());
  std::vector<LocalDfa> dfas(n_rules);
  int64_t budget = max_states;
  std::vector<uint8_t> counted(n_rules, 0);
  std::vector<std::pair<int32_t, int32_t>> repeat(n_rules, {0, 0});
  std::vector<int32_t> counted_item(n_rules, -1);  // X of a counted rule X{m,n}
  // AnyOrder rules: their separator rule (-1: none) and items as (rule, role: a bit or kEdgeRepeated).
  struct AnyOrderRule {
    int32_t separator = -1;
    std::vector<std::pair<int32_t, int32_t>> items;
    std::vector<int32_t> required;  // bits of the once-items
    int32_t num_bits = 0;
    std::vector<std::pair<int32_t, int32_t>> implies;  // (bit, bit): Expr::implies in bits
    // Items that can take part: productive, and so is everything they require (transitively); by bit.
    std::vector<uint8_t> usable;
  };
  std::vector<AnyOrderRule> any_order(n_rules);
  std::vector<uint8_t> is_any_order(n_rules, 0);
  const uint64_t generation = !cache ? 0 : cache_generation ? *cache_generation : cache->Generation();
  std::string key;                           // BodyKey of the rule being built
  std::vector<int32_t> refs, local_ref(n_rules, -1);  // its references, see BodyKey
  // Bodies already built in this grammar (large grammars repeat many: the same object emitted for
  // each $ref site, property by property), with or without a cache: by BodyKey hash, the first rule
  // with that body, its references (BodyKey order) and what it charged against the budget. A hash
  // match is confirmed by SameBody; a collision only means the body is built again.
  struct Twin {
    int32_t rule;
    std::vector<int32_t> refs;
    int64_t budget_cost;
  };
  std::unordered_map<uint64_t, Twin> built_here;
  std::vector<int32_t> twin_local(n_rules, -1);  // a twin's references -> their BodyKey index
  CharClassSequences classes;
  Nfa nfa(max_states, local_ref, classes);
  DeterminizeScratch determinize_scratch;
  MinimizeScratch minimize_scratch;
  for (int32_t r = 0; r < n_rules; ++r) {
    if (g.rules[r].counted) {
      const Expr& body = g.exprs[g.rules[r].body];
      XG_ICHECK(body.kind == ExprKind::kRepeat && g.exprs[body.children[0]].kind == ExprKind::kRuleRef)
          << "counted rule '" << g.rules[r].name << "' must have the body X{m,n} over a rule reference";
      counted[r] = 1;
      repeat[r] = {body.min, body.max};
      counted_item[r] = g.exprs[body.children[0]].rule;
      LocalDfa loop;  // one final state reading X back into itself
      loop.AddEdge(counted_item[r], 0);
      loop.final.push_back(1);
      loop.CloseState();
      XG_LIMIT_CHECK(--budget > 0) << kDfaTooLarge;
      dfas[r] = std::move(loop);
      continue;
    }
    if (g.exprs[g.rules[r].body].kind == ExprKind::kAnyOrder) {
      // States A (start), B (after an item), C (after the separator); see the file comment.
      const Expr& body = g.exprs[g.rules[r].body];
      AnyOrderRule& info = any_order[r];
      is_any_order[r] = 1;
      const Expr& sep = g.exprs[body.children[0]];
      XG_ICHECK(sep.kind == ExprKind::kEmpty || sep.kind == ExprKind::kRuleRef)
          << "AnyOrder rule '" << g.rules[r].name << "': the separator must be a rule reference (LiftAnyOrder)";
      if (sep.kind == ExprKind::kRuleRef) info.separator = sep.rule;
      std::vector<int32_t> bit_of(body.children.size() - 1, -1);
      for (size_t i = 1; i < body.children.size(); ++i) {
        const Expr& item = g.exprs[body.children[i]];
        XG_ICHECK(item.kind == ExprKind::kRuleRef) << "AnyOrder rule '" << g.rules[r].name << "': items must be rule references";
        const uint8_t role = body.roles[i - 1];
        if (role == kAnyOrderRepeated) {
          info.items.push_back({item.rule, kEdgeRepeated});
          continue;
        }
        if (role == kAnyOrderOnce) info.required.push_back(info.num_bits);
        bit_of[i - 1] = info.num_bits;
        info.items.push_back({item.rule, info.num_bits++});
      }
      for (auto [from, to] : body.implies) {
        XG_ICHECK(bit_of[from] >= 0 && bit_of[to] >= 0) << "AnyOrder rule '" << g.rules[r].name << "': requires= names a repeated item";
        info.implies.push_back({bit_of[from], bit_of[to]});
      }
      std::sort(info.items.begin(), info.items.end());
      for (size_t i = 1; i < info.items.size(); ++i)
        XG_ICHECK(info.items[i].first != info.items[i - 1].first)
            << "AnyOrder rule '" << g.rules[r].name << "': two items share a rule (LiftAnyOrder)";
      LocalDfa d;
      const int32_t c_state = info.separator >= 0 ? 2 : 1;
      for (const auto& [item, role] : info.items) d.AddEdge(item, 1);  // A
      d.final.push_back(info.required.empty());
      d.CloseState();
      if (info.separator >= 0) {  // B
        d.AddEdge(info.separator, c_state);
        d.final.push_back(1);
        d.CloseState();
      }
      for (const auto& [item, role] : info.items) d.AddEdge(item, 1);  // C (B itself without a separator)
      d.final.push_back(info.separator < 0);
      d.CloseState();
      budget -= d.Size();
      XG_LIMIT_CHECK(budget > 0) << kDfaTooLarge;
      dfas[r] = std::move(d);
      continue;
    }
    if (g.exprs[g.rules[r].body].kind == ExprKind::kTagDispatch) {  // its own automaton, over grammar rule ids
      dfas[r] = TagDispatchDfa(g, g.rules[r].body, max_states);
      budget -= dfas[r].Size();
      XG_LIMIT_CHECK(budget > 0) << kDfaTooLarge;
      continue;
    }
    // The automaton over local references, from the cache or built (and then cached), then with
    // its references remapped to this grammar's rules.
    key.clear();
    refs.clear();
    BodyKeyWriter writer{cache ? &key : nullptr};
    BodyKey(g, g.rules[r].body, &local_ref, &refs, &writer);
    if (auto twin = built_here.find(writer.hash); twin != built_here.end()) {
      const std::vector<int32_t>& twin_refs = twin->second.refs;
      for (size_t i = 0; i < twin_refs.size(); ++i) twin_local[twin_refs[i]] = static_cast<int32_t>(i);
      const int32_t first = twin->second.rule;
      if (twin_refs.size() == refs.size() && SameBody(g, g.rules[r].body, g.rules[first].body, local_ref, twin_local)) {
        // The twin's automaton names the twin's references; give it this rule's, by BodyKey index.
        budget -= twin->second.budget_cost;
        XG_LIMIT_CHECK(budget > 0) << kDfaTooLarge;
        dfas[r] = dfas[first];
        for (RuleEdge& edge : dfas[r].rule_edges) edge.rule = refs[twin_local[edge.rule]];
        for (int32_t s = 0; s < dfas[r].Size(); ++s) {
          const LocalDfa::Span<RuleEdge> edges = dfas[r].Edges(s);
          std::sort(edges.begin(), edges.end(), [](const RuleEdge& a, const RuleEdge& b) { return a.rule < b.rule; });
        }
        for (int32_t rule : twin_refs) twin_local[rule] = -1;
        for (int32_t rule : refs) local_ref[rule] = -1;
        continue;
      }
      for (int32_t rule : twin_refs) twin_local[rule] = -1;
    }
    const int64_t budget_at_rule = budget;
    std::shared_ptr<const CachedRuleDfa> held = cache ? cache->Find(key) : nullptr;
    const CachedRuleDfa* cached = held.get();
    if (!cached && prebuilt && prebuilt->MayHave(writer.hash)) {
      if (!cache) {  // the key text was not written: write it (the references keep their local numbers)
        BodyKeyWriter text{&key};
        BodyKey(g, g.rules[r].body, &local_ref, &refs, &text);
      }
      cached = prebuilt->Find(writer.hash, key);
    }
    if (cached) {
      XG_LIMIT_CHECK(cached->nfa_states < max_states) << kNfaTooLarge << max_states << kNfaTooLargeWhy;
      budget -= cached->budget_cost;
      XG_LIMIT_CHECK(budget > 0) << kDfaTooLarge;
      dfas[r] = cached->dfa;
    } else {
      nfa.Clear();
      int32_t s = nfa.NewState(), e = nfa.NewState();
      nfa.Build(g, g.rules[r].body, s, e);
      const int64_t budget_before = budget;
      dfas[r] = Minimize(Determinize(nfa, s, e, &budget, &members, &determinize_scratch), &minimize_scratch);
      if (cache) {
        auto built = std::make_shared<CachedRuleDfa>();
        built->dfa = dfas[r];
        built->budget_cost = budget_before - budget;
        built->nfa_states = nfa.NumStates();
        cache->Insert(key, std::move(built), generation);
      }
    }
    LocalDfa& d = dfas[r];
    for (RuleEdge& edge : d.rule_edges) edge.rule = refs[edge.rule];
    for (int32_t s = 0; s < d.Size(); ++s) {
      const LocalDfa::Span<RuleEdge> edges = d.Edges(s);
      std::sort(edges.begin(), edges.end(), [](const RuleEdge& a, const RuleEdge& b) { return a.rule < b.rule; });
    }
    for (int32_t rule : refs) local_ref[rule] = -1;
    built_here.try_emplace(writer.hash, Twin{r, refs, budget_at_rule - budget});
  }

  // Productive rules: least fixpoint of "start reaches a final through bytes and productive rules".
  std::vector<uint8_t> productive(n_rules, 0);
  std::vector<uint8_t> seen;
  std::vector<int32_t> stack;
  auto reaches_final = [&](int32_t r, const std::vector<uint8_t>& rule_ok, bool bytes_ok) {
    const LocalDfa& d = dfas[r];
    seen.assign(d.Size(), 0);
    stack.assign(1, 0);
    seen[0] = 1;
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      if (d.final[s]) return true;
      auto push = [&](int32_t t) {
        if (t >= 0 && !seen[t]) seen[t] = 1, stack.push_back(t);
      };
      if (bytes_ok)
        for (const ByteRun& run : d.Runs(s)) push(run.target);
      for (const RuleEdge& e : d.Edges(s))
        if (rule_ok[e.rule]) push(e.target);
    }
    return false;
  };
  // An AnyOrder's usable items under the current `productive` (those that require an unusable one are
  // not usable either).
  auto find_usable = [&](AnyOrderRule* a) {
    a->usable.assign(a->num_bits, 0);
    for (const auto& [item, role] : a->items)
      if (role >= 0) a->usable[role] = productive[item];
    for (bool dropped = true; dropped;) {
      dropped = false;
      for (auto [from, to] : a->implies)
        if (a->usable[from] && !a->usable[to]) a->usable[from] = 0, dropped = true;
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n_rules; ++r) {
      if (productive[r]) continue;
      // A counted rule's lone state is final only once min X's are read.
      bool ok;
      if (counted[r]) {
        ok = repeat[r].first == 0 || productive[counted_item[r]];
      } else if (is_any_order[r]) {  // every required item usable, and the separator between two of them
        AnyOrderRule& a = any_order[r];
        find_usable(&a);
        ok = true;
        for (int32_t bit : a.required) ok = ok && a.usable[bit];
        if (a.required.size() >= 2 && a.separator >= 0) ok = ok && productive[a.separator];
      } else {
        ok = reaches_final(r, productive, true);
      }
      if (ok) productive[r] = 1, changed = true;
    }
  }
  for (int32_t r = 0; r < n_rules; ++r)  // with the final `productive` (a rule may have been proven early)
    if (is_any_order[r]) find_usable(&any_order[r]);
  if (!productive[g.root]) {
    std::string stuck;
    for (int32_t r = 0; r < n_rules; ++r)
      if (!productive[r]) stuck += (stuck.empty() ? "'" : ", '") + g.rules[r].name + "'";
    XG_USER_ERROR() << "grammar: the root rule '" << g.rules[g.root].name
                    << "' cannot match any finite string: rules that can never finish: " << stuck
                    << " (every alternative recurses forever)";
  }

  // Drop edges into unproductive rules (and an AnyOrder's unusable items), then trim each automaton
  // to useful states.
  for (int32_t r = 0; r < n_rules; ++r) {
    const AnyOrderRule* a = is_any_order[r] && productive[r] ? &any_order[r] : nullptr;
    dfas[r].RemoveEdges([&](const RuleEdge& e) {
      if (!productive[e.rule]) return true;
      if (a == nullptr) return false;
      auto it = std::lower_bound(a->items.begin(), a->items.end(), std::make_pair(e.rule, INT32_MIN));
      return it != a->items.end() && it->first == e.rule && it->second >= 0 && !a->usable[it->second];
    });
  }

  GrammarFsm out;
  out.root_ = g.root;
  out.rule_start_.assign(n_rules, -1);
  out.rule_nullable_.assign(n_rules, 0);
  out.rule_follow_.assign(n_rules, {});
  out.rule_kind_.assign(n_rules, kPlain);
  for (int32_t r = 0; r < n_rules; ++r) out.rule_kind_[r] = counted[r] ? kCounted : is_any_order[r] ? kAnyOrder : kPlain;
  out.tag_dispatch_rule_.assign(n_rules, 0);
  for (int32_t r = 0; r < n_rules; ++r) out.tag_dispatch_rule_[r] = g.exprs[g.rules[r].body].kind == ExprKind::kTagDispatch;
  out.rule_repeat_ = repeat;
  const bool has_any_order = std::find(is_any_order.begin(), is_any_order.end(), 1) != is_any_order.end();
  if (has_any_order) {
    out.any_order_.assign(n_rules, {});
    for (int32_t r = 0; r < n_rules; ++r) {
      if (!is_any_order[r]) continue;
      AnyOrderInfo& info = out.any_order_[r];
      info.wide = any_order[r].num_bits > kMaxInlineAnyOrderBits;
      const size_t words = (static_cast<size_t>(any_order[r].num_bits) + 63) / 64;
      info.required_words.assign(words, 0);
      info.once_words.assign(words, 0);
      for (int32_t bit : any_order[r].required) info.required_words[bit >> 6] |= uint64_t{1} << (bit & 63);
      for (const auto& [item, role] : any_order[r].items) {
        if (!productive[item] || (role >= 0 && !any_order[r].usable[role])) continue;
        if (role >= 0) info.once_words[role >> 6] |= uint64_t{1} << (role & 63);
        else info.has_repeated = true;
      }
      for (auto [from, to] : any_order[r].implies) {
        if (!any_order[r].usable[from]) continue;  // never read
        if (info.implies.empty() || info.implies.back().first != from)
          info.implies.push_back({from, std::vector<uint64_t>(words, 0)});
        info.implies.back().second[to >> 6] |= uint64_t{1} << (to & 63);
      }
      if (!info.wide && words > 0) {
        info.required = static_cast<int32_t>(info.required_words[0]);
        info.once = static_cast<int32_t>(info.once_words[0]);
      }
      if (info.wide && !out.any_order_sets_) out.any_order_sets_ = std::make_shared<AnyOrderSetTable>();
    }
  }
  for (auto& r : g.rules) out.rule_names_.push_back(r.name);
  out.rule_temperature_.reserve(n_rules);
  for (auto& r : g.rules) out.rule_temperature_.push_back(r.temperature);
  out.rule_max_tokens_.reserve(n_rules);
  for (auto& r : g.rules) {
    out.rule_max_tokens_.push_back(r.max_tokens);
    out.has_token_budgets_ |= r.max_tokens > 0;
  }
  out.BuildCaptureTables(g, max_states);
  std::vector<std::vector<int32_t>> local_to_global(n_rules);
  int32_t total = 0;
  // Per rule, reused: forward / backward reachability, and the reversed edges of the reachable
  // states as flat lists (those into t are rev[rev_begin[t], rev_begin[t + 1]); no vector per state).
  std::vector<uint8_t> fwd, bwd;
  std::vector<int32_t> order, rev, rev_begin;
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    LocalDfa& d = dfas[r];
    int32_t n = d.Size();
    fwd.assign(n, 0);
    bwd.assign(n, 0);
    rev_begin.assign(n + 1, 0);
    order.clear();
    stack.assign(1, 0);
    fwd[0] = 1;
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      order.push_back(s);
      auto edge = [&](int32_t t) {
        if (t < 0) return;
        ++rev_begin[t + 1];
        if (!fwd[t]) fwd[t] = 1, stack.push_back(t);
      };
      for (const ByteRun& run : d.Runs(s)) edge(run.target);
      for (const RuleEdge& e : d.Edges(s)) edge(e.target);
    }
    for (int32_t t = 0; t < n; ++t) rev_begin[t + 1] += rev_begin[t];
    rev.resize(rev_begin[n]);
    for (int32_t s : order) {  // (rev_begin[t] advances to its end; shifted back below)
      for (const ByteRun& run : d.Runs(s))
        if (run.target >= 0) rev[rev_begin[run.target]++] = s;
      for (const RuleEdge& e : d.Edges(s))
        if (e.target >= 0) rev[rev_begin[e.target]++] = s;
    }
    for (int32_t t = n; t > 0; --t) rev_begin[t] = rev_begin[t - 1];
    rev_begin[0] = 0;
    for (int32_t s = 0; s < n; ++s)
      if (fwd[s] && d.final[s]) bwd[s] = 1, stack.push_back(s);
    while (!stack.empty()) {
      int32_t s = stack.back();
      stack.pop_back();
      for (int32_t i = rev_begin[s]; i < rev_begin[s + 1]; ++i)
        if (!bwd[rev[i]]) bwd[rev[i]] = 1, stack.push_back(rev[i]);
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
  out.num_classes_ = ComputeByteClasses(dfas, productive, local_to_global, out.byte_class_);
  const size_t width = static_cast<size_t>(out.num_classes_);
  // The last byte of each byte's run of one class (a run of transitions spans few class runs: one
  // store per class run, not per byte).
  uint8_t class_run_end[256];
  for (int b = 255; b >= 0; --b)
    class_run_end[b] = b < 255 && out.byte_class_[b + 1] == out.byte_class_[b] ? class_run_end[b + 1] : static_cast<uint8_t>(b);
  // All -1: every byte of -1 is 0xFF, so one memset (std::fill of int32 is a scalar loop at -O2).
  out.byte_next_.resize(static_cast<size_t>(total) * width);
  std::memset(out.byte_next_.data(), 0xFF, out.byte_next_.size() * sizeof(int32_t));
  out.rule_edge_offset_.assign(total + 1, 0);
  // Global states are numbered rule by rule, state by state: the loop below meets them in ascending
  // order, so each state's rule edges are appended in place.
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!productive[r]) continue;
    const LocalDfa& d = dfas[r];
    for (int32_t s = 0; s < d.Size(); ++s) {
      int32_t gs = local_to_global[r][s];
      if (gs < 0) continue;
      out.state_rule_[gs] = r;
      out.is_final_[gs] = d.final[s];
      for (const ByteRun& run : d.Runs(s)) {
        const int32_t gt = local_to_global[r][run.target];
        if (gt < 0) continue;
        int32_t* row = &out.byte_next_[static_cast<size_t>(gs) * width];
        for (int b = run.lo; b <= run.hi; b = class_run_end[b] + 1) row[out.byte_class_[b]] = gt;
        out.has_bytes_[gs] = 1;
        uint64_t* live = &out.live_bytes_[static_cast<size_t>(gs) * 4];
        for (int w = run.lo >> 6; w <= run.hi >> 6; ++w) {  // bits lo..hi, a word at a time
          const int from = std::max<int>(run.lo, w << 6) & 63, to = std::min<int>(run.hi, (w << 6) | 63) & 63;
          live[w] |= (~0ull >> (63 - to)) & (~0ull << from);
        }
      }
      for (const RuleEdge& e : d.Edges(s)) {
        const int32_t gt = local_to_global[r][e.target];
        if (gt < 0) continue;
        out.rule_edges_.push_back({e.rule, gt});
        out.rule_follow_[e.rule].push_back(gt);
        if (has_any_order) {
          int32_t role = kEdgeRepeated;  // (any value: only AnyOrder states' edges are asked)
          if (is_any_order[r]) {
            if (any_order[r].separator >= 0 && s == 1) {
              role = kEdgeSeparator;
            } else {
              const auto& items = any_order[r].items;
              auto it = std::lower_bound(items.begin(), items.end(), std::make_pair(e.rule, INT32_MIN));
              XG_ICHECK(it != items.end() && it->first == e.rule) << "AnyOrder edge without an item";
              role = it->second;
            }
          }
          out.edge_role_.push_back(role);
        }
      }
      out.rule_edge_offset_[gs + 1] = static_cast<int32_t>(out.rule_edges_.size());
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
  for (int32_t r = 0; r < n_rules; ++r)  // an AnyOrder rule: when it requires no item
    if (is_any_order[r] && out.rule_start_[r] >= 0) out.rule_nullable_[r] = any_order[r].required.empty();
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n_rules; ++r) {
      if (out.rule_start_[r] < 0 || out.rule_nullable_[r] || counted[r] || is_any_order[r]) continue;
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
  for (int32_t r = 0; r < n_rules; ++r) {
    XG_ICHECK(!counted[r] || out.rule_start_[r] < 0 || !out.rule_nullable_[counted_item[r]])
        << "counted rule '" << g.rules[r].name << "' repeats a nullable rule";
    if (!is_any_order[r] || out.rule_start_[r] < 0) continue;
    // Items and the separator never match "" (LiftAnyOrder), so the parser never advances an
    // AnyOrder item through a nullable prediction.
    for (const auto& [item, role] : any_order[r].items)
      XG_ICHECK(out.rule_start_[item] < 0 || !out.rule_nullable_[item])
          << "AnyOrder rule '" << g.rules[r].name << "' has an item that matches the empty string";
    XG_ICHECK(any_order[r].separator < 0 || out.rule_start_[any_order[r].separator] < 0 ||
              !out.rule_nullable_[any_order[r].separator])
        << "AnyOrder rule '" << g.rules[r].name << "' has a separator that matches the empty string";
  }
  return out;
}

void GrammarFsm::AppendAnyOrderForm(int32_t r, std::vector<int64_t>* form) const {
  if (!IsAnyOrderRule(r)) return;
  const AnyOrderInfo& a = any_order_[r];
  form->push_back(-11);
  form->push_back(a.has_repeated);
  form->push_back(static_cast<int64_t>(a.required_words.size()));
  for (uint64_t w : a.required_words) form->push_back(static_cast<int64_t>(w));
  for (uint64_t w : a.once_words) form->push_back(static_cast<int64_t>(w));
  for (const auto& [bit, mask] : a.implies) {
    form->push_back(bit);
    for (uint64_t w : mask) form->push_back(static_cast<int64_t>(w));
  }
}

size_t GrammarFsm::MemoryBytes() const {
  size_t n = byte_next_.size() * sizeof(int32_t) + sizeof(byte_class_) + live_bytes_.size() * sizeof(uint64_t) +
             rule_edges_.size() * sizeof(RuleEdge) + edge_role_.size() * sizeof(int32_t) +
             any_order_.size() * sizeof(AnyOrderInfo) + (any_order_sets_ ? any_order_sets_->MemoryBytes() : 0) +
             state_rule_.size() * (sizeof(int32_t) * 2 + 2);
  for (auto& f : rule_follow_) n += f.size() * sizeof(int32_t);
  return n;
}

}  // namespace xg
