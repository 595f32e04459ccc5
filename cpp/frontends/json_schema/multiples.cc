// See multiples.h. Each function mirrors its namesake of _numbers.py statement for statement (the Python docstrings
// explain the constructions); spacing and rule-name hints are the same, so the text is too.
#include "frontends/json_schema/multiples.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontends/json_schema/keywords.h"

namespace xg::json_schema {

namespace {

using Expr = std::optional<std::string>;

std::string Digit(int64_t g) { return "\"" + std::to_string(g) + "\""; }

std::string Join(const std::vector<std::string>& options) {
  std::string out;
  for (size_t i = 0; i < options.size(); ++i) out += (i ? " | " : "") + options[i];
  return out;
}

// 10^e mod m (m >= 1).
int64_t Pow10Mod(int e, int64_t m) {
  int64_t out = 1 % m;
  for (int i = 0; i < e; ++i) out = out * 10 % m;
  return out;
}

int64_t Pow10(int e) {  // e <= 18
  int64_t out = 1;
  for (int i = 0; i < e; ++i) out *= 10;
  return out;
}

void RuleLimit(const std::string& what) {
  Stop("'multipleOf' " + what + " needs more grammar rules than MAX_MULTIPLE_OF_RULES allows");
}

// _alternatives: nothing, the one option, or a parenthesised alternation.
Expr Alternatives(const std::vector<std::string>& options) {
  if (options.empty()) return std::nullopt;
  if (options.size() == 1) return options[0];
  return "( " + Join(options) + " )";
}

// _class_of_digits: a character class (or a literal) for an ascending set of decimal digits.
std::string ClassOfDigits(const std::vector<int>& digits) {
  if (digits.size() == 1) return Digit(digits[0]);
  std::string out = "[";
  size_t start = 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i + 1 < digits.size() && digits[i + 1] == digits[i] + 1) continue;
    out += std::to_string(digits[start]);
    if (i > start) out += "-" + std::to_string(digits[i]);
    start = i + 1;
  }
  return out + "]";
}

// _by_successor: one `digit-class successor` alternative per distinct successor, in first-seen order.
std::vector<std::string> BySuccessor(const std::vector<std::pair<int, std::string>>& pairs) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& [g, next] : pairs) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == next; });
    if (it == groups.end()) {
      groups.emplace_back(next, std::vector<int>{g});
    } else {
      it->second.push_back(g);
    }
  }
  std::vector<std::string> out;
  for (const auto& [next, gs] : groups) out.push_back(next != kEmpty ? ClassOfDigits(gs) + " " + next : ClassOfDigits(gs));
  return out;
}

// _ScaledDigits: the automaton of ScaledMultiples. Each method returns an expression or nullopt (no spelling).
class ScaledDigits {
 public:
  ScaledDigits(int64_t p, int d, const RemainderTest& ok, RuleTable* rules)
      : p_(p), d_(d), ok_(ok), rules_(rules), int_weight_(Pow10Mod(d, p)),
        tag_("mult" + std::to_string(p) + "_" + std::to_string(d)) {
    for (int j = 0; j < d; ++j) frac_weight_.push_back(Pow10Mod(d - j - 1, p));
  }

  // between: the spellings with lo <= N <= hi.
  Expr Between(int64_t lo, std::optional<int64_t> hi) {
    const int64_t scale = Pow10(d_);
    const int64_t lo_i = lo / scale;
    const std::string lo_f = Fraction(lo % scale);
    std::vector<Expr> options;
    if (hi) {
      if (*hi < lo) return std::nullopt;
      const int64_t hi_i = *hi / scale;
      const std::string hi_f = Fraction(*hi % scale);
      if (lo_i == hi_i) return LiteralThen(lo_i, lo_f, hi_f);
      options.push_back(LiteralThen(lo_i, lo_f, std::nullopt));
      for (auto& x : Integers(lo_i + 1, hi_i - 1)) options.push_back(std::move(x));
      options.push_back(LiteralThen(hi_i, std::nullopt, hi_f));
    } else {
      options.push_back(LiteralThen(lo_i, lo_f, std::nullopt));
      for (auto& x : Integers(lo_i + 1, std::nullopt)) options.push_back(std::move(x));
    }
    std::vector<std::string> present;
    for (auto& x : options) {
      if (x) present.push_back(std::move(*x));
    }
    return Alternatives(present);
  }

 private:
  using Bound = std::optional<std::string>;  // a bound's d fraction digits, or none

