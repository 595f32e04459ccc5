#include "compiler/compiled_grammar.h"

#include <algorithm>
#include <ctime>

#include "frontends/ebnf_parser.h"
#include "frontends/json_schema/json_schema_to_ebnf.h"
#include "fsm/rule_dfa_cache.h"
#include "grammar/nesting_depth.h"
#include "grammar/passes.h"
#include "support/limits.h"
#include "support/check.h"
#include "support/fill_budget.h"
#include "support/thread_pool.h"
#include "support/utf8.h"

namespace xg {

namespace {
// The automata of the lexical rules JSON Schema grammars hold (JSON values, strings, numbers, whitespace, key tails)
// under the common option sets (whitespace between tokens or none; plain integers or every spelling), built once per
// process and shared by every compile, with or without a cache (rule_dfa_cache.h: PrebuiltRuleDfas). A rule whose
// normalised body differs (other separators, a whitespace bound) is built as usual.
const PrebuiltRuleDfas& Prebuilt() {
  static const PrebuiltRuleDfas* const prebuilt = [] {
    RuleDfaCache built;
    for (bool any_whitespace : {true, false}) {
      for (bool plain_integers : {true, false}) {
        json_schema::JsonSchemaOptions options;
        options.any_whitespace = any_whitespace;
        options.plain_integers = plain_integers;
        Grammar g = ParseEbnf(json_schema::JsonLexicalRulesEbnf(options), "root");
        NormalizeGrammar(&g);
        GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &built);
      }
    }
    return new PrebuiltRuleDfas(built);
  }();
  return *prebuilt;
}

Grammar Normalized(Grammar g, const Limits& limits) {
  // Whatever built the grammar, no recursive pass below may see an expression deeper than the limit.
  CheckNestingDepth(g, NestingDepth(limits));
  NormalizeGrammar(&g);
  return g;
}
}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenizerInfo> tok,
                                 std::shared_ptr<CrossGrammarCache> rule_cache, const Limits& limits)
    : fence_(rule_cache ? rule_cache->Fence() : CrossGrammarCache::Generations{}),
      limits_(limits),
      grammar_(Normalized(std::move(grammar), limits_)),
      fsm_(GrammarFsm::Build(grammar_, limits_.max_automaton_states, rule_cache ? &rule_cache->automata : nullptr,
                             fence_.automata, limits_.max_subset_members, &Prebuilt())),
      tok_(std::move(tok)),
      rule_cache_(std::move(rule_cache)),
      start_state_(fsm_.RuleStart(fsm_.Root())),
      dispatch_watch_(grammar_, fsm_) {
  // Token elements name tokens of this vocabulary by id (grammar.h; a stop token ends the output and cannot be
  // one). The token triggers of a TagDispatch must be special tokens: its free text is text, so a text token there
  // would be read as free text too, where a token trigger means "this token always dispatches" (a TokenTagDispatch
  // reads its free text as tokens, so any token may trigger there).
  std::vector<int32_t> dispatch_tokens;
  for (const Expr& e : grammar_.exprs) {
    if (e.kind == ExprKind::kToken && e.min == kBudgetGateId) has_budget_gates_ = true;
    if (e.kind == ExprKind::kToken && e.min != kBudgetGateId) token_elements_.push_back(e.min);
    if (e.kind == ExprKind::kExcludeToken) reads_any_token_ = true;
    if (e.kind == ExprKind::kTagDispatch) {
      reads_any_token_ = reads_any_token_ || e.token_free_text;
      for (size_t i = 0; i < e.children.size(); ++i) {
        const Expr& c = grammar_.exprs[e.children[i]];
        const int32_t id = TokenSentinelId(static_cast<int32_t>(i) < e.min ? grammar_.exprs[c.children[0]].bytes : c.bytes);
        if (id < 0) continue;
        token_elements_.push_back(id);
        if (!e.token_free_text) dispatch_tokens.push_back(id);
      }
    }
  }
  XG_USER_CHECK(!reads_any_token_ || tok_->NumTokens() <= kMaxTokenElementId + 1)
      << "free text over tokens (ExcludeToken(...), TokenTagDispatch(...)) needs token ids below "
      << kMaxTokenElementId + 1 << "; this vocabulary has " << tok_->NumTokens() << " tokens";
  for (int32_t id : dispatch_tokens) {
    XG_USER_CHECK(id >= tok_->NumTokens() || !tok_->MatchesText(id))
        << "token " << id << " ('" << EscapeBytes(tok_->Token(id).substr(0, 40)) << "') is a text token: the token "
        << "triggers and excludes of TagDispatch(...) must be special tokens (its free text is text; TokenTagDispatch(...) "
        << "reads tokens)";
  }
  std::sort(token_elements_.begin(), token_elements_.end());
  token_elements_.erase(std::unique(token_elements_.begin(), token_elements_.end()), token_elements_.end());
  for (int32_t id : token_elements_) {
    XG_USER_CHECK(id < tok_->NumTokens()) << "Token id " << id << " in the grammar is out of the vocabulary range [0, "
                                          << tok_->NumTokens() << ")";
    XG_USER_CHECK(!std::binary_search(tok_->StopIds().begin(), tok_->StopIds().end(), id))
        << "Token(" << id << ") names a stop token: it ends the output and cannot be a token element";
  }
  entries_.reset(new std::atomic<const TokenMaskEntry*>[fsm_.NumStates()]);
  for (int32_t s = 0; s < fsm_.NumStates(); ++s) entries_[s].store(nullptr, std::memory_order_relaxed);
  held_.resize(fsm_.NumStates());
  uncertain_.resize(fsm_.NumStates());
}

