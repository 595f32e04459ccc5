// See numbers.h. Function for function the Python construction (_digit_class, _any_digits, _ge, _le, _between,
// _group, _non_negative_range), spaces included.
#include "frontends/json_schema/numbers.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xg::json_schema {

namespace {

using Options = std::vector<std::string>;

std::string DigitClass(int lo, int hi) {  // "" when empty
  if (lo > hi) return "";
  return lo == hi ? "[" + std::to_string(lo) + "]" : "[" + std::to_string(lo) + "-" + std::to_string(hi) + "]";
}

std::string AnyDigits(size_t n) {
  return n == 0 ? "" : n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string Strip(const std::string& s) {  // str.strip() of spaces
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

std::string Group(const Options& in) {
  Options options;
  for (const auto& o : in) {
    if (!o.empty()) options.push_back(o);
  }
  if (options.size() == 1 && options[0] == "\"\"") return "";
  if (options.size() == 1) return options[0];
  std::string out = "( ";
  for (size_t i = 0; i < options.size(); ++i) out += (i ? " | " : "") + options[i];
  return out + " )";
}

std::string Quoted(char digit) { return std::string("\"") + digit + "\" "; }

Options Ge(const std::string& a) {
  if (a.empty()) return {"\"\""};
  Options out;
  std::string higher = DigitClass(a[0] - '0' + 1, 9);
  if (!higher.empty()) out.push_back(Strip(higher + " " + AnyDigits(a.size() - 1)));
  out.push_back(Quoted(a[0]) + Group(Ge(a.substr(1))));
  return out;
}

Options Le(const std::string& b) {
  if (b.empty()) return {"\"\""};
  Options out;
  std::string lower = DigitClass(0, b[0] - '0' - 1);
  if (!lower.empty()) out.push_back(Strip(lower + " " + AnyDigits(b.size() - 1)));
  out.push_back(Quoted(b[0]) + Group(Le(b.substr(1))));
  return out;
}

Options Between(const std::string& a, const std::string& b) {
  if (a.empty()) return {"\"\""};
  if (a[0] == b[0]) return {Quoted(a[0]) + Group(Between(a.substr(1), b.substr(1)))};
  Options out = {Quoted(a[0]) + Group(Ge(a.substr(1))), Quoted(b[0]) + Group(Le(b.substr(1)))};
  std::string middle = DigitClass(a[0] - '0' + 1, b[0] - '0' - 1);
  if (!middle.empty()) out.push_back(Strip(middle + " " + AnyDigits(a.size() - 1)));
  return out;
}

Options NonNegativeRange(int64_t lo, std::optional<int64_t> hi) {
  if (hi && *hi < lo) return {};
  Options out;
  if (lo == 0) {
    out.push_back("\"0\"");
    lo = 1;
    if (hi && *hi < 1) return out;
  }
  std::string a = std::to_string(lo);
  std::optional<std::string> b;
  if (hi) b = std::to_string(*hi);
  if (b && a.size() == b->size()) {
    Options between = Between(a, *b);
    out.insert(out.end(), between.begin(), between.end());
    return out;
  }
  if (a[0] != '0') {
    Options ge = Ge(a);
    out.insert(out.end(), ge.begin(), ge.end());
  }
  size_t last = b ? b->size() : a.size() + 1;
  for (size_t n = a.size() + 1; n < last; ++n) out.push_back(Strip("[1-9] " + AnyDigits(n - 1)));
  if (!b) {
    out.push_back("[1-9] [0-9]{" + std::to_string(a.size()) + ",}");
  } else {
    std::string first = DigitClass(1, (*b)[0] - '0' - 1);
    if (!first.empty()) out.push_back(Strip(first + " " + AnyDigits(b->size() - 1)));
    out.push_back(Quoted((*b)[0]) + Group(Le(b->substr(1))));
  }
  return out;
}

}  // namespace

std::optional<std::string> IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi, bool negative_zero) {
  if (lo && hi && *lo > *hi) return std::nullopt;
  Options options;
  if (!hi || *hi >= 0) {
    Options pos = NonNegativeRange(lo ? std::max<int64_t>(*lo, 0) : 0, hi);
    options.insert(options.end(), pos.begin(), pos.end());
  }
  if (!lo || *lo < 0) {
    std::optional<int64_t> neg_hi;
    if (lo) neg_hi = -*lo;
    Options neg = NonNegativeRange(hi ? std::max<int64_t>(1, -*hi) : 1, neg_hi);
    if (!neg.empty()) options.push_back("\"-\" " + Group(neg));
  }
  if (negative_zero && (!lo || *lo <= 0) && (!hi || *hi >= 0)) options.push_back("\"-0\"");
  if (options.empty()) return std::nullopt;
  return Group(options);
}

std::optional<Decimal> Decimal::Parse(const std::string& t) {
  size_t i = 0;
  bool negative = i < t.size() && t[i] == '-';
  if (negative) ++i;
  std::string digits;  // mantissa digits; value = digits * 10^exponent
  int64_t exponent = 0;
  bool dot = false;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      dot = true;
    } else {
      digits.push_back(t[i]);
      if (dot) --exponent;
    }
  }
  if (i < t.size()) {
    std::string e = t.substr(i + 1);
    if (e.empty() || e.size() > 4) return std::nullopt;
    exponent += std::stol(e);
  }
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};  // zero (also -0)
  digits = digits.substr(first);
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  // A plain integer literal is a Python int (exact); any other number a float, exact within 15 digits.
  bool plain_integer = t.find_first_of(".eE") == std::string::npos;
  int64_t int_digits = static_cast<int64_t>(digits.size()) + exponent;  // digits before the point
  if (plain_integer ? int_digits > 18 : (digits.size() > 15 || int_digits > 17 || int_digits < -30)) {
    return std::nullopt;
  }
  std::string whole, fraction;
  if (int_digits <= 0) {
    fraction = std::string(static_cast<size_t>(-int_digits), '0') + digits;
  } else if (static_cast<size_t>(int_digits) >= digits.size()) {
    whole = digits + std::string(static_cast<size_t>(int_digits) - digits.size(), '0');
  } else {
    whole = digits.substr(0, static_cast<size_t>(int_digits));
    fraction = digits.substr(static_cast<size_t>(int_digits));
  }
  Decimal d;
  d.negative = negative;
  d.whole = whole.empty() ? 0 : std::stoll(whole);
  d.fraction = fraction;
  return d;
}