  std::string Fraction(int64_t f) const {
    if (d_ == 0) return "";
    std::string s = std::to_string(f);
    return std::string(static_cast<size_t>(d_) - s.size(), '0') + s;
  }

  static std::string KeyPart(const Bound& b) { return b ? *b : "~"; }

  // _rule: the named rule of an acyclic state, memoised (nullopt when it has no spelling).
  Expr Rule(const std::string& key, const std::function<Expr()>& build) {
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    if (static_cast<int64_t>(memo_.size()) >= kMaxMultipleOfRules) RuleLimit("within these bounds");
    Expr body = build();
    Expr out = body ? Expr(rules_->Add(tag_, *body)) : std::nullopt;
    memo_[key] = out;
    return out;
  }

  int64_t Step(int64_t r, int g) const { return (10 * r + g * int_weight_) % p_; }

  bool Ok(int64_t r) const { return ok_ ? ok_(r) : r == 0; }

  // after: the end of the number or '.' and fraction digits, r being N's remainder after the integer part.
  Expr After(int64_t r, Bound lo_f, Bound hi_f) {
    if (d_ == 0) return Ok(r) ? Expr(std::string(kEmpty)) : std::nullopt;
    auto all = [](const std::string& s, char c) { return s.find_first_not_of(c) == std::string::npos; };
    if (lo_f && all(*lo_f, '0')) lo_f.reset();  // a bound ending in zeros constrains nothing
    if (hi_f && all(*hi_f, '9')) hi_f.reset();
    std::vector<std::string> options;
    if (CanStop(0, r, lo_f)) options.emplace_back(kEmpty);
    Expr digits = FractionDigit(0, r, lo_f, hi_f);
    if (digits) options.push_back("\".\" " + *digits);
    return Alternatives(options);
  }

  bool CanStop(int j, int64_t r, const Bound& lo_f) const {
    return Ok(r) && (!lo_f || lo_f->find_first_not_of('0', static_cast<size_t>(j)) == std::string::npos);
  }

  // _fraction_digit: the (j+1)-th fraction digit and what follows it (j < d).
  Expr FractionDigit(int j, int64_t r, const Bound& lo_f, const Bound& hi_f) {
    const int first = lo_f ? (*lo_f)[j] - '0' : 0;
    const int last = hi_f ? (*hi_f)[j] - '0' : 9;
    std::vector<std::pair<int, std::string>> pairs;
    for (int g = first; g <= last; ++g) {
      Expr next = FractionState(j + 1, (r + g * frac_weight_[j]) % p_, g == first ? lo_f : std::nullopt,
                                g == last ? hi_f : std::nullopt);
      if (next) pairs.emplace_back(g, *next);
    }
    return Alternatives(BySuccessor(pairs));
  }

  // _fraction: after j >= 1 fraction digits, stop or more digits (past the d-th, zeros only).
  Expr FractionState(int j, int64_t r, const Bound& lo_f, const Bound& hi_f) {
    if (j == d_) return Ok(r) ? Expr("\"0\"*") : std::nullopt;
    std::string key = "frac|" + std::to_string(j) + "|" + std::to_string(r) + "|" + KeyPart(lo_f) + "|" + KeyPart(hi_f);
    return Rule(key, [&]() -> Expr {
      std::vector<std::string> options;
      if (CanStop(j, r, lo_f)) options.emplace_back(kEmpty);
      Expr digits = FractionDigit(j, r, lo_f, hi_f);
      if (digits) options.push_back(*digits);
      if (options.empty()) return std::nullopt;
      return Join(options);
    });
  }

  // _literal_then: the integer part i spelled out, then its fraction part.
  Expr LiteralThen(int64_t i, const Bound& lo_f, const Bound& hi_f) {
    Expr rest = After(i % p_ * Pow10Mod(d_, p_) % p_, lo_f, hi_f);
    if (!rest) return std::nullopt;
    std::string head = "\"" + std::to_string(i) + "\"";
    return *rest == kEmpty ? head : head + " " + *rest;
  }

  Expr FreeAfter(int64_t r) {
    return Rule("after|" + std::to_string(r), [&] { return After(r, std::nullopt, std::nullopt); });
  }

