// Recursive-descent parser for the EBNF dialect described in ebnf_parser.h. Rule references are
// collected by name during parsing and resolved once all rules are known, so rules may be used
// before they are defined. Each error names the line and column and shows the line.
#include "frontends/ebnf_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "automata/codepoint_dfa.h"
#include "frontends/regex.h"
#include "grammar/nesting_depth.h"
#include "support/check.h"
#include "support/stack_guard.h"
#include "support/utf8.h"

// Functions kept out of the parser's recursive path (see ParsePrimary).
#if defined(__GNUC__) || defined(__clang__)
#define XG_PARSER_OUT_OF_LINE __attribute__((noinline))
#else
#define XG_PARSER_OUT_OF_LINE
#endif

namespace xg {
namespace {

constexpr int32_t kMaxRepeatBound = 1 << 20;

class EbnfParser {
 public:
  EbnfParser(const std::string& text, const Limits& limits)
      : s_(text), limits_(limits), nesting_limit_(NestingDepth(limits)) {}

  Grammar Parse(const std::string& root_name) {
    // A node count from the text's length (an estimate, not a bound), so the usual grammar does not regrow its arena
    // (a regrowth moves every node: ~5% of parsing a JSON Schema's grammar): the grammars of JSONSchemaBench's schemas
    // have one node per 5 to 20 bytes (median 7.6). At most 64k nodes up front for a large text (growth amortises).
    g_.exprs.reserve(std::min<size_t>(s_.size() / 5 + 16, size_t{1} << 16));
    size_t check = 0;
    uint32_t cp;
    while (check < s_.size()) {
      if (static_cast<uint8_t>(s_[check]) < 0x80) {  // ASCII, most of any grammar: no decoding
        ++check;
        continue;
      }
      size_t before = check;
      if (!DecodeUtf8(s_, &check, &cp)) {
        pos_ = before;
        Fail("invalid UTF-8 in grammar text");
      }
    }
    SkipSpace();
    XG_USER_CHECK(pos_ < s_.size()) << "EBNF: the grammar is empty (no rules)";
    while (pos_ < s_.size()) {
      ParseRule();
      SkipSpace();
    }
    // Resolve references.
    for (auto& [expr, ref] : pending_refs_) {
      auto it = rule_index_.find(ref.name);
      if (it == rule_index_.end()) {
        pos_ = ref.pos;
        Fail("undefined rule '" + std::string(ref.name) + "'");
      }
      g_.exprs[expr].rule = it->second;
    }
    auto it = rule_index_.find(root_name);
    XG_USER_CHECK(it != rule_index_.end())
        << "EBNF: the root rule '" << root_name << "' is not defined (rules: " << RuleNames() << ")";
    g_.root = it->second;
    NameHelperRules();
    CheckNestingDepth(g_, nesting_limit_);
    return std::move(g_);
  }

 private:
  // xgrammar's `Substring("c0", "c1", ...)`: any contiguous run of the chunks, in order, each whole,
  // the empty run included. Written as one helper rule per chunk, S_i ::= c_i S_{i+1}? (the runs that
  // start at chunk i), and the choice "" | S_0 | ... | S_{n-1}: linear in the chunks, no nesting.
  int32_t ParseSubstringCall() {
    // Its helper rules would be referenced from the lookahead (which the matcher keeps but does not enforce);
    // xgrammar refuses it there too.
    if (in_lookahead_) Fail("Substring should not be in lookahead assertion");
    ++pos_;  // '('
    std::vector<std::string> chunks;
    SkipSpace();
    while (Peek() != ')') {
      if (Peek() != '"' && Peek() != '\'') Fail("Substring(...) takes string literals, as in Substring(\"ab\", \"cd\")");
      std::vector<size_t> ignored;
      std::string chunk = ParseStringLiteral(&ignored);
      if (!chunk.empty()) chunks.push_back(std::move(chunk));  // an empty chunk changes nothing
      EndArgument("Substring");
    }
    ++pos_;
    const int32_t n = static_cast<int32_t>(chunks.size());
    std::vector<int32_t> alternatives = {g_.Add(Expr{})};  // the empty run
    const int32_t first_rule = static_cast<int32_t>(g_.rules.size());
    for (int32_t i = 0; i < n; ++i) {
      g_.rules.push_back(Rule{"", -1, -1});
      helper_rules_.push_back({first_rule + i, "substring_"});
    }
    for (int32_t i = 0; i < n; ++i) {
      std::vector<int32_t> items = {g_.AddBytes(chunks[i])};
      if (i + 1 < n) {
        Expr next;
        next.kind = ExprKind::kRuleRef;
        next.rule = first_rule + i + 1;
        Expr optional;
        optional.kind = ExprKind::kRepeat;
        optional.min = 0;
        optional.max = 1;
        optional.children = {g_.Add(std::move(next))};
        items.push_back(g_.Add(std::move(optional)));
      }
      g_.rules[first_rule + i].body = items.size() == 1 ? items[0] : g_.AddNode(ExprKind::kSequence, items);
      Expr ref;
      ref.kind = ExprKind::kRuleRef;
      ref.rule = first_rule + i;
      alternatives.push_back(g_.Add(std::move(ref)));
    }
    return g_.AddNode(ExprKind::kChoice, alternatives);
  }

  // `AnyOrder(item, item?, item*, separator=expr)` (grammar.h): items are expressions, a trailing
  // `?` or `*` on a whole item is its role (at most once / any number of times) rather than part of
  // the item; `separator=` may come anywhere among the arguments, at most once.
  int32_t ParseAnyOrderCall() {
    const size_t open = pos_;
    ++pos_;  // '('
    Expr node;
    node.kind = ExprKind::kAnyOrder;
    int32_t separator = -1;
    size_t requires_at = std::string::npos;  // where requires= starts, for errors
    std::string requires_text;
    std::vector<int32_t> items;
    SkipSpace();
    while (Peek() != ')') {
      if (AtEnd()) {
        pos_ = open;
        Fail("unbalanced '(' in AnyOrder(...): no matching ')'");
      }
      const size_t arg = pos_;
      if (TakeKeyword("requires")) {
        if (requires_at != std::string::npos) Fail("AnyOrder(...) takes requires= once");
        requires_at = pos_;
        if (Peek() != '"' && Peek() != '\'') Fail("requires= takes a string such as \"2:1 3; 4:1\"");
        requires_text = ParseStringLiteral(nullptr);
        EndArgument("AnyOrder");
        continue;
      }
      if (TakeKeyword("separator")) {
        if (separator >= 0) Fail("AnyOrder(...) takes separator= once");
        ++nesting_;
        separator = ParseChoice();
        --nesting_;
        EndArgument("AnyOrder");
        continue;
      }
      ++nesting_;
      int32_t item = ParseChoice();
      --nesting_;
      uint8_t role = kAnyOrderOnce;
      const Expr& e = g_.exprs[item];
      if (e.kind == ExprKind::kRepeat && e.min == 0 && (e.max == 1 || e.max == Expr::kUnbounded)) {
        role = e.max == 1 ? kAnyOrderOptional : kAnyOrderRepeated;
        item = e.children[0];
      }
      if (g_.exprs[item].kind == ExprKind::kEmpty || (g_.exprs[item].kind == ExprKind::kBytes && g_.exprs[item].bytes.empty())) {
        pos_ = arg;
        Fail("an AnyOrder(...) item must not be empty");
      }
      items.push_back(item);
      node.roles.push_back(role);
      EndArgument("AnyOrder");
    }
    ++pos_;
    if (items.empty()) {
      pos_ = open;
      Fail("AnyOrder(...) needs at least one item");
    }
    if (requires_at != std::string::npos) {
      const size_t end = pos_;
      pos_ = requires_at;  // errors point at the requires= string
      node.implies = ParseAnyOrderImplies(requires_text, node.roles);
      pos_ = end;
    }
    node.children.push_back(separator >= 0 ? separator : g_.Add(Expr{}));
    node.children.insert(node.children.end(), items.begin(), items.end());
    return g_.Add(std::move(node));
  }

