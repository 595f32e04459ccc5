// Recursive descent over the JSON grammar of RFC 8259; see json_value.h for the contract.
#include "support/json_value.h"

#include <unordered_set>

#include "support/utf8.h"

namespace xg {

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

class JsonReader {
 public:
  JsonReader(std::string_view text, const JsonParseOptions& options) : s_(text), options_(options) {}

  std::optional<JsonValue> Document(std::string* error) {
    JsonValue v;
    SkipSpace();
    if (!Value(&v, 0)) {
      *error = error_;
      return std::nullopt;
    }
    SkipSpace();
    if (pos_ != s_.size()) {
      *error = "unexpected text after the JSON value at byte " + std::to_string(pos_);
      return std::nullopt;
    }
    return v;
  }

 private:
  bool Fail(const std::string& what) {
    error_ = what + " at byte " + std::to_string(pos_);
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return Fail("invalid literal");
    pos_ += w.size();
    return true;
  }

  bool Value(JsonValue* v, size_t depth) {
    if (pos_ >= s_.size()) return Fail("unexpected end of input");
    switch (s_[pos_]) {
      case '{': return Object(v, depth + 1);
      case '[': return Array(v, depth + 1);
      case '"': v->kind = JsonValue::Kind::kString; return String(&v->text);
      case 't': v->kind = JsonValue::Kind::kBool; v->boolean = true; return Word("true");
      case 'f': v->kind = JsonValue::Kind::kBool; v->boolean = false; return Word("false");
      case 'n': v->kind = JsonValue::Kind::kNull; return Word("null");
      default: v->kind = JsonValue::Kind::kNumber; return Number(&v->text);
    }
  }

  bool Object(JsonValue* v, size_t depth) {
    if (depth > options_.max_depth) return Fail("nesting deeper than " + std::to_string(options_.max_depth));
    v->kind = JsonValue::Kind::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    v->members.reserve(4);  // a schema's objects mostly hold a few members: one allocation, no regrowth
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a string key");
      std::string key;
      if (!String(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected ':'");
      ++pos_;
      SkipSpace();
      v->members.emplace_back(std::move(key), JsonValue{});
      if (!Value(&v->members.back().second, depth)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unexpected end of input in an object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        break;
      }
      return Fail("expected ',' or '}'");
    }
    if (options_.reject_duplicate_keys && v->members.size() > 1) {
      const auto& members = v->members;
      if (members.size() <= 16) {  // compared pairwise: cheaper than building a hash set for a few keys
        for (size_t i = 1; i < members.size(); ++i)
          for (size_t j = 0; j < i; ++j)
            if (members[i].first == members[j].first) return DuplicateKey(members[i].first);
      } else {
        std::unordered_set<std::string_view> seen;
        for (const auto& m : members)
          if (!seen.insert(m.first).second) return DuplicateKey(m.first);
      }
    }
    return true;
  }

  bool DuplicateKey(const std::string& key) { return Fail("duplicate key \"" + key + "\" in an object ending"); }

  bool Array(JsonValue* v, size_t depth) {
    if (depth > options_.max_depth) return Fail("nesting deeper than " + std::to_string(options_.max_depth));
    v->kind = JsonValue::Kind::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    v->items.reserve(4);
    while (true) {
      SkipSpace();
      v->items.emplace_back();
      if (!Value(&v->items.back(), depth)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unexpected end of input in an array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  bool Number(std::string* out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !IsDigit(s_[pos_])) return Fail("invalid value");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || !IsDigit(s_[pos_])) return Fail("expected a digit after '.'");
      while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !IsDigit(s_[pos_])) return Fail("expected a digit in the exponent");
      while (pos_ < s_.size() && IsDigit(s_[pos_])) ++pos_;
    }
    out->assign(s_.substr(start, pos_ - start));
    return true;
  }

  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return Fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return Fail("invalid \\u escape");
    }
    pos_ += 4;
    *out = v;
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return Fail("control character in a string");
      if (c < 0x80 && c != '\\') {  // a run of plain ASCII characters, copied at once
        size_t end = pos_ + 1;
        while (end < s_.size()) {
          unsigned char d = static_cast<unsigned char>(s_[end]);
          if (d == '"' || d == '\\' || d < 0x20 || d >= 0x80) break;
          ++end;
        }
        out->append(s_.substr(pos_, end - pos_));
        pos_ = end;
        continue;
      }
      if (c != '\\') {
        uint32_t cp;
        size_t p = pos_;
        std::string whole(s_.substr(pos_, 4));
        size_t q = 0;
        if (!DecodeUtf8(whole, &q, &cp)) return Fail("invalid UTF-8");
        out->append(s_.substr(p, q));
        pos_ += q;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) return Fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone low surrogate escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (s_.substr(pos_, 2) != "\\u") return Fail("lone high surrogate escape");
            pos_ += 2;
            if (!Hex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return Fail("lone high surrogate escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default: return Fail("invalid escape");
      }
    }
  }

  std::string_view s_;
  const JsonParseOptions& options_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<JsonValue> ParseJson(std::string_view text, const JsonParseOptions& options, std::string* error) {
  return JsonReader(text, options).Document(error);
}

}  // namespace xg
