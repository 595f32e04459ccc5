#include "compiler/rule_mask_cache.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "support/check.h"

namespace xg {
namespace {

uint64_t Mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 33);
}

// Eight bytes at a time (forms are 64-bit words, and a large rule's form is tens of kB).
uint64_t HashBytes(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ull;
  return h;
}

void PutInt(std::string* out, int64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

}  // namespace

int64_t StructureTable::InternWords(const int32_t* words, size_t n, uint64_t generation) {
  if (generation != generation_) {
    const int32_t found = forms_.Find(words, n);
    if (found >= 0) return id_base_ + found;
    return next_unstored_id_--;
  }
  auto [id, inserted] = forms_.Intern(words, n);
  // The words, plus the interner's offset, hash and two table slots per form.
  if (inserted) bytes_ += static_cast<int64_t>(n * sizeof(int32_t) + 2 * sizeof(uint64_t) + 2 * sizeof(int32_t));
  const int64_t out = id_base_ + id;
  FlushIfOverLimit();  // the id stays valid: a flush never hands it out again
  return out;
}

void StructureTable::FlushIfOverLimit() {
  if (limit_ >= 0 && bytes_ > limit_) {
    ClearLocked();
    ++flushes_;
  }
}

int64_t StructureTable::Intern(const std::vector<int64_t>& form, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  return InternWords(reinterpret_cast<const int32_t*>(form.data()), form.size() * 2, generation);
}

int64_t StructureTable::Intern(const std::string& form, uint64_t generation) {
  // Padded to whole words, then the byte length (so "ab" and "ab\0" differ). Byte forms and word forms
  // share the table; their first bytes are kind tags that tell them apart (the constructor's "C" / "R",
  // ComputeForwardIds' "F" / "P").
  std::lock_guard<std::mutex> lock(mu_);
  scratch_.assign((form.size() + 3) / 4 + 1, 0);
  std::memcpy(scratch_.data(), form.data(), form.size());
  scratch_.back() = static_cast<int32_t>(form.size());
  return InternWords(scratch_.data(), scratch_.size(), generation);
}

StructuralKey LiteralKey(const std::string& literal) {
  StructuralKey key;
  key.position = 0;
  key.structure_id = StructuralKey::kLiteral;
  key.literal = literal;
  key.hash = Mix(0x4C17, std::hash<std::string>()(literal));
  return key;
}

uint64_t StructureTable::Generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::shared_ptr<const StructureTable::ForwardIdList> StructureTable::FindForwardIds(int64_t rule_structure_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = forward_ids_.find(rule_structure_id);
  return it == forward_ids_.end() ? nullptr : it->second;
}

void StructureTable::AddForwardIds(int64_t rule_structure_id, std::shared_ptr<const ForwardIdList> ids,
                                   uint64_t generation) {
  const int64_t bytes = static_cast<int64_t>(ids->capacity() * sizeof(int64_t) + 96);  // + node, control block
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  if (forward_ids_.emplace(rule_structure_id, std::move(ids)).second) bytes_ += bytes;
  FlushIfOverLimit();
}

void StructureTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  ClearLocked();
}

int64_t StructureTable::Flushes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flushes_;
}

void StructureTable::ClearLocked() {
  id_base_ += static_cast<int64_t>(forms_.Size());
  forms_ = SequenceInterner();  // gives the memory back (Clear() would keep the capacity)
  forward_ids_.clear();
  bytes_ = 0;
  ++generation_;
}

int64_t StructureTable::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t StructureTable::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return forms_.Size();
}

