// See string_automata.h.
#include "frontends/json_schema/string_automata.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "automata/codepoint_dfa.h"
#include "automata/regex_parser.h"
#include "support/utf8.h"

namespace xg::json_schema {

namespace {

constexpr int64_t kMaxDfaStates = 2000;       // MAX_DFA_STATES
constexpr int64_t kMaxMergeWork = 1 << 22;    // MAX_MERGE_WORK
constexpr int32_t kMaxInlineDepth = 32;       // MAX_INLINE_DEPTH

// For the group opening at p[i] == '(': (index of its closing ')', whether it has a top-level '|'); tokens as
// _regex_text.regex_tokens reads them (an escape is two characters; inside a class, ( ) | are plain).
std::optional<std::pair<size_t, bool>> GroupEnd(const std::string& p, size_t i) {
  int depth = 0;
  bool bar = false, in_class = false;
  for (size_t j = i; j < p.size();) {
    if (p[j] == '\\') {
      j += 2;
      continue;
    }
    char c = p[j];
    bool was_in_class = in_class;
    if (in_class) in_class = c != ']';
    else if (c == '[') in_class = true;
    if (!was_in_class) {
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) return std::make_pair(j, bar);
      } else if (c == '|' && depth == 1) {
        bar = true;
      }
    }
    ++j;
  }
  return std::nullopt;
}

bool Contains(const CodepointRanges& ivs, uint32_t cp) {
  return std::any_of(ivs.begin(), ivs.end(), [&](const auto& r) { return r.first <= cp && cp <= r.second; });
}

bool ContainsControls(const CodepointRanges& ivs) {
  for (uint32_t cp = 0; cp < 0x20; ++cp)
    if (!Contains(ivs, cp)) return false;
  return true;
}

// The escapes of every escapable code point: the short ones, then \u00XX for the controls without a short one.
constexpr const char* kAnyEscape = R"("\\" ( ["\\/bfnrt] | "u00" ( "0" [0-7bBeEfF] | "1" [0-9a-fA-F] ) ))";

// _spell_code_point: EBNF alternatives spelling one code point of `ivs` inside a JSON string.
std::vector<std::string> Spell(const CodepointRanges& ivs) {
  std::vector<std::string> out;
  CodepointRanges raw;
  static const std::pair<uint32_t, uint32_t> kWindows[] = {
      {0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCodepoint}};
  for (const auto& [lo, hi] : ivs) {
    for (const auto& [wlo, whi] : kWindows) {
      uint32_t x = std::max(lo, wlo), y = std::min(hi, whi);
      if (x <= y) raw.emplace_back(x, y);
    }
  }
  if (!raw.empty()) {
    std::sort(raw.begin(), raw.end());
    CodepointRanges merged;
    for (const auto& r : raw) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    std::string cls = "[";
    for (const auto& [lo, hi] : merged) {
      AppendClassChar(lo, &cls);
      if (lo != hi) {
        cls.push_back('-');
        AppendClassChar(hi, &cls);
      }
    }
    out.push_back(cls + "]");
  }
  // Every escapable code point (the controls, '"', '/' and '\\'): one compact alternative instead of 34, the
  // same strings (the common case: a key automaton's "any other character" edge, on every state).
  if (Contains(ivs, 0x22) && Contains(ivs, 0x2F) && Contains(ivs, 0x5C) && ContainsControls(ivs)) {
    out.emplace_back(kAnyEscape);
    return out;
  }
  static const std::pair<uint32_t, const char*> kShort[] = {{0x22, R"("\\\"")"}, {0x5C, R"("\\\\")"},
                                                            {0x08, R"("\\b")"},  {0x0C, R"("\\f")"},
                                                            {0x0A, R"("\\n")"},  {0x0D, R"("\\r")"},
                                                            {0x09, R"("\\t")"}};
  for (const auto& [cp, text] : kShort) {
    if (Contains(ivs, cp)) out.emplace_back(text);
  }
  if (Contains(ivs, 0x2F)) out.emplace_back(R"("\\/")");
  for (uint32_t cp = 0; cp < 0x20; ++cp) {
    bool is_short = std::any_of(std::begin(kShort), std::end(kShort), [&](const auto& s) { return s.first == cp; });
    if (is_short || !Contains(ivs, cp)) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "\"\\\\u00\" [%u] [%x%X]", cp >> 4, cp & 15, cp & 15);
    out.emplace_back(buf);
  }
  return out;
}

