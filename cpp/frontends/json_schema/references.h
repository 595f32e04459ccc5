// Local `$ref` resolution for the native JSON Schema front end (private to cpp/frontends/json_schema).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "frontends/json_schema/keywords.h"
#include "support/json_value.h"
#include "support/utf8.h"

namespace xg::json_schema {

// Local references (`"$ref": "#/json/pointer"` into the document itself), as the Python front end resolves them
// (_resources.collect canonicalises, _refs._resolve walks the pointer). Every `$ref` of the document must be one
// that resolves -- wherever it is, as the Python front end checks them all -- and the document must hold nothing
// that moves base URIs (`$id`, anchors, dynamic references), which this front end does not follow.
class References {
 public:
  References(const JsonValue& root, int draft) : root_(root), draft_(draft) {
    Walk(root, /*is_root=*/true);
    if (any_ && moves_base_) Stop("'$ref' in a document with '$id', anchors or dynamic references");
  }
  bool any() const { return any_; }

  // (key, target) of a reference string that Walk accepted: key is the decoded JSON pointer.
  std::pair<std::string, const JsonValue*> Resolve(const std::string& ref) const {
    std::string pointer = Unquote(ref.substr(1));
    const JsonValue* node = &root_;
    size_t i = 0;
    while (i < pointer.size()) {  // tokens after each '/'
      size_t end = pointer.find('/', i + 1);
      if (end == std::string::npos) end = pointer.size();
      std::string token = pointer.substr(i + 1, end - i - 1);
      std::string decoded;
      for (size_t k = 0; k < token.size(); ++k) {
        if (token[k] == '~' && k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
          decoded.push_back(token[k + 1] == '1' ? '/' : '~');
          ++k;
        } else {
          decoded.push_back(token[k]);
        }
      }
      const JsonValue* next = nullptr;
      if (node->is_object()) {
        next = node->Find(decoded);
      } else if (node->is_array() && !decoded.empty() &&
                 std::all_of(decoded.begin(), decoded.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                 decoded.size() < 9) {
        size_t index = std::stoul(decoded);
        if (index < node->items.size()) next = &node->items[index];
      }
      if (!next) return {pointer, nullptr};
      node = next;
      i = end;
    }
    return {pointer, node};
  }

  // Whether a schema object is a bare reference: `$ref` and nothing but annotations beside it (unknown keywords
  // count as something, as in the Python front end's set(node) - annotations == {"$ref"}; see IsAnnotation).
  static bool IsBare(const JsonValue& s, bool enforce_formats) {
    if (!s.is_object() || !s.Find("$ref")) return false;
    return std::all_of(s.members.begin(), s.members.end(), [&](const auto& m) {
      return m.first == "$ref" || IsAnnotation(m.first, enforce_formats);
    });
  }

 private:
  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // urllib.parse.unquote for pointers whose escapes decode to valid UTF-8.
  static std::string Unquote(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
        out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
        i += 2;
      } else {
        out.push_back(s[i]);
      }
    }
    for (size_t pos = 0; pos < out.size();) {
      uint32_t cp;
      if (static_cast<unsigned char>(out[pos]) < 0x80) {
        ++pos;
      } else if (!DecodeUtf8(out, &pos, &cp)) {
        Stop("'$ref' whose percent escapes are not UTF-8");
      }
    }
    return out;
  }

  // Every object of the document but values of const / enum / default / examples, and of the maps of schemas
  // (properties, $defs, ...) their values only (a superset of the Python front end's resource walk). A root identifier sets the base of the whole document, which "#..." references
  // do not leave; any other identifier starts an embedded resource.
  void Walk(const JsonValue& v, bool is_root = false) {
    if (v.is_array()) {
      for (const auto& x : v.items) Walk(x);
      return;
    }
    if (!v.is_object()) return;
    for (const auto& [kw, x] : v.members) {
      bool identifier = kw == "$id" || (kw == "id" && draft_ <= 4 && x.is_string());
      if ((identifier && !is_root) || kw == "$anchor" || kw == "$dynamicAnchor" || kw == "$dynamicRef") {
        moves_base_ = true;
      }
      if (kw == "$ref") {
        if (!x.is_string()) Stop("'$ref' that is not a string");
        any_ = true;
        if (x.text.empty() || x.text[0] != '#') Stop("'$ref' to another document or by a relative URI");
        if (x.text.size() > 1 && x.text[1] != '/') Stop("'$ref' to an anchor");
        if (!Resolve(x.text).second) Stop("a '$ref' that points to nothing");
        continue;
      }
      if (IsValueKeyword(kw)) continue;
      if (IsSchemaMap(kw) && x.is_object()) {  // name -> schema: the names are no keywords
        for (const auto& m : x.members) Walk(m.second);
        continue;
      }
      Walk(x);
    }
  }

  const JsonValue& root_;
  int draft_;
  bool any_ = false, moves_base_ = false;
};

}  // namespace xg::json_schema