StructuralHasher::StructuralHasher(const GrammarFsm& fsm, StructureTable* table, uint64_t generation)
    : fsm_(fsm), structure_table_(table), generation_(generation) {
  const int32_t n = fsm.NumRules();
  first_state_.assign(n, -1);
  for (int32_t r = 0; r < n; ++r) first_state_[r] = fsm.RuleStart(r);
  structure_id_.assign(n, -1);
  forward_id_.resize(n);

  // Local forms and their references, per productive rule.
  std::vector<uint64_t> local(n, 0);
  std::vector<std::string> forms(n);
  std::vector<std::vector<int32_t>> refs(n);
  for (int32_t r = 0; r < n; ++r) {
    if (first_state_[r] < 0) continue;
    forms[r] = LocalForm(r, &refs[r]);
    local[r] = HashBytes(forms[r]);
  }
  // Tarjan's SCCs (iterative), emitted callees first: the bottom-up order.
  std::vector<int32_t> index(n, -1), low(n, 0), stack, scc_of(n, -1);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::vector<int32_t>> sccs;
  int32_t counter = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (first_state_[root] < 0 || index[root] >= 0) continue;
    std::vector<std::pair<int32_t, size_t>> frames = {{root, 0}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!frames.empty()) {
      auto& [v, next] = frames.back();
      if (next < refs[v].size()) {
        int32_t w = refs[v][next++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = 1;
          frames.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<int32_t> scc;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          scc_of[w] = static_cast<int32_t>(sccs.size());
          scc.push_back(w);
        } while (w != v);
        sccs.push_back(std::move(scc));
      }
      int32_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
    }
  }
  // Bottom-up: references outside the SCC have final hashes; inside, provisional hashes refined
  // for |SCC| rounds (a count that depends only on the SCC, so the result only on the closure).
  rule_hash_.assign(n, 0);
  std::vector<uint64_t> cur(n, 0), next(n, 0);
  std::vector<uint64_t> parts;
  auto ref_hash = [&](int32_t r, const std::vector<uint64_t>& inner, int32_t scc) {
    parts.clear();
    for (size_t i = 0; i < refs[r].size(); ++i) {
      int32_t w = refs[r][i];
      parts.push_back(Mix(i, scc_of[w] == scc ? Mix(0x5CC, inner[w]) : rule_hash_[w]));
    }
    uint64_t h = local[r];
    for (uint64_t p : parts) h = Mix(h, p);
    return h;
  };
  for (size_t c = 0; c < sccs.size(); ++c) {
    const auto& scc = sccs[c];
    for (int32_t r : scc) cur[r] = local[r];
    const size_t rounds = scc.size() == 1 && std::find(refs[scc[0]].begin(), refs[scc[0]].end(), scc[0]) == refs[scc[0]].end()
                              ? 1 : scc.size() + 1;
    for (size_t round = 0; round < rounds; ++round) {
      for (int32_t r : scc) next[r] = ref_hash(r, cur, static_cast<int32_t>(c));
      for (int32_t r : scc) cur[r] = next[r];
    }
    for (int32_t r : scc) rule_hash_[r] = cur[r];
    if (table == nullptr) continue;
    // Structure ids: references outside the component by their (already final) ids; inside, by the
    // breadth-first order from the rule being named, so each rule of a cycle gets its own form.
    const bool cyclic = rounds > 1;
    for (int32_t r : scc) {
      std::string form = cyclic ? "C" : "R";
      std::vector<int32_t> order = {r};
      for (size_t i = 0; i < order.size(); ++i) {
        const int32_t v = order[i];
        form += forms[v];
        for (int32_t w : refs[v]) {
          if (scc_of[w] == static_cast<int32_t>(c)) {
            auto pos = std::find(order.begin(), order.end(), w);
            if (pos == order.end()) order.push_back(w), pos = order.end() - 1;
            PutInt(&form, -1), PutInt(&form, pos - order.begin());
          } else {
            PutInt(&form, -2), PutInt(&form, structure_id_[w]);
          }
        }
        PutInt(&form, -9);
      }
      structure_id_[r] = table->Intern(form, generation_);
    }
  }
}

