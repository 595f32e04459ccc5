// Regex front end: from an ECMAScript-style pattern to grammar IR nodes.
//
// The algorithm, in the style of re2's notes:
//
// A regex is just a grammar with one rule and no recursion, so there is no regex engine here: the
// pattern is translated into the IR's expression nodes and the rest of the pipeline (normalising
// passes, per-rule byte DFAs, the Earley parser, the token-mask cache) treats it like any EBNF rule.
// Translation has two steps.
//
// 1. Parsing (regex_parser.cc). The UTF-8 pattern is decoded to code points once, and a
//    recursive-descent parser builds a small syntax tree whose leaves are already semantic: every
//    escape is decoded, every class (including `.`, \d, \w, \s and their negations, and [^...]) is
//    a normalised set of code-point ranges, groups disappear into their contents, and lazy
//    quantifiers are plain repeats, because laziness changes which match a backtracking engine
//    reports, never which strings match. Constructs whose language is not regular (backreferences)
//    or that need a different automaton (lookaround, word boundaries) are recognised and rejected
//    by name. Anchors are only meaningful at the edges of a top-level alternative, so the parser
//    records them there as flags and rejects them anywhere else.
//
// 2. Lowering (this file). Literals become byte strings (runs of adjacent literals are joined, so
//    `abc*` is "ab" "c"*), classes become IR character classes (stored negated when that is the
//    shorter form, which keeps printed grammars readable), concatenation, alternation and counted
//    repetition map to kSequence, kChoice and kRepeat. In search mode (JSON Schema `pattern`)
//    each top-level alternative not anchored at its start is preceded by "any string" (a repeat of
//    the class of all code points), and likewise followed when not anchored at its end: the
//    language is the union of `[^]*(?:alt)[^]*` over the alternatives. Alternatives with the same
//    anchors share one prefix and suffix (see SearchLanguage). The FSM builder determinises and
//    minimises the rule, so the prefix costs no ambiguity at run time.
//
// First matches (AddFirstMatchRegex) are the exception: "no proper prefix matches" is not a property of
// the syntax tree, so the pattern goes through the automata library (a code-point DFA whose accepting
// states lose their transitions, trimmed and merged) and each state becomes a rule: its self-loop a
// repeated class, then a choice of (class, next state's rule) and "" where it accepts.
#include "frontends/regex.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "automata/codepoint_dfa.h"
#include "automata/regex_parser.h"
#include "grammar/nesting_depth.h"
#include "support/limits.h"
#include "support/utf8.h"

namespace xg {
namespace {

using regex::Node;

const CodepointRanges kDotRanges = {{0, '\n' - 1}, {'\n' + 1, '\r' - 1}, {'\r' + 1, 0x2027}, {0x202A, kMaxCodepoint}};
const CodepointRanges kAnyCodepoint = {{0, kMaxCodepoint}};
const CodepointRanges kNoNewline = {{0, '\n' - 1}, {'\n' + 1, kMaxCodepoint}};

// The code points `.` stands for.
const CodepointRanges& DotRanges(RegexDot dot) {
  return dot == RegexDot::kAnyCodePoint ? kAnyCodepoint : dot == RegexDot::kNoNewline ? kNoNewline : kDotRanges;
}

// JSON-string spelling (RegexSpelling::kJsonString): the characters a JSON string cannot hold raw.
bool NeedsJsonEscape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

// Appends code point `cp` as it is spelled inside a JSON string (the short escapes where JSON has them):
// a literal the pattern names explicitly ('"' in `a"b`) can only appear escaped.
void AppendJsonChar(uint32_t cp, bool json, std::string* out) {
  if (!json || !NeedsJsonEscape(cp)) {
    AppendUtf8(cp, out);
    return;
  }
  switch (cp) {
    case '"': *out += "\\\""; return;
    case '\\': *out += "\\\\"; return;
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\b': *out += "\\b"; return;
    case '\f': *out += "\\f"; return;
    default: {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      *out += buf;
    }
  }
}

class Lowering {
 public:
  Lowering(Grammar* g, bool json) : g_(g), json_(json) {}