  // _integers: integer parts lo <= I <= hi (hi nullopt: unbounded), each followed by a free fraction part.
  std::vector<Expr> Integers(int64_t lo, std::optional<int64_t> hi) {
    std::vector<Expr> out;
    if (hi && *hi < lo) return out;
    if (lo == 0) {
      Expr zero = FreeAfter(0);
      if (zero) out.push_back("\"0\" " + *zero);
      lo = 1;
      if (hi && *hi < 1) return out;
    }
    const int shortest = static_cast<int>(std::to_string(lo).size());
    const int longest = hi ? static_cast<int>(std::to_string(*hi).size()) : shortest;
    for (int n = shortest; n <= longest; ++n) {
      // n-digit bounds: a keeps the leading digit from being 0; b at 99..9 constrains nothing
      Bound a = std::to_string(std::max(lo, Pow10(n - 1)));
      Bound b;
      if (hi && *hi < Pow10(n) - 1) b = std::to_string(*hi);
      Expr expr = Tight(n, a, b, 0, 0);
      if (expr) out.push_back(std::move(expr));
    }
    if (!hi) {  // more digits than lo: a leading digit, then at least `shortest` digits
      std::vector<std::pair<int, std::string>> pairs;
      for (int g = 1; g <= 9; ++g) {
        Expr next = AtLeast(shortest, Step(0, g));
        if (next) pairs.emplace_back(g, *next);
      }
      if (!pairs.empty()) out.push_back(Alternatives(BySuccessor(pairs)));
    }
    return out;
  }

  // _tight: digits i.. of an n-digit integer part, those so far equal to a's / b's (where given).
  Expr Tight(int n, const Bound& a, const Bound& b, int i, int64_t r) {
    if (!a && !b) return Free(n - i, r);
    if (i == n) return FreeAfter(r);
    auto build = [&]() -> Expr {
      const int first = a ? (*a)[i] - '0' : 0;
      const int last = b ? (*b)[i] - '0' : 9;
      std::vector<std::pair<int, std::string>> pairs;
      for (int g = first; g <= last; ++g) {
        Expr next = Tight(n, g == first ? a : std::nullopt, g == last ? b : std::nullopt, i + 1, Step(r, g));
        if (next) pairs.emplace_back(g, *next);
      }
      return Alternatives(BySuccessor(pairs));
    };
    if (a && b) return build();  // the shared prefix of both bounds: one path, no rule needed
    return Rule("tight|" + std::to_string(n) + "|" + KeyPart(a) + "|" + KeyPart(b) + "|" + std::to_string(i) + "|" +
                    std::to_string(r),
                build);
  }

  // _free: `left` more integer digits, any of them, then a free fraction part.
  Expr Free(int left, int64_t r) {
    if (left == 0) return FreeAfter(r);
    return Rule("free|" + std::to_string(left) + "|" + std::to_string(r), [&]() -> Expr {
      std::vector<std::pair<int, std::string>> pairs;
      for (int g = 0; g <= 9; ++g) {
        Expr next = Free(left - 1, Step(r, g));
        if (next) pairs.emplace_back(g, *next);
      }
      return Alternatives(BySuccessor(pairs));
    });
  }

  // _at_least: at least `left` more integer digits, then a free fraction part.
  Expr AtLeast(int left, int64_t r) {
    if (left == 0) return Loop(r);
    return Rule("least|" + std::to_string(left) + "|" + std::to_string(r), [&]() -> Expr {
      std::vector<std::pair<int, std::string>> pairs;
      for (int g = 0; g <= 9; ++g) {
        Expr next = AtLeast(left - 1, Step(r, g));
        if (next) pairs.emplace_back(g, *next);
      }
      return Alternatives(BySuccessor(pairs));
    });
  }

  // _loop / _name_loops: any number of further integer digits, then a free fraction part; one rule per remainder
  // from which an ending is reachable, named before they are defined (they refer to each other).
  Expr Loop(int64_t r) {
    if (!loops_) NameLoops();
    auto it = loops_->find(r);
    return it == loops_->end() ? std::nullopt : Expr(it->second);
  }