std::string StructuralHasher::LocalForm(int32_t rule, std::vector<int32_t>* refs) const {
  const GrammarFsm& g = fsm_;
  const int32_t first = first_state_[rule];
  int32_t end = first;
  while (end < g.NumStates() && g.RuleOf(end) == rule) ++end;
  std::vector<int64_t> out;  // 64-bit words, returned as their bytes (appending to a string costs a call per word)
  out.reserve(8 * (end - first) + 4);
  out.push_back(end - first);
  if (g.IsCountedRule(rule)) out.push_back(g.RepeatMin(rule)), out.push_back(g.RepeatMax(rule));
  const bool any_order = g.IsAnyOrderRule(rule);
  g.AppendAnyOrderForm(rule, &out);
  refs->clear();
  for (int32_t s = first; s < end; ++s) {
    out.push_back(g.IsFinal(s) ? 1 : 0);
    g.ForEachRowRun(s, [&](int b, int32_t t) { out.push_back(b), out.push_back(t < 0 ? -1 : t - first); });
    out.push_back(-7);
    for (const RuleEdge* e = g.RuleEdgesBegin(s); e != g.RuleEdgesEnd(s); ++e) {
      out.push_back(e->target - first);
      if (any_order) out.push_back(g.AnyOrderEdgeRole(e));
      refs->push_back(e->rule);
    }
    out.push_back(-8);
  }
  return std::string(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(int64_t));
}

StructuralKey StructuralHasher::KeyOf(int32_t state) const {
  // The entry of `state` depends only on what can be read from it: the part of its rule's automaton
  // reachable from it and the rules that part references. Keying by this forward closure lets
  // `"city": <string> }` and `"town": <string> }` share the entry of the state after the key,
  // although their rules differ. The closures are hash-consed (ForwardIds), so each interned form is
  // about one row long, not one closure long.
  StructuralKey key;
  const int32_t rule = fsm_.RuleOf(state);
  key.position = 0;
  if (structure_table_ == nullptr) {
    key.hash = Mix(rule_hash_[rule], static_cast<uint64_t>(state - first_state_[rule]));
    return key;
  }
  key.structure_id = ForwardIds(rule)[state - first_state_[rule]];
  key.hash = Mix(0xF0F0, static_cast<uint64_t>(key.structure_id));
  return key;
}

const std::vector<int64_t>& StructuralHasher::ForwardIds(int32_t rule) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const std::vector<int64_t>>& held = forward_id_[rule];
  if (held) return *held;
  held = structure_table_->FindForwardIds(structure_id_[rule]);
  if (held) return *held;
  auto built = std::make_shared<std::vector<int64_t>>(ComputeForwardIds(rule));
  structure_table_->AddForwardIds(structure_id_[rule], built, generation_);
  held = std::move(built);
  return *held;
}