  // xgrammar's `TagDispatch(("trigger", rule), ..., loop_after_dispatch=true, excludes=("x", ...))` (grammar.h):
  // free text in which each trigger, wherever it completes, dispatches to its rule; an exclude may not occur in
  // the free text. Pairs come first; the named arguments follow, each at most once, in any order.
  int32_t ParseTagDispatchCall(bool token_level) {
    const char* builtin = token_level ? "TokenTagDispatch" : "TagDispatch";
    const size_t open = pos_;
    ++pos_;  // '('
    std::vector<int32_t> pairs, excludes;
    std::vector<std::string> triggers;
    std::vector<std::pair<std::string, size_t>> exclude_texts;  // (text, where written)
    bool loop = true, loop_seen = false, excludes_seen = false;
    SkipSpace();
    while (Peek() != ')') {
      if (AtEnd()) {
        pos_ = open;
        Fail(std::string("unbalanced '(' in ") + builtin + "(...): no matching ')'");
      }
      if (TakeKeyword("loop_after_dispatch")) {
        if (loop_seen) Fail(std::string(builtin) + "(...) takes loop_after_dispatch= once");
        loop_seen = true;
        if (s_.compare(pos_, 4, "true") == 0 && !IsNameChar(Peek(4))) {
          loop = true, pos_ += 4;
        } else if (s_.compare(pos_, 5, "false") == 0 && !IsNameChar(Peek(5))) {
          loop = false, pos_ += 5;
        } else {
          Fail("loop_after_dispatch= takes true or false");
        }
        EndArgument(builtin);
        continue;
      }
      if (TakeKeyword("excludes")) {
        if (excludes_seen) Fail(std::string(builtin) + "(...) takes excludes= once");
        excludes_seen = true;
        if (Peek() != '(') {
          Fail(token_level ? "excludes= takes a tuple of token ids, as in excludes=(151645,)"
                           : "excludes= takes a tuple of strings, as in excludes=(\"</answer>\", \"\\n\\n\")");
        }
        ++pos_;
        SkipSpace();
        while (Peek() != ')') {
          const size_t at = pos_;
          std::string text;
          if (token_level) {
            text = TokenSentinel(ParseTokenId("an exclude of TokenTagDispatch(...)"));
          } else {
            if (Peek() != '"' && Peek() != '\'') Fail("excludes= takes non-empty string literals");
            text = ParseStringLiteral(nullptr);
            if (text.empty()) {
              pos_ = at;
              Fail("an exclude of TagDispatch(...) must not be empty");
            }
          }
          exclude_texts.push_back({std::move(text), at});
          EndArgument("excludes=");
        }
        ++pos_;
        EndArgument(builtin);
        continue;
      }
      const std::string pair = token_level ? "(token_id, rule)" : "(\"trigger\", rule)";
      if (loop_seen || excludes_seen) {
        Fail(std::string(builtin) + "(...) takes its " + pair + " pairs before loop_after_dispatch= and excludes=");
      }
      if (IsNameStart(Peek())) {
        const size_t at = pos_;
        const std::string name(NameView());
        pos_ = at;
        Fail("unknown argument '" + name + "' of " + builtin + "(...): it takes " + pair + " pairs, "
             "loop_after_dispatch= and excludes=");
      }
      if (Peek() != '(') Fail(std::string("a tag of ") + builtin + "(...) is a pair " + pair);
      ++pos_;
      SkipSpace();
      std::string trigger;
      if (token_level || (Peek() >= '0' && Peek() <= '9')) {  // TagDispatch also takes a special token's id as a trigger
        trigger = TokenSentinel(ParseTokenId(token_level ? "the trigger of a TokenTagDispatch(...) pair"
                                                         : "a token trigger of a TagDispatch(...) pair"));
      } else {
        if (Peek() != '"' && Peek() != '\'') {
          Fail("the trigger of a TagDispatch(...) pair is a non-empty string literal or a token id");
        }
        const size_t trigger_at = pos_;
        trigger = ParseStringLiteral(nullptr);
        if (trigger.empty()) {
          pos_ = trigger_at;
          Fail("the trigger of a TagDispatch(...) pair must not be empty");
        }
      }
      SkipSpace();
      if (Peek() != ',') Fail(std::string("a tag of ") + builtin + "(...) is a pair " + pair + ": expected ','");
      ++pos_;
      SkipSpace();
      const size_t name_pos = pos_;
      if (!IsNameStart(Peek())) Fail(std::string("the second item of a ") + builtin + "(...) pair is a rule name");
      const std::string_view name = NameView();
      Expr ref;
      ref.kind = ExprKind::kRuleRef;
      const int32_t ref_id = g_.Add(std::move(ref));
      pending_refs_.push_back({ref_id, PendingRef{name, name_pos}});
      SkipSpace();
      if (Peek() != ')') Fail(std::string("a tag of ") + builtin + "(...) is a pair " + pair + ": expected ')'");
      ++pos_;
      pairs.push_back(g_.AddNode(ExprKind::kSequence, {g_.AddBytes(trigger), ref_id}));
      triggers.push_back(std::move(trigger));
      EndArgument(builtin);
    }
    ++pos_;
    for (const auto& [text, at] : exclude_texts) {
      for (const std::string& t : triggers) {
        if (t.compare(0, text.size(), text) == 0) {
          pos_ = at;  // as xgrammar: such a trigger could never complete
          if (token_level) Fail("token " + std::to_string(TokenSentinelId(text)) + " is both a trigger and an exclude");
          Fail("the exclude \"" + EscapeBytes(text) + "\" is a prefix of the trigger \"" + EscapeBytes(t) +
               "\" of TagDispatch(...)");
        }
      }
      excludes.push_back(g_.AddBytes(text));
    }
    Expr node;
    node.kind = ExprKind::kTagDispatch;
    node.min = static_cast<int32_t>(pairs.size());
    node.max = loop ? 1 : 0;
    node.token_free_text = token_level;
    node.children = std::move(pairs);
    node.children.insert(node.children.end(), excludes.begin(), excludes.end());
    return g_.Add(std::move(node));
  }

  // `Token(id, ...)`: one of the named special tokens (grammar.h, token elements).
  int32_t ParseTokenCall() {
    const std::vector<int32_t> ids = ParseTokenIdList("Token");
    if (ids.empty()) Fail("Token(...) needs at least one token id");
    std::vector<int32_t> alternatives;
    for (int32_t id : ids) {
      Expr e;
      e.kind = ExprKind::kToken;
      e.min = id;
      alternatives.push_back(g_.Add(std::move(e)));
    }
    return alternatives.size() == 1 ? alternatives[0] : g_.AddNode(ExprKind::kChoice, alternatives);
  }