CompiledGrammar::~CompiledGrammar() = default;

namespace {

// Sets bits [lo, hi) of a packed bitmask.
void SetBitRange(uint32_t* words, int64_t lo, int64_t hi) {
  while (lo < hi && (lo & 31)) words[lo >> 5] |= 1u << (lo & 31), ++lo;
  for (; lo + 32 <= hi; lo += 32) words[lo >> 5] = ~0u;
  while (lo < hi) words[lo >> 5] |= 1u << (lo & 31), ++lo;
}

}  // namespace

void CompiledGrammar::OrSentinelTokens(int32_t state, uint32_t* words) const {
  const int32_t digits = fsm_.Next(state, 0xFF);
  if (digits < 0) return;
  const int64_t num_tokens = tok_->NumTokens();
  // free(q, k): every k digits from q lead on, all through one state per level (a subtree without excluded ids:
  // the chain of fsm/sentinel_digits.h), so its ids are one range of bits.
  auto free = [&](int32_t q, int k) {
    for (int level = k; level > 0; --level) {
      const int32_t next = fsm_.Next(q, kFirstReservedByte);
      if (next < 0) return false;
      for (int c = 1; c < 8; ++c)
        if (fsm_.Next(q, kFirstReservedByte + c) != next) return false;
      q = next;
    }
    return true;
  };
  // Depth-first over the digits (most significant first); ids at or past the vocabulary's end are cut off.
  auto walk = [&](auto&& self, int32_t q, int depth, int64_t prefix) -> void {
    const int rest = kSentinelDigits - depth;  // digits still to read from q
    const int64_t lo = prefix << (3 * rest);
    if (lo >= num_tokens) return;
    if (free(q, rest)) {
      SetBitRange(words, lo, std::min<int64_t>(num_tokens, (prefix + 1) << (3 * rest)));
      return;
    }
    for (int c = 0; c < 8; ++c) {
      const int32_t next = fsm_.Next(q, kFirstReservedByte + c);
      if (next >= 0) self(self, next, depth + 1, prefix * 8 + c);
    }
  };
  walk(walk, digits, 0, 0);
}

const StructuralHasher& CompiledGrammar::Hasher() const {
  std::call_once(hasher_once_, [&] {
    hasher_owner_ = std::make_unique<const StructuralHasher>(fsm_, &rule_cache_->structures, fence_.structures);
    hasher_.store(hasher_owner_.get(), std::memory_order_release);
  });
  return *hasher_owner_;
}

