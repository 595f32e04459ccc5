#include "grammar/printer.h"

#include <cstdio>
#include <cstdlib>

#include "support/stack_guard.h"
#include "support/utf8.h"

namespace xg {
namespace {

std::string ClassCodepoint(uint32_t cp) {
  char buf[16];
  if (cp == ']' || cp == '[' || cp == '\\' || cp == '^' || cp == '-') return std::string("\\") + static_cast<char>(cp);
  if (cp == '\n') return "\\n";
  if (cp == '\t') return "\\t";
  if (cp == '\r') return "\\r";
  if (cp < 0x20 || cp == 0x7F) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
    return buf;
  }
  if (cp >= 0x80 && cp <= 0x9F) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
    return buf;
  }
  std::string out;
  AppendUtf8(cp, &out);
  return out;
}

// The shortest decimal text (%g, 1 to 9 significant digits) that reads back as exactly `v`: 0.1f prints as 0.1.
std::string ShortestFloat(float v) {
  char buf[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

// Precedence: 0 = choice, 1 = sequence, 2 = postfix operand.
void Print(const Grammar& g, int32_t id, int prec, std::string* out) {
  CheckStackHeadroom("printing the grammar");
  const Expr& e = g.exprs[id];
  switch (e.kind) {
    case ExprKind::kEmpty: *out += "\"\""; return;
    case ExprKind::kBytes: *out += "\"" + EscapeBytes(e.bytes) + "\""; return;
    case ExprKind::kCharClass: {
      *out += e.negated ? "[^" : "[";
      for (auto [lo, hi] : e.ranges) {
        *out += ClassCodepoint(lo);
        if (hi != lo) *out += "-" + ClassCodepoint(hi);
      }
      *out += "]";
      return;
    }
    case ExprKind::kRuleRef: *out += g.rules[e.rule].name; return;
    case ExprKind::kSequence:
    case ExprKind::kChoice: {
      int my = e.kind == ExprKind::kChoice ? 0 : 1;
      bool paren = prec > my;
      if (paren) *out += "(";
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i) *out += e.kind == ExprKind::kChoice ? " | " : " ";
        Print(g, e.children[i], my + 1, out);
      }
      if (paren) *out += ")";
      return;
    }
    case ExprKind::kAnyOrder: {
      // AnyOrder(item, item?, item*, separator=sep): an item with a role is printed as a postfix
      // operand (a repetition inside is parenthesised, so the role is never read as part of it).
      *out += "AnyOrder(";
      for (size_t i = 1; i < e.children.size(); ++i) {
        if (i > 1) *out += ", ";
        const uint8_t role = e.roles[i - 1];
        if (role == kAnyOrderOnce) {
          const bool paren = g.exprs[e.children[i]].kind == ExprKind::kRepeat;
          if (paren) *out += "(";
          Print(g, e.children[i], 0, out);
          if (paren) *out += ")";
          continue;
        }
        const Expr& item = g.exprs[e.children[i]];
        const bool paren = item.kind == ExprKind::kRepeat || item.kind == ExprKind::kSequence || item.kind == ExprKind::kChoice;
        if (paren) *out += "(";
        Print(g, e.children[i], 0, out);
        if (paren) *out += ")";
        *out += role == kAnyOrderOptional ? "?" : "*";
      }
      const Expr& sep = g.exprs[e.children[0]];
      if (!(sep.kind == ExprKind::kEmpty || (sep.kind == ExprKind::kBytes && sep.bytes.empty()))) {
        *out += ", separator=";
        Print(g, e.children[0], 0, out);
      }
      if (!e.implies.empty()) {  // requires="i: j k; ...", 1-based, grouped by i (implies is sorted)
        *out += ", requires=\"";
        for (size_t k = 0; k < e.implies.size(); ++k) {
          const bool new_group = k == 0 || e.implies[k].first != e.implies[k - 1].first;
          if (new_group) *out += (k ? "; " : "") + std::to_string(e.implies[k].first + 1) + ":";
          *out += " " + std::to_string(e.implies[k].second + 1);
        }
        *out += "\"";
      }
      *out += ")";
      return;
    }
    case ExprKind::kTagDispatch: {
      // A token-level dispatch (TokenTagDispatch) has token sentinels as its triggers and excludes; a TagDispatch
      // may mix token triggers (ids) with text ones.
      const bool tokens = e.token_free_text;
      auto pattern = [&](const std::string& bytes) {
        const int32_t id = TokenSentinelId(bytes);
        return id >= 0 ? std::to_string(id) : "\"" + EscapeBytes(bytes) + "\"";
      };
      *out += tokens ? "TokenTagDispatch(" : "TagDispatch(";
      for (int32_t i = 0; i < e.min; ++i) {
        const Expr& pair = g.exprs[e.children[i]];
        *out += "(" + pattern(g.exprs[pair.children[0]].bytes) + ", " + g.rules[g.exprs[pair.children[1]].rule].name + "), ";
      }
      *out += e.max ? "loop_after_dispatch=true" : "loop_after_dispatch=false";
      if (e.children.size() > static_cast<size_t>(e.min)) {
        *out += ", excludes=(";
        for (size_t i = e.min; i < e.children.size(); ++i) {
          *out += (i > static_cast<size_t>(e.min) ? ", " : "") + pattern(g.exprs[e.children[i]].bytes);
        }
        *out += ")";
      }
      *out += ")";
      return;
    }
    case ExprKind::kToken:
      *out += e.min == kBudgetGateId ? std::string("BudgetSpent()") : "Token(" + std::to_string(e.min) + ")";
      return;
    case ExprKind::kExcludeToken: {
      *out += "ExcludeToken(";
      bool first = true;
      for (auto [lo, hi] : e.ranges)
        for (uint32_t id = lo; id <= hi; ++id) *out += (first ? "" : ", ") + std::to_string(id), first = false;
      *out += ")";
      return;
    }
    case ExprKind::kRepeat: {
      bool paren = prec > 2;
      if (paren) *out += "(";
      // The operand of a postfix must itself be atomic: a nested repeat needs parentheses too.
      const Expr& child = g.exprs[e.children[0]];
      bool child_paren = child.kind == ExprKind::kRepeat;
      if (child_paren) *out += "(";
      Print(g, e.children[0], 2, out);
      if (child_paren) *out += ")";
      if (e.min == 0 && e.max == Expr::kUnbounded) {
        *out += "*";
      } else if (e.min == 1 && e.max == Expr::kUnbounded) {
        *out += "+";
      } else if (e.min == 0 && e.max == 1) {
        *out += "?";
      } else if (e.max == Expr::kUnbounded) {
        *out += "{" + std::to_string(e.min) + ",}";
      } else if (e.min == e.max) {
        *out += "{" + std::to_string(e.min) + "}";
      } else {
        *out += "{" + std::to_string(e.min) + "," + std::to_string(e.max) + "}";
      }
      if (paren) *out += ")";
      return;
    }
  }
}

}  // namespace