Decimal Decimal::Negated() const {
  Decimal d = *this;
  d.negative = !IsZero() && !negative;
  return d;
}

int64_t Decimal::Floor() const {
  return negative ? -(whole + (fraction.empty() ? 0 : 1)) : whole;
}

int64_t Decimal::Ceil() const {
  return negative ? -whole : whole + (fraction.empty() ? 0 : 1);
}

namespace {

int CompareMagnitude(const Decimal& a, const Decimal& b) {
  if (a.whole != b.whole) return a.whole < b.whole ? -1 : 1;
  size_t n = std::max(a.fraction.size(), b.fraction.size());
  for (size_t i = 0; i < n; ++i) {
    char x = i < a.fraction.size() ? a.fraction[i] : '0', y = i < b.fraction.size() ? b.fraction[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace

int Compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int m = CompareMagnitude(a, b);
  return a.negative ? -m : m;
}

namespace {

// _FractionRules: rules for the digits after '.', memoised by automaton state. A state is what is left of the
// lower and upper bounds' fraction digits (nullopt: that bound is already strictly satisfied).
class FractionRules {
 public:
  using Rest = std::optional<std::string>;
  FractionRules(RuleTable* rules, bool lo_strict, bool hi_strict)
      : rules_(rules), lo_strict_(lo_strict), hi_strict_(hi_strict) {}

  bool CanStop(const Rest& lo, const Rest& hi) const {
    bool lo_ok = !lo || (lo->empty() && !lo_strict_);
    bool hi_ok = !hi || !hi->empty() || !hi_strict_;
    return lo_ok && hi_ok;
  }

  // The state after digit d, or nullopt (dead).
  static std::optional<std::pair<Rest, Rest>> Step(Rest lo, Rest hi, int d) {
    if (lo) {
      int bound = lo->empty() ? 0 : (*lo)[0] - '0';
      if (d < bound) return std::nullopt;
      lo = d > bound ? Rest() : Rest(lo->empty() ? "" : lo->substr(1));
    }
    if (hi) {
      int bound = hi->empty() ? 0 : (*hi)[0] - '0';
      if (d > bound) return std::nullopt;
      hi = d < bound ? Rest() : Rest(hi->empty() ? "" : hi->substr(1));
    }
    return std::make_pair(lo, hi);
  }

  // Digit strings (possibly empty) valid from this state.
  std::string RestRule(const Rest& lo, const Rest& hi) {
    if (!lo && !hi) return "[0-9]*";
    auto key = std::make_pair(lo, hi);
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string name = names_[key] = rules_->Reserve("frac");
    std::string body = CanStop(lo, hi) ? "\"\"" : "";
    for (int d = 0; d < 10; ++d) {
      auto next = Step(lo, hi, d);
      if (!next) continue;
      std::string option = "\"" + std::to_string(d) + "\" " + RestRule(next->first, next->second);
      body += (body.empty() ? "" : " | ") + option;
    }
    rules_->Define(name, body.empty() ? "j_never" : body);
    return name;
  }

  // The optional '.' + digits of a number whose integer part equals the bounds' integer parts.
  std::optional<std::string> Part(const Rest& lo, const Rest& hi) {
    std::vector<std::string> options;
    if (CanStop(lo, hi)) options.push_back("\"\"");
    std::string digits;
    for (int d = 0; d < 10; ++d) {
      auto next = Step(lo, hi, d);
      if (!next) continue;
      digits += (digits.empty() ? "" : " | ") + ("\"" + std::to_string(d) + "\" " + RestRule(next->first, next->second));
    }
    if (!digits.empty()) options.push_back("\".\" ( " + digits + " )");
    if (options.empty()) return std::nullopt;
    if (options.size() == 1) return options[0];
    return "( " + options[0] + " | " + options[1] + " )";
  }

 private:
  RuleTable* rules_;
  bool lo_strict_, hi_strict_;
  std::map<std::pair<Rest, Rest>, std::string> names_;
};

std::string WholeLiteral(int64_t v) { return "\"" + std::to_string(v) + "\""; }

// _non_negative_number: spellings I(.F)? of the numbers y >= 0 with lo <(=) y <(=) hi (lo nullopt: 0 inclusive).
Options NonNegativeNumber(std::optional<Decimal> lo, bool lo_strict, const std::optional<Decimal>& hi, bool hi_strict,
                          RuleTable* rules) {
  if (!lo || lo->negative) lo = Decimal{}, lo_strict = false;
  if (hi) {
    int c = Compare(*hi, *lo);
    if (c < 0 || (c == 0 && (lo_strict || hi_strict))) return {};
  }
  FractionRules fr(rules, lo_strict, hi_strict);
  const std::string any_fraction = "( \".\" [0-9]+ )?";
  Options out;
  if (!hi) {
    if (auto part = fr.Part(lo->fraction, std::nullopt)) out.push_back(WholeLiteral(lo->whole) + " " + *part);
    out.push_back(*IntegerRange(lo->whole + 1, std::nullopt, true) + " " + any_fraction);
    return out;
  }
  if (lo->whole == hi->whole) {
    auto part = fr.Part(lo->fraction, hi->fraction);
    if (!part) return {};
    return {WholeLiteral(lo->whole) + " " + *part};
  }
  if (auto part = fr.Part(lo->fraction, std::nullopt)) out.push_back(WholeLiteral(lo->whole) + " " + *part);
  if (auto middle = IntegerRange(lo->whole + 1, hi->whole - 1, true)) out.push_back(*middle + " " + any_fraction);
  if (auto part = fr.Part(std::nullopt, hi->fraction)) out.push_back(WholeLiteral(hi->whole) + " " + *part);
  return out;
}

}  // namespace

std::optional<std::string> NumberRange(const std::optional<Decimal>& lo, bool lo_strict,
                                       const std::optional<Decimal>& hi, bool hi_strict, RuleTable* rules) {
  Options options;
  const Decimal zero;
  if (!hi || !hi->negative) {  // x >= 0
    bool lo_non_negative = lo && !lo->negative;
    Options pos = NonNegativeNumber(lo_non_negative ? lo : std::nullopt, lo_non_negative && lo_strict, hi, hi_strict,
                                    rules);
    options.insert(options.end(), pos.begin(), pos.end());
  }
  if (!lo || Compare(*lo, zero) <= 0) {  // x = -y, y >= 0: -hi <(=) y <(=) -lo
    std::optional<Decimal> neg_lo, neg_hi;
    if (hi && hi->negative) neg_lo = hi->Negated();
    if (lo) neg_hi = lo->Negated();
    Options neg = NonNegativeNumber(neg_lo, hi && Compare(*hi, zero) <= 0 && hi_strict, neg_hi, lo_strict, rules);
    if (!neg.empty()) {
      std::string joined;
      for (size_t i = 0; i < neg.size(); ++i) joined += (i ? " | " : "") + neg[i];
      options.push_back("\"-\" ( " + joined + " )");
    }
  }
  if (options.empty()) return std::nullopt;
  return Group(options);
}

std::optional<std::string> PythonNumberText(const std::string& literal) {
  if (literal.find_first_of(".eE") == std::string::npos) return literal == "-0" ? "0" : literal;  // an int
  std::optional<Decimal> v = Decimal::Parse(literal);
  if (!v) return std::nullopt;
  // A float's repr: its shortest round-trip digits (those of the literal within 15 significant digits), fixed
  // notation for decimal exponents -4 <= x < 16, else scientific.
  std::string digits = (v->whole ? std::to_string(v->whole) : std::string()) + v->fraction;
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return "0.0";
  const int x = v->whole ? static_cast<int>(std::to_string(v->whole).size()) - 1
                         : -static_cast<int>(v->fraction.find_first_not_of('0')) - 1;
  digits = digits.substr(first);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const std::string sign = v->negative ? "-" : "";
  if (x >= 0 && x < 16) {
    const size_t whole_digits = static_cast<size_t>(x) + 1;
    std::string whole = digits.substr(0, std::min(whole_digits, digits.size()));
    whole += std::string(whole_digits - whole.size(), '0');
    return sign + whole + "." + (digits.size() > whole_digits ? digits.substr(whole_digits) : "0");
  }
  if (x < 0 && x >= -4) return sign + "0." + std::string(static_cast<size_t>(-x - 1), '0') + digits;
  const std::string mantissa = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
  const int e = x < 0 ? -x : x;
  return sign + mantissa + "e" + (x < 0 ? "-" : "+") + (e < 10 ? "0" : "") + std::to_string(e);
}

}  // namespace xg::json_schema