const TokenMaskEntry& CompiledGrammar::Entry(int32_t state) const {
  const TokenMaskEntry* e = entries_[state].load(std::memory_order_acquire);
  if (e) return *e;
  XG_ICHECK(fsm_.HasBytes(state)) << "mask entry asked for non-scannable state " << state;
  std::lock_guard<std::mutex> lock(stripes_[state % kStripes]);
  e = entries_[state].load(std::memory_order_acquire);
  if (e) return *e;
  FillWorkBudget budget(limits_.max_fill_work);  // within a fill, the fill's budget (this one is a no-op)
  auto build = [&] {
    // CPU time of this thread, so the figure does not depend on what else the machine runs.
    auto cpu_us = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
    };
    double t0 = cpu_us();
    auto built = std::make_shared<TokenMaskEntry>(WalkTokenMaskEntry(fsm_, *tok_, state, &loop_slices_));
    built->build_us = static_cast<float>(cpu_us() - t0);
    return std::shared_ptr<const TokenMaskEntry>(std::move(built));
  };
  std::shared_ptr<const TokenMaskEntry> entry;
  auto entry_bytes = [](const TokenMaskEntry& v) {
    return static_cast<int64_t>(v.MemoryBytes() + sizeof(StructuralKey) + 64);  // + key and map node
  };
  // A literal's entry (a property or tool name, most states of a tool-calling grammar) costs a few
  // binary searches, less than its structural key: it is built first, and keyed by the bytes it read
  // (so shared, and counted, like every other entry in the rule-level cache; no hasher needed).
  thread_local std::string literal_read;
  std::optional<TokenMaskEntry> literal = BuildLiteralMaskEntry(fsm_, *tok_, state, &literal_read);
  // Any other entry of the start state is built for this grammar alone: its forward closure is the
  // whole root rule, so only a grammar with this structure has its key, and such a grammar meets
  // this one in the grammar-level cache. Keying it would also make the first mask wait for the keys
  // of every state of the root rule (and for the hasher).
  const bool keyed = rule_cache_ && state != start_state_;
  if (literal && rule_cache_) {
    entry = rule_cache_->entries.GetOrCompute(
        LiteralKey(literal_read),
        [&] { return std::make_shared<const TokenMaskEntry>(std::move(*literal)); }, entry_bytes, fence_.entries);
  } else if (literal) {
    entry = std::make_shared<const TokenMaskEntry>(std::move(*literal));
    private_bytes_.fetch_add(entry->MemoryBytes(), std::memory_order_relaxed);
  } else if (keyed) {
    entry = rule_cache_->entries.GetOrCompute(Hasher().KeyOf(state), build, entry_bytes, fence_.entries);
  } else {
    entry = build();
    private_bytes_.fetch_add(entry->MemoryBytes(), std::memory_order_relaxed);
  }
  // Refining costs a walk of the uncertain tokens. A state that leaves most of the vocabulary
  // uncertain is an item that completes after one character (a string's character inside a counted
  // repetition), whose runs continue in the parent: refining it removed nothing and cost a walk of
  // the vocabulary per grammar. Such a list is kept whole; the context entries resolve it exactly.
  if (TokenMaskEntry::ManyUncertain(entry->uncertain.size(), tok_->NumSorted())) {
    uncertain_[state] = entry->uncertain;
  } else {
    uncertain_[state] = RefineUncertain(fsm_, *tok_, state, entry->uncertain);
  }
  private_bytes_.fetch_add(uncertain_[state].capacity() * sizeof(int32_t), std::memory_order_relaxed);
  entry_bytes_.fetch_add(entry->MemoryBytes() + uncertain_[state].capacity() * sizeof(int32_t),
                         std::memory_order_relaxed);
  built_.fetch_add(1, std::memory_order_relaxed);
  held_[state] = entry;
  entries_[state].store(entry.get(), std::memory_order_release);
  return *entry;
}

const ContextMaskEntry& CompiledGrammar::ContextEntry(int32_t state, const std::vector<int32_t>& parents) const {
  thread_local std::vector<int32_t> key;
  key.clear();
  key.push_back(state);
  key.insert(key.end(), parents.begin(), parents.end());
  {
    std::shared_lock<std::shared_mutex> lock(context_mu_);
    auto it = context_.find(key);
    if (it != context_.end()) return *it->second;
  }
  FillWorkBudget budget(limits_.max_fill_work);  // within a fill, the fill's budget (this one is a no-op)
  auto built = std::make_unique<ContextMaskEntry>(BuildContextMaskEntry(
      fsm_, *tok_, state, parents, Uncertain(state), &loop_slices_,
      // The entry's bitset holds exactly Uncertain(state) when that list was kept unrefined.
      Entry(state).uncertain_bits.empty() ? nullptr : &Entry(state).uncertain_bits));
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  auto [it, inserted] = context_.emplace(key, std::move(built));
  if (inserted) {
    const size_t bytes = it->second->MemoryBytes() + key.size() * 4 + 64;
    entry_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    private_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  return *it->second;
}

int32_t CompiledGrammar::NumContextEntries() const {
  std::shared_lock<std::shared_mutex> lock(context_mu_);
  return static_cast<int32_t>(context_.size());
}

int32_t CompiledGrammar::NumScannableStates() const {
  int32_t n = 0;
  for (int32_t s = 0; s < fsm_.NumStates(); ++s) n += fsm_.HasBytes(s);
  return n;
}

void CompiledGrammar::BuildAllMasks(int num_threads) const {
  std::vector<int32_t> todo;
  for (int32_t s = 0; s < fsm_.NumStates(); ++s)
    if (fsm_.HasBytes(s)) todo.push_back(s);
  ThreadPool::Global().ParallelFor(todo.size(), num_threads, [&](size_t i) { Entry(todo[i]); });
}

size_t CompiledGrammar::OwnBytes() const {
  return sizeof(*this) + fsm_.MemoryBytes() + loop_slices_.HeapBytes() + grammar_.exprs.size() * sizeof(Expr) +
         fsm_.NumStates() * (sizeof(void*) + sizeof(std::shared_ptr<const TokenMaskEntry>)) + (hasher() ? hasher()->MemoryBytes() : 0) +
         private_bytes_.load(std::memory_order_relaxed);
}

size_t CompiledGrammar::MemoryBytes() const {
  // entry_bytes_ counts every entry referenced; the shared ones are those not counted as private.
  return OwnBytes() + entry_bytes_.load(std::memory_order_relaxed) - private_bytes_.load(std::memory_order_relaxed);
}

}  // namespace xg
