// The grammar IR: rules over a small expression tree, as written by the user or produced by a
// front end (EBNF today; JSON Schema, regex and structural tags later).
//
// A Grammar is an arena of Expr nodes plus a list of Rules. Expressions speak in Unicode code
// points (character classes) and raw bytes (string literals, already UTF-8 encoded); the FSM
// builder (fsm/) lowers both to byte transitions. Each rule may carry a lookahead assertion
// `rule ::= body (= lookahead)`.
//
// Counted repetition: a rule marked `counted` (set by CompressRepetitions in passes.h, never by a
// front end) has the body `X{min,max}` with X a rule reference to a non-nullable rule. Its automaton
// is a single state looping on X, and the Earley parser keeps the number of X's read so far in the
// item (EarleyItem::count), so `x{0,100000}` costs one state instead of 100,000.
//
// Any-order (interleaving) items: `AnyOrder(a, b?, c*, separator=s)` matches the items a (exactly
// once), b (at most once) and c (any number of times) in any order, separated by s (none without a
// separator); `requires="2:1"` adds "if item 2 is read, item 1 is read too" (Expr::implies). The language has no polynomial context-free grammar (every subset of used items would
// be a nonterminal), so the parser keeps the set of used items in the item, like counted repetition
// keeps a count: LiftAnyOrder (passes.h) makes each AnyOrder the whole body of a rule whose items and
// separator are distinct rule references, the FSM builder gives that rule a three-state automaton,
// and EarleyItem::count holds the set of once-items read so far (a bitmask, or for more than 31
// once-items the id of an interned set: fsm/any_order_sets.h), so there is no limit on the items.
// Items and the separator must not match the empty string.
//
// Tag dispatch (xgrammar's TagDispatch): `TagDispatch(("t1", r1), ("t2", r2), loop_after_dispatch=true,
// excludes=("x"))` matches free text in which, wherever a trigger t_i completes, the text must go on with its
// rule r_i (a longer trigger extending the match may be taken instead); after r_i, free text again (loop) or
// the end of the construct (no loop). No exclude may occur in the free text (inside r_i it may). The free text
// is any bytes. Like AnyOrder it is a rule's whole body (LiftTagDispatch, passes.h), and the FSM builder gives
// that rule the Aho-Corasick automaton of the triggers and excludes (automata/aho_corasick.h) with one rule edge
// per trigger, so a free-text step costs the same with any number of tags. TokenTagDispatch(...) (xgrammar's
// token-level dispatch; `token_free_text`) has token ids for triggers and excludes, and its free text is tokens:
// any token but a trigger or an exclude, read as a token element (ExcludeToken's), so text tokens may trigger.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xg {

enum class ExprKind : uint8_t {
  kEmpty,      // matches ""
  kBytes,      // a literal byte string (UTF-8 of the written text)
  kCharClass,  // one code point from ranges (or outside them when negated)
  kRuleRef,    // a reference to rule `rule`
  kSequence,   // children in order
  kChoice,     // one of the children
  kRepeat,     // child repeated min..max times (max == kUnbounded for no upper bound)
  kAnyOrder,   // children[0] the separator (kEmpty: none), then the items; roles[i] for item i
  // children[0..min): kSequence(kBytes trigger, kRuleRef rule) per tag; children[min..): kBytes excludes;
  // max: 1 to loop after a dispatch, 0 to end there. Always a rule's whole body after LiftTagDispatch.
  kTagDispatch,
  kToken,  // one special token of the vocabulary, id `min` (EBNF `Token(id)`): matched only by that token
  // One token of the vocabulary, any but the ids in `ranges` (inclusive id intervals, sorted, disjoint; EBNF
  // `ExcludeToken(id, ...)`): free text over tokens. Read as a token element (its sentinel, see below), whatever
  // the token's text; stop tokens end the output and are never read by it.
  kExcludeToken,
};

struct Expr {
  static constexpr int32_t kUnbounded = -1;
  ExprKind kind = ExprKind::kEmpty;
  std::string bytes;                                  // kBytes
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // kCharClass, inclusive, as written; kExcludeToken: ids
  bool negated = false;                               // kCharClass
  bool token_free_text = false;                       // kTagDispatch: TokenTagDispatch, free text over tokens
  int32_t rule = -1;                                  // kRuleRef
  std::vector<int32_t> children;                      // kSequence, kChoice, kRepeat (one child), kAnyOrder
  int32_t min = 0, max = kUnbounded;                  // kRepeat; kTagDispatch (see ExprKind)
  std::vector<uint8_t> roles;                         // kAnyOrder: one AnyOrderRole per item
  // kAnyOrder: (i, j) for "once item i is read, item j must be read too" (0-based item indices, both
  // not repeated; JSON Schema's dependentRequired), sorted.
  std::vector<std::pair<int32_t, int32_t>> implies;
};

// How often an AnyOrder item appears (see the file comment).
enum AnyOrderRole : uint8_t { kAnyOrderOnce = 0, kAnyOrderOptional = 1, kAnyOrderRepeated = 2 };