  int32_t Lower(const Node& n) {
    switch (n.kind) {
      case Node::Kind::kEmpty: return g_->Add(Expr{});
      case Node::Kind::kLiteral: {
        std::string bytes;
        AppendJsonChar(n.codepoint, json_, &bytes);
        return g_->AddBytes(std::move(bytes));
      }
      case Node::Kind::kClass: return AddClass(n.ranges);
      case Node::Kind::kConcat: {
        std::vector<int32_t> items;
        std::string run;  // pending adjacent literals
        for (const Node& child : n.children) {
          if (child.kind == Node::Kind::kLiteral) {
            AppendJsonChar(child.codepoint, json_, &run);
            continue;
          }
          if (!run.empty()) items.push_back(g_->AddBytes(std::move(run))), run.clear();
          items.push_back(Lower(child));
        }
        if (!run.empty()) items.push_back(g_->AddBytes(std::move(run)));
        return items.size() == 1 ? items[0] : g_->AddNode(ExprKind::kSequence, std::move(items));
      }
      case Node::Kind::kAlternate: {
        std::vector<int32_t> alternatives;
        for (const Node& child : n.children) alternatives.push_back(Lower(child));
        return g_->AddNode(ExprKind::kChoice, std::move(alternatives));
      }
      case Node::Kind::kRepeat: {
        Expr e;
        e.kind = ExprKind::kRepeat;
        e.children = {Lower(n.children[0])};
        e.min = n.min;
        e.max = n.max;
        return g_->Add(std::move(e));
      }
    }
    return g_->Add(Expr{});  // unreachable: every kind is handled above
  }

  // Any string: [^]* (every code point, newlines included); as JSON string content, every spelling
  // of every code point (any escape JSON allows, \uXXXX included).
  int32_t AnyString() {
    Expr e;
    e.kind = ExprKind::kRepeat;
    if (!json_) {
      e.children = {AddClass(kAnyCodepoint)};
    } else {
      Expr raw;
      raw.kind = ExprKind::kCharClass;
      raw.negated = true;
      raw.ranges = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      Expr hex;
      hex.kind = ExprKind::kCharClass;
      hex.ranges = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
      int32_t h = g_->Add(hex);
      Expr simple;
      simple.kind = ExprKind::kCharClass;
      simple.ranges = {{'"', '"'}, {'/', '/'}, {'\\', '\\'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}};
      int32_t unicode = g_->AddNode(ExprKind::kSequence, {g_->AddBytes("u"), h, h, h, h});
      int32_t escape = g_->AddNode(ExprKind::kSequence,
                                   {g_->AddBytes("\\"), g_->AddNode(ExprKind::kChoice, {g_->Add(simple), unicode})});
      e.children = {g_->AddNode(ExprKind::kChoice, {g_->Add(raw), escape})};
    }
    return g_->Add(std::move(e));
  }

 private:
  // `ranges` is normalised (sorted, merged, surrogates excluded) and non-empty. As JSON string
  // content (xgrammar's json_string semantics), classes and `.` lose the characters a JSON string
  // cannot hold raw; a class left with none raises.
  int32_t AddClass(const CodepointRanges& ranges) {
    if (!json_) return AddRawClass(ranges);
    CodepointRanges raw;
    for (auto [lo, hi] : ranges) {
      for (auto [a, b] : CodepointRanges{{0x20, '"' - 1}, {'"' + 1, '\\' - 1}, {'\\' + 1, kMaxCodepoint}}) {
        uint32_t from = std::max<uint32_t>(lo, a), to = std::min<uint32_t>(hi, b);
        if (from <= to) raw.push_back({from, to});
      }
    }
    XG_USER_CHECK(!raw.empty()) << "regex: a character class matches only characters that a JSON string must "
                                   "escape ('\"', '\\\\', control characters), which json_string excludes";
    return AddRawClass(NormalizeRanges(raw, /*negate=*/false));
  }

