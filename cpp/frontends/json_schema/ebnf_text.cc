// See ebnf_text.h. Each function mirrors its namesake in xg2jax/json_schema/_ebnf.py, which fixes the exact text.
#include "frontends/json_schema/ebnf_text.h"

#include <algorithm>
#include <array>

#include <cstdio>

#include "support/check.h"

namespace xg::json_schema {

namespace {

void AppendHex2(unsigned c, std::string* out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  out->append(buf);
}

// Python's str.replace(old, new) for a two-space old: non-overlapping, left to right.
std::string CollapseDoubleSpaces(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ' && i + 1 < s.size() && s[i + 1] == ' ') {
      out.push_back(' ');
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// _rule_base_name: characters other than ASCII letters, digits and '_' become '_'; the result trimmed of '_'.
// (The hints this front end passes are ASCII.)
std::string RuleBaseName(std::string_view hint) {
  std::string base;
  for (char c : hint) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    base.push_back(keep ? c : '_');
  }
  size_t b = base.find_first_not_of('_');
  if (b == std::string::npos) return "r";
  base = base.substr(b, base.find_last_not_of('_') - b + 1);
  if (base[0] >= '0' && base[0] <= '9') base = "r_" + base;
  return base;
}

}  // namespace

std::string Literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c == 0x7F) AppendHex2(c, &out);
    else out.push_back(ch);
  }
  out.push_back('"');
  return out;
}

std::string JsonString(std::string_view value) {
  std::string out = "\"";
  for (char ch : value) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string JsonStringLiteral(std::string_view value) { return Literal(JsonString(value)); }

std::string Seq(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out.push_back(' ');
    out.append(p);
  }
  return out.empty() ? std::string(kEmpty) : out;
}

std::string Choice(const std::vector<std::string>& options) {
  std::vector<const std::string*> seen;
  seen.reserve(options.size());
  if (options.size() <= 16) {  // most choices: a few options, compared directly rather than hashed
    for (const auto& o : options)
      if (std::none_of(seen.begin(), seen.end(), [&](const std::string* p) { return *p == o; })) seen.push_back(&o);
  } else {
    std::unordered_map<std::string_view, bool> have;
    for (const auto& o : options)
      if (have.emplace(o, true).second) seen.push_back(&o);
  }
  if (seen.size() == 1) return *seen[0];
  std::string out = "(";
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i) out += " | ";
    out += *seen[i];
  }
  return out + ")";
}

RuleTable::RuleTable(std::string_view ws, std::string_view item_sep, std::string_view key_sep,
                     std::string_view ws_body, bool plain_integers) {
  static const std::pair<const char*, const char*> kBase[] = {
      {"j_char", R"([^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ))"},
      {"j_string", R"("\"" j_char* "\"")"},
      {"j_int", R"("-"? ( "0" | [1-9] [0-9]* ))"},
      {"j_number", R"("-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+\-]? [0-9]+ )?)"},
      {"j_bool", R"("true" | "false")"},
      {"j_null", R"("null")"},
      {"j_value", R"(j_object | j_array | j_string | j_number | j_bool | j_null)"},
      {"j_never", R"(j_never "!")"},
  };
  std::vector<std::pair<std::string, std::string>> initial;
  for (const auto& [name, body] : kBase) initial.emplace_back(name, body);
  initial.emplace_back("j_integer", plain_integers ? R"("0" | "-"? [1-9] [0-9]*)" : R"(j_int ( "." "0"+ )?)");
  initial.emplace_back("j_member", Seq({"j_string", key_sep, "j_value"}));
  std::string ws_s(ws), item_s(item_sep);
  initial.emplace_back("j_object", Seq({"\"{\"", ws, CollapseDoubleSpaces("( j_member ( " + item_s +
                                                                         " j_member )* " + ws_s + " )?"),
                                        "\"}\""}));
  initial.emplace_back("j_array", Seq({"\"[\"", ws, CollapseDoubleSpaces("( j_value ( " + item_s +
                                                                        " j_value )* " + ws_s + " )?"),
                                       "\"]\""}));
  initial.emplace_back("j_ws", std::string(ws_body));
  for (auto& [name, body] : initial) {
    index_[name] = rules_.size();
    by_body_.emplace(body, name);
    rules_.emplace_back(std::move(name), std::move(body));
  }
  num_lexical_ = rules_.size();
}

