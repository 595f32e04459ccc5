// libFuzzer target: the regex front end. Byte 0 selects the mode (full match / search), what `.`
// matches and the spelling (raw / JSON string content); the rest is the pattern. The grammar
// `root ::= <pattern>` is compiled and walked like the EBNF target. See docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontends/regex.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return -1;
  const uint8_t cfg = data[0];
  std::string pattern(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nch = size - 1 < 8 ? size - 1 : 8;
  xgfuzz::Guard([&] {
    xg::Grammar g;
    if (cfg & 8) {
      g = xg::RegexToGrammar(pattern, (cfg & 1) ? xg::RegexMode::kSearch : xg::RegexMode::kFullMatch);
    } else {
      int32_t body = xg::AddRegex(&g, pattern, (cfg & 1) ? xg::RegexMode::kSearch : xg::RegexMode::kFullMatch,
                                  (cfg & 2) ? xg::RegexDot::kAnyCodePoint : xg::RegexDot::kNoLineTerminators,
                                  (cfg & 4) ? xg::RegexSpelling::kJsonString : xg::RegexSpelling::kRaw);
      g.rules.push_back(xg::Rule{"root", body, -1});
      g.root = 0;
    }
    xgfuzz::CompileAndWalk(std::move(g), data + size - nch, nch);
  });
  return 0;
}