  // `BudgetSpent()`: the budget gate (grammar.h, kBudgetGateId). Where it may stand is checked with the rule's body
  // (CheckBudgetGates).
  int32_t ParseBudgetSpentCall() {
    const size_t at = pos_ - std::string_view("BudgetSpent").size();  // the name is read, '(' is next
    ++pos_;
    SkipSpace();
    if (Peek() != ')') {
      pos_ = at;
      Fail("BudgetSpent() takes no arguments");
    }
    ++pos_;
    Expr e;
    e.kind = ExprKind::kToken;
    e.min = kBudgetGateId;
    budget_gates_.push_back({g_.Add(std::move(e)), at});
    return budget_gates_.back().first;
  }

  // The budget gates parsed in a rule's body stand in its top-level sequence (of an alternative), where the rule's own
  // automaton reads them, and the rule has a token budget: the matcher opens a gate of a rule whose budget is spent.
  void CheckBudgetGates(int32_t body, int32_t max_tokens) {
    if (budget_gates_.empty()) return;
    std::vector<int32_t> allowed;
    auto top = [&](int32_t e) {
      allowed.push_back(e);
      if (g_.exprs[e].kind == ExprKind::kSequence)
        allowed.insert(allowed.end(), g_.exprs[e].children.begin(), g_.exprs[e].children.end());
    };
    top(body);
    if (g_.exprs[body].kind == ExprKind::kChoice)
      for (int32_t alt : g_.exprs[body].children) top(alt);
    for (const auto& [e, at] : budget_gates_) {
      pos_ = at;
      if (max_tokens <= 0) Fail("BudgetSpent() needs a rule with a token budget (max_tokens=n)");
      if (std::find(allowed.begin(), allowed.end(), e) == allowed.end())
        Fail("BudgetSpent() must be an element of its rule's body (not inside a group or a repetition)");
    }
    budget_gates_.clear();
  }

  // `ExcludeToken(id, ...)`: any one token but the listed ones (grammar.h, token elements); no ids: any token.
  int32_t ParseExcludeTokenCall() {
    const std::vector<int32_t> ids = ParseTokenIdList("ExcludeToken");
    Expr e;
    e.kind = ExprKind::kExcludeToken;
    for (int32_t id : ids) {
      if (!e.ranges.empty() && e.ranges.back().second + 1 == static_cast<uint32_t>(id)) {
        e.ranges.back().second = id;
      } else {
        e.ranges.push_back({static_cast<uint32_t>(id), static_cast<uint32_t>(id)});
      }
    }
    return g_.Add(std::move(e));
  }

