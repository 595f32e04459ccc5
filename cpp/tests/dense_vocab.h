// A test vocabulary with many shared prefixes: random strings of 1..max_len bytes over the bytes of
// JSON punctuation and two letters, `per_length` of each length, then an <eos> stop token. Runs of
// shared prefixes nest deeply, so walks that skip dead siblings (NextLiveSibling) jump within and
// across runs.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_info.h"

namespace xg {

inline std::shared_ptr<const TokenizerInfo> DenseVocab(int max_len, int per_length, unsigned seed) {
  const std::string alphabet = "\"ab:{}";
  std::vector<std::string> toks;
  std::mt19937 rng(seed);
  for (int len = 1; len <= max_len; ++len)
    for (int i = 0; i < per_length; ++i) {
      std::string t;
      for (int j = 0; j < len; ++j) t.push_back(alphabet[rng() % alphabet.size()]);
      toks.push_back(t);
    }
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{n - 1}, std::vector<int32_t>{n - 1});
}

}  // namespace xg
