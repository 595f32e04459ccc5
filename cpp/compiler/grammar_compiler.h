// GrammarCompiler: turns grammar sources into CompiledGrammars for one vocabulary, with two caches.
//
//   - The grammar-level cache: (source kind, source text, root rule) -> compiled grammar (kinds:
//     "ebnf", "grammar", "builtin_json", "regex"; a JSON Schema arrives as the EBNF its options
//     produced, so its key covers schema and options). A grammar is counted by CompiledGrammar::
//     OwnBytes() when it is added.
//   - The rule-level (cross-grammar) cache: token-mask entries keyed by structure
//     (rule_mask_cache.h), shared by every grammar this compiler makes, counted by each entry's size.
// Both are FencedLruCaches (fenced_lru_cache.h): concurrent requests for one key compile once,
// compilation runs outside the locks, ClearCache() bumps both generations so nothing computed
// before it is counted or kept after it, and never waits for compilations in flight. With
// cache_limit_bytes >= 0 everything cached stays within it: half for compiled grammars (LRU), a
// quarter for the rule-level mask entries (LRU), an eighth each for the structure-id table and the
// rule automata (each flushed whole when over its share: rebuilt on demand, never a wrong hit);
// -1 is unlimited. GetCacheSizeBytes() is the sum of the four counts, which at every quiescent
// point equals the sizes of what is held.
//
// max_threads parallelises one compilation's work (the eager mask build); many compilations may run
// at once on different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "compiler/compiled_grammar.h"
#include "compiler/fenced_lru_cache.h"
#include "compiler/rule_mask_cache.h"
#include "frontends/json_schema/json_schema_to_ebnf.h"

namespace xg {

class GrammarCompiler {
 public:
  // `limits` (support/limits.h) apply to every grammar it compiles and every matcher of those.
  GrammarCompiler(std::shared_ptr<const TokenizerInfo> tok, int max_threads, bool cache_enabled,
                  int64_t cache_limit_bytes, const Limits& limits = DefaultLimits());
  const Limits& limits() const { return limits_; }

  // precompute_masks builds every mask entry now (eager) instead of on first use (JIT).
  std::shared_ptr<const CompiledGrammar> CompileEbnf(const std::string& ebnf, const std::string& root_rule_name,
                                                     bool precompute_masks = false);
  std::shared_ptr<const CompiledGrammar> CompileGrammar(const Grammar& grammar, bool precompute_masks = false);
  std::shared_ptr<const CompiledGrammar> CompileBuiltinJsonGrammar(bool precompute_masks = false);
  // A regex (frontends/regex.h) that the whole output must match.
  std::shared_ptr<const CompiledGrammar> CompileRegex(const std::string& pattern, bool precompute_masks = false);
  // Grammars whose front end runs outside the engine (JSON Schema, in Python), cached by their own
  // source so that a hit skips the front end: LookupSource returns the held grammar of
  // (kind, source, options) or null (always null with caching off); on null the caller converts the
  // source to EBNF (root rule "root") and calls CompileSourceEbnf, which caches it under that key.
  std::shared_ptr<const CompiledGrammar> LookupSource(const std::string& kind, const std::string& source,
                                                      const std::string& options, bool precompute_masks = false);
  std::shared_ptr<const CompiledGrammar> CompileSourceEbnf(const std::string& kind, const std::string& source,
                                                           const std::string& options, const std::string& ebnf,
                                                           bool precompute_masks = false);

  // A JSON Schema (its JSON text) through the native front end (frontends/json_schema), the whole way without
  // the caller: the held grammar of ("json_schema", source, options), else the native conversion compiled and
  // cached under that key. Null when the native front end does not convert the schema (*not_handled says why):
  // the caller converts it another way and calls CompileSourceEbnf.
  std::shared_ptr<const CompiledGrammar> CompileJsonSchemaNative(const std::string& source,
                                                                 const std::string& options,
                                                                 const json_schema::JsonSchemaOptions& schema_options,
                                                                 bool precompute_masks, std::string* not_handled);

  void ClearCache();
  int64_t GetCacheSizeBytes() const;
  const std::shared_ptr<const TokenizerInfo>& tokenizer() const { return tok_; }
  int max_threads() const { return max_threads_; }

 // Introspection for tests and benchmarks: the entries each cache holds and their sizes.
  struct CacheInfo {
    std::vector<int64_t> grammar_entry_sizes, rule_entry_sizes;
    int64_t grammar_bytes, rule_bytes;
    // The structure-id table and the rule automata of the rule-level cache (CrossGrammarCache).
    int64_t structure_bytes, num_structures, num_automata;
    int64_t structure_flushes, automata_flushes;  // flushes by the byte budget
    int64_t grammar_hits, grammar_misses, rule_hits, rule_misses;
    uint64_t generation;
  };
  CacheInfo GetCacheInfo() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      std::hash<std::string> h;
      return h(std::get<0>(k)) ^ (h(std::get<1>(k)) * 31) ^ (h(std::get<2>(k)) * 131);
    }
  };
  std::shared_ptr<const CompiledGrammar> Cached(const Key& key, bool precompute_masks,
                                                const std::function<Grammar()>& make);

  std::shared_ptr<const TokenizerInfo> tok_;
  int max_threads_;
  bool cache_enabled_;
  int64_t cache_limit_bytes_;
  Limits limits_;
  FencedLruCache<Key, CompiledGrammar, KeyHash> grammar_cache_;
  std::shared_ptr<CrossGrammarCache> rule_cache_;  // null when caching is off
};

}  // namespace xg