std::string PrintExpr(const Grammar& g, int32_t expr) {
  std::string out;
  Print(g, expr, 0, &out);
  return out;
}

std::string PrintGrammar(const Grammar& g) {
  std::string out;
  for (const Rule& r : g.rules) {
    out += r.name;
    std::string attributes;  // in xgrammar's order: max_tokens, capture, temperature
    if (r.max_tokens > 0) attributes += "max_tokens=" + std::to_string(r.max_tokens);
    if (!r.capture.empty())
      attributes += (attributes.empty() ? "" : ", ") + std::string("capture=\"") + EscapeBytes(r.capture) + "\"";
    auto add = [&](const std::string& a) { attributes += (attributes.empty() ? "" : ", ") + a; };
    if (!r.marker.empty()) {
      add("marker_body=\"" + EscapeBytes(r.marker_body) + "\"");
      add("marker=\"" + EscapeBytes(r.marker) + "\"");
      if (!r.marker_flags.empty()) add("marker_flags=\"" + r.marker_flags + "\"");
      if (r.hide_marker) add("hide_marker");
      if (!r.stop_capture.empty()) add("stop_capture=\"" + EscapeBytes(r.stop_capture) + "\"");
    }
    if (r.temperature >= 0) add("temperature=" + ShortestFloat(r.temperature));
    if (!attributes.empty()) out += "[" + attributes + "]";
    out += " ::= " + PrintExpr(g, r.body);
    if (r.lookahead >= 0) out += " (= " + PrintExpr(g, r.lookahead) + ")";
    out += "\n";
  }
  return out;
}

}  // namespace xg
