// The Aho-Corasick automaton of a set of byte strings (patterns): a deterministic automaton that reads text
// byte by byte and, after each byte, is in the state of the longest suffix of the text read that is a prefix of
// some pattern. A pattern occurs ending at the current byte exactly when it is one of the state's outputs.
//
// Algorithm (Aho and Corasick, 1975). The states are the nodes of the patterns' trie (state 0 is the root, the
// empty string). In breadth-first order, each state s gets its failure link, the state of the longest proper
// suffix of s's string that is in the trie, and its full transition row: delta(s, b) is s's trie child on b
// when it has one, else delta(fail(s), b) (the root stays at itself on a byte no pattern starts with). A
// state's outputs are the patterns among the suffixes of its string: its own pattern (if it ends one) and the
// outputs of fail(s). Rows are kept as byte runs, so a state costs its number of distinct targets, not 256.
//
// Cost: O(L * 256) time for patterns of total length L (one 256-wide scratch row at a time), memory O(runs).
// The number of states is at most L + 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xg {

class AhoCorasick {
 public:
  // A maximal run of bytes lo..hi (inclusive) that lead to one state.
  struct Run {
    uint8_t lo, hi;
    int32_t target;
  };

  // Patterns may repeat and may be prefixes of one another; an empty pattern is matched by the root.
  explicit AhoCorasick(const std::vector<std::string>& patterns);

  int32_t NumStates() const { return static_cast<int32_t>(depth_.size()); }
  // The length of the state's string (0 for the root); delta(s, b) is a trie child of s iff its depth is
  // Depth(s) + 1.
  int32_t Depth(int32_t s) const { return depth_[s]; }
  // delta(s, .) as runs covering bytes 0..255, in byte order (a view into the automaton).
  struct RunSpan {
    const Run* first;
    const Run* last;
    const Run* begin() const { return first; }
    const Run* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
  };
  RunSpan Row(int32_t s) const { return {runs_.data() + run_begin_[s], runs_.data() + run_begin_[s + 1]}; }
  // Indices of the patterns that end at the last byte read in state s, ascending.
  const std::vector<int32_t>& Outputs(int32_t s) const { return outputs_[s]; }
  // delta(s, b).
  int32_t Step(int32_t s, uint8_t b) const;

 private:
  std::vector<int32_t> depth_;
  std::vector<Run> runs_;
  std::vector<int32_t> run_begin_;  // state s's runs are runs_[run_begin_[s] .. run_begin_[s + 1])
  std::vector<std::vector<int32_t>> outputs_;
};

}  // namespace xg
