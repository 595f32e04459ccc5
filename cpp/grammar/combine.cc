// Grammars combined into one (combine.h).
#include "grammar/combine.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "support/check.h"

namespace xg {

Grammar CombineGrammars(const std::vector<const Grammar*>& grammars, Combination how) {
  XG_USER_CHECK(!grammars.empty()) << "Grammar." << (how == Combination::kUnion ? "union" : "concat")
                                   << ": needs at least one grammar";
  Grammar out;
  out.rules.push_back(Rule{"root", -1, -1});
  out.root = 0;
  std::unordered_set<std::string> taken = {"root"};
  auto fresh = [&](const std::string& name) {
    std::string candidate = name;
    for (int k = 1; taken.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
    taken.insert(candidate);
    return candidate;
  };
  std::vector<int32_t> parts;
  for (size_t i = 0; i < grammars.size(); ++i) {
    const Grammar* g = grammars[i];
    const int32_t expr_offset = static_cast<int32_t>(out.exprs.size());
    const int32_t rule_offset = static_cast<int32_t>(out.rules.size());
    for (Expr e : g->exprs) {
      for (int32_t& c : e.children) c += expr_offset;
      if (e.kind == ExprKind::kRuleRef) e.rule += rule_offset;
      out.exprs.push_back(std::move(e));
    }
    for (const Rule& r : g->rules) {
      Rule copy = r;
      copy.name = fresh(r.name == "root" ? "root_" + std::to_string(i + 1) : r.name);
      if (copy.body >= 0) copy.body += expr_offset;
      if (copy.lookahead >= 0) copy.lookahead += expr_offset;
      out.rules.push_back(std::move(copy));
    }
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    ref.rule = rule_offset + g->root;
    parts.push_back(out.Add(std::move(ref)));
  }
  out.rules[0].body = out.AddNode(how == Combination::kUnion ? ExprKind::kChoice : ExprKind::kSequence, parts);
  return out;
}

Grammar WithRulePrefix(const Grammar& g, const std::string& prefix, const std::vector<std::string>& keep) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto name_char = [&](char c) { return letter(c) || (c >= '0' && c <= '9') || c == '-'; };
  XG_USER_CHECK(!prefix.empty() && letter(prefix[0]) && std::all_of(prefix.begin(), prefix.end(), name_char))
      << "Grammar: a rule-name prefix is an ASCII letter or '_', then letters, digits, '_' or '-'; got '" << prefix
      << "'";
  Grammar out = g;
  const std::unordered_set<std::string> kept(keep.begin(), keep.end());
  for (Rule& r : out.rules)
    if (!kept.count(r.name)) r.name = prefix + r.name;
  return out;
}

}  // namespace xg