  int32_t AddRawClass(const CodepointRanges& ranges) {
    if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
      std::string bytes;
      AppendUtf8(ranges[0].first, &bytes);
      return g_->AddBytes(std::move(bytes));
    }
    Expr e;
    e.kind = ExprKind::kCharClass;
    CodepointRanges complement = NormalizeRanges(ranges, /*negate=*/true);
    if (complement.empty()) {
      e.ranges = kAnyCodepoint;  // all code points: one range, as the EBNF `.` is written
    } else if (complement.size() < ranges.size()) {
      e.negated = true;  // [^a] rather than three ranges around 'a' and the surrogates
      e.ranges = std::move(complement);
    } else {
      e.ranges = ranges;
    }
    return g_->Add(std::move(e));
  }

  Grammar* g_;
  bool json_;
};

}  // namespace

namespace {

int32_t ChoiceOf(Grammar* g, std::vector<int32_t> alternatives) {
  return alternatives.size() == 1 ? alternatives[0] : g->AddNode(ExprKind::kChoice, std::move(alternatives));
}

// Search mode: the alternatives grouped by their anchors, so that at most two "any string" prefixes
// and one suffix are emitted. One prefix/suffix per alternative would be the same language, but the
// subset construction would then track which alternatives have already matched: 2^n DFA subsets
// for n unanchored alternatives (`Normal|Fighting|...` with 18 words never finished compiling).
//   [^]* (unanchored bodies) | (start-anchored bodies)          followed by [^]*   (no trailing $)
//   [^]* (end-anchored bodies) | (bodies anchored at both ends)                    (trailing $)
int32_t SearchLanguage(Grammar* g, Lowering* lowering, const std::vector<regex::TopLevelAlternative>& alternatives,
                       const std::vector<int32_t>& bodies) {
  std::vector<int32_t> by_anchors[2][2];  // [anchored_start][anchored_end]
  for (size_t i = 0; i < alternatives.size(); ++i)
    by_anchors[alternatives[i].anchored_start][alternatives[i].anchored_end].push_back(bodies[i]);
  std::vector<int32_t> parts;
  for (int end = 0; end < 2; ++end) {
    std::vector<int32_t> starts;
    if (!by_anchors[0][end].empty()) {
      starts.push_back(g->AddNode(ExprKind::kSequence, {lowering->AnyString(), ChoiceOf(g, by_anchors[0][end])}));
    }
    if (!by_anchors[1][end].empty()) starts.push_back(ChoiceOf(g, by_anchors[1][end]));
    if (starts.empty()) continue;
    int32_t part = ChoiceOf(g, std::move(starts));
    parts.push_back(end ? part : g->AddNode(ExprKind::kSequence, {part, lowering->AnyString()}));
  }
  return ChoiceOf(g, std::move(parts));
}

}  // namespace

int32_t AddRegex(Grammar* g, const std::string& pattern, RegexMode mode, RegexDot dot, RegexSpelling spelling,
                 bool ignore_case) {
  const CodepointRanges& dot_ranges = DotRanges(dot);
  std::vector<regex::TopLevelAlternative> alternatives = regex::ParseRegexPattern(pattern, dot_ranges, ignore_case);
  Lowering lowering(g, spelling == RegexSpelling::kJsonString);
  std::vector<int32_t> bodies;
  for (const regex::TopLevelAlternative& alt : alternatives) bodies.push_back(lowering.Lower(alt.body));
  if (mode == RegexMode::kSearch) return SearchLanguage(g, &lowering, alternatives, bodies);
  return ChoiceOf(g, std::move(bodies));
}