  // The token ids of `builtin(id, ...)` at pos_ (on its '('), sorted and unique.
  std::vector<int32_t> ParseTokenIdList(const std::string& builtin) {
    ++pos_;  // '('
    SkipSpace();
    std::vector<int32_t> ids;
    while (Peek() != ')') {
      if (AtEnd()) Fail("unbalanced '(' in " + builtin + "(...): no matching ')'");
      ids.push_back(ParseTokenId(builtin + "(...)"));
      EndArgument(builtin.c_str());
    }
    ++pos_;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

  // A decimal token id at pos_ (0 .. kMaxTokenElementId), for `what`.
  int32_t ParseTokenId(const std::string& what) {
    const size_t at = pos_;
    int64_t v = 0;
    size_t digits = 0;
    while (Peek() >= '0' && Peek() <= '9' && digits < 10) v = v * 10 + (Peek() - '0'), ++pos_, ++digits;
    if (digits == 0) Fail(what + " takes token ids (non-negative integers)");
    if (v > kMaxTokenElementId || (Peek() >= '0' && Peek() <= '9')) {
      pos_ = at;
      Fail("token id out of range in " + what + " (at most " + std::to_string(kMaxTokenElementId) + ")");
    }
    SkipSpace();
    return static_cast<int32_t>(v);
  }

  // `name =` at pos_ (a builtin's keyword argument): consumes it and the space after, or returns false
  // and consumes nothing.
  bool TakeKeyword(const char* name) {
    const size_t n = std::char_traits<char>::length(name);
    if (s_.compare(pos_, n, name) != 0) return false;
    size_t p = pos_ + n;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
    if (p >= s_.size() || s_[p] != '=') return false;
    pos_ = p + 1;
    SkipSpace();
    return true;
  }

  // After a builtin's argument: the ',' before the next one (consumed) or the closing ')' (left).
  void EndArgument(const char* builtin) {
    SkipSpace();
    if (Peek() == ',') {
      ++pos_;
      SkipSpace();
    } else if (Peek() != ')') {
      Fail(std::string("expected ',' or ')' in ") + builtin + "(...)");
    }
  }

  // requires="i: j k; l: m": groups separated by ';', each a 1-based item then the items it requires.
  std::vector<std::pair<int32_t, int32_t>> ParseAnyOrderImplies(const std::string& text,
                                                                const std::vector<uint8_t>& roles) {
    const int32_t n = static_cast<int32_t>(roles.size());
    std::vector<std::pair<int32_t, int32_t>> out;
    size_t i = 0;
    auto skip = [&] {
      while (i < text.size() && text[i] == ' ') ++i;
    };
    auto number = [&]() -> int32_t {
      skip();
      int64_t v = 0;
      const size_t start = i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9' && v <= n) v = v * 10 + (text[i++] - '0');
      if (i == start) Fail("requires=: expected an item number in \"" + text + "\"");
      if (v < 1 || v > n) Fail("requires=: item " + std::to_string(v) + " is not among the " + std::to_string(n) + " items");
      if (roles[v - 1] == kAnyOrderRepeated)
        Fail("requires=: item " + std::to_string(v) + " is repeated ('*'); only items read at most once take part");
      return static_cast<int32_t>(v - 1);
    };
    skip();
    while (i < text.size()) {
      const int32_t from = number();
      skip();
      if (i >= text.size() || text[i] != ':') Fail("requires=: expected ':' after an item number in \"" + text + "\"");
      ++i;
      skip();
      do {
        const int32_t to = number();
        if (to != from) out.push_back({from, to});
        skip();
      } while (i < text.size() && text[i] != ';');
      if (i < text.size()) ++i, skip();
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Names helper rules (Substring's) once every user rule is known, so that no name collides.
  void NameHelperRules() {
    std::unordered_map<std::string_view, int32_t> next;  // per prefix, the next number to try
    for (const auto& [r, prefix] : helper_rules_) {
      int32_t& k = next[prefix];
      std::string name;
      do {
        name = std::string(prefix) + std::to_string(k++);
      } while (rule_index_.count(name));
      g_.rules[r].name = name;
      rule_index_[helper_names_.emplace_back(std::move(name))] = r;
    }
  }

  struct PendingRef {
    std::string_view name;  // into s_
    size_t pos;
  };

  [[noreturn]] XG_PARSER_OUT_OF_LINE void Fail(const std::string& msg) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    size_t line_end = s_.find('\n', line_start);
    if (line_end == std::string::npos) line_end = s_.size();
    // The quoted line, kept printable and valid UTF-8 (control characters and invalid bytes show
    // as '?'); the column counts the characters shown before the error position.
    std::string excerpt;
    size_t col = 1;
    // A long line (generated grammars are often one line) is shown from up to 60 bytes before the
    // error, up to 100 bytes; the column still counts from the line's start, the caret from the cut.
    constexpr size_t kBefore = 60, kShown = 100;
    size_t cut = line_start, caret_from = 1;
    bool cut_seen = false;
    if (line_end - line_start > kShown && pos_ > line_start + kBefore) {
      cut = pos_ - kBefore;
      while (cut > line_start && (static_cast<uint8_t>(s_[cut]) & 0xC0) == 0x80) --cut;  // a character's start
    }
    const size_t shown_end = std::min(line_end, cut + kShown);
    for (size_t i = line_start; i < line_end;) {
      if (i >= cut && !cut_seen) caret_from = col, cut_seen = true;
      if (i >= shown_end) break;
      size_t j = i;
      uint32_t cp;
      const bool shown = i >= cut;
      if (DecodeUtf8(s_, &j, &cp) && j <= line_end && (cp >= 0x20 || cp == '\t')) {
        if (shown) excerpt.append(s_, i, j - i);
      } else {
        if (shown) excerpt += '?';
        j = i + 1;
      }
      if (i < pos_) ++col;
      i = j;
    }
    if (cut > line_start) excerpt = "..." + excerpt;
    std::string caret(col - caret_from + (cut > line_start ? 3 : 0), ' ');
    XG_USER_ERROR() << "EBNF parser error at line " << line << ", column " << col << ": " << msg << "\n  " << excerpt
                    << "\n  " << caret << "^";
  }

  std::string RuleNames() const {
    std::string out;
    for (auto& r : g_.rules) out += (out.empty() ? "" : ", ") + r.name;
    return out;
  }

  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }

  void SkipSpace() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // xgrammar's builtin macros; any other `name(` is a reference followed by a group.
  static bool IsBuiltinName(std::string_view n) {
    return n == "TagDispatch" || n == "Regex" || n == "Substring" || n == "Lookahead" || n == "JSONSchema" ||
           n == "Repeat";
  }

  // ASCII only, whatever the process locale (std::isalpha would follow it).
  static bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
  static bool IsNameStart(char c) { return IsAsciiLetter(c) || c == '_'; }
  static bool IsNameChar(char c) {
    return IsAsciiLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  }

  std::string ParseName() { return std::string(NameView()); }
  // ParseName as a view into the text (which outlives the parser's tables).
  std::string_view NameView() {
    size_t start = pos_;
    SkipName();
    return std::string_view(s_).substr(start, pos_ - start);
  }
  // ParseName without the copy.
  void SkipName() {
    size_t start = pos_;
    if (!IsNameStart(Peek())) Fail("expected a rule name");
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    // A trailing '.' belongs to the name only if followed by a name char (GBNF allows a.b).
    while (pos_ > start && s_[pos_ - 1] == '.') --pos_;
  }

  // A rule's attributes (ParseRuleAttributes): the first-match count (0 for lazy, n for max_chars=n, the
  // smaller when both; -1 for none) and the temperature (-1 for none).
  struct RuleAttributes {
    int64_t first_match_after = -1;
    float temperature = -1.0f;
    std::string capture;
    int32_t max_tokens = 0;
    std::string marker_body, marker, marker_flags, stop_capture;  // Rule's fields of the same names
    bool hide_marker = false;
  };

  // xgrammar's error for an attribute given twice (`attr` at offset `at`).
  void FailIfRepeated(bool seen, size_t at, const std::string& attr) {
    if (!seen) return;
    pos_ = at;
    Fail(attr + " attribute is specified more than once");
  }

  // A capture label (`capture="..."`, `stop_capture="..."`) at pos_, checked as xgrammar checks capture names.
  std::string ParseCaptureLabel(const std::string& attr) {
    if (Peek() != '"') Fail("expected a string after " + attr + "= (the capture's name)");
    const size_t label_at = pos_;
    std::string label = ParseStringLiteral(nullptr);
    const size_t end = pos_;
    pos_ = label_at;
    if (label.empty()) Fail("capture name must not be empty");
    for (char c : label)  // xgrammar's rule for capture names
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
        Fail("capture name must only contain letters, digits, '_', '-' and '.'");
    pos_ = end;
    return label;
  }

  // The marker attributes of a rule (RuleAttributes), checked together once all are read: both regexes given and
  // valid, flags among i, s, u, and hide_marker / stop_capture only with a marker.
  void CheckMarkerAttributes(const RuleAttributes& a, size_t at) {
    const bool any = !a.marker_body.empty() || !a.marker.empty() || !a.marker_flags.empty() || a.hide_marker ||
                     !a.stop_capture.empty();
    if (!any) return;
    pos_ = at;
    if (a.marker.empty() || a.marker_body.empty())
      Fail("marker_body and marker go together (a rule's text split into a body and a marker)");
    for (char f : a.marker_flags)
      if (f != 'i' && f != 's' && f != 'u') Fail(std::string("marker_flags: flag '") + f + "' is not supported");
    for (const std::string* pattern : {&a.marker_body, &a.marker}) {
      try {
        FlagsMatchDfa(*pattern, a.marker_flags, limits_.max_automaton_states, limits_);
      } catch (const RegexError& e) {
        Fail("in the " + std::string(pattern == &a.marker ? "marker" : "marker_body") + " regex at position " +
             std::to_string(e.position()) + ": " + e.description());
      }
    }
  }

  // `name[attr, ...]` at pos_ (on its '['): xgrammar's rule attributes. `lazy` (the rule ends as soon as its
  // regular body is complete), `max_chars=n` (... once n characters are read), `temperature=T` (Rule::temperature)
  // `capture` / `capture="label"` (Rule::capture; the label defaults to the rule's name), `max_tokens=n`
  // (Rule::max_tokens) and the marker attributes (Rule::marker and its neighbours) are built; the others are named in
  // the error.
  RuleAttributes ParseRuleAttributes(const std::string& name) {
    ++pos_;  // '['
    bool lazy = false;
    int64_t max_chars = -1;
    float temperature = -1.0f;
    std::string capture;
    int64_t max_tokens = 0;
    std::string marker_body, marker, marker_flags, stop_capture;
    bool hide_marker = false;
    const size_t open_at = pos_ - 1;
    while (true) {
      SkipSpace();
      const size_t at = pos_;
      const std::string attr = IsNameStart(Peek()) ? ParseName() : "";
      if (attr == "marker_body" || attr == "marker" || attr == "marker_flags" || attr == "stop_capture") {
        std::string& value = attr == "marker_body" ? marker_body
                             : attr == "marker"    ? marker
                             : attr == "marker_flags" ? marker_flags
                                                      : stop_capture;
        FailIfRepeated(!value.empty(), at, attr);
        SkipSpace();
        if (Peek() != '=') Fail("expected '=' and a string after " + attr);
        ++pos_;
        SkipSpace();
        if (attr == "stop_capture") {
          value = ParseCaptureLabel(attr);
        } else {
          if (Peek() != '"') Fail("expected a string after " + attr + "=");
          value = ParseStringLiteral(nullptr);
          if (value.empty() && attr != "marker_flags") Fail(attr + " must not be empty");
        }
      } else if (attr == "hide_marker") {
        FailIfRepeated(hide_marker, at, attr);
        hide_marker = true;
      } else if (attr == "max_tokens") {
        FailIfRepeated(max_tokens > 0, at, attr);
        SkipSpace();
        if (Peek() != '=') Fail("expected '=' and a count after max_tokens");
        ++pos_;
        SkipSpace();
        const size_t count_at = pos_;
        max_tokens = ParseAttributeCount("max_tokens");
        if (max_tokens == 0) {
          pos_ = count_at;
          Fail("max_tokens must be positive");
        }
      } else if (attr == "capture") {
        FailIfRepeated(!capture.empty(), at, attr);
        capture = name;
        SkipSpace();
        if (Peek() == '=') {
          ++pos_;
          SkipSpace();
          capture = ParseCaptureLabel("capture");
        }
      } else if (attr == "temperature") {  // checked as xgrammar checks it
        FailIfRepeated(temperature >= 0, at, attr);
        SkipSpace();
        if (Peek() != '=') Fail("expected '=' and a number after temperature");
        ++pos_;
        SkipSpace();
        const size_t number_at = pos_;
        while (!AtEnd() && (std::isalnum(static_cast<unsigned char>(Peek())) || Peek() == '.' || Peek() == '-' ||
                            Peek() == '+'))
          ++pos_;
        const std::string number = s_.substr(number_at, pos_ - number_at);
        char* end = nullptr;
        const double t = std::strtod(number.c_str(), &end);
        pos_ = number_at;
        if (number.empty() || end != number.c_str() + number.size()) Fail("expected a number after temperature=");
        if (!std::isfinite(t) || t < 0 || !std::isfinite(static_cast<float>(t)))
          Fail("temperature must be a finite non-negative number, got " + number);
        temperature = static_cast<float>(t) + 0.0f;  // (-0 reads as 0)
        pos_ += number.size();
      } else if (attr != "lazy" && attr != "max_chars") {
        pos_ = at;
        Fail(attr.empty() ? "expected a rule attribute in '" + name + "[...]'"
                          : "rule attribute '" + attr + "' is not supported (lazy, max_chars, temperature, "
                            "capture, max_tokens and the marker attributes are)");
      } else {
        FailIfRepeated(attr == "lazy" ? lazy : max_chars >= 0, at, attr);
      }
      if (attr == "lazy") {
        lazy = true;
      } else if (attr == "max_chars") {
        SkipSpace();
        if (Peek() != '=') Fail("expected '=' and a count after max_chars");
        ++pos_;
        SkipSpace();
        max_chars = ParseAttributeCount("max_chars");
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != ']') Fail("expected ',' or ']' in the attributes of rule '" + name + "'");
      if (max_tokens > 0 && lazy)
        Fail("max_tokens together with lazy is not supported (a token budget that closes a lazy rule without its "
             "complete body)");
      ++pos_;
      SkipSpace();
      RuleAttributes out{lazy ? 0 : max_chars, temperature, std::move(capture), static_cast<int32_t>(max_tokens),
                         std::move(marker_body), std::move(marker), std::move(marker_flags), std::move(stop_capture),
                         hide_marker};
      const size_t end = pos_;
      CheckMarkerAttributes(out, open_at);
      pos_ = end;
      return out;
    }
  }

  // A count in [0, 2^31) at pos_ (a rule attribute's or a Regex(...) argument's value).
  int64_t ParseAttributeCount(const std::string& what) {
    const size_t at = pos_;
    int64_t n = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      n = n * 10 + (Peek() - '0');
      ++pos_;
      if (n > 2147483647) {
        pos_ = at;
        Fail(what + " must be at most 2147483647");
      }
    }
    if (pos_ == at) Fail("expected a non-negative integer after " + what + "=");
    return n;
  }

  // True if the text at pos_ is `NAME ::=` (the start of the next rule).
  XG_PARSER_OUT_OF_LINE bool AtRuleStart() {
    size_t save = pos_;
    bool ok = false;
    if (IsNameStart(Peek())) {
      SkipName();
      SkipSpace();
      if (Peek() == '[') {  // `name[attrs] ::=`: rule attributes (ParseRuleAttributes), on one line
        size_t close = pos_ + 1;
        char quote = 0;  // inside a string value: a ']' there does not close
        for (; close < s_.size() && s_[close] != '\n' && (quote || s_[close] != ']'); ++close) {
          if (quote && s_[close] == '\\') {
            ++close;
          } else if (s_[close] == '"' || s_[close] == '\'') {
            quote = quote == 0 ? s_[close] : quote == s_[close] ? 0 : quote;
          }
        }
        if (close < s_.size() && s_[close] == ']') {
          pos_ = close + 1;
          SkipSpace();
        }
      }
      ok = s_.compare(pos_, 3, "::=") == 0;
    }
    pos_ = save;
    return ok;
  }

  void ParseRule() {
    size_t name_pos = pos_;
    const std::string_view name_view = NameView();
    const std::string name(name_view);
    SkipSpace();
    const RuleAttributes attributes = Peek() == '[' ? ParseRuleAttributes(name) : RuleAttributes{};
    const int64_t first_match_after = attributes.first_match_after;
    if (s_.compare(pos_, 3, "::=") != 0) Fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    if (rule_index_.count(name_view)) {
      pos_ = name_pos;
      Fail("rule '" + name + "' is defined twice");
    }
    int32_t rule_id = static_cast<int32_t>(g_.rules.size());
    rule_index_[name_view] = rule_id;
    g_.rules.push_back(Rule{name, -1, -1});
    g_.rules.back().temperature = attributes.temperature;
    g_.rules.back().capture = attributes.capture;
    g_.rules.back().max_tokens = attributes.max_tokens;
    g_.rules.back().marker_body = attributes.marker_body;
    g_.rules.back().marker = attributes.marker;
    g_.rules.back().marker_flags = attributes.marker_flags;
    g_.rules.back().stop_capture = attributes.stop_capture;
    g_.rules.back().hide_marker = attributes.hide_marker;
    SkipSpace();
    if (AtEnd() || AtRuleStart()) Fail("rule '" + name + "' has an empty body (write \"\" for the empty string)");
    int32_t body = ParseChoice();
    {
      const size_t after = pos_;
      CheckBudgetGates(body, attributes.max_tokens);
      pos_ = after;
    }
    int32_t lookahead = -1;
    // A trailing "(= ...)" group was parsed as part of the last sequence; ParseChoice leaves it to us
    // via last_lookahead_.
    if (last_lookahead_ >= 0) {
      lookahead = last_lookahead_;
      last_lookahead_ = -1;
    }
    if (first_match_after >= 0) {  // the body's first matches, as an automaton of helper rules
      std::vector<int32_t> states;
      try {
        body = AddFirstMatchExpr(&g_, body, first_match_after, limits_, &states);
      } catch (const LimitError&) {
        throw;
      } catch (const InputError& e) {
        pos_ = name_pos;
        Fail((first_match_after == 0 ? "lazy rule '" : "max_chars rule '") + name + "': " + e.what());
      }
      for (int32_t r : states) helper_rules_.push_back({r, "lazy_"});
    }
    g_.rules[rule_id].body = body;
    g_.rules[rule_id].lookahead = lookahead;
    SkipSpace();
    if (!AtEnd() && !AtRuleStart()) {
      if (Peek() == ')') Fail("unbalanced ')'");
      if (Peek() == ',') Fail("unexpected ',' (commas separate the arguments of a builtin such as AnyOrder(...))");
      Fail("unexpected character; expected '|', a rule body element, or the next rule 'name ::='");
    }
  }

  // The children parsed so far of the choices and sequences being parsed, innermost last: a node's
  // children are pushed above its parent's and taken off when the node is made (one buffer for the whole
  // text instead of a vector per node, most of which would hold one child).
  XG_PARSER_OUT_OF_LINE int32_t MakeNode(ExprKind kind, size_t first) {
    std::vector<int32_t> children(open_children_.begin() + static_cast<std::ptrdiff_t>(first), open_children_.end());
    open_children_.resize(first);
    return g_.AddNode(kind, std::move(children));
  }

  int32_t ParseChoice() {
    const size_t first = open_children_.size();
    const int32_t alt = ParseSequence();
    open_children_.push_back(alt);
    SkipSpace();
    while (Peek() == '|') {
      ++pos_;
      SkipSpace();
      const int32_t next = ParseSequence();
      open_children_.push_back(next);
      SkipSpace();
    }
    if (open_children_.size() - first == 1) {
      open_children_.resize(first);
      return alt;
    }
    return MakeNode(ExprKind::kChoice, first);
  }

  XG_PARSER_OUT_OF_LINE int32_t AddEmpty() { return g_.Add(Expr{}); }

  int32_t ParseSequence() {
    const size_t first = open_children_.size();
    while (true) {
      SkipSpace();
      char c = Peek();
      // (',' ends an argument of a builtin call; anywhere else the caller reports it.)
      if (AtEnd() || c == '|' || c == ')' || c == ',' || AtRuleStart()) break;
      if (c == '(' && Peek(1) == '=') {
        last_lookahead_ = ParseLookahead();
        break;
      }
      const int32_t item = ParsePostfix();
      open_children_.push_back(item);
    }
    const size_t n = open_children_.size() - first;
    if (n == 0) return AddEmpty();
    if (n == 1) {
      const int32_t only = open_children_.back();
      open_children_.resize(first);
      return only;
    }
    return MakeNode(ExprKind::kSequence, first);
  }

  // A lookahead assertion `(= ...)`, which must be the last element of the rule. Out of line, as the error
  // messages below: ParseSequence's frame is on the stack once per level of nesting (see ParsePrimary).
  XG_PARSER_OUT_OF_LINE int32_t ParseLookahead() {
    const size_t la_pos = pos_;
    pos_ += 2;
    SkipSpace();
    in_lookahead_ = true;
    const int32_t la = ParseChoice();
    in_lookahead_ = false;
    SkipSpace();
    if (Peek() != ')') Fail("expected ')' to close the lookahead assertion '(='");
    ++pos_;
    SkipSpace();
    if (nesting_ != 0 || !(AtEnd() || AtRuleStart())) {
      pos_ = la_pos;
      Fail("a lookahead assertion '(= ...)' must come last in a rule, outside any group");
    }
    return la;
  }

  // An element and at most one quantifier. A second quantifier ("a"++, "a"{1,3}{1,3}) is refused as xgrammar and
  // GBNF do: it is far likelier a typo (or a regex habit: `*?` is not lazy here) than a wish to repeat a
  // repetition, which a group says plainly.
  int32_t ParsePostfix() {
    const int32_t e = ParsePrimary();
    return SkipToQuantifier() ? ParseQuantifier(e) : e;
  }

  // The quantifier after element `e` (the parser is at it). Out of line: it is not on the recursion's path.
  XG_PARSER_OUT_OF_LINE int32_t ParseQuantifier(int32_t e) {
    const char c = Peek();
    int32_t mn, mx;
    if (c == '*') {
      mn = 0, mx = Expr::kUnbounded, ++pos_;
    } else if (c == '+') {
      mn = 1, mx = Expr::kUnbounded, ++pos_;
    } else if (c == '?') {
      mn = 0, mx = 1, ++pos_;
    } else {
      ParseBraces(&mn, &mx);
    }
    Expr r;
    r.kind = ExprKind::kRepeat;
    r.children = {e};
    r.min = mn;
    r.max = mx;
    e = g_.Add(std::move(r));
    if (SkipToQuantifier()) FailStackedQuantifier();
    return e;
  }

  [[noreturn]] XG_PARSER_OUT_OF_LINE void FailStackedQuantifier() const {
    Fail(std::string("Expect element, but got ") + Peek() + " (a quantifier cannot follow another; to repeat a " +
         "repetition, group it: (x{1,3}){1,3})");
  }

  // Moves past whitespace when a quantifier follows it ("a" {2,3}); otherwise leaves pos_ where it was.
  bool SkipToQuantifier() {
    const size_t before_space = pos_;
    SkipSpace();
    const char c = Peek();
    if (c == '*' || c == '+' || c == '?' || c == '{') return true;
    pos_ = before_space;
    return false;
  }

  int32_t ParseInt() {
    size_t start = pos_;
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(Peek()))) {
      v = v * 10 + (Peek() - '0');
      if (v > kMaxRepeatBound) Fail("repetition bound too large (the limit is " + std::to_string(kMaxRepeatBound) + ")");
      ++pos_;
    }
    if (pos_ == start) Fail("expected a number in the repetition '{m,n}'");
    return static_cast<int32_t>(v);
  }

