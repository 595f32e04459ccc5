// Builders of schema nodes for the native JSON Schema front end: the merge, the complements and the converter
// make new schemas out of these (a node's identity is its own until SchemaMerger::Make places it in the arena).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/json_value.h"

namespace xg::json_schema {

inline JsonValue Object() {
  JsonValue v;
  v.kind = JsonValue::Kind::kObject;
  return v;
}

inline JsonValue Array() {
  JsonValue v;
  v.kind = JsonValue::Kind::kArray;
  return v;
}

inline JsonValue String(const std::string& text) {
  JsonValue v;
  v.kind = JsonValue::Kind::kString;
  v.text = text;
  return v;
}

inline JsonValue Integer(int64_t n) {
  JsonValue v;
  v.kind = JsonValue::Kind::kNumber;
  v.text = std::to_string(n);
  return v;
}

inline JsonValue Bool(bool b) {
  JsonValue v;
  v.kind = JsonValue::Kind::kBool;
  v.boolean = b;
  return v;
}

inline JsonValue List(std::vector<JsonValue> items) {
  JsonValue v = Array();
  v.items = std::move(items);
  return v;
}

// {kw: value}: a schema of one keyword ({"not": S}, {"anyOf": [...]}, ...).
inline JsonValue Keyword(const std::string& kw, JsonValue value) {
  JsonValue v = Object();
  v.members.emplace_back(kw, std::move(value));
  return v;
}

}  // namespace xg::json_schema
