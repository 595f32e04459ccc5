// allOf as one schema: the keyword-by-keyword merge of the native JSON Schema front end, mirroring the Python
// front end's _combinators._merge (and its helpers all_of, unique_schemas, strip_annotations, _deref) for the
// keywords the native front end handles.
//
// Algorithm. Merge(a, b) is the schema of the values both a and b accept: `false` if either is; the other side if
// one accepts everything; else a copy of a's keywords, with b's keywords merged in one by one: types intersect,
// `required` lists unite, lower bounds take the larger and upper bounds the smaller, `enum` keeps a's values that b
// lists, two `const` must be equal, `items` / `additionalProperties` become an `allOf` of both, `anyOf` / `oneOf`
// distribute (each branch of a gets an `allOf` with b's alternatives), and `properties` merge name by name (a name
// one side does not declare takes that side's `additionalProperties`). A keyword both sides give different
// values that has no merge rule stops the conversion (the Python front end raises there).
//
// Identity. Schemas are `const JsonValue*`: nodes of the document, or nodes this merger made (an arena; they live
// as long as the merger). Where the Python front end shares a subschema between two dicts, this merger copies it
// and records the copied node's identity (JsonValue::origin), because an allOf skips a branch it has already merged
// by identity. Equality is equality of canonical text, as the Python front end compares
// json.dumps(..., sort_keys=True). Copies are counted against a budget (kMaxMergedNodes): past it the conversion
// stops and the Python front end, which shares instead of copying, converts the schema.
//
// Contract: every schema passed in has been checked (Check) or was made by this merger; Merge may throw NotHandled.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/json_schema/references.h"
#include "support/json_value.h"

namespace xg::json_schema {

class SchemaMerger {
 public:
  // `work` counts conversion steps (visits and merges) against kMaxVisits; the converter shares it.
  // enforce_formats: `format` constrains (it is merged, and a `$ref` beside it is no bare reference).
  SchemaMerger(const References& refs, int draft, bool enforce_formats, int64_t* work)
      : refs_(refs), draft_(draft), enforce_formats_(enforce_formats), work_(work) {}

  // The schema of the values both a and b accept (False() when they contradict each other).
  const JsonValue* Merge(const JsonValue* a, const JsonValue* b);
  // A bare reference followed (through a chain of them) to its target, checked; any other schema itself.
  const JsonValue* Deref(const JsonValue* s);
  // b without its `$ref`, for merging: a bare reference's target (a chain followed); from draft 2019-09,
  // `allOf [{"$ref": ...}, siblings]` for a reference with siblings; before it the target alone (those drafts
  // ignore the siblings of `$ref`).
  const JsonValue* WithoutRef(const JsonValue* b);
  // _rewrite_dependencies: `dependencies` moved into dependentRequired (arrays) and dependentSchemas (schemas),
  // then dependentSchemas {p: S} as allOf [..., {"if": {"type": "object", "required": [p]}, "then": S}]; s itself
  // when it has neither.
  const JsonValue* RewriteDependencies(const JsonValue* s);
  // _rewrite_not: s with `not S` as `allOf [..., {"anyOf": Negate(S)}]` (False() when S accepts every value), then
  // `if C then T else E` as `allOf [..., {"anyOf": [{"allOf": [C, T]}, {"allOf": [not C, E]}...]}]` (then / else
  // without if dropped); s itself without them (complements.cc).
  const JsonValue* RewriteNot(const JsonValue* s);
  // _negate: schemas whose union is the set of values s rejects (empty when s accepts every value); stops the
  // conversion for a complement this front end does not write (complements.cc).
  std::vector<const JsonValue*> Negate(const JsonValue* s);
  // `allOf [{"$ref": ...}, siblings]` for a schema object with `$ref` and other constraining keywords (the
  // 2019-09 meaning of siblings of `$ref`), or nullptr when it has none. recognised_only: keywords the Python
  // front end does not recognise are no siblings (as in a visit, which strips them first).
  const JsonValue* RefAndSiblings(const JsonValue& s, bool recognised_only);
  // The conjunction of schemas: the one distinct schema that constrains anything, else an `allOf` of them.
  const JsonValue* AllOf(const std::vector<const JsonValue*>& schemas);
  // The schemas without repeats (by canonical text), first occurrences in order.
  std::vector<const JsonValue*> Unique(const std::vector<const JsonValue*>& schemas);
  // s without the keywords the Python front end does not recognise (s itself when it has none).
  const JsonValue* Strip(const JsonValue* s);
  // A JSON text that two values share exactly when the Python front end's json.dumps(sort_keys=True) does.
  std::string Text(const JsonValue& v);
  // A JSON text that two values share exactly when they are equal as JSON Schema values (_common.json_key: 1 and
  // 1.0 are one number).
  std::string ValueText(const JsonValue& v);

  // A node in the arena; its identity is its own.
  const JsonValue* Make(JsonValue v);
  // A deep copy of v whose nodes keep the identities of v's nodes. v must outlive the merger (a node of the
  // document or of the arena), since the copy refers to it.
  JsonValue Share(const JsonValue& v);

  static const JsonValue* True();
  static const JsonValue* False();
  static bool IsTrue(const JsonValue* s) { return s->is_bool() && s->boolean; }
  static bool IsFalse(const JsonValue* s) { return s->is_bool() && !s->boolean; }
  static bool IsEmptyObject(const JsonValue* s) { return s->is_object() && s->members.empty(); }

 private:
  void MergeMembers(const JsonValue& a, const JsonValue& b, JsonValue* out);
  // prefixItems / items (draft 2020-12), or array `items` / additionalItems (earlier drafts), position by
  // position; the keywords of b it merged go into *merged.
  void MergePositional(const JsonValue& a, const JsonValue& b, JsonValue* out,
                       std::unordered_set<std::string>* merged);
  // Merges b's value of kw into *va (a's value, in out); false: the two contradict each other.
  bool MergeKeyword(const std::string& kw, JsonValue* va, const JsonValue& vb);
  void AppendText(const JsonValue& v, std::string* out, int depth, bool by_value = false);
  void Charge(size_t nodes);
  // {**s less `drop`, "allOf": s's allOf + conjuncts} (complements.cc).
  JsonValue WithConjuncts(const JsonValue& s, std::initializer_list<const char*> drop, std::vector<JsonValue> conjuncts);
  // _negate_keyword and _negate_values (complements.cc).
  std::vector<const JsonValue*> NegateKeyword(const std::string& kw, const JsonValue& value, const JsonValue& inner);
  std::vector<const JsonValue*> NegateValues(const std::vector<const JsonValue*>& values);

  const References& refs_;
  int draft_;
  bool enforce_formats_;
  int64_t* work_;
  std::vector<std::unique_ptr<JsonValue>> arena_;
  size_t nodes_ = 0;  // nodes made or copied so far
  std::unordered_set<std::string> negating_;  // the `$ref` targets whose complements are being built
  int negation_depth_ = 0;
};

}  // namespace xg::json_schema