  XG_PARSER_OUT_OF_LINE void ParseBraces(int32_t* mn, int32_t* mx) {
    size_t open = pos_;
    ++pos_;
    SkipSpace();
    *mn = ParseInt();
    SkipSpace();
    if (Peek() == '}') {
      *mx = *mn;
    } else if (Peek() == ',') {
      ++pos_;
      SkipSpace();
      if (Peek() == '}') {
        *mx = Expr::kUnbounded;
      } else {
        *mx = ParseInt();
        SkipSpace();
      }
    } else {
      Fail("expected ',' or '}' in the repetition '{m,n}'");
    }
    if (Peek() != '}') Fail("expected '}' to close the repetition '{m,n}'");
    ++pos_;
    if (*mx != Expr::kUnbounded && *mx < *mn) {
      pos_ = open;
      Fail("repetition {" + std::to_string(*mn) + "," + std::to_string(*mx) + "} has max < min");
    }
  }

  // The parser recurses through ParsePrimary once per group (with ParseChoice, ParseSequence and ParsePostfix), so
  // its frame holds only what a group needs; every other branch, and every error message, lives in a function of
  // its own (kept out of line: inlined, their locals would grow each of up to max_nesting_depth frames, which an
  // AddressSanitizer build pads further).
  int32_t ParsePrimary() {
    char c = Peek();
    if (c == '(') {
      size_t open = pos_;
      // The parser recurses once per group: bound it before it can exhaust the stack.
      if (nesting_ >= nesting_limit_) FailNestedTooDeep();
      CheckStackHeadroom("parsing EBNF groups");
      ++pos_;
      ++nesting_;
      SkipSpace();
      int32_t inner = ParseChoice();
      SkipSpace();
      --nesting_;
      if (Peek() != ')') {
        pos_ = open;
        FailUnbalancedGroup();
      }
      ++pos_;
      return inner;
    }
    return ParseAtom(c);
  }