namespace {

// The first matches of `dfa` as rules of `g` (one per state of the trimmed, merged automaton); returns an
// expression for the start state.
// `first_matches`: a FirstMatches automaton, emitted as rules.
int32_t AddFirstMatchRules(Grammar* g, const CodepointDfa& first_matches, std::vector<int32_t>* new_rules) {
  // Merging is bounded like the JSON Schema front end's string automata; past it the states stay as they are.
  constexpr int64_t kMaxMergeWork = int64_t{1} << 22;
  const EmissionPlan plan = PlanEmission(first_matches, kMaxMergeWork);
  auto class_of = [&](const CodepointRanges& ranges) {
    Expr e;
    e.kind = ExprKind::kCharClass;
    e.ranges = ranges;
    return g->Add(std::move(e));
  };
  if (plan.start < 0) {  // no string matches: a class of no code point
    Expr never;
    never.kind = ExprKind::kCharClass;
    never.ranges = {{0, kMaxCodepoint}};
    never.negated = true;
    return g->Add(std::move(never));
  }
  std::vector<int32_t> rule_of(plan.states.empty() ? 0 : plan.states.back().id + 1, -1);
  for (const EmissionPlan::State& st : plan.states) {
    rule_of[st.id] = static_cast<int32_t>(g->rules.size());
    new_rules->push_back(rule_of[st.id]);
    g->rules.push_back(Rule{"", -1, -1});
  }
  auto ref = [&](int32_t state) {
    Expr e;
    e.kind = ExprKind::kRuleRef;
    e.rule = rule_of[state];
    return g->Add(std::move(e));
  };
  for (const EmissionPlan::State& st : plan.states) {
    std::vector<int32_t> options;
    if (st.accepting) options.push_back(g->Add(Expr{}));
    for (const auto& [target, ranges] : st.edges)
      options.push_back(g->AddNode(ExprKind::kSequence, {class_of(ranges), ref(target)}));
    int32_t body = options.size() == 1 ? options[0] : g->AddNode(ExprKind::kChoice, std::move(options));
    if (!st.loop.empty()) {
      Expr loop;
      loop.kind = ExprKind::kRepeat;
      loop.min = 0;
      loop.children = {class_of(st.loop)};
      body = g->AddNode(ExprKind::kSequence, {g->Add(std::move(loop)), body});
    }
    g->rules[rule_of[st.id]].body = body;
  }
  return ref(plan.start);
}

// Expression `id` of `g` as a regex syntax tree (for AddFirstMatchExpr). A reference to a rule whose body is
// already there (a builtin's helper rule, such as Substring's) is read in place; `open` holds the rules being
// read (a cycle is not regular).
regex::Node ExprNode(const Grammar& g, int32_t id, std::vector<int32_t>* open) {
  const Expr& e = g.exprs[id];
  Node n;
  switch (e.kind) {
    case ExprKind::kEmpty: return n;
    case ExprKind::kBytes: {
      n.kind = Node::Kind::kConcat;
      for (size_t i = 0; i < e.bytes.size();) {
        uint32_t cp;
        XG_USER_CHECK(DecodeUtf8(e.bytes, &i, &cp)) << "a lazy rule's literal is not valid UTF-8";
        Node c;
        c.kind = Node::Kind::kLiteral;
        c.codepoint = cp;
        n.children.push_back(std::move(c));
      }
      return n;
    }
    case ExprKind::kCharClass: {
      CodepointRanges ranges;
      for (auto [lo, hi] : e.ranges) ranges.emplace_back(lo, hi);
      std::sort(ranges.begin(), ranges.end());
      CodepointRanges merged;
      for (auto r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second + 1) {
          merged.back().second = std::max(merged.back().second, r.second);
        } else {
          merged.push_back(r);
        }
      }
      if (e.negated) {
        CodepointRanges complement;
        uint32_t next = 0;
        for (auto [lo, hi] : merged) {
          if (lo > next) complement.emplace_back(next, lo - 1);
          next = hi + 1;
        }
        if (next <= kMaxCodepoint) complement.emplace_back(next, kMaxCodepoint);
        merged = std::move(complement);
      }
      CodepointRanges no_surrogates;  // as the regex parser's classes: surrogates are not characters
      for (auto [lo, hi] : merged) {
        if (lo < 0xD800) no_surrogates.emplace_back(lo, std::min<uint32_t>(hi, 0xD7FF));
        if (hi > 0xDFFF) no_surrogates.emplace_back(std::max<uint32_t>(lo, 0xE000), hi);
      }
      XG_USER_CHECK(!no_surrogates.empty()) << "a lazy rule's character class matches no character";
      n.kind = Node::Kind::kClass;
      n.ranges = std::move(no_surrogates);
      return n;
    }
    case ExprKind::kSequence:
    case ExprKind::kChoice:
      n.kind = e.kind == ExprKind::kSequence ? Node::Kind::kConcat : Node::Kind::kAlternate;
      for (int32_t c : e.children) n.children.push_back(ExprNode(g, c, open));
      return n;
    case ExprKind::kRepeat:
      n.kind = Node::Kind::kRepeat;
      n.min = e.min;
      n.max = e.max == Expr::kUnbounded ? Node::kUnbounded : e.max;
      n.children.push_back(ExprNode(g, e.children[0], open));
      return n;
    case ExprKind::kRuleRef:
      if (e.rule >= 0 && g.rules[e.rule].body >= 0 &&
          std::find(open->begin(), open->end(), e.rule) == open->end()) {
        open->push_back(e.rule);
        Node inner = ExprNode(g, g.rules[e.rule].body, open);
        open->pop_back();
        return inner;
      }
      throw InputError("a lazy rule's body cannot reference a rule (terminal cannot reference rule: the body is "
                       "regular: literals, character classes, Regex(...), groups and repetitions)");
    default:
      throw InputError("a lazy rule's body is regular: literals, character classes, Regex(...), groups and "
                       "repetitions (no TagDispatch, AnyOrder, token elements or other builtins)");
  }
}

}  // namespace

