// GrammarCompiler: turns grammar sources into CompiledGrammars for one vocabulary, with a cache.
//
// The cache here is the plain one: a map from (source kind, source text, root rule) to the compiled
// grammar (kinds: "ebnf", "grammar", "builtin_json", "regex"), guarded by a mutex; compilation runs outside the lock. GetCacheSizeBytes sums the memory
// of the grammars held (lazily built mask entries included, so it grows while matchers run).
// The generation-fenced LRU cache and the cross-grammar rule-level cache are their own issue.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "compiler/compiled_grammar.h"

namespace xg {

class GrammarCompiler {
 public:
  GrammarCompiler(std::shared_ptr<const TokenizerInfo> tok, int max_threads, bool cache_enabled,
                  int64_t cache_limit_bytes);

  // precompute_masks builds every mask entry now (eager) instead of on first use (JIT).
  std::shared_ptr<const CompiledGrammar> CompileEbnf(const std::string& ebnf, const std::string& root_rule_name,
                                                     bool precompute_masks = false);
  std::shared_ptr<const CompiledGrammar> CompileGrammar(const Grammar& grammar, bool precompute_masks = false);
  std::shared_ptr<const CompiledGrammar> CompileBuiltinJsonGrammar(bool precompute_masks = false);
  // A regex (frontends/regex.h) that the whole output must match.
  std::shared_ptr<const CompiledGrammar> CompileRegex(const std::string& pattern, bool precompute_masks = false);

  void ClearCache();
  int64_t GetCacheSizeBytes() const;
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tok_; }
  int max_threads() const { return max_threads_; }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  std::shared_ptr<const CompiledGrammar> Cached(const Key& key, bool precompute_masks,
                                                const std::function<Grammar()>& make);

  std::shared_ptr<const TokenizerInfo> tok_;
  int max_threads_;
  bool cache_enabled_;
  int64_t cache_limit_bytes_;
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<const CompiledGrammar>> cache_;
};

}  // namespace xg