  // A primary other than a group: a string, a class, '.', a builtin call or a rule reference.
  XG_PARSER_OUT_OF_LINE int32_t ParseAtom(char c) {
    if (c == '"' || c == '\'') return ParseString();
    if (c == '[') return ParseClass();
    if (c == '.') {
      ++pos_;
      Expr e;
      e.kind = ExprKind::kCharClass;
      e.ranges = {{0, kMaxCodepoint}};
      return g_.Add(std::move(e));
    }
    if (IsNameStart(c)) {
      size_t name_pos = pos_;
      const std::string_view name = NameView();
      if (Peek() == '(' && name == "Regex") return ParseRegexCall();
      if (Peek() == '(' && name == "Substring") return ParseSubstringCall();
      if (Peek() == '(' && name == "AnyOrder") return ParseAnyOrderCall();
      if (Peek() == '(' && name == "TagDispatch") return ParseTagDispatchCall(false);
      if (Peek() == '(' && name == "TokenTagDispatch") return ParseTagDispatchCall(true);
      if (Peek() == '(' && name == "Token") return ParseTokenCall();
      if (Peek() == '(' && name == "BudgetSpent") return ParseBudgetSpentCall();
      if (Peek() == '(' && name == "ExcludeToken") return ParseExcludeTokenCall();
      if (Peek() == '(' && IsBuiltinName(name)) {
        pos_ = name_pos;
        Fail("builtin '" + std::string(name) + "(...)' is not supported by this version of xg2jax");
      }
      Expr e;
      e.kind = ExprKind::kRuleRef;
      int32_t id = g_.Add(std::move(e));
      pending_refs_.push_back({id, PendingRef{name, name_pos}});
      return id;
    }
    if (c == ']') Fail("unbalanced ']'");
    if (c == '}') Fail("unbalanced '}'");
    if (c == '*' || c == '+' || c == '?' || c == '{') Fail(std::string("quantifier '") + c + "' has nothing to repeat");
    if (c == ':') Fail("unexpected '::=' (a rule name is missing before it)");
    Fail(std::string("unexpected character '") + EscapeBytes(std::string(1, c)) + "'");
  }