int32_t AddFirstMatchRegex(Grammar* g, const std::string& pattern, RegexDot dot, bool ignore_case,
                           int64_t after_chars, const Limits& limits, std::vector<int32_t>* new_rules,
                           const std::string* budget_body) {
  const CodepointRanges& dot_ranges = DotRanges(dot);
  const int64_t max_states = limits.max_automaton_states;
  const CodepointDfa whole = MatchDfa(pattern, dot_ranges, ignore_case, max_states, limits);
  if (budget_body == nullptr) return AddFirstMatchRules(g, FirstMatches(whole, after_chars, max_states), new_rules);
  const CodepointDfa body = MatchDfa(*budget_body, dot_ranges, ignore_case, max_states, limits);
  return AddFirstMatchRules(g, FirstMatchesOrBudget(whole, body, after_chars, max_states), new_rules);
}

int32_t AddRegexBefore(Grammar* g, const std::string& pattern, const std::string& before, RegexDot dot,
                       bool ignore_case, const Limits& limits, std::vector<int32_t>* new_rules) {
  const CodepointRanges& dot_ranges = DotRanges(dot);
  const int64_t max_states = limits.max_automaton_states;
  const CodepointDfa body = MatchDfa(pattern, dot_ranges, ignore_case, max_states, limits);
  const CodepointDfa stop = MatchDfa(before, dot_ranges, ignore_case, max_states, limits);
  return AddFirstMatchRules(g, MatchesBefore(body, stop, max_states), new_rules);
}

int32_t AddFirstMatchExpr(Grammar* g, int32_t expr, int64_t after_chars, const Limits& limits,
                          std::vector<int32_t>* new_rules) {
  std::vector<int32_t> open;
  const int64_t max_states = limits.max_automaton_states;
  return AddFirstMatchRules(g, FirstMatches(NodeDfa(ExprNode(*g, expr, &open), max_states, limits), after_chars,
                                            max_states), new_rules);
}

Grammar RegexToGrammar(const std::string& pattern, RegexMode mode) {
  Grammar g;
  int32_t body = AddRegex(&g, pattern, mode);
  g.rules.push_back(Rule{"root", body, -1});
  g.root = 0;
  CheckNestingDepth(g, NestingDepth(DefaultLimits()));
  return g;
}

}  // namespace xg