// The code points of `ivs` written as themselves (a raw string: no quotes, no escapes), surrogates left out.
std::string RawClass(const CodepointRanges& ivs) {
  std::string cls = "[";
  for (const auto& [lo, hi] : ivs) {
    for (const auto& [wlo, whi] : {std::pair<uint32_t, uint32_t>{0, 0xD7FF}, {0xE000, kMaxCodepoint}}) {
      const uint32_t x = std::max(lo, wlo), y = std::min(hi, whi);
      if (x > y) continue;
      AppendClassChar(x, &cls);
      if (x != y) {
        cls.push_back('-');
        AppendClassChar(y, &cls);
      }
    }
  }
  return cls == "[" ? "j_never" : cls + "]";
}

}  // namespace

void AppendClassChar(uint32_t cp, std::string* out) {  // _ebnf_class's ch()
  if (cp == ']' || cp == '\\' || cp == '-' || cp == '^') {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x20 || cp == 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", cp);
    *out += buf;
  } else {
    AppendUtf8(cp, out);
  }
}

std::string HoistAnchors(const std::string& input) {
  std::string pattern = input;
  size_t i = 0;
  std::vector<size_t> opens;
  while (pattern.compare(i, 1, "(") == 0) {
    opens.push_back(i);
    i += pattern.compare(i, 3, "(?:") == 0 ? 3 : 1;
  }
  if (!opens.empty() && pattern.compare(i, 1, "^") == 0) {
    bool all = true;
    for (size_t o : opens) {
      auto sp = GroupEnd(pattern, o);
      if (!sp || sp->second ||
          !(sp->first + 1 == pattern.size() || std::string_view("*+?{").find(pattern[sp->first + 1]) ==
                                                   std::string_view::npos)) {
        all = false;
        break;
      }
    }
    if (all) pattern = "^" + pattern.substr(0, i) + pattern.substr(i + 1);
  }
  size_t k = pattern.size();
  while (k > 0 && pattern[k - 1] == ')') --k;
  if (k < pattern.size() && k > 0 && pattern[k - 1] == '$') {
    size_t backslashes = 0;
    while (backslashes < k - 1 && pattern[k - 2 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) {
      std::map<size_t, bool> starts;  // closing index -> has a top-level '|'
      for (size_t o = 0; o < pattern.size(); ++o) {
        if (pattern[o] == '(' && (o == 0 || pattern[o - 1] != '\\')) {
          auto sp = GroupEnd(pattern, o);
          if (sp && sp->first >= k) starts[sp->first] = sp->second;
        }
      }
      bool any_bar = std::any_of(starts.begin(), starts.end(), [](const auto& s) { return s.second; });
      if (starts.size() == pattern.size() - k && !any_bar) {
        pattern = pattern.substr(0, k - 1) + pattern.substr(k) + "$";
      }
    }
  }
  return pattern;
}

std::optional<std::string> RegexSyntaxError(const std::string& pattern) {
  try {
    regex::ParseRegexPattern(HoistAnchors(pattern), {{0, kMaxCodepoint}});
  } catch (const RegexError& e) {
    return "at position " + std::to_string(e.position()) + ": " + e.description();
  }
  return std::nullopt;
}

std::string DfaString(const CodepointDfa& dfa, RuleTable* rules, const StringSpelling& spelling) {
  EmissionPlan plan = PlanEmission(dfa, kMaxMergeWork);
  if (plan.start < 0) return "j_never";
  const int32_t n = static_cast<int32_t>(plan.states.size());
  std::unordered_map<int32_t, int32_t> at;  // state id -> index in plan.states
  for (int32_t i = 0; i < n; ++i) at.emplace(plan.states[i].id, i);
  // A state with one predecessor (a self loop not counted) is written inside its predecessor's rule, up to
  // kMaxInlineDepth levels: a pattern's or a name trie's chains then cost one rule, not one per state. Kept
  // states (their own rule): the start, the others, and a chain's state at the depth limit, found by a
  // breadth-first walk from the kept ones in plan order (as _patterns._key_rule does, for the same text).
  std::vector<int32_t> num_preds(n, 0);
  for (const auto& st : plan.states)
    for (const auto& edge : st.edges) ++num_preds[at.at(edge.first)];
  std::vector<int32_t> depth(n, -1);  // -1: not reached; 0: kept
  std::vector<int32_t> queue;
  for (int32_t i = 0; i < n; ++i) {
    if (plan.states[i].id == plan.start || num_preds[i] != 1) depth[i] = 0, queue.push_back(i);
  }
  for (size_t k = 0; k < queue.size(); ++k) {
    for (const auto& edge : plan.states[queue[k]].edges) {
      const int32_t t = at.at(edge.first);
      if (depth[t] >= 0) continue;
      depth[t] = depth[queue[k]] + 1 > kMaxInlineDepth ? 0 : depth[queue[k]] + 1;
      queue.push_back(t);
    }
  }
  std::vector<std::string> names(n);  // _key_rule: every kept state's name first, then the bodies
  for (int32_t i = 0; i < n; ++i) {
    if (depth[i] == 0) names[i] = rules->Reserve("key_" + std::to_string(plan.states[i].id));
  }
  // The body of state i, its inlined successors written in place (recursion depth <= kMaxInlineDepth).
  auto spell = [&](const CodepointRanges& ranges) { return spelling.raw ? RawClass(ranges) : Choice(Spell(ranges)); };
  auto body_of = [&](auto&& self, int32_t i) -> std::string {
    const EmissionPlan::State& st = plan.states[i];
    std::string body = st.accepting ? spelling.close : "";
    for (const auto& [target, ranges] : st.edges) {
      const int32_t t = at.at(target);
      if (!body.empty()) body += " | ";
      body += Seq({spell(ranges), depth[t] == 0 ? names[t] : "( " + self(self, t) + " )"});
    }
    if (body.empty()) body = "j_never";
    return st.loop.empty() ? body : "( " + spell(st.loop) + " )* ( " + body + " )";
  };
  for (int32_t i = 0; i < n; ++i) {
    if (depth[i] == 0) rules->Define(names[i], body_of(body_of, i));
  }
  return Seq({spelling.open, names[at.at(plan.start)]});
}

std::string PatternString(const std::string& pattern, int64_t lo, int64_t hi, RuleTable* rules) {
  CodepointDfa search = SearchDfa(HoistAnchors(pattern), kMaxDfaStates);
  return DfaString(ProductWithLength({&search}, 1, lo, hi, kMaxDfaStates), rules);
}

std::string StringAutomaton(const std::string* pattern, const std::string* format_regex,
                            const std::vector<std::string>& excluded_names,
                            const std::vector<std::string>& excluded_patterns, int64_t lo, int64_t hi,
                            RuleTable* rules, const StringSpelling& spelling) {
  std::vector<CodepointDfa> automata;  // the ones that must match, then the ones that must not
  if (pattern) automata.push_back(SearchDfa(HoistAnchors(*pattern), kMaxDfaStates));
  if (format_regex) automata.push_back(SearchDfa(HoistAnchors("^(?:" + *format_regex + ")$"), kMaxDfaStates));
  const int32_t must = static_cast<int32_t>(automata.size());
  automata.push_back(NamesDfa(excluded_names));
  for (const auto& p : excluded_patterns) automata.push_back(SearchDfa(HoistAnchors(p), kMaxDfaStates));
  std::vector<const CodepointDfa*> dfas;
  for (const auto& d : automata) dfas.push_back(&d);
  return DfaString(ProductWithLength(dfas, must, lo, hi, kMaxDfaStates), rules, spelling);
}

CodepointDfa KeyDfa(const std::string& pattern) { return SearchDfa(HoistAnchors(pattern), kMaxDfaStates); }

CodepointDfa KeyProduct(const std::vector<const CodepointDfa*>& dfas) { return ProductDfa(dfas, kMaxDfaStates); }

bool Matches(const CodepointDfa& dfa, const std::string& text) {
  std::vector<uint32_t> codepoints;
  for (size_t pos = 0; pos < text.size();) {
    uint32_t cp;
    if (!DecodeUtf8(text, &pos, &cp)) return false;  // the JSON reader admits valid UTF-8 only
    codepoints.push_back(cp);
  }
  int32_t state = dfa.Run(codepoints);
  return state >= 0 && dfa.Accepts(state);
}

}  // namespace xg::json_schema
