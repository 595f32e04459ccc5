#include "compiler/grammar_compiler.h"

#include "frontends/regex.h"
#include "grammar/builtin_grammars.h"
#include "frontends/ebnf_parser.h"
#include "grammar/printer.h"
#include "support/check.h"

namespace xg {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenizerInfo> tok, int max_threads, bool cache_enabled,
                                 int64_t cache_limit_bytes, const Limits& limits)
    : tok_(std::move(tok)), max_threads_(max_threads), cache_enabled_(cache_enabled),
      cache_limit_bytes_(cache_limit_bytes), limits_(limits),
      grammar_cache_(CrossGrammarCache::Share(cache_limit_bytes, 2)) {
  XG_USER_CHECK(limits_.max_nesting_depth >= 0 && limits_.max_items_per_set >= 1 && limits_.max_work_per_byte >= 1 &&
                limits_.max_resume_chain >= 0 && limits_.max_automaton_states >= 2 && limits_.max_subset_members >= 1 &&
                limits_.max_fill_work >= 1)
      << "GrammarCompiler: every limit must be positive (max_resume_chain may be 0; max_nesting_depth 0 follows the "
         "process-wide max recursion depth)";
  XG_USER_CHECK(max_threads_ >= 1) << "GrammarCompiler: max_threads must be >= 1, got " << max_threads_;
  XG_USER_CHECK(cache_limit_bytes_ == -1 || cache_limit_bytes_ >= 0)
      << "GrammarCompiler: cache_limit_bytes must be -1 (unlimited) or >= 0, got " << cache_limit_bytes_;
  if (cache_enabled_) rule_cache_ = std::make_shared<CrossGrammarCache>(CrossGrammarCache::Share(cache_limit_bytes_, 2));
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::Cached(const Key& key, bool precompute_masks,
                                                               const std::function<Grammar()>& make) {
  std::shared_ptr<const CompiledGrammar> compiled;
  if (!cache_enabled_) {
    compiled = std::make_shared<const CompiledGrammar>(make(), tok_, nullptr, limits_);
  } else {
    compiled = grammar_cache_.GetOrCompute(
        key, [&] { return std::make_shared<const CompiledGrammar>(make(), tok_, rule_cache_, limits_); },
        [](const CompiledGrammar& g) { return static_cast<int64_t>(g.OwnBytes()); });
  }
  if (precompute_masks) compiled->BuildAllMasks(max_threads_);
  return compiled;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileEbnf(const std::string& ebnf,
                                                                    const std::string& root_rule_name,
                                                                    bool precompute_masks) {
  return Cached({"ebnf", ebnf, root_rule_name}, precompute_masks, [&] { return ParseEbnf(ebnf, root_rule_name, limits_); });
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

std::shared_ptr<const CompiledGrammar> GrammarCompiler::LookupSource(const std::string& kind, const std::string& source,
                                                                     const std::string& options,
                                                                     bool precompute_masks) {
  if (!cache_enabled_) return nullptr;
  std::shared_ptr<const CompiledGrammar> compiled = grammar_cache_.GetIfReady({kind, source, options});
  if (compiled && precompute_masks) compiled->BuildAllMasks(max_threads_);
  return compiled;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileJsonSchemaNative(
    const std::string& source, const std::string& options, const json_schema::JsonSchemaOptions& schema_options,
    bool precompute_masks, std::string* not_handled) {
  if (auto held = LookupSource("json_schema", source, options, precompute_masks)) return held;
  json_schema::NativeConversion converted = json_schema::JsonSchemaToEbnf(source, schema_options, limits_);
  if (!converted.ebnf) {
    *not_handled = std::move(converted.not_handled);
    return nullptr;
  }
  if (converted.parsed) {  // the conversion parsed its text already (under limits_)
    return Cached({"json_schema", source, options}, precompute_masks,
                  [&] { return std::move(*converted.parsed); });
  }
  return CompileSourceEbnf("json_schema", source, options, *converted.ebnf, precompute_masks);
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::CompileSourceEbnf(const std::string& kind,
                                                                          const std::string& source,
                                                                          const std::string& options,
                                                                          const std::string& ebnf,
                                                                          bool precompute_masks) {
  XG_USER_CHECK(kind != "ebnf" && kind != "grammar" && kind != "regex" && kind != "builtin_json")
      << "GrammarCompiler: source kind '" << kind << "' is reserved for the engine's own front ends";
  return Cached({kind, source, options}, precompute_masks, [&] { return ParseEbnf(ebnf, "root", limits_); });
}

void GrammarCompiler::ClearCache() {
  grammar_cache_.Clear();
  if (rule_cache_) rule_cache_->Clear();
}

int64_t GrammarCompiler::GetCacheSizeBytes() const {
  return grammar_cache_.SizeBytes() + (rule_cache_ ? rule_cache_->SizeBytes() : 0);
}

GrammarCompiler::CacheInfo GrammarCompiler::GetCacheInfo() const {
  CacheInfo info;
  info.grammar_entry_sizes = grammar_cache_.EntrySizes();
  info.grammar_bytes = grammar_cache_.SizeBytes();
  info.grammar_hits = grammar_cache_.Hits();
  info.grammar_misses = grammar_cache_.Misses();
  info.generation = grammar_cache_.Generation();
  info.rule_bytes = info.rule_hits = info.rule_misses = info.structure_bytes = info.num_structures =
      info.num_automata = info.structure_flushes = info.automata_flushes = 0;
  if (rule_cache_) {
    info.rule_entry_sizes = rule_cache_->entries.EntrySizes();
    info.rule_bytes = rule_cache_->entries.SizeBytes();
    info.structure_bytes = rule_cache_->StructureBytes();
    info.num_structures = static_cast<int64_t>(rule_cache_->structures.Size());
    info.num_automata = static_cast<int64_t>(rule_cache_->automata.Size());
    info.structure_flushes = rule_cache_->structures.Flushes();
    info.automata_flushes = rule_cache_->automata.Flushes();
    info.rule_hits = rule_cache_->entries.Hits();
    info.rule_misses = rule_cache_->entries.Misses();
  }
  return info;
}

}  // namespace xg
