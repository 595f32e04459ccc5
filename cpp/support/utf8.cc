#include "support/utf8.h"

#include <algorithm>
#include <cstdio>

namespace xg {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool DecodeUtf8(const std::string& s, size_t* pos, uint32_t* cp) {
  size_t i = *pos;
  if (i >= s.size()) return false;
  uint8_t b0 = static_cast<uint8_t>(s[i]);
  int len;
  uint32_t v, min;
  if (b0 < 0x80) {
    *cp = b0;
    *pos = i + 1;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, v = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, v = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, v = b0 & 0x07, min = 0x10000;
  } else {
    return false;
  }
  if (i + len > s.size()) return false;
  for (int k = 1; k < len; ++k) {
    uint8_t b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return false;
    v = (v << 6) | (b & 0x3F);
  }
  if (v < min || v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) return false;
  *cp = v;
  *pos = i + len;
  return true;
}

namespace {

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }
uint32_t MaxOfLength(int n) { return n == 1 ? 0x7F : n == 2 ? 0x7FF : n == 3 ? 0xFFFF : kMaxCodepoint; }

void SplitSameLength(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>* out) {
  // lo and hi have the same encoded length n. For each continuation position, find the largest
  // suffix where lo's bits are all 0 and hi's are all 1 (full 0x80..0xBF spans); if the prefix
  // differs elsewhere, split.
  int n = EncodedLength(lo);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;  // low 6*i bits
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitSameLength(lo, lo | m, out);
        SplitSameLength((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitSameLength(lo, (hi & ~m) - 1, out);
        SplitSameLength(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  Utf8Sequence seq;
  for (int k = 0; k < n; ++k) seq.push_back({static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])});
  out->push_back(seq);
}

}  // namespace

std::vector<Utf8Sequence> Utf8Sequences(uint32_t lo, uint32_t hi) {
  std::vector<Utf8Sequence> out;
  // Drop surrogates.
  std::vector<std::pair<uint32_t, uint32_t>> parts;
  if (hi < 0xD800 || lo > 0xDFFF) {
    parts.push_back({lo, hi});
  } else {
    if (lo < 0xD800) parts.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF) parts.push_back({0xE000, hi});
  }
  for (auto [a, b] : parts) {
    while (a <= b) {
      uint32_t end = std::min(b, MaxOfLength(EncodedLength(a)));
      SplitSameLength(a, end, &out);
      if (end == b) break;
      a = end + 1;
    }
  }
  return out;
}

bool CharClassIsEmpty(const CodepointRanges& r, bool negate) {
  if (!negate) {
    for (auto [a, b] : r)
      if (a < 0xD800 || b > 0xDFFF) return false;
    return true;
  }
  bool covers_max = false;
  for (const auto& range : r) covers_max = covers_max || range.second >= kMaxCodepoint;
  return covers_max && NormalizeRanges(r, /*negate=*/true).empty();
}

std::vector<std::pair<uint32_t, uint32_t>> NormalizeRanges(std::vector<std::pair<uint32_t, uint32_t>> r,
                                                          bool negate) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto [a, b] : r) {
    if (!merged.empty() && a <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, b);
    } else {
      merged.push_back({a, b});
    }
  }
  if (negate) {
    std::vector<std::pair<uint32_t, uint32_t>> comp;
    uint32_t next = 0;
    for (auto [a, b] : merged) {
      if (a > next) comp.push_back({next, a - 1});
      next = b + 1;
    }
    if (next <= kMaxCodepoint) comp.push_back({next, kMaxCodepoint});
    merged.swap(comp);
  }
  // Remove surrogates.
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (auto [a, b] : merged) {
    if (b < 0xD800 || a > 0xDFFF) {
      out.push_back({a, b});
    } else {
      if (a < 0xD800) out.push_back({a, 0xD7FF});
      if (b > 0xDFFF) out.push_back({0xE000, b});
    }
  }
  return out;
}

std::string EscapeBytes(const std::string& s, char quote) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t j = i;
    if (c >= 0x80 && DecodeUtf8(s, &j, &cp)) {
      out.append(s, i, j - i);
      i = j;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c == static_cast<uint8_t>(quote)) {
          out += '\\';
          out += quote;
        } else if (c < 0x20 || c >= 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

}  // namespace xg
