// See excluded_texts.h.
#include "frontends/json_schema/excluded_texts.h"

#include <cstdint>
#include <deque>
#include <map>
#include <set>

#include "frontends/json_schema/keywords.h"
#include "frontends/json_schema/string_automata.h"
#include "support/utf8.h"

namespace xg::json_schema {

namespace {

constexpr size_t kMaxTrieNodes = 4096;  // the texts' total length in code points, bounded like other native limits

struct Node {
  std::map<uint32_t, int> next;  // trie edges
  int fail = 0;
  bool dead = false;  // the prefix ends with a whole text
};

// The set of code points as an EBNF class ("[...]", or "[^...]" when `negate`), over the JSON string alphabet.
std::string ClassOf(const std::set<uint32_t>& cps, bool negate) {
  std::string out = negate ? "[^\"\\\\\\x00-\\x1f" : "[";
  for (uint32_t cp : cps) AppendClassChar(cp, &out);
  return out + "]";
}

}  // namespace

std::string JsonStringAvoiding(const std::vector<std::string>& texts, RuleTable* rules) {
  std::vector<Node> trie(1);
  std::set<uint32_t> alphabet;
  for (const std::string& text : texts) {
    std::vector<uint32_t> cps;
    size_t pos = 0;
    uint32_t cp = 0;
    bool control = false;
    while (pos < text.size()) {
      if (!DecodeUtf8(text, &pos, &cp)) Stop("a string exclude that is not UTF-8");
      if (cp == '"' || cp == '\\') Stop("a string exclude holding '\"' or '\\'");
      control |= cp < 0x20;
      cps.push_back(cp);
    }
    if (cps.empty()) Stop("an empty string exclude");
    if (control) continue;  // a JSON string's text never holds a raw control character
    int at = 0;
    for (uint32_t c : cps) {
      auto it = trie[at].next.find(c);
      if (it == trie[at].next.end()) {
        if (trie.size() >= kMaxTrieNodes) Stop("string excludes beyond the native limit");
        trie[at].next.emplace(c, static_cast<int>(trie.size()));
        at = static_cast<int>(trie.size());
        trie.emplace_back();
      } else {
        at = it->second;
      }
      alphabet.insert(c);
    }
    trie[at].dead = true;
  }
  // Failure links, breadth first; a node is dead when its failure target is.
  std::deque<int> order;
  for (const auto& [c, child] : trie[0].next) order.push_back(child);
  std::vector<int> bfs;
  while (!order.empty()) {
    const int q = order.front();
    order.pop_front();
    bfs.push_back(q);
    trie[q].dead = trie[q].dead || trie[trie[q].fail].dead;
    for (const auto& [c, child] : trie[q].next) {
      int f = trie[q].fail;
      while (f != 0 && !trie[f].next.count(c)) f = trie[f].fail;
      auto it = trie[f].next.find(c);
      trie[child].fail = it != trie[f].next.end() && it->second != child ? it->second : 0;
      order.push_back(child);
    }
  }
  auto step = [&](int q, uint32_t c) {
    while (q != 0 && !trie[q].next.count(c)) q = trie[q].fail;
    auto it = trie[q].next.find(c);
    return it == trie[q].next.end() ? 0 : it->second;
  };
  // One rule per live state, named before any body refers to it.
  std::vector<std::string> names(trie.size());
  names[0] = rules->Reserve("avoid");
  for (int q : bfs)
    if (!trie[q].dead) names[q] = rules->Reserve("avoid");
  const std::string escape = R"("\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))";
  const std::string other = alphabet.empty() ? "[^\"\\\\\\x00-\\x1f]" : ClassOf(alphabet, /*negate=*/true);
  for (size_t q = 0; q < trie.size(); ++q) {
    if (trie[q].dead || names[q].empty()) continue;
    std::map<int, std::set<uint32_t>> by_target;  // live target -> the text characters leading there
    for (uint32_t c : alphabet) {
      const int t = step(static_cast<int>(q), c);
      if (!trie[t].dead) by_target[t].insert(c);
    }
    std::string to_start = other + " | " + escape;
    if (auto it = by_target.find(0); it != by_target.end()) to_start += " | " + ClassOf(it->second, false);
    std::vector<std::string> alts = {"\"\\\"\""};
    for (const auto& [t, cps] : by_target)
      if (t != 0) alts.push_back(ClassOf(cps, false) + " " + names[t]);
    std::string body;
    if (q == 0) {  // the start state loops on everything that leads back to it
      body = "( " + to_start + " )* ( " + alts[0];
      for (size_t i = 1; i < alts.size(); ++i) body += " | " + alts[i];
      body += " )";
    } else {
      body = "\"\\\"\" | ( " + to_start + " ) " + names[0];
      for (size_t i = 1; i < alts.size(); ++i) body += " | " + alts[i];
    }
    rules->Define(names[q], body);
  }
  return "\"\\\"\" " + names[0];
}

}  // namespace xg::json_schema