std::string RuleTable::Reserve(std::string_view name_hint) {
  std::string base = prefix_ + RuleBaseName(name_hint);
  auto it = next_.find(base);
  int i = it == next_.end() ? 1 : it->second;
  std::string name = base;
  while (index_.count(name)) {
    ++i;
    name = base + "_" + std::to_string(i);
  }
  next_[base] = i;
  index_[name] = rules_.size();
  rules_.emplace_back(name, "");
  return name;
}

std::string RuleTable::ReserveExact(const std::string& name) {
  index_[name] = rules_.size();
  rules_.emplace_back(name, "");
  return name;
}

std::string RuleTable::Define(const std::string& name, std::string body) {
  size_ += body.size();
  by_body_.emplace(body, name);
  rules_[index_.at(name)].second = std::move(body);
  return name;
}

void RuleTable::Drop(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) return;
  size_t at = it->second;
  XG_ICHECK(at >= num_lexical_) << "RuleTable::Drop of lexical rule " << name;
  index_.erase(it);
  rules_.erase(rules_.begin() + static_cast<std::ptrdiff_t>(at));
  for (size_t i = at; i < rules_.size(); ++i) index_[rules_[i].first] = i;
}

std::string RuleTable::Add(std::string_view name_hint, std::string body) {
  auto it = by_body_.find(body);
  if (it != by_body_.end()) return it->second;
  return Define(Reserve(name_hint), std::move(body));
}

// Which lexical rules the text needs: those named in `root`, in the other rules' bodies, and in the bodies of
// needed lexical rules. A name counts wherever it is a maximal run of identifier characters ([A-Za-z0-9_]), even
// inside a string literal: a superset only costs a rule the engine drops as unreachable, while a rule left out
// would be an undefined reference. (The Python front end's RuleTable.text applies the same rule, so both write the
// same text.) Leaving the unused ones out saves the EBNF parser most of a small schema's text.
std::string RuleTable::Text(std::string_view root) const {
  std::vector<uint8_t> needed(num_lexical_, 0);
  std::vector<size_t> todo;
  static const auto kIdent = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return t;
  }();
  auto ident = [&](char c) { return kIdent[static_cast<unsigned char>(c)]; };
  // Every lexical name starts with "j_": only the maximal runs that start with it can be one.
  auto mark_named = [&](std::string_view body) {
    for (size_t i = body.find("j_"); i != std::string_view::npos; i = body.find("j_", i + 2)) {
      if (i > 0 && ident(body[i - 1])) continue;  // inside a longer run ("obj_first")
      size_t j = i + 2;
      while (j < body.size() && ident(body[j])) ++j;
      const std::string_view word = body.substr(i, j - i);
      for (size_t r = 0; r < num_lexical_; ++r)
        if (!needed[r] && word == rules_[r].first) needed[r] = 1, todo.push_back(r);
    }
  };
  mark_named(root);
  for (size_t r = num_lexical_; r < rules_.size(); ++r) mark_named(rules_[r].second);
  while (!todo.empty()) {
    const size_t r = todo.back();
    todo.pop_back();
    mark_named(rules_[r].second);
  }
  // Sized once: the text is a compile's largest string, and regrowing it copies what is written so far.
  size_t length = prefix_.size() + root.size() + 10;
  for (size_t r = 0; r < rules_.size(); ++r) length += rules_[r].first.size() + rules_[r].second.size() + 6;
  std::string out;
  out.reserve(length);
  out += prefix_;
  out += "root ::= ";
  out.append(root);
  out.push_back('\n');
  for (size_t r = 0; r < rules_.size(); ++r) {
    const auto& [name, body] = rules_[r];
    if (name == "root" || (r < num_lexical_ && !needed[r])) continue;
    out += name;
    out += " ::= ";
    out += body;
    out.push_back('\n');
  }
  return out;
}

}  // namespace xg::json_schema
