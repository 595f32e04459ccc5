// See key_trie.h.
#include "frontends/json_schema/key_trie.h"

#include <algorithm>
#include <map>
#include <utility>

#include "frontends/json_schema/keywords.h"

namespace xg::json_schema {

namespace {

struct TrieNode {
  bool ends_name = false;
  std::map<std::string, TrieNode> children;  // by unit; byte order of UTF-8 is code-point order (Python's sort)
};
constexpr int kKeyTrieLevelsPerRule = 48;  // KEY_TRIE_LEVELS_PER_RULE
constexpr size_t kMaxKeyUnits = 2000;      // the walk below recurses once per unit

std::vector<std::string> JsonUnits(std::string_view name) {
  std::string spelled = JsonString(name);
  std::string_view body(spelled);
  body = body.substr(1, body.size() - 2);
  std::vector<std::string> units;
  for (size_t i = 0; i < body.size();) {
    size_t n = 1;
    unsigned char c = static_cast<unsigned char>(body[i]);
    if (c == '\\') n = body[i + 1] == 'u' ? 6 : 2;
    else if (c >= 0xF0) n = 4;
    else if (c >= 0xE0) n = 3;
    else if (c >= 0xC0) n = 2;
    units.emplace_back(body.substr(i, n));
    i += n;
  }
  return units;
}

std::string ClassChar(std::string_view c) {  // _class_char
  if (c.size() == 1 && (c[0] == ']' || c[0] == '\\' || c[0] == '-' || c[0] == '^')) return "\\" + std::string(c);
  return std::string(c);  // control characters never occur: the JSON spelling escapes them
}

std::string Deviation(const std::vector<std::string_view>& units) {
  bool plain_ascii = std::all_of(units.begin(), units.end(), [](std::string_view u) {
    return u.size() == 1 && static_cast<unsigned char>(u[0]) < 0x80;
  });
  if (plain_ascii) {  // _shared_tail_deviation
    std::string plain;
    for (auto u : units) plain += ClassChar(u);
    return "[^\"\\\\\\x00-\\x1f\\x80-\\U0010ffff" + plain + "] j_key_rest | j_key_wide";
  }
  std::string plain, short_escapes;  // _deviation
  bool long_escape = false;
  for (auto u : units) {
    if (u[0] != '\\') plain += ClassChar(u);
    else if (u.size() == 2) short_escapes += ClassChar(u.substr(1));
    else long_escape = true;
  }
  std::string out = "( [^\"\\\\\\x00-\\x1f" + plain + "]";
  std::string simple;
  for (char c : std::string_view("\"\\/bfnrt")) {
    if (short_escapes.find(c) == std::string::npos) simple.push_back(c);
  }
  std::vector<std::string> escapes;
  if (!simple.empty()) {
    std::string cls = "[";
    for (char c : simple) cls += ClassChar(std::string_view(&c, 1));
    escapes.push_back(cls + "]");
  }
  if (!long_escape) escapes.push_back("\"u\" [0-9a-fA-F]{4}");
  if (!escapes.empty()) {
    out += " | \"\\\\\" ( ";
    for (size_t i = 0; i < escapes.size(); ++i) out += (i ? " | " : "") + escapes[i];
    out += " )";
  }
  return out + " ) j_char* \"\\\"\"";
}

std::string TrieAlternatives(const TrieNode& node, int depth, RuleTable* rules) {
  std::vector<std::string_view> units;
  for (const auto& c : node.children) units.push_back(c.first);
  std::string deviation = Deviation(units);
  if (units.empty()) return deviation;
  std::vector<std::string> child_texts;
  for (const auto& c : node.children) child_texts.push_back(TrieAlternatives(c.second, depth + 1, rules));
  std::string out = node.ends_name ? deviation : "\"\\\"\" | " + deviation;
  size_t i = 0;
  for (const auto& c : node.children) {
    out += " | " + Literal(c.first);
    if ((depth + 1) % kKeyTrieLevelsPerRule == 0) out += " " + rules->Add("key_except", child_texts[i]);
    else out += " ( " + child_texts[i] + " )";
    ++i;
  }
  return out;
}

}  // namespace

void DefineKeyTails(RuleTable* rules) {
  static const std::pair<const char*, const char*> kKeyTails[] = {
      {"j_key_rest", R"(j_char* "\"")"},
      {"j_key_wide", R"(( [^\x00-\x7f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) ) j_char* "\"")"}};
  for (const auto& [name, body] : kKeyTails) {
    if (!rules->Has(name)) rules->Define(rules->ReserveExact(name), body);
  }
}

std::string KeyExcept(const std::vector<std::string_view>& names, RuleTable* rules) {
  if (names.empty()) return "j_string";
  TrieNode trie;
  for (auto name : names) {
    std::vector<std::string> units = JsonUnits(name);
    if (units.size() > kMaxKeyUnits) Stop("a property name longer than the native key trie takes");
    TrieNode* node = &trie;
    for (auto& u : units) node = &node->children[u];
    node->ends_name = true;
  }
  DefineKeyTails(rules);
  return Seq({"\"\\\"\"", rules->Add("key_except", TrieAlternatives(trie, 0, rules))});
}

}  // namespace xg::json_schema
