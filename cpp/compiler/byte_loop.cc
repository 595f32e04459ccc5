#include "compiler/byte_loop.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace xg {

bool ByteLoopOf(const GrammarFsm& fsm, int32_t s, LoopDfa* loop, int32_t fold, std::vector<int32_t>* members) {
  auto as_loop = [&](int32_t t) { return t == fold ? s : t; };  // fold stands for s
  // Forward: every state reachable from s by byte edges (bounded).
  std::unordered_map<int32_t, int32_t> index;  // fsm state -> position in `reach`
  std::vector<int32_t> reach = {s};
  index.emplace(s, 0);
  std::vector<std::vector<int32_t>> preds(1);  // predecessors, as positions in `reach`
  for (size_t i = 0; i < reach.size(); ++i) {
    const ByteRow row = fsm.NextRow(reach[i]);
    int32_t last = -1;
    for (int b = 0; b < 256; ++b) {
      const int32_t t = row[b] < 0 ? row[b] : as_loop(row[b]);
      if (t < 0 || t == last) continue;  // runs of one target are common (character ranges)
      last = t;
      auto [it, inserted] = index.emplace(t, static_cast<int32_t>(reach.size()));
      if (inserted) {
        if (static_cast<int32_t>(reach.size()) >= kMaxForwardStates) return false;
        reach.push_back(t);
        preds.emplace_back();
      }
      std::vector<int32_t>& p = preds[it->second];
      if (p.empty() || p.back() != static_cast<int32_t>(i)) p.push_back(static_cast<int32_t>(i));
    }
  }
  // Backward from s inside `reach`: the states that can return to s.
  std::vector<uint8_t> back(reach.size(), 0);
  std::vector<int32_t> todo = {0};
  bool cycle = false;
  while (!todo.empty()) {
    int32_t i = todo.back();
    todo.pop_back();
    for (int32_t p : preds[i]) {
      if (p == 0) cycle = true;
      if (!back[p]) back[p] = 1, todo.push_back(p);
    }
  }
  if (!cycle) return false;
  back[0] = 1;
  // Canonical renumbering: breadth-first from s over loop states, bytes ascending.
  std::unordered_map<int32_t, int32_t> local = {{s, 0}};
  std::vector<int32_t> order = {s};
  for (size_t i = 0; i < order.size(); ++i) {
    const ByteRow row = fsm.NextRow(order[i]);
    for (int b = 0; b < 256; ++b) {
      const int32_t t = row[b] < 0 ? row[b] : as_loop(row[b]);
      if (t < 0 || !back[index.at(t)] || local.count(t)) continue;
      if (static_cast<int32_t>(order.size()) >= kMaxLoopStates) return false;
      local.emplace(t, static_cast<int32_t>(order.size()));
      order.push_back(t);
    }
  }
  if (members) *members = order;
  loop->num_states = static_cast<int32_t>(order.size());
  loop->next.assign(order.size() * 256, -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const ByteRow row = fsm.NextRow(order[i]);
    for (int b = 0; b < 256; ++b) {
      auto it = row[b] >= 0 ? local.find(as_loop(row[b])) : local.end();
      if (it != local.end()) loop->next[i * 256 + b] = it->second;
    }
  }
  return true;
}

}  // namespace xg
