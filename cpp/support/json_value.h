// A JSON document as a tree (RFC 8259), for front ends that read JSON input (JSON Schema).
//
// The parser is a recursive-descent reader with an explicit depth limit, so hostile nesting is an error, not a
// stack overflow. Objects keep their members in document order (a schema's property order is the order a
// grammar writes them in). Numbers keep their literal text: a front end decides how to read them (exact
// integers, decimals) instead of losing digits to a double here. Strings are decoded to UTF-8; an escape that
// names a lone surrogate (\ud800 alone) has no UTF-8 encoding and is an error.
//
// Contract: ParseJson either returns a complete tree or leaves *error set and returns nullopt; the input need
// not be NUL-terminated and is read once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xg {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kNumber: the literal as written; kString: the decoded UTF-8 value
  std::vector<JsonValue> items;                              // kArray
  std::vector<std::pair<std::string, JsonValue>> members;    // kObject, in document order
  // For a node a front end copied from another (a merge that shares a subschema): the node it stands for, so
  // identity survives the copy (see Identity). nullptr for a node that is itself.
  const JsonValue* origin = nullptr;

  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_bool() const { return kind == Kind::kBool; }
  bool is_number() const { return kind == Kind::kNumber; }
  bool is_null() const { return kind == Kind::kNull; }
  // The member named key of an object (first occurrence), or nullptr.
  const JsonValue* Find(std::string_view key) const;
  // The node this one is (itself, or the node it is a copy of).
  const JsonValue* Identity() const { return origin ? origin : this; }
};

struct JsonParseOptions {
  size_t max_depth = 256;             // nested arrays / objects beyond this are an error
  bool reject_duplicate_keys = true;  // a key twice in one object is an error (else both are kept)
};

// Parses one JSON text (surrounding whitespace allowed). On failure returns nullopt and sets *error to a message
// naming the byte offset.
std::optional<JsonValue> ParseJson(std::string_view text, const JsonParseOptions& options, std::string* error);

}  // namespace xg