  void NameLoops() {
    std::map<int64_t, std::string> ends;
    for (int64_t r = 0; r < p_; ++r) {
      Expr e = FreeAfter(r);
      if (e) ends[r] = *e;
    }
    std::vector<std::vector<int64_t>> back(static_cast<size_t>(p_));
    for (int64_t r = 0; r < p_; ++r) {
      for (int g = 0; g <= 9; ++g) back[static_cast<size_t>(Step(r, g))].push_back(r);
    }
    std::vector<char> live(static_cast<size_t>(p_), 0);
    std::vector<int64_t> todo;
    for (const auto& [r, _] : ends) live[static_cast<size_t>(r)] = 1, todo.push_back(r);
    int64_t num_live = static_cast<int64_t>(todo.size());
    while (!todo.empty()) {
      int64_t q = todo.back();
      todo.pop_back();
      for (int64_t x : back[static_cast<size_t>(q)]) {
        if (!live[static_cast<size_t>(x)]) live[static_cast<size_t>(x)] = 1, todo.push_back(x), ++num_live;
      }
    }
    if (num_live + static_cast<int64_t>(memo_.size()) > kMaxMultipleOfRules) RuleLimit("within these bounds");
    loops_.emplace();
    for (int64_t r = 0; r < p_; ++r) {
      if (live[static_cast<size_t>(r)]) (*loops_)[r] = rules_->Reserve(tag_ + "_loop");
    }
    for (const auto& [r, name] : *loops_) {
      std::vector<std::pair<int, std::string>> pairs;
      for (int g = 0; g <= 9; ++g) {
        auto it = loops_->find(Step(r, g));
        if (it != loops_->end()) pairs.emplace_back(g, it->second);
      }
      std::vector<std::string> options;
      if (auto e = ends.find(r); e != ends.end()) options.push_back(e->second);
      for (auto& x : BySuccessor(pairs)) options.push_back(std::move(x));
      rules_->Define(name, Join(options));
    }
  }

  const int64_t p_;
  const int d_;
  const RemainderTest& ok_;
  RuleTable* const rules_;
  const int64_t int_weight_;  // an integer digit g adds g * 10^d to N
  std::vector<int64_t> frac_weight_;  // the (j+1)-th fraction digit's weight
  const std::string tag_;
  std::unordered_map<std::string, Expr> memo_;
  std::optional<std::map<int64_t, std::string>> loops_;
};

}  // namespace

std::string MultipleOf(int64_t k, RuleTable* rules, MultipleSign sign, bool negative_zero,
                       const RemainderTest& ok_test) {
  auto ok = [&](int64_t r) { return ok_test ? ok_test(r) : r == 0; };
  if (k == 1 && sign == MultipleSign::kAny && !ok_test) return negative_zero ? "j_int" : "( \"0\" | \"-\"? [1-9] [0-9]* )";
  if (k > kMaxMultipleOfRules) RuleLimit(std::to_string(k));
  const std::string hint = "mod" + std::to_string(k) + "_r";
  std::vector<std::string> names;
  for (int64_t r = 0; r < k; ++r) names.push_back(rules->Reserve(hint + std::to_string(r)));
  for (int64_t r = 0; r < k; ++r) {
    // State r after some digits: one more digit g leads to (10 r + g) mod k; the number may stop iff r is 0.
    std::vector<std::string> options;
    if (ok(r)) options.emplace_back(kEmpty);
    for (int g = 0; g <= 9; ++g) options.push_back(Digit(g) + " " + names[static_cast<size_t>((10 * r + g) % k)]);
    rules->Define(names[static_cast<size_t>(r)], Join(options));
  }
  std::vector<std::string> leading;
  for (int g = 1; g <= 9; ++g) leading.push_back(Digit(g) + " " + names[static_cast<size_t>(g % k)]);
  const std::string first = Join(leading);
  const std::string zero = ok(0) ? "\"0\" | " : "";
  switch (sign) {
    case MultipleSign::kNonNegative: return "( " + zero + first + " )";
    case MultipleSign::kNegative: return "( \"-\" ( " + first + " ) )";
    case MultipleSign::kAny: break;
  }
  if (!negative_zero) return "( " + zero + "\"-\"? ( " + first + " ) )";
  return "( \"-\"? ( " + zero + first + " ) )";
}

