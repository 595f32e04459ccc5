#include "compiler/grammar_compiler.h"

#include "frontends/regex.h"
#include "grammar/builtin_grammars.h"
#include "grammar/ebnf_parser.h"
#include "grammar/printer.h"
#include "support/check.h"

namespace xg {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenizerInfo> tok, int max_threads, bool cache_enabled,
                                 int64_t cache_limit_bytes)
    : tok_(std::move(tok)), max_threads_(max_threads), cache_enabled_(cache_enabled),
      cache_limit_bytes_(cache_limit_bytes) {
  XG_USER_CHECK(max_threads_ >= 1) << "GrammarCompiler: max_threads must be >= 1, got " << max_threads_;
  XG_USER_CHECK(cache_limit_bytes_ == -1 || cache_limit_bytes_ >= 0)
      << "GrammarCompiler: cache_limit_bytes must be -1 (unlimited) or >= 0, got " << cache_limit_bytes_;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::Cached(const Key& key, bool precompute_masks,
                                                               const std::function<Grammar()>& make) {
  if (cache_enabled_) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      if (precompute_masks) it->second->BuildAllMasks(max_threads_);
      return it->second;
    }
  }
  auto compiled = std::make_shared<const CompiledGrammar>(make(), tok_);
  if (precompute_masks) compiled->BuildAllMasks(max_threads_);
  if (cache_enabled_) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_limit_bytes_ < 0 || static_cast<int64_t>(compiled->MemoryBytes()) <= cache_limit_bytes_) {
      auto [it, inserted] = cache_.emplace(key, compiled);
      return it->second;
    }
  }
  return compiled;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileEbnf(const std::string& ebnf,
                                                                    const std::string& root_rule_name,
                                                                    bool precompute_masks) {
  return Cached({"ebnf", ebnf, root_rule_name}, precompute_masks, [&] { return ParseEbnf(ebnf, root_rule_name); });
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileGrammar(const Grammar& grammar, bool precompute_masks) {
  return Cached({"grammar", PrintGrammar(grammar), grammar.RootName()}, precompute_masks, [&] { return grammar; });
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileBuiltinJsonGrammar(bool precompute_masks) {
  return Cached({"builtin_json", "", "root"}, precompute_masks, [] { return ParseEbnf(BuiltinJsonGrammarEbnf(), "root"); });
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileRegex(const std::string& pattern,
                                                                     bool precompute_masks) {
  return Cached({"regex", pattern, "root"}, precompute_masks, [&] { return RegexToGrammar(pattern); });
}

void GrammarCompiler::ClearCache() {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.clear();
}

int64_t GrammarCompiler::GetCacheSizeBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t total = 0;
  for (auto& [k, v] : cache_) total += static_cast<int64_t>(v->MemoryBytes());
  return total;
}

}  // namespace xg