  [[noreturn]] XG_PARSER_OUT_OF_LINE void FailNestedTooDeep() const {
    Fail("groups nest more than " + std::to_string(nesting_limit_) + " deep (Limits.max_nesting_depth)");
  }
  [[noreturn]] XG_PARSER_OUT_OF_LINE void FailUnbalancedGroup() const { Fail("unbalanced '(': no matching ')'"); }

  uint32_t ParseHex(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      char c = Peek();
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        Fail("expected " + std::to_string(n) + " hex digits in the escape");
      }
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  // Parses one (possibly escaped) code point at pos_. `in_class` enables \] \[ \- \^.
  uint32_t ParseCodepoint(bool in_class, bool* was_escape) {
    *was_escape = false;
    if (Peek() != '\\') {
      uint32_t cp;
      size_t p = pos_;
      if (!DecodeUtf8(s_, &p, &cp)) Fail("invalid UTF-8");
      pos_ = p;
      return cp;
    }
    size_t esc = pos_;
    ++pos_;
    *was_escape = true;
    char c = Peek();
    ++pos_;
    uint32_t cp;
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case '0': return 0;
      case 'f': return '\f';
      case 'v': return '\v';
      case 'b': return '\b';
      case 'e': return 0x1B;
      case 'a': return 0x07;
      case '"': case '\'': case '\\': case '/': return static_cast<uint8_t>(c);
      case 'x': cp = ParseHex(2); break;
      case 'u': cp = ParseHex(4); break;
      case 'U': cp = ParseHex(8); break;
      default:
        if (in_class && (c == ']' || c == '[' || c == '-' || c == '^')) return static_cast<uint8_t>(c);
        pos_ = esc;
        Fail(std::string("unknown escape '\\") + (c ? EscapeBytes(std::string(1, c)) : std::string("<end>")) + "'");
    }
    if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      pos_ = esc;
      Fail("escape is not a valid Unicode scalar value");
    }
    return cp;
  }

  int32_t ParseString() {
    std::string bytes = ParseStringLiteral(nullptr);
    if (bytes.empty()) return g_.Add(Expr{});
    return g_.AddBytes(std::move(bytes));
  }

  // The decoded UTF-8 of the string literal at pos_. With `sources`, also the text offset where
  // each decoded code point was written, plus one final entry for the closing quote.
  std::string ParseStringLiteral(std::vector<size_t>* sources) {
    char quote = Peek();
    size_t open = pos_;
    ++pos_;
    std::string bytes;
    while (true) {
      if (AtEnd() || Peek() == '\n') {
        pos_ = open;
        Fail("unterminated string literal");
      }
      if (sources) sources->push_back(pos_);
      if (Peek() == quote) {
        ++pos_;
        break;
      }
      bool esc;
      AppendUtf8(ParseCodepoint(false, &esc), &bytes);
    }
    return bytes;
  }

  // xgrammar's `Regex("pattern")`: the literal's EBNF escapes are decoded first, then the pattern is
  // compiled by the regex front end, with `.` matching any code point as in xgrammar's macro.
  // Regex errors point at the offending pattern character in the grammar text.
  int32_t ParseRegexCall() {
    ++pos_;  // '('
    SkipSpace();
    if (Peek() != '"' && Peek() != '\'') Fail("Regex(...) takes a string literal pattern, as in Regex(\"[a-z]+\")");
    std::vector<size_t> sources;
    std::string pattern = ParseStringLiteral(&sources);
    SkipSpace();
    // Keyword arguments: json_string=true|false (xgrammar's: the match spelled as JSON string content),
    // flags="..." (xgrammar's: i = ASCII case folding, s = `.` matches newlines, u = no effect; with
    // flags, `.` excludes only "\n"), search=true|false (xg2jax's: JSON Schema `pattern` semantics,
    // an unanchored search with ECMAScript's `.`, which excludes line terminators) and lazy=true|false
    // (xg2jax's: only the first matches, the text ending as soon as the pattern is complete; the form
    // Lark's `[lazy]` rules and `suffix` / `stop` markers take), max_chars=n (xgrammar's: the first matches once n
    // code points are read) and budget_close="B" (xg2jax's, with lazy=true and max_chars=n: once n code points are
    // read the text may also end where the whole of it matches B; Lark's max_chars on a suffix / stop rule, whose
    // budget closes the body without its marker) and before_first="P" (xg2jax's: the matches none of whose proper
    // prefixes P matches; the body of a suffix rule that its token budget closes, which cannot run past the first
    // marker).
    bool json_string = false, search = false, lazy = false, has_flags = false, ignore_case = false, dot_all = false;
    int64_t max_chars = -1;
    size_t lazy_at = 0, budget_at = 0;
    std::optional<std::string> budget_close, before_first;
    size_t before_at = 0;
    while (Peek() == ',') {
      ++pos_;
      SkipSpace();
      size_t arg = pos_;
      std::string name = IsNameStart(Peek()) ? ParseName() : "";
      if (name != "json_string" && name != "search" && name != "flags" && name != "lazy" && name != "max_chars" &&
          name != "budget_close" && name != "before_first") {
        pos_ = arg;
        Fail(name.empty() ? std::string("Regex(...) expects name=value arguments after the pattern")
                          : "Regex(...) argument '" + name +
                                "' is not supported (json_string, search, flags, lazy, max_chars, budget_close and "
                                "before_first are)");
      }
      if (name == "lazy" || name == "max_chars") lazy_at = arg;
      SkipSpace();
      if (Peek() != '=') Fail("expected '=' after Regex(...) argument '" + name + "'");
      ++pos_;
      SkipSpace();
      if (name == "flags") {
        if (Peek() != '"' && Peek() != '\'') Fail("Regex(...) argument 'flags' takes a string such as \"is\"");
        const size_t flags_at = pos_;
        std::vector<size_t> ignored;
        const std::string flags = ParseStringLiteral(&ignored);
        for (char f : flags) {
          if (f != 'i' && f != 's' && f != 'u') {
            pos_ = flags_at;
            Fail(std::string("Regex(...) flag '") + f + "' is not supported (i, s and u are)");
          }
          ignore_case = ignore_case || f == 'i';
          dot_all = dot_all || f == 's';
        }
        has_flags = true;
        SkipSpace();
        continue;
      }
      if (name == "max_chars") {
        max_chars = ParseAttributeCount("max_chars");
        SkipSpace();
        continue;
      }
      if (name == "budget_close" || name == "before_first") {
        if (Peek() != '"' && Peek() != '\'') Fail("Regex(...) argument '" + name + "' takes a string (a regex)");
        std::vector<size_t> ignored;
        std::string other = ParseStringLiteral(&ignored);
        try {  // its own syntax errors point at it (those of the pattern at the pattern)
          regex::ParseRegexPattern(other, {{0, kMaxCodepoint}});
        } catch (const RegexError& e) {
          pos_ = arg;
          Fail("in the Regex(...) " + name + " pattern at position " + std::to_string(e.position()) + ": " +
               e.description());
        }
        (name == "budget_close" ? budget_at : before_at) = arg;
        (name == "budget_close" ? budget_close : before_first) = std::move(other);
        SkipSpace();
        continue;
      }
      size_t value_at = pos_;
      std::string value = IsNameStart(Peek()) ? ParseName() : "";
      if (value != "true" && value != "false") {
        pos_ = value_at;
        Fail("Regex(...) argument '" + name + "' takes true or false");
      }
      (name == "json_string" ? json_string : name == "search" ? search : lazy) = value == "true";
      SkipSpace();
    }
    if (Peek() != ')') Fail("expected ')' to close Regex(...)");
    ++pos_;
    if (before_first && (lazy || max_chars >= 0 || search || json_string || budget_close)) {
      pos_ = before_at;
      Fail("Regex(...) argument 'before_first' cannot be combined with lazy, max_chars, budget_close, search or "
           "json_string");
    }
    if (budget_close && (!lazy || max_chars < 0)) {
      pos_ = budget_at;
      Fail("Regex(...) argument 'budget_close' needs lazy=true and max_chars=n (the budget that closes the text)");
    }
    const int64_t first_match_after = budget_close ? max_chars : lazy ? 0 : max_chars;
    if (first_match_after >= 0 && (search || json_string)) {
      pos_ = lazy_at;
      Fail(std::string("Regex(...) arguments 'lazy' and 'max_chars' cannot be combined with ") +
           (search ? "search" : "json_string"));
    }
    try {
      const RegexDot dot = dot_all ? RegexDot::kAnyCodePoint
                           : has_flags ? RegexDot::kNoNewline
                           : search ? RegexDot::kNoLineTerminators
                                    : RegexDot::kAnyCodePoint;
      if (before_first) {
        std::vector<int32_t> states;
        const int32_t start = AddRegexBefore(&g_, pattern, *before_first, dot, ignore_case, limits_, &states);
        for (int32_t r : states) helper_rules_.push_back({r, "lazy_"});
        return start;
      }
      if (first_match_after >= 0) {
        std::vector<int32_t> states;
        const int32_t start = AddFirstMatchRegex(&g_, pattern, dot, ignore_case, first_match_after, limits_, &states,
                                                 budget_close ? &*budget_close : nullptr);
        for (int32_t r : states) helper_rules_.push_back({r, "lazy_"});
        return start;
      }
      return AddRegex(&g_, pattern, search ? RegexMode::kSearch : RegexMode::kFullMatch, dot,
                      json_string ? RegexSpelling::kJsonString : RegexSpelling::kRaw, ignore_case);
    } catch (const RegexError& e) {
      pos_ = sources[std::min(e.position(), sources.size() - 1)];
      Fail("in the Regex(...) pattern at position " + std::to_string(e.position()) + ": " + e.description());
    }
  }

  int32_t ParseClass() {
    size_t open = pos_;
    ++pos_;
    Expr e;
    e.kind = ExprKind::kCharClass;
    if (Peek() == '^') {
      e.negated = true;
      ++pos_;
    }
    while (true) {
      if (AtEnd() || Peek() == '\n') {
        pos_ = open;
        Fail("unterminated character class '['");
      }
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      size_t item = pos_;
      bool esc;
      uint32_t lo = ParseCodepoint(true, &esc), hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != '\0') {
        ++pos_;
        hi = ParseCodepoint(true, &esc);
        if (hi < lo) {
          pos_ = item;
          Fail("character class range is reversed (start > end)");
        }
      }
      e.ranges.push_back({lo, hi});
    }
    if (e.ranges.empty()) {
      pos_ = open;
      Fail("empty character class '[]' matches nothing");
    }
    if (CharClassIsEmpty(e.ranges, e.negated)) {
      pos_ = open;
      Fail("character class matches no character");
    }
    return g_.Add(std::move(e));
  }

  const std::string& s_;
  const Limits& limits_;
  const int32_t nesting_limit_;  // NestingDepth(limits_), read once
  std::vector<int32_t> open_children_;  // see MakeNode
  size_t pos_ = 0;
  int nesting_ = 0;
  int32_t last_lookahead_ = -1;
  bool in_lookahead_ = false;  // parsing the body of a lookahead assertion '(= ...)'
  Grammar g_;
  // Rule name -> id; the names are views into s_, or into helper_names_ for the names NameHelperRules makes.
  std::unordered_map<std::string_view, int32_t> rule_index_;
  std::deque<std::string> helper_names_;
  // Rules a builtin added, with their name's prefix (named last, see NameHelperRules).
  std::vector<std::pair<int32_t, std::string_view>> helper_rules_;
  std::vector<std::pair<int32_t, size_t>> budget_gates_;  // (expression, position) in the rule being parsed
  std::vector<std::pair<int32_t, PendingRef>> pending_refs_;
};

}  // namespace

Grammar ParseEbnf(const std::string& text, const std::string& root_rule_name, const Limits& limits) {
  return EbnfParser(text, limits).Parse(root_rule_name);
}

}  // namespace xg