struct Rule {
  std::string name;
  int32_t body = -1;       // index into Grammar::exprs
  int32_t lookahead = -1;  // index into Grammar::exprs, or -1
  // The body is `X{min,max}` over a rule reference, run with the count in the parser state (see the
  // file comment). Prints as its body, so printing and parsing back re-derives it.
  bool counted = false;
  // `name[temperature=T] ::= ...` (xgrammar's rule attribute, float32 as xgrammar stores it): the sampling
  // temperature while the next token is read inside this rule (GrammarMatcher::NextTokenTemperatures); < 0: none. A rule
  // with one keeps its identity through the passes (it is never inlined).
  float temperature = -1.0f;
  // `name[capture] ::= ...` / `name[capture="label"] ::= ...` (xgrammar's rule attribute): each time the rule
  // completes over a span of an accepted output, the matcher records (label, span) (matcher/capture_recorder.h);
  // empty: none. Like a tempered rule, a captured rule is never inlined, and the parser never skips its completions.
  std::string capture;
  // `name[max_tokens=n] ::= ...` (xgrammar's rule attribute, n >= 1; 0: none): a token budget per occurrence. Once
  // an occurrence has read n accepted tokens (GrammarMatcher::AcceptToken; a string is not counted) and can end at
  // a token boundary, it ends there: the matcher drops the parses that continue inside it
  // (matcher/token_budget.h). Never inlined; the parser never skips its completions.
  int32_t max_tokens = 0;
  // A rule whose text is a body followed by a marker (Lark's `suffix` / `stop` rules), for captures
  // (matcher/capture_recorder.h): `marker_body` and `marker` are the two parts' regexes (with `marker_flags`, the
  // letters of Regex(..., flags=)), empty for other rules. A capture of the rule is its body; `stop_capture` labels
  // the marker's own span; with `hide_marker` (Lark's `stop`) the marker is left out of every capture around the rule.
  // Attributes `marker_body="..."`, `marker="..."`, `marker_flags="..."`, `hide_marker`, `stop_capture="..."`.
  std::string marker_body, marker, marker_flags, stop_capture;
  bool hide_marker = false;
};

// Token elements (`Token(id)`, `TokenTagDispatch((id, rule), ...)`) name tokens by id: special tokens, which have
// no text, and text tokens (matched by id there, and by their text wherever the grammar allows it);
// `ExcludeToken(id, ...)` reads any token as one (a grammar with one reads every token both ways). The byte
// automata see a token element as its sentinel, TokenSentinel(id): 0xFF, then the id's 21 bits as 7 bytes 0xF8 + 3
// bits (most significant first). No other construct produces a byte >= kFirstReservedByte (text is UTF-8 of code
// points; TagDispatch free text reads reserved bytes only on the way into a trigger), and a vocabulary token holding
// such a byte never matches text (TokenizerInfo::MatchesText), so these bytes reach the parser only from the matcher
// accepting a token the grammar names (a named text token is read both ways: GrammarMatcher::TryAdvanceEither).
// Sentinel digits are 3 bits, so the automaton of an ExcludeToken is the complement of its ids' 8-ary trie: 7 + 7 *
// (number of ids) states at most.
constexpr int kFirstReservedByte = 0xF8;
constexpr int kSentinelDigits = 7;
constexpr int32_t kMaxTokenElementId = (1 << 21) - 2;
// The budget gate, EBNF `BudgetSpent()`: an empty element that only the matcher passes, once the token budget of the
// rule it is in (Rule::max_tokens) is spent (GrammarMatcher::OpenBudgetGates; Lark's max_tokens on a suffix / stop
// rule, whose budget closes the body without its marker). A token element of an id no token has: no token reads it.
constexpr int32_t kBudgetGateId = (1 << 21) - 1;
inline std::string TokenSentinel(int32_t id) {
  std::string out(1, static_cast<char>(0xFF));
  for (int shift = 18; shift >= 0; shift -= 3) out.push_back(static_cast<char>(kFirstReservedByte + ((id >> shift) & 7)));
  return out;
}
// The id whose sentinel `bytes` is, or -1.
inline int32_t TokenSentinelId(std::string_view bytes) {
  if (bytes.size() != 8 || static_cast<uint8_t>(bytes[0]) != 0xFF) return -1;
  int32_t id = 0;
  for (size_t i = 1; i < 8; ++i) {
    const int d = static_cast<uint8_t>(bytes[i]) - kFirstReservedByte;
    if (d < 0 || d > 7) return -1;
    id = id * 8 + d;
  }
  return id;
}

class Grammar {
 public:
  std::vector<Expr> exprs;
  std::vector<Rule> rules;
  int32_t root = -1;

  int32_t Add(Expr e) {
    exprs.push_back(std::move(e));
    return static_cast<int32_t>(exprs.size() - 1);
  }
  int32_t AddBytes(std::string b) {
    Expr e;
    e.kind = ExprKind::kBytes;
    e.bytes = std::move(b);
    return Add(std::move(e));
  }
  int32_t AddNode(ExprKind kind, std::vector<int32_t> children) {
    Expr e;
    e.kind = kind;
    e.children = std::move(children);
    return Add(std::move(e));
  }
  int32_t FindRule(const std::string& name) const {
    for (size_t i = 0; i < rules.size(); ++i)
      if (rules[i].name == name) return static_cast<int32_t>(i);
    return -1;
  }
  const std::string& RootName() const { return rules[root].name; }
};

}  // namespace xg