std::string MultipleOfAtLeast(int64_t k, int64_t a, RuleTable* rules, const RemainderTest& ok_test) {
  auto ok = [&](int64_t r) { return ok_test ? ok_test(r) : r == 0; };
  const std::string digits = std::to_string(a);
  const int n = static_cast<int>(digits.size());
  if (k > kMaxMultipleOfRules || k * (2 * n + 2) > kMaxMultipleOfRules) RuleLimit(std::to_string(k));
  const std::string prefix = "mod" + std::to_string(k);

  // more(r, c): c digits read (capped at n + 1), remainder r. A depth-first walk with an explicit stack: names are
  // reserved on entry and defined on exit, in the order of the Python recursion.
  std::unordered_map<int64_t, std::string> longer;
  auto more = [&](int64_t r0, int c0) {
    struct Frame {
      int64_t r;
      int c;
      std::string name;
      std::vector<std::string> options;
      int next_digit;
    };
    std::vector<Frame> stack;
    std::string result;
    auto enter = [&](int64_t r, int c) -> bool {  // true: a new frame to walk; false: `result` names the rule
      auto it = longer.find(r * (n + 2) + c);
      if (it != longer.end()) {
        result = it->second;
        return false;
      }
      std::string name = rules->Reserve(prefix + "_ge" + digits + "_r" + std::to_string(r) + "_" + std::to_string(c));
      longer[r * (n + 2) + c] = name;
      Frame f{r, c, name, {}, 0};
      if (ok(r) && c > n) f.options.emplace_back(kEmpty);
      stack.push_back(std::move(f));
      return true;
    };
    if (!enter(r0, c0)) return result;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_digit == 10) {
        rules->Define(f.name, Join(f.options));
        result = f.name;
        stack.pop_back();
        if (!stack.empty()) {
          Frame& parent = stack.back();
          parent.options.push_back(Digit(parent.next_digit - 1) + " " + result);
        }
        continue;
      }
      const int g = f.next_digit++;
      const int64_t r2 = (10 * f.r + g) % k;
      const int c2 = std::min(f.c + 1, n + 1);
      if (enter(r2, c2)) continue;
      stack.back().options.push_back(Digit(g) + " " + result);
    }
    return result;
  };

  std::map<std::pair<int, int64_t>, Expr> free;
  std::function<Expr(int, int64_t)> rest = [&](int j, int64_t r) -> Expr {  // j free digits left, remainder r
    if (j == 0) return ok(r) ? Expr(std::string(kEmpty)) : std::nullopt;
    auto it = free.find({j, r});
    if (it != free.end()) return it->second;
    std::vector<std::string> options;
    for (int g = 0; g <= 9; ++g) {
      Expr next = rest(j - 1, (10 * r + g) % k);
      if (next) options.push_back(Digit(g) + " " + *next);
    }
    Expr out = options.empty() ? std::nullopt
                               : Expr(rules->Add(prefix + "_free" + std::to_string(j) + "_r" + std::to_string(r),
                                                 Join(options)));
    free[{j, r}] = out;
    return out;
  };
  std::function<Expr(int, int64_t)> tight = [&](int i, int64_t r) -> Expr {  // the first i digits equal a's
    if (i == n) return ok(r) ? Expr(std::string(kEmpty)) : std::nullopt;
    std::vector<std::string> options;
    const int own = digits[static_cast<size_t>(i)] - '0';
    for (int g = own; g <= 9; ++g) {
      const int64_t r2 = (10 * r + g) % k;
      Expr next = g == own ? tight(i + 1, r2) : rest(n - i - 1, r2);
      if (next) options.push_back(Digit(g) + " " + *next);
    }
    if (options.empty()) return std::nullopt;
    return rules->Add(prefix + "_tight" + digits + "_" + std::to_string(i), Join(options));
  };

  std::vector<std::string> options;
  for (int g = 1; g <= 9; ++g) options.push_back(Digit(g) + " " + more(g % k, 1));
  Expr same = tight(0, 0);
  if (same) options.push_back(*same);
  return "( " + Join(options) + " )";
}

