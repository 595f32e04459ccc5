// libFuzzer target: EBNF text -> ParseEbnf -> CompiledGrammar (small vocabulary) -> a matcher walk
// with every mask checked against the brute-force oracle. See docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "frontends/ebnf_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // bound the per-input cost; -1: not added to the corpus
  std::string text(reinterpret_cast<const char*>(data), size);
  // The walk's choices come from the text's tail bytes, so mutations of the grammar also vary the walk.
  const size_t nch = size < 8 ? size : 8;
  xgfuzz::Guard([&] {
    xg::Grammar g = xg::ParseEbnf(text, "root", xgfuzz::FuzzLimits());
    xgfuzz::CompileAndWalk(std::move(g), data + size - nch, nch);
  });
  return 0;
}