std::vector<int64_t> StructuralHasher::ComputeForwardIds(int32_t rule) const {
  const GrammarFsm& g = fsm_;
  const int32_t first = first_state_[rule];
  int32_t end = first;
  while (end < g.NumStates() && g.RuleOf(end) == rule) ++end;
  const int32_t n = end - first;
  // Successors inside the rule (byte targets and the targets of rule edges), local numbering, as
  // sorted lists in one array: state i's are succ[succ_begin[i], succ_begin[i + 1]).
  std::vector<int32_t> succ, succ_begin(n + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t s = first + i;
    const size_t from = succ.size();
    g.ForEachRowRun(s, [&](int, int32_t t) {
      if (t >= 0) succ.push_back(t - first);
    });
    for (const RuleEdge* e = g.RuleEdgesBegin(s); e != g.RuleEdgesEnd(s); ++e) succ.push_back(e->target - first);
    std::sort(succ.begin() + from, succ.end());
    succ.erase(std::unique(succ.begin() + from, succ.end()), succ.end());
    succ_begin[i + 1] = static_cast<int32_t>(succ.size());
  }
  // Tarjan's SCCs (iterative); components come out successors first, their members listed in
  // members[member_begin[c], member_begin[c + 1]).
  std::vector<int32_t> index(n, -1), low(n, 0), stack, comp(n, -1), members, member_begin(1, 0);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::pair<int32_t, int32_t>> frames;  // (state, next successor position)
  int32_t counter = 0, num_comps = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    frames.assign(1, {root, succ_begin[root]});
    index[root] = low[root] = counter++;
    stack.push_back(root), on_stack[root] = 1;
    while (!frames.empty()) {
      auto& [v, next] = frames.back();
      if (next < succ_begin[v + 1]) {
        int32_t w = succ[next++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w), on_stack[w] = 1;
          frames.push_back({w, succ_begin[w]});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back(), on_stack[w] = 0;
          comp[w] = num_comps;
          members.push_back(w);
        } while (w != v);
        member_begin.push_back(static_cast<int32_t>(members.size()));
        ++num_comps;
      }
      const int32_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
    }
  }
  std::vector<int64_t> ids(n, -1);
  // Forms are written as 64-bit words and interned as such (StructureTable); the first word's low byte tells
  // the kinds apart from each other and from LocalForm's ('C', 'R').
  constexpr int64_t kAcyclicTag = 'F' | ('S' << 8), kCyclicTag = 'F' | ('C' << 8), kPositionTag = 'P';
  std::vector<int64_t> form;
  auto intern = [&] {
    return structure_table_->Intern(form, generation_);
  };
  auto start_form = [&](int64_t tag) {
    form.assign(1, tag);
    if (g.IsCountedRule(rule)) form.push_back(g.RepeatMin(rule)), form.push_back(g.RepeatMax(rule));
    g.AppendAnyOrderForm(rule, &form);
  };
  // One state's row; `ref` names a target (a local state) as an id outside the component or an index
  // inside it.
  auto put_row = [&](int32_t i, auto&& ref) {
    const int32_t s = first + i;
    form.push_back(g.IsFinal(s) ? 1 : 0);
    g.ForEachRowRun(s, [&](int b, int32_t t) { form.push_back(b), form.push_back(t < 0 ? -1 : ref(t - first)); });
    form.push_back(-7);
    for (const RuleEdge* e = g.RuleEdgesBegin(s); e != g.RuleEdgesEnd(s); ++e) {
      form.push_back(structure_id_[e->rule]), form.push_back(ref(e->target - first));
      if (g.IsAnyOrderState(s)) form.push_back(g.AnyOrderEdgeRole(e));
    }
    form.push_back(-8);
  };
  constexpr int32_t kMaxCycle = 64;  // larger cycles are keyed by (rule, position) instead
  std::vector<int32_t> order, number(n, -1);  // breadth-first order inside a component, and its inverse
  for (int32_t c = 0; c < num_comps; ++c) {
    const int32_t* mem = members.data() + member_begin[c];
    const int32_t size = member_begin[c + 1] - member_begin[c];
    const bool cyclic =
        size > 1 || std::binary_search(succ.begin() + succ_begin[mem[0]], succ.begin() + succ_begin[mem[0] + 1], mem[0]);
    if (!cyclic) {
      start_form(kAcyclicTag);
      put_row(mem[0], [&](int32_t t) { return ids[t]; });
      ids[mem[0]] = intern();
      continue;
    }
    if (size > kMaxCycle) {
      for (int32_t k = 0; k < size; ++k) {
        form.assign({kPositionTag, structure_id_[rule], mem[k]});
        ids[mem[k]] = intern();
      }
      continue;
    }
    // Each member: the component's rows in breadth-first order from it (inside targets by that
    // order, encoded below -9; outside ones by their ids).
    for (int32_t k = 0; k < size; ++k) {
      const int32_t start = mem[k];
      order.assign(1, start);
      number[start] = 0;
      start_form(kCyclicTag);
      for (size_t q = 0; q < order.size(); ++q) {
        put_row(order[q], [&](int32_t t) -> int64_t {
          if (comp[t] != c) return ids[t];
          if (number[t] < 0) number[t] = static_cast<int32_t>(order.size()), order.push_back(t);
          return -10 - number[t];
        });
      }
      for (int32_t t : order) number[t] = -1;
      ids[start] = intern();
    }
  }
  return ids;
}

}  // namespace xg