std::string DecimalMultipleOf(int64_t p, int d, RuleTable* rules, MultipleSign sign) {
  const int cap = 1;  // min_int_digits = 0
  if (p > kMaxMultipleOfRules || p * (d + 1 + cap) > kMaxMultipleOfRules) RuleLimit(std::to_string(p));
  const std::string tag = "dmul" + std::to_string(p) + "_" + std::to_string(d);
  auto at = [&](int64_t r, int j, int width) { return static_cast<size_t>(r * width + j); };
  std::vector<std::string> frac, ints;
  for (int64_t r = 0; r < p; ++r) {
    for (int j = 0; j <= d; ++j) frac.push_back(rules->Reserve(tag + "_f" + std::to_string(r) + "_" + std::to_string(j)));
  }
  for (int64_t r = 0; r < p; ++r) ints.push_back(rules->Reserve(tag + "_i" + std::to_string(r) + "_1"));
  auto end_ok = [&](int64_t r, int j) { return r * Pow10Mod(d - j, p) % p == 0; };
  auto after_int = [&](int64_t r) {
    std::vector<std::string> first_frac;
    for (int g = 0; g <= 9; ++g) {
      if (d >= 1) {
        first_frac.push_back(Digit(g) + " " + frac[at((10 * r + g) % p, 1, d + 1)]);
      } else if (g == 0) {
        first_frac.push_back(Digit(g) + " " + frac[at(r, 0, d + 1)]);
      }
    }
    std::vector<std::string> out;
    if (end_ok(r, 0)) out.emplace_back(kEmpty);
    out.push_back("\".\" ( " + Join(first_frac) + " )");
    return out;
  };
  for (int64_t r = 0; r < p; ++r) {
    for (int j = 0; j <= d; ++j) {
      const std::string& name = frac[at(r, j, d + 1)];
      std::vector<std::string> options;
      if (j < d) {
        if (end_ok(r, j)) options.emplace_back(kEmpty);
        for (int g = 0; g <= 9; ++g) options.push_back(Digit(g) + " " + frac[at((10 * r + g) % p, j + 1, d + 1)]);
      } else {
        if (r == 0) options.emplace_back(kEmpty);
        options.push_back("\"0\" " + name);
      }
      rules->Define(name, Join(options));
    }
  }
  for (int64_t r = 0; r < p; ++r) {
    std::vector<std::string> options;
    for (int g = 0; g <= 9; ++g) options.push_back(Digit(g) + " " + ints[static_cast<size_t>((10 * r + g) % p)]);
    for (auto& x : after_int(r)) options.push_back(std::move(x));
    rules->Define(ints[static_cast<size_t>(r)], Join(options));
  }
  std::vector<std::string> leading;
  for (int g = 1; g <= 9; ++g) leading.push_back(Digit(g) + " " + ints[static_cast<size_t>(g % p)]);
  const std::string body = "\"0\" ( " + Join(after_int(0)) + " ) | " + Join(leading);
  switch (sign) {
    case MultipleSign::kNonNegative: return "( " + body + " )";
    case MultipleSign::kNegative: return "( \"-\" ( " + body + " ) )";
    case MultipleSign::kAny: break;
  }
  return "( \"-\"? ( " + body + " ) )";
}

std::optional<std::string> ScaledMultiples(int64_t p, int d, int64_t lo, std::optional<int64_t> hi,
                                           RuleTable* rules, const RemainderTest& ok) {
  constexpr int64_t kMaxScaled = 100000000000000000;  // 10^17: every intermediate stays within int64
  if (lo < 0 || lo >= kMaxScaled || (hi && *hi >= kMaxScaled) || d > 16) {
    Stop("'multipleOf' within bounds beyond the native integer range");
  }
  const int64_t top = std::max(lo, hi.value_or(0)) / Pow10(d);
  const int64_t estimate = p * (2 * static_cast<int64_t>(std::to_string(top).size()) + d + 2);
  if (p > kMaxMultipleOfRules || estimate > kMaxMultipleOfRules) RuleLimit("within these bounds");
  return ScaledDigits(p, d, ok, rules).Between(lo, hi);
}

DecimalStep StepOf(const Decimal& k) {
  DecimalStep out;
  out.d = static_cast<int>(k.fraction.size());
  const std::string digits = (k.whole ? std::to_string(k.whole) : std::string()) + k.fraction;
  out.p = 0;
  for (char c : digits) out.p = out.p * 10 + (c - '0');  // < 10^18: Decimal reads at most 18 digits
  return out;
}

int64_t IntegerStep(const DecimalStep& k) {
  int64_t g = 1, rest = k.p;
  for (int i = 0; i < k.d && rest % 2 == 0; ++i) rest /= 2, g *= 2;
  rest = k.p;
  for (int i = 0; i < k.d && rest % 5 == 0; ++i) rest /= 5, g *= 5;
  return k.p / g;
}

