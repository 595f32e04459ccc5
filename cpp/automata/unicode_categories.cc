// Unicode general categories from a generated table of runs (see unicode_categories.h): a category's
// set is the union of its runs, built per lookup (a few thousand runs: microseconds).
#include "automata/unicode_categories.h"

#include <cstdint>
#include <cstring>
#include <unordered_map>

namespace xg {
namespace {

struct CategoryRun {
  uint32_t first;
  uint8_t category;
};

#include "automata/unicode_categories_table.inc"

constexpr size_t kNumCategories = sizeof(kCategoryNames) / sizeof(kCategoryNames[0]);
constexpr size_t kNumRuns = sizeof(kCategoryRuns) / sizeof(kCategoryRuns[0]);

// ECMAScript's long names (and the POSIX-style aliases Python's `regex` accepts) -> short names.
const std::unordered_map<std::string, std::string>& LongNames() {
  static const std::unordered_map<std::string, std::string> names = {
      {"Letter", "L"}, {"Cased_Letter", "LC"}, {"Uppercase_Letter", "Lu"}, {"Lowercase_Letter", "Ll"},
      {"Titlecase_Letter", "Lt"}, {"Modifier_Letter", "Lm"}, {"Other_Letter", "Lo"}, {"Mark", "M"},
      {"Nonspacing_Mark", "Mn"}, {"Spacing_Mark", "Mc"}, {"Enclosing_Mark", "Me"}, {"Number", "N"},
      {"Decimal_Number", "Nd"}, {"digit", "Nd"}, {"Letter_Number", "Nl"}, {"Other_Number", "No"},
      {"Punctuation", "P"}, {"punct", "P"}, {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"},
      {"Open_Punctuation", "Ps"}, {"Close_Punctuation", "Pe"}, {"Initial_Punctuation", "Pi"},
      {"Final_Punctuation", "Pf"}, {"Other_Punctuation", "Po"}, {"Symbol", "S"}, {"Math_Symbol", "Sm"},
      {"Currency_Symbol", "Sc"}, {"Modifier_Symbol", "Sk"}, {"Other_Symbol", "So"}, {"Separator", "Z"},
      {"Space_Separator", "Zs"}, {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"}, {"Other", "C"},
      {"Control", "Cc"}, {"cntrl", "Cc"}, {"Format", "Cf"}, {"Surrogate", "Cs"}, {"Private_Use", "Co"},
      {"Unassigned", "Cn"}};
  return names;
}

}  // namespace

bool UnicodeCategoryRanges(const std::string& name_in, CodepointRanges* out) {
  std::string name = name_in;
  for (const char* prefix : {"gc=", "General_Category="}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::strlen(prefix));
  }
  if (auto it = LongNames().find(name); it != LongNames().end()) name = it->second;
  bool wanted[kNumCategories] = {};
  bool any = false;
  for (size_t c = 0; c < kNumCategories; ++c) {
    const std::string cat = kCategoryNames[c];
    const bool match = name == cat || (name.size() == 1 && cat[0] == name[0]) ||
                       (name == "LC" && (cat == "Lu" || cat == "Ll" || cat == "Lt"));
    wanted[c] = match && cat != "Cs";
    any = any || match;
  }
  if (!any) return false;
  CodepointRanges ranges;
  for (size_t i = 0; i < kNumRuns; ++i) {
    if (!wanted[kCategoryRuns[i].category]) continue;
    const uint32_t last = i + 1 < kNumRuns ? kCategoryRuns[i + 1].first - 1 : 0x10FFFF;
    ranges.emplace_back(kCategoryRuns[i].first, last);
  }
  *out = NormalizeRanges(std::move(ranges), /*negate=*/false);
  return true;
}

}  // namespace xg
