// See aho_corasick.h.
#include "automata/aho_corasick.h"

#include <algorithm>
#include <array>

namespace xg {

AhoCorasick::AhoCorasick(const std::vector<std::string>& patterns) {
  // The trie: children as (byte, child) lists, small per node.
  std::vector<std::vector<std::pair<uint8_t, int32_t>>> children(1);
  std::vector<std::vector<int32_t>> ends(1);  // patterns whose string is the node's
  depth_.assign(1, 0);
  for (size_t p = 0; p < patterns.size(); ++p) {
    int32_t node = 0;
    for (char c : patterns[p]) {
      const uint8_t b = static_cast<uint8_t>(c);
      auto& kids = children[node];
      auto it = std::find_if(kids.begin(), kids.end(), [&](const auto& k) { return k.first == b; });
      if (it != kids.end()) {
        node = it->second;
        continue;
      }
      const int32_t child = static_cast<int32_t>(depth_.size());
      kids.push_back({b, child});
      children.emplace_back();
      ends.emplace_back();
      depth_.push_back(depth_[node] + 1);
      node = child;
    }
    ends[node].push_back(static_cast<int32_t>(p));
  }
  const int32_t n = NumStates();
  // Breadth-first: a state's failure link and row come from shallower states, already done.
  std::vector<int32_t> fail(n, 0), order = {0};
  order.reserve(n);
  outputs_.assign(n, {});
  run_begin_.assign(n + 1, 0);
  std::vector<std::vector<Run>> rows(n);
  std::array<int32_t, 256> row;
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t s = order[i];
    // The row: the failure state's row (the root's: itself everywhere), overridden by s's children.
    if (s == 0) {
      row.fill(0);
    } else {
      for (const Run& r : rows[fail[s]])
        for (int b = r.lo; b <= r.hi; ++b) row[b] = r.target;
    }
    for (const auto& [b, child] : children[s]) {
      // The child's failure link: where the failure state goes on b (the root for the root's children).
      fail[child] = s == 0 ? 0 : row[b];
      row[b] = child;
      order.push_back(child);
    }
    for (int b = 0; b < 256;) {
      int e = b;
      while (e + 1 < 256 && row[e + 1] == row[b]) ++e;
      rows[s].push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(e), row[b]});
      b = e + 1;
    }
    outputs_[s] = ends[s];
    if (s != 0) {
      const auto& inherited = outputs_[fail[s]];
      outputs_[s].insert(outputs_[s].end(), inherited.begin(), inherited.end());
      std::sort(outputs_[s].begin(), outputs_[s].end());
      outputs_[s].erase(std::unique(outputs_[s].begin(), outputs_[s].end()), outputs_[s].end());
    }
  }
  for (int32_t s = 0; s < n; ++s) {
    run_begin_[s] = static_cast<int32_t>(runs_.size());
    runs_.insert(runs_.end(), rows[s].begin(), rows[s].end());
  }
  run_begin_[n] = static_cast<int32_t>(runs_.size());
}

int32_t AhoCorasick::Step(int32_t s, uint8_t b) const {
  for (int32_t i = run_begin_[s]; i < run_begin_[s + 1]; ++i)
    if (runs_[i].lo <= b && b <= runs_[i].hi) return runs_[i].target;
  return 0;  // unreachable: the runs cover every byte
}

}  // namespace xg