namespace {

int64_t FloorDiv(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// _finite_integer_multiples: the multiples of k in [a, b] (one sign), listed when few, else the automaton.
std::vector<std::string> FiniteIntegerMultiples(int64_t k, int64_t a, int64_t b, RuleTable* rules,
                                               const RemainderTest& ok) {
  std::vector<std::string> out;
  if (ok && b - a + 1 <= kMaxListedNonMultiples) {
    for (int64_t v = a; v <= b; ++v) {
      if (ok((v < 0 ? -v : v) % k)) out.push_back(Literal(std::to_string(v)));
    }
    return out;
  }
  const int64_t first = -FloorDiv(-a, k) * k, last = FloorDiv(b, k) * k;
  if (!ok && (last - first) / k + 1 <= kMaxListedMultiples) {
    for (int64_t v = first; v <= last; v += k) out.push_back(Literal(std::to_string(v)));
    return out;
  }
  const bool positive = a >= 0;
  std::optional<std::string> digits = ScaledMultiples(k, 0, positive ? a : -b, positive ? b : -a, rules, ok);
  if (digits) out.push_back(positive ? *digits : "\"-\" " + *digits);
  return out;
}

constexpr int64_t kMaxScaledValue = 100000000000000000;  // 10^17

__int128 Pow10Wide(size_t e) {
  __int128 out = 1;
  for (size_t i = 0; i < e; ++i) out *= 10;
  return out;
}

__int128 FloorDivWide(__int128 a, __int128 b) {  // b > 0
  __int128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

std::string IntegerMultiples(int64_t k, std::optional<int64_t> lo, std::optional<int64_t> hi, RuleTable* rules,
                             bool negative_zero, const RemainderTest& ok) {
  if (!lo && !hi) return MultipleOf(k, rules, MultipleSign::kAny, negative_zero, ok);
  if (lo && hi && *lo > *hi) throw Unsatisfiable{"no integer within the bounds"};
  std::vector<std::string> parts;
  struct Side {
    std::optional<int64_t> a, b;
    MultipleSign sign;
  };
  const Side sides[] = {
      {lo ? std::max<int64_t>(*lo, 0) : 0, hi, MultipleSign::kNonNegative},
      {lo, hi ? std::min<int64_t>(*hi, -1) : -1, MultipleSign::kNegative},
  };
  for (const Side& side : sides) {
    const auto& a = side.a;
    const auto& b = side.b;
    if (a && b && *a > *b) continue;
    if ((side.sign == MultipleSign::kNonNegative && !b && *a == 0) ||
        (side.sign == MultipleSign::kNegative && !a && *b == -1)) {
      parts.push_back(MultipleOf(k, rules, side.sign, true, ok));
    } else if (!b) {  // [a, oo) with a >= 1
      parts.push_back(MultipleOfAtLeast(k, *a, rules, ok));
    } else if (!a) {  // (-oo, b] with b <= -2
      parts.push_back("\"-\" " + MultipleOfAtLeast(k, -*b, rules, ok));
    } else {
      for (auto& x : FiniteIntegerMultiples(k, *a, *b, rules, ok)) parts.push_back(std::move(x));
    }
  }
  if (parts.empty()) throw Unsatisfiable{"the range contains no multipleOf value"};
  return Choice(parts);
}

std::string BoundedDecimalMultiples(const DecimalStep& k, const std::optional<Decimal>& lo, bool lo_strict,
                                    const std::optional<Decimal>& hi, bool hi_strict, RuleTable* rules) {
  // m * k within the bounds: m >= lo / k (> when strict and exact), m <= hi / k, exactly (k = p / 10^d).
  auto multiplier = [&](const Decimal& v, bool strict, bool lower) -> int64_t {
    if (v.fraction.size() > 18 || k.d > 15) Stop("'multipleOf' within bounds beyond the native integer range");
    __int128 num = v.whole;
    for (char c : v.fraction) num = num * 10 + (c - '0');
    num *= Pow10Wide(static_cast<size_t>(k.d));
    if (v.negative) num = -num;
    const __int128 den = static_cast<__int128>(k.p) * Pow10Wide(v.fraction.size());
    const __int128 floor = FloorDivWide(num, den);
    const bool exact = num % den == 0;
    const __int128 m = lower ? (exact ? floor + (strict ? 1 : 0) : floor + 1) : (exact && strict ? floor - 1 : floor);
    const __int128 limit = kMaxScaledValue / k.p;
    if (m > limit || m < -limit) Stop("'multipleOf' within bounds beyond the native integer range");
    return static_cast<int64_t>(m);
  };
  std::optional<int64_t> m_lo, m_hi;
  if (lo) m_lo = multiplier(*lo, lo_strict, true);
  if (hi) m_hi = multiplier(*hi, hi_strict, false);
  if (m_lo && m_hi && *m_lo > *m_hi) throw Unsatisfiable{"the range contains no multipleOf value"};

  const int64_t scale = Pow10(k.d);
  auto spell = [&](int64_t m) {
    const int64_t n = (m < 0 ? -m : m) * k.p;
    const std::string sign = m < 0 ? "\"-\" " : m == 0 ? "\"-\"? " : "";
    if (n % scale == 0) return sign + Literal(std::to_string(n / scale)) + " ( \".\" \"0\"+ )?";
    std::string digits = std::to_string(n);
    if (digits.size() < static_cast<size_t>(k.d) + 1) digits.insert(0, static_cast<size_t>(k.d) + 1 - digits.size(), '0');
    std::string text = digits.substr(0, digits.size() - k.d) + "." + digits.substr(digits.size() - k.d);
    while (!text.empty() && text.back() == '0') text.pop_back();
    return sign + Literal(text) + " \"0\"*";
  };

  const bool zero = (!m_lo || *m_lo <= 0) && (!m_hi || *m_hi >= 0);
  std::vector<std::string> parts;
  for (MultipleSign sign : {MultipleSign::kNonNegative, MultipleSign::kNegative}) {
    const bool nonneg = sign == MultipleSign::kNonNegative;
    // |m| in [a, b] (b nullopt: unbounded) on this side
    int64_t a = nonneg ? (m_lo ? std::max<int64_t>(*m_lo, 0) : 0) : (m_hi ? std::max<int64_t>(-*m_hi, 1) : 1);
    std::optional<int64_t> b = nonneg ? m_hi : (m_lo ? std::optional<int64_t>(-*m_lo) : std::nullopt);
    if (b && a > *b) continue;
    if (!b && a == (nonneg ? 0 : 1)) {
      parts.push_back(DecimalMultipleOf(k.p, k.d, rules, sign));
    } else if (b && *b - a + 1 <= kMaxListedMultiples) {
      for (int64_t m = a; m <= *b; ++m) parts.push_back(spell(nonneg ? m : -m));
    } else {
      if (!nonneg && zero) a = 0;  // "-0" is 0 too (the listed zero spells its sign as optional)
      std::optional<std::string> body =
          ScaledMultiples(k.p, k.d, a * k.p, b ? std::optional<int64_t>(*b * k.p) : std::nullopt, rules);
      if (body) parts.push_back(nonneg ? *body : "\"-\" " + *body);
    }
  }
  if (parts.empty()) throw Unsatisfiable{"the range contains no multipleOf value"};
  std::vector<std::string> wrapped;
  for (const auto& x : parts) wrapped.push_back("( " + x + " )");
  return rules->Add("number_multiple", Choice(wrapped));
}

std::optional<std::string> DecimalLcm(const Decimal& a, const Decimal& b) {
  // p1/q1 and p2/q2 reduced: the common multiples are the multiples of lcm(p1, p2) / gcd(q1, q2).
  if (a.fraction.size() > 18 || b.fraction.size() > 18) return std::nullopt;
  auto reduced = [](const Decimal& v) {
    const DecimalStep s = StepOf(v);
    const int64_t p = IntegerStep(s);  // p / g with g = gcd(p, 10^d)
    return std::pair<int64_t, __int128>{p, Pow10Wide(static_cast<size_t>(s.d)) / (s.p / p)};
  };
  const auto [p1, q1] = reduced(a);
  const auto [p2, q2] = reduced(b);
  const __int128 num = static_cast<__int128>(p1 / std::gcd(p1, p2)) * p2;
  __int128 x = q1, y = q2;
  while (y != 0) x %= y, std::swap(x, y);
  const __int128 den = x;  // divides 10^18: the result is a finite decimal
  if (num >= kMaxScaledValue) return std::nullopt;
  if (num % den == 0) return std::to_string(static_cast<int64_t>(num / den));  // an integer, as Python's int
  // Else the float Python writes, kept when its repr reads back as the same number: true within 15 significant
  // digits (beyond, this front end declines).
  size_t e = 0;
  __int128 scale = 1;
  while (scale % den != 0) scale *= 10, ++e;
  __int128 v = num * (scale / den);  // the digits: num / den = v / 10^e, v's last digit non-zero
  std::string digits;
  for (; v > 0; v /= 10) digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  if (digits.size() > 15) return std::nullopt;
  if (digits.size() <= e) digits.insert(0, e + 1 - digits.size(), '0');
  return digits.substr(0, digits.size() - e) + "." + digits.substr(digits.size() - e);
}

}  // namespace xg::json_schema
