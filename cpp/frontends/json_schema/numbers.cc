// See numbers.h. Function for function the Python construction (_digit_class, _any_digits, _ge, _le, _between,
// _group, _non_negative_range), spaces included.
#include "frontends/json_schema/numbers.h"

#include <string>
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

}  // namespace xg::json_schema
