// The native JSON Schema front end (see json_schema_to_ebnf.h for its scope).
//
// Algorithm. Parse the JSON text (support/json_value.h), then two passes over the schema positions:
// 1. Check: every keyword the Python front end recognises must be one this front end handles, with a value of the
//    shape it expects, wherever it is (as the Python front end checks the whole document before converting);
//    anything else stops the conversion with the reason.
// 2. Visit: a recursive visitor that mirrors the Python visitor's path for these keywords (_converter.visit ->
//    _visit_alternatives / _visit_values / _visit_types -> _type_object / _type_array / _type_string) and adds
//    rules to the rule table in the same order, so the text is identical. Whatever would make the Python front
//    end raise (an unsatisfiable subschema, a limit) stops the conversion here instead, before it could differ.
#include "frontends/json_schema/json_schema_to_ebnf.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontends/ebnf_parser.h"
#include "frontends/json_schema/ebnf_text.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/numbers.h"
#include "frontends/json_schema/string_automata.h"
#include "grammar/productivity.h"
#include "support/json_value.h"
#include "support/utf8.h"

namespace xg::json_schema {

namespace {

// Limits below the Python front end's (_limits.py), so that this front end stops before any input where the
// Python one would raise for size.
constexpr size_t kMaxTextBytes = 4 << 20;
constexpr size_t kMaxJsonDepth = 128;       // MAX_SCHEMA_DEPTH is 256
constexpr int64_t kMaxCount = 1 << 20;      // MAX_REPETITION
constexpr size_t kMaxEnumValues = 100000;   // MAX_ENUM_VALUES
constexpr size_t kMaxIntegerDigits = 300;   // Python's int <-> str conversion limit is 4300 digits
constexpr size_t kMaxGrammarBytes = 16 << 20;  // MAX_GRAMMAR_BYTES is 32 MiB
constexpr int64_t kMaxVisits = 100000;      // MAX_WORK (the Python budget grows from there)

struct NotHandled {
  std::string why;
};
// A subschema that accepts no value (the Python front end's Unsatisfiable): caught where the Python front end
// catches it (an optional property is left out, an anyOf branch dropped, ...); at the root the conversion stops
// and the Python front end reports the error.
struct Unsatisfiable {
  std::string why;
};

const std::vector<std::string_view> kRecognised = {
    "$anchor", "$comment", "$defs", "$dynamicAnchor", "$dynamicRef", "$id", "$recursiveAnchor", "$recursiveRef",
    "$ref", "$schema", "$vocabulary", "additionalItems", "additionalProperties", "allOf", "anyOf", "const",
    "contains", "contentEncoding", "contentMediaType", "contentSchema", "default", "definitions", "dependencies",
    "dependentRequired", "dependentSchemas", "deprecated", "description", "else", "enum", "examples",
    "exclusiveMaximum", "exclusiveMinimum", "format", "id", "if", "items", "maxContains", "maxItems", "maxLength",
    "maxProperties", "maximum", "minContains", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "prefixItems", "properties", "propertyNames", "readOnly",
    "required", "then", "title", "type", "unevaluatedItems", "unevaluatedProperties", "uniqueItems", "writeOnly",
    "x-xg2jax-absent", "x-xg2jax-contains-all", "x-xg2jax-non-integral", "x-xg2jax-not-multiple-of",
    "x-xg2jax-not-patterns", "x-xg2jax-not-strings", "x-xg2jax-some-member"};

// Keywords that never constrain an instance (NO_CONSTRAINT).
const std::unordered_set<std::string_view> kNoConstraint = {"title",    "description", "default",  "examples",
                                                            "$comment", "deprecated",  "readOnly", "writeOnly"};
// `$schema` (a known dialect at the root), `$id`, `id`, `$defs` and `definitions` are no annotations of
// NO_CONSTRAINT's kind, so a schema holding them is visited as the Python front end visits it (e.g. not as
// `true` when it has no `type`); identifiers matter only to references (see References).
const std::unordered_set<std::string_view> kHandled = {
    "type",     "properties", "required",    "additionalProperties", "items", "enum",  "const", "anyOf",
    "minLength", "maxLength", "minItems",    "maxItems",             "$ref",  "$defs", "definitions",
    "$id",       "id",        "$schema",     "pattern",              "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "oneOf"};
// The Python front end's ANNOTATIONS: keywords that are not constraints of their own schema object (a `$ref`
// with only these beside it is a bare reference).
const std::unordered_set<std::string_view> kAnnotations = {
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema",
    "$id", "id", "$anchor", "$dynamicAnchor", "$defs", "definitions", "$vocabulary", "contentMediaType",
    "contentEncoding", "contentSchema", "format"};
// Keywords whose values are JSON values, never schemas (the resource walk does not look inside them).
const std::unordered_set<std::string_view> kValueKeywords = {"const", "enum", "default", "examples"};
const std::unordered_set<std::string_view> kTypes = {"object",  "array",   "string", "integer",
                                                     "number", "boolean", "null"};

bool IsRecognised(std::string_view kw) {
  static const std::unordered_set<std::string_view> set(kRecognised.begin(), kRecognised.end());
  return set.count(kw) > 0;
}

[[noreturn]] void Stop(std::string why) { throw NotHandled{std::move(why)}; }

// A plain JSON integer literal (-?(0|[1-9][0-9]*)) of a size Python reads exactly.
bool IsPlainInteger(const std::string& t) {
  size_t i = t[0] == '-' ? 1 : 0;
  if (i >= t.size() || t.size() - i > kMaxIntegerDigits) return false;
  if (t[i] == '0') return t.size() == i + 1;
  return std::all_of(t.begin() + i, t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A non-negative count keyword (minLength, ...) as a plain integer literal up to kMaxCount.
int64_t Count(const JsonValue& v, std::string_view kw) {
  if (!v.is_number() || !IsPlainInteger(v.text) || v.text[0] == '-' || v.text.size() > 8) {
    Stop("'" + std::string(kw) + "' other than a plain non-negative integer");
  }
  int64_t n = std::stoll(v.text);
  if (n > kMaxCount) Stop("'" + std::string(kw) + "' above MAX_REPETITION");
  return n;
}

// JSON values (enum / const) whose spelling this front end reproduces: every number a plain integer.
void CheckValue(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNumber:
      if (!IsPlainInteger(v.text)) Stop("a non-integer number in 'enum' / 'const'");
      break;
    case JsonValue::Kind::kArray:
      for (const auto& x : v.items) CheckValue(x);
      break;
    case JsonValue::Kind::kObject:
      for (const auto& m : v.members) CheckValue(m.second);
      break;
    default:
      break;
  }
}

// `$schema` naming a dialect the Python front end knows (_refs._DIALECTS). The handled keywords mean the same in
// all of them (`items` as an array, draft 4's boolean exclusive bounds and `id` are not handled).
bool KnownDialect(const JsonValue& v) {
  static const char* kMarkers[] = {"json-schema.org/draft-04/", "json-schema.org/draft-06/",
                                   "json-schema.org/draft-07/", "json-schema.org/draft/2019-09/",
                                   "json-schema.org/draft/2020-12/"};
  return v.is_string() && std::any_of(std::begin(kMarkers), std::end(kMarkers), [&](const char* m) {
           return v.text.find(m) != std::string::npos;
         });
}

// Pass 1 (see the file comment).
// A bound keyword as an int64 (plain integer literals of up to 18 digits: the others are read through floats by
// the Python front end).
std::optional<int64_t> Bound(const JsonValue& v) {
  if (!v.is_number() || !IsPlainInteger(v.text) || v.text.size() > 18) return std::nullopt;
  return std::stoll(v.text);
}

void Check(const JsonValue& s, int draft, bool is_root = false) {
  if (s.is_bool()) return;
  if (!s.is_object()) Stop("a schema that is neither an object nor a boolean");
  for (const auto& [kw, v] : s.members) {
    if (!IsRecognised(kw) || kNoConstraint.count(kw)) continue;
    if (kw == "$schema" && is_root && !KnownDialect(v)) Stop("'$schema' naming an unknown dialect");
    if (kw == "$schema" || kw == "$id" || kw == "id") continue;  // identifiers: References decides
    if (!kHandled.count(kw)) Stop("keyword '" + kw + "'");
    if (kw == "type") {
      bool names = v.is_string() ? kTypes.count(v.text) > 0
                                 : v.is_array() && !v.items.empty() &&
                                       std::all_of(v.items.begin(), v.items.end(), [](const JsonValue& t) {
                                         return t.is_string() && kTypes.count(t.text) > 0;
                                       });
      if (!names) Stop("'type' other than a type name or a non-empty array of them");
    } else if (kw == "properties") {
      if (!v.is_object()) Stop("'properties' that is not an object");
      for (const auto& m : v.members) Check(m.second, draft);
    } else if (kw == "required") {
      if (!v.is_array() || !std::all_of(v.items.begin(), v.items.end(), [](const JsonValue& x) {
            return x.is_string();
          })) {
        Stop("'required' that is not an array of strings");
      }
    } else if (kw == "additionalProperties" || kw == "items") {
      Check(v, draft);
    } else if (kw == "enum") {
      if (!v.is_array()) Stop("'enum' that is not an array");
      if (v.items.size() > kMaxEnumValues) Stop("'enum' above MAX_ENUM_VALUES");
      CheckValue(v);
    } else if (kw == "const") {
      CheckValue(v);
    } else if (kw == "anyOf" || kw == "oneOf") {
      if (!v.is_array() || v.items.empty()) Stop("'" + kw + "' that is not a non-empty array");
      for (const auto& x : v.items) Check(x, draft);
    } else if (kw == "$defs" || kw == "definitions") {
      if (!v.is_object()) Stop("'" + kw + "' that is not an object");
      for (const auto& m : v.members) Check(m.second, draft);
    } else if (kw == "$ref") {
      // its target was checked by References
    } else if (kw == "format") {
      if (!v.is_string()) Stop("'format' that is not a string");
    } else if (kw == "minimum" || kw == "maximum" || kw == "exclusiveMinimum" || kw == "exclusiveMaximum") {
      bool draft4_flag = draft <= 4 && kw.rfind("exclusive", 0) == 0 && v.is_bool();
      if (!draft4_flag && !Bound(v)) Stop("'" + kw + "' other than an integer of up to 18 digits");
    } else if (kw == "pattern") {
      if (!v.is_string()) Stop("'pattern' that is not a string");
      if (auto problem = RegexSyntaxError(v.text)) Stop("a 'pattern' the regex parser rejects (" + *problem + ")");
    } else {  // minLength, maxLength, minItems, maxItems
      Count(v, kw);
    }
  }
}

// The dialect from a root `$schema` (2020 without one); KnownDialect has accepted it.
int Draft(const JsonValue& root) {
  const JsonValue* uri = root.is_object() ? root.Find("$schema") : nullptr;
  if (!uri) return 2020;
  static const std::pair<int, const char*> kDialects[] = {{4, "json-schema.org/draft-04/"},
                                                          {6, "json-schema.org/draft-06/"},
                                                          {7, "json-schema.org/draft-07/"},
                                                          {2019, "json-schema.org/draft/2019-09/"},
                                                          {2020, "json-schema.org/draft/2020-12/"}};
  for (const auto& [draft, marker] : kDialects) {
    if (uri->text.find(marker) != std::string::npos) return draft;
  }
  return 2020;
}

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
  // count as something, as in the Python front end's set(node) - ANNOTATIONS == {"$ref"}).
  static bool IsBare(const JsonValue& s) {
    if (!s.is_object() || !s.Find("$ref")) return false;
    return std::all_of(s.members.begin(), s.members.end(),
                       [](const auto& m) { return m.first == "$ref" || kAnnotations.count(m.first) > 0; });
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

  // Every object of the document but values of const / enum / default / examples (a superset of the Python
  // front end's resource walk). A root identifier sets the base of the whole document, which "#..." references
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
      if (kValueKeywords.count(kw)) continue;
      Walk(x);
    }
  }

  const JsonValue& root_;
  int draft_;
  bool any_ = false, moves_base_ = false;
};

std::string JsonType(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "boolean";
    case JsonValue::Kind::kNumber: return "integer";  // CheckValue admits integers only
    case JsonValue::Kind::kString: return "string";
    case JsonValue::Kind::kArray: return "array";
    case JsonValue::Kind::kObject: return "object";
  }
  return "null";
}

class Converter {
 public:
  Converter(const JsonSchemaOptions& o, const References& refs, int draft)
      : refs_(refs),
        draft_(draft),
        ws_(o.any_whitespace ? "j_ws" : ""),
        item_sep_(Seq({ws_, Literal(Separator(o, true)), ws_})),
        key_sep_(Seq({ws_, Literal(Separator(o, false)), ws_})),
        plain_integers_(o.plain_integers),
        enforce_formats_(o.enforce_formats),
        rules_(ws_, item_sep_, key_sep_, WsBody(o), o.plain_integers) {}

  std::string Convert(const JsonValue& root) {
    std::string text;
    try {
      text = rules_.Text(Visit(root, 0));
    } catch (const Unsatisfiable& e) {
      Stop("an unsatisfiable schema (" + e.why + "): the Python front end reports it");
    }
    if (refs_.any()) {  // only references make rules recursive: the root must still derive a finite text
      bool productive = false;
      try {
        Grammar g = ParseEbnf(text, "root");
        productive = ProductiveRules(g)[g.root] != 0;
      } catch (const std::exception&) {
      }
      if (!productive) Stop("a reference cycle that never reaches a value: the Python front end reports it");
    }
    return text;
  }

 private:
  static std::string Separator(const JsonSchemaOptions& o, bool item) {
    if (o.any_whitespace) return item ? "," : ":";
    if (o.separators) return item ? o.separators->first : o.separators->second;
    return item ? ", " : ": ";
  }
  static std::string WsBody(const JsonSchemaOptions& o) {
    if (!o.any_whitespace) return std::string(kEmpty);
    if (!o.max_whitespace_cnt) return "[ \\n\\t\\r]*";
    return "[ \\n\\t\\r]{0," + std::to_string(*o.max_whitespace_cnt) + "}";
  }

  // _converter.visit / _visit_dict for the handled keywords.
  std::string Visit(const JsonValue& s, int depth) {
    if (s.is_bool()) {
      if (!s.boolean) throw Unsatisfiable{"the schema is false"};
      return "j_value";
    }
    if (++visits_ > kMaxVisits || rules_.size() > kMaxGrammarBytes) Stop("a schema beyond the native budget");
    if (depth > static_cast<int>(kMaxJsonDepth)) Stop("nesting beyond the native limit");
    const JsonValue* any_of = nullptr;
    const JsonValue* one_of = nullptr;
    const JsonValue* type = nullptr;
    bool values = false, constrained = false;
    for (const auto& [kw, v] : s.members) {
      if (!IsRecognised(kw)) continue;
      if (kw == "anyOf") any_of = &v;
      else if (kw == "oneOf") one_of = &v;
      else if (kw == "type") type = &v;
      if (kw == "enum" || kw == "const") values = true;
      if (!kNoConstraint.count(kw)) constrained = true;
    }
    if (const JsonValue* ref = s.Find("$ref")) {
      for (const auto& [kw, v] : s.members) {
        if (IsRecognised(kw) && kw != "$ref" && !kAnnotations.count(kw) && draft_ >= 2019) {
          Stop("'$ref' next to other keywords (an allOf merge)");
        }
      }
      return VisitRef(*ref, depth);
    }
    if (any_of || one_of) {
      const std::string kw = any_of ? "anyOf" : "oneOf";
      for (const auto& [k, v] : s.members) {
        if (IsRecognised(k) && k != kw) Stop("'" + kw + "' next to other keywords");
      }
      const JsonValue& branches = any_of ? *any_of : *one_of;
      // oneOf is anyOf when no two branches share a value; what this front end proves is a part of what the
      // Python front end proves (_disjoint.py), so where it proves it both take the anyOf path.
      if (one_of && !ProvablyDisjoint(branches)) Stop("'oneOf' whose branches are not shown disjoint");
      std::vector<std::string> options;
      for (const auto& b : branches.items) {
        try {
          options.push_back(References::IsBare(b) ? VisitBranchRef(b, depth) : Visit(b, depth + 1));
        } catch (const Unsatisfiable&) {
        }
      }
      if (options.empty()) throw Unsatisfiable{"no branch of '" + kw + "' accepts a value"};
      return Choice(options);
    }
    if (values) return Values(s);
    if (type && type->is_string()) return Typed(s, type->text, depth);
    if (!type && !constrained) return "j_value";
    return Types(s, type, depth);
  }

  // ---- oneOf: a sound part of the Python front end's disjointness proofs -------------------------------------
  // The types a schema object allows from `type` / `const` / `enum` (_possible_types), all when none says.
  static std::unordered_set<std::string> PossibleTypes(const JsonValue& x) {
    std::unordered_set<std::string> out;
    if (const JsonValue* c = x.Find("const")) {
      out.insert(JsonType(*c));
    } else if (const JsonValue* e = x.Find("enum"); e && e->is_array()) {
      for (const auto& v : e->items) out.insert(JsonType(v));
    } else if (const JsonValue* t = x.Find("type")) {
      if (t->is_string()) out.insert(t->text);
      for (const auto& v : t->items) out.insert(v.text);
      if (out.count("number")) out.insert("integer");
    } else {
      out = {"object", "array", "string", "integer", "number", "boolean", "null"};
    }
    return out;
  }

  // A scalar const / enum property schema (nothing else constraining): its values as canonical texts.
  static std::optional<std::vector<std::string>> ListedScalars(const JsonValue& x) {
    if (!x.is_object()) return std::nullopt;
    std::vector<const JsonValue*> values;
    for (const auto& [kw, v] : x.members) {
      if (!IsRecognised(kw) || kAnnotations.count(kw) || kw == "type") continue;
      if (kw == "const") values.push_back(&v);
      else if (kw == "enum" && v.is_array()) for (const auto& e : v.items) values.push_back(&e);
      else return std::nullopt;
    }
    if (values.empty() || (x.Find("const") && x.Find("enum"))) return std::nullopt;
    std::vector<std::string> out;
    for (const JsonValue* v : values) {
      if (v->is_object() || v->is_array()) return std::nullopt;
      std::string t = JsonType(*v) + ":" + (v->is_bool() ? (v->boolean ? "true" : "false") : v->text);
      out.push_back(t == "integer:-0" ? "integer:0" : t);
    }
    return out;
  }

  // Two deref'd branches share no value: their types do not meet, or both are objects only and a name one of
  // them requires is declared by both with const / enum scalars that have no value in common.
  static bool DisjointPair(const JsonValue& a, const JsonValue& b) {
    if (!a.is_object() || !b.is_object() || a.Find("$ref") || b.Find("$ref")) return false;
    std::unordered_set<std::string> ta = PossibleTypes(a), tb = PossibleTypes(b);
    if (ta.empty() || tb.empty()) return false;  // `enum: []` twice would be a repeated branch, not two disjoint
    std::vector<std::string> common;
    for (const auto& t : ta) {
      if (tb.count(t)) common.push_back(t);
    }
    if (common.empty()) return true;
    if (common != std::vector<std::string>{"object"}) return false;
    const JsonValue *ra = a.Find("required"), *rb = b.Find("required");
    const JsonValue *pa = a.Find("properties"), *pb = b.Find("properties");
    if (!ra || !rb || !pa || !pb) return false;
    std::vector<const JsonValue*> names;
    for (const auto& n : ra->items) names.push_back(&n);
    for (const auto& n : rb->items) names.push_back(&n);
    for (const JsonValue* n : names) {
      const JsonValue *sa = pa->Find(n->text), *sb = pb->Find(n->text);
      if (!sa || !sb) continue;
      auto va = ListedScalars(*sa), vb = ListedScalars(*sb);
      if (!va || !vb) continue;
      bool meet = std::any_of(va->begin(), va->end(),
                              [&](const std::string& v) { return std::count(vb->begin(), vb->end(), v) > 0; });
      if (!meet) return true;
    }
    return false;
  }

  // The oneOf branches (bare references followed, as _deref does) are pairwise disjoint, and none repeats another
  // (a repeated branch takes the Python front end's exactly-one construction).
  bool ProvablyDisjoint(const JsonValue& branches) {
    std::vector<const JsonValue*> merged;
    for (const auto& b : branches.items) {
      const JsonValue* node = &b;
      std::unordered_set<std::string> seen;
      while (References::IsBare(*node)) {
        std::string key;
        node = &Target(node->Find("$ref")->text, &key);
        if (!seen.insert(key).second) return false;
      }
      merged.push_back(node);
    }
    for (size_t i = 0; i < merged.size(); ++i) {
      for (size_t j = i + 1; j < merged.size(); ++j) {
        if (!DisjointPair(*merged[i], *merged[j])) return false;
      }
    }
    return true;
  }

  static std::string RuleHint(const std::string& prefix, const std::string& key) {
    std::string hint = prefix;
    for (char c : key) hint.push_back(c == '/' ? '_' : c);
    if (std::any_of(hint.begin(), hint.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      Stop("a '$ref' pointer with non-ASCII characters (Unicode rule names)");
    }
    return hint;
  }

  // The target of a reference, checked as a schema (a pointer may name any part of the document).
  const JsonValue& Target(const std::string& ref, std::string* key) {
    auto [k, node] = refs_.Resolve(ref);
    Check(*node, draft_);
    *key = k;
    return *node;
  }

  // _visit_ref: one named rule per target (reserved before its body is visited, so recursion closes), after
  // following a chain of bare references to its last one.
  std::string VisitRef(const JsonValue& ref, int depth) {
    const JsonValue* last = &ref;
    std::unordered_set<std::string> seen;
    while (true) {
      auto [key, node] = refs_.Resolve(last->text);
      if (seen.count(key) || !References::IsBare(*node)) break;
      seen.insert(key);
      last = node->Find("$ref");
    }
    std::string key;
    const JsonValue& node = Target(last->text, &key);
    auto it = ref_rules_.find(key);
    if (it != ref_rules_.end()) return it->second;
    std::string name = rules_.Reserve(RuleHint("def", key.empty() ? "_root" : key));
    ref_rules_[key] = name;
    std::string body;
    try {
      body = Visit(node, depth + 1);
    } catch (const Unsatisfiable&) {
      Stop("a '$ref' target that accepts no value");
    }
    return rules_.Define(name, std::move(body));
  }

  // _visit_merged_branch for an anyOf branch that is a bare reference: one rule per target, named after the
  // branch's own target, whose body is the end of the chain of bare references.
  std::string VisitBranchRef(const JsonValue& branch, int depth) {
    std::string target;
    Target(branch.Find("$ref")->text, &target);
    const JsonValue* node = &branch;
    std::unordered_set<std::string> seen;
    while (References::IsBare(*node)) {
      std::string key;
      node = &Target(node->Find("$ref")->text, &key);
      if (!seen.insert(key).second) Stop("a '$ref' cycle without any constraint");
    }
    if (!node->is_object()) return Visit(*node, depth + 1);
    auto it = alt_rules_.find(target);
    if (it != alt_rules_.end()) return it->second;
    std::string name = rules_.Reserve(RuleHint("alt", target));
    alt_rules_[target] = name;
    std::string body;
    try {
      body = Visit(*node, depth + 1);
    } catch (const Unsatisfiable&) {
      Stop("an anyOf '$ref' target that accepts no value");
    }
    return rules_.Define(name, std::move(body));
  }

  // _visit_types with a list of types, or none (every type): one alternative per type that accepts a value.
  std::string Types(const JsonValue& s, const JsonValue* type, int depth) {
    static const char* kAll[] = {"object", "array", "string", "integer", "number", "boolean", "null"};
    std::vector<std::string> types;
    if (type) {
      for (const auto& t : type->items) types.push_back(t.text);
    } else {
      types.assign(std::begin(kAll), std::end(kAll));
    }
    if (std::count(types.begin(), types.end(), "number") && std::count(types.begin(), types.end(), "integer")) {
      types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
    }
    std::vector<std::string> options;
    for (const auto& t : types) {
      try {
        options.push_back(Typed(s, t, depth));
      } catch (const Unsatisfiable&) {
      }
    }
    if (options.empty()) throw Unsatisfiable{"no allowed type fits"};
    return Choice(options);
  }

  // _visit_values: the listed values of the sibling 'type' (the only sibling handled here).
  std::string Values(const JsonValue& s) {
    const JsonValue* c = s.Find("const");
    const JsonValue* e = s.Find("enum");
    if (c && e) Stop("'const' next to 'enum'");
    std::unordered_set<std::string> allowed;  // empty: any type
    for (const auto& [kw, v] : s.members) {
      bool checked_by_the_validator = kw == "format" || kw.rfind("content", 0) == 0;
      if (!IsRecognised(kw) || (kAnnotations.count(kw) && !checked_by_the_validator) || kw == "enum" ||
          kw == "const") {
        continue;
      }
      if (kw != "type") Stop("'" + kw + "' next to 'enum' / 'const'");
      if (v.is_string()) allowed.insert(v.text);
      for (const auto& t : v.items) allowed.insert(t.text);
      if (allowed.count("number")) allowed.insert("integer");
    }
    std::vector<const JsonValue*> listed;
    if (c) listed.push_back(c);
    else for (const auto& v : e->items) listed.push_back(&v);
    std::vector<std::string> options;
    for (const JsonValue* v : listed) {
      std::string t = JsonType(*v);
      if (allowed.empty() || allowed.count(t)) options.push_back(Value(*v));
    }
    if (options.empty()) throw Unsatisfiable{"no listed value satisfies 'type'"};
    return Choice(options);
  }

  // _value_expr: a grammar for exactly one JSON value.
  std::string Value(const JsonValue& v) {
    switch (v.kind) {
      case JsonValue::Kind::kString: return JsonStringLiteral(v.text);
      case JsonValue::Kind::kNull: return "\"null\"";
      case JsonValue::Kind::kBool: return v.boolean ? "\"true\"" : "\"false\"";
      case JsonValue::Kind::kNumber: {
        std::string lit = Literal(v.text == "-0" ? "0" : v.text);
        return plain_integers_ ? lit : Seq({lit, "( \".\" \"0\"+ )?"});
      }
      case JsonValue::Kind::kObject: {
        if (v.members.empty()) return Seq({"\"{\"", ws_, "\"}\""});
        std::string body;
        for (const auto& [k, x] : v.members) {
          if (!body.empty()) body += " " + item_sep_ + " ";
          body += Seq({JsonStringLiteral(k), key_sep_, Value(x)});
        }
        return Seq({"\"{\"", ws_, body, ws_, "\"}\""});
      }
      case JsonValue::Kind::kArray: {
        if (v.items.empty()) return Seq({"\"[\"", ws_, "\"]\""});
        std::string body;
        for (const auto& x : v.items) {
          if (!body.empty()) body += " " + item_sep_ + " ";
          body += Value(x);
        }
        return Seq({"\"[\"", ws_, body, ws_, "\"]\""});
      }
    }
    return "";
  }

  // _visit_types with one type name.
  // _bounds: (lo, lo_strict, hi, hi_strict) from minimum / maximum / the exclusive bounds (draft 4's flags too).
  struct Bounds {
    std::optional<int64_t> lo, hi;
    bool lo_strict = false, hi_strict = false;
  };
  Bounds ReadBounds(const JsonValue& s) const {
    auto number = [&](const char* kw) -> std::optional<int64_t> {
      const JsonValue* v = s.Find(kw);
      if (!v || v->is_bool()) return std::nullopt;  // a boolean is draft 4's flag (Check allowed no other)
      return Bound(*v);
    };
    Bounds b{number("minimum"), number("maximum")};
    if (draft_ <= 4) {
      const JsonValue* ex_lo = s.Find("exclusiveMinimum");
      const JsonValue* ex_hi = s.Find("exclusiveMaximum");
      b.lo_strict = ex_lo && ex_lo->is_bool() && ex_lo->boolean && b.lo;
      b.hi_strict = ex_hi && ex_hi->is_bool() && ex_hi->boolean && b.hi;
    }
    if (auto ex = number("exclusiveMinimum"); ex && (!b.lo || *ex >= *b.lo)) b.lo = ex, b.lo_strict = true;
    if (auto ex = number("exclusiveMaximum"); ex && (!b.hi || *ex <= *b.hi)) b.hi = ex, b.hi_strict = true;
    return b;
  }

  // _type_integer without multipleOf: j_integer, or the range's digits.
  std::string Integer(const JsonValue& s) {
    Bounds b = ReadBounds(s);
    std::optional<int64_t> lo = b.lo, hi = b.hi;
    if (lo && b.lo_strict) *lo += 1;
    if (hi && b.hi_strict) *hi -= 1;
    if (!lo && !hi) return "j_integer";
    std::optional<std::string> digits = IntegerRange(lo, hi, !plain_integers_);
    if (!digits) throw Unsatisfiable{"no integer within the bounds"};
    auto text = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
    return rules_.Add("integer_" + text(lo) + "_" + text(hi) + "_None",
                      plain_integers_ ? *digits : *digits + " ( \".\" \"0\"+ )?");
  }

  std::string Typed(const JsonValue& s, const std::string& type, int depth) {
    if (type == "null") return "j_null";
    if (type == "boolean") return "j_bool";
    if (type == "integer") return Integer(s);
    if (type == "number") {
      Bounds b = ReadBounds(s);
      if (b.lo || b.hi) Stop("'number' with bounds (decimal ranges)");
      return "j_number";
    }
    if (type == "string") return String(s);
    if (type == "array") return Array(s, depth);
    return Object(s, depth);
  }

  static std::optional<int64_t> OptionalCount(const JsonValue& s, std::string_view kw) {
    const JsonValue* v = s.Find(kw);
    if (!v) return std::nullopt;
    return Count(*v, kw);
  }

  // _type_string: a pattern's automaton (lengths intersected), a format's rule, or lengths alone.
  std::string String(const JsonValue& s) {
    int64_t lo = OptionalCount(s, "minLength").value_or(0);
    std::optional<int64_t> hi = OptionalCount(s, "maxLength");
    if (hi && *hi < lo) throw Unsatisfiable{"'minLength' > 'maxLength'"};
    const JsonValue* format = s.Find("format");
    const StringFormat* fmt = enforce_formats_ && format ? FindStringFormat(format->text) : nullptr;
    if (fmt && (lo || hi)) Stop("'format' with 'minLength' / 'maxLength' (an automaton product)");
    if (const JsonValue* pattern = s.Find("pattern")) {
      if (fmt) Stop("'pattern' with 'format' (an automaton product)");
      std::string key;
      try {
        key = PatternString(pattern->text, lo, hi ? *hi : -1, &rules_);
      } catch (const std::exception& e) {
        Stop(std::string("a 'pattern' beyond the automaton limits (") + e.what() + ")");
      }
      if (key == "j_never") throw Unsatisfiable{"no string matches the pattern within the length bounds"};
      return key;
    }
    if (fmt) {
      if (!rules_.Has(fmt->rule)) {
        rules_.Define(rules_.ReserveExact(fmt->rule), "Regex(" + Literal(fmt->regex) + ", json_string=true)");
      }
      return rules_.Add("string_" + fmt->rule, "\"\\\"\" " + fmt->rule + " \"\\\"\"");
    }
    if (lo == 0 && !hi) return "j_string";
    std::string hi_text = hi ? std::to_string(*hi) : "None";
    std::string bound = "{" + std::to_string(lo) + "," + (hi ? hi_text : "") + "}";
    return rules_.Add("string_" + std::to_string(lo) + "_" + hi_text, "\"\\\"\" j_char" + bound + " \"\\\"\"");
  }

  // _type_array with `items` (one schema for every item) and the item counts.
  std::string Array(const JsonValue& s, int depth) {
    int64_t lo = OptionalCount(s, "minItems").value_or(0);
    std::optional<int64_t> hi = OptionalCount(s, "maxItems");
    if (hi && *hi < lo) throw Unsatisfiable{"'minItems' > 'maxItems'"};
    const JsonValue* items = s.Find("items");
    std::string rest;
    try {
      rest = items ? Visit(*items, depth + 1) : "j_value";
    } catch (const Unsatisfiable&) {
      if (lo > 0) throw Unsatisfiable{"at most 0 items are possible"};
    }
    if (rest.empty() || (hi && *hi == 0)) return Seq({"\"[\"", ws_, "\"]\""});
    std::string tail;
    if (!(hi && *hi <= 1)) {
      int64_t need = std::max<int64_t>(0, lo - 1);
      std::string bound = hi ? "{" + std::to_string(need) + "," + std::to_string(*hi - 1) + "}"
                             : need == 0 ? "*" : need == 1 ? "+" : "{" + std::to_string(need) + ",}";
      tail = "( " + item_sep_ + " " + rest + " )" + bound;
    }
    std::string body = Seq({rest, tail});
    if (lo == 0) body = "( " + body + " )?";
    return rules_.Add("array", Seq({"\"[\"", ws_, body, ws_, "\"]\""}));
  }

  // _type_object + _object_expr: declared properties in schema order, optional ones skippable, then extras.
  std::string Object(const JsonValue& s, int depth) {
    static const JsonValue kEmptyObject = [] {
      JsonValue v;
      v.kind = JsonValue::Kind::kObject;
      return v;
    }();
    static const JsonValue kTrue = [] {
      JsonValue v;
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return v;
    }();
    const JsonValue* props = s.Find("properties");
    if (!props) props = &kEmptyObject;
    const JsonValue* additional = s.Find("additionalProperties");
    if (!additional) additional = &kTrue;
    // Declared names: the properties, then required names they do not list (those take additionalProperties).
    std::vector<std::pair<std::string_view, const JsonValue*>> names;
    std::unordered_set<std::string_view> required, seen;
    for (const auto& [name, sub] : props->members) {
      names.emplace_back(name, &sub);
      seen.insert(name);
    }
    if (const JsonValue* r = s.Find("required")) {
      for (const auto& x : r->items) {
        required.insert(x.text);
        if (seen.insert(x.text).second) names.emplace_back(x.text, additional);
      }
    }
    std::vector<std::pair<std::string, bool>> entries;  // (member expression, required)
    for (const auto& [name, sub] : names) {
      bool req = required.count(name) > 0;
      std::string value;
      try {
        value = Visit(*sub, depth + 1);
      } catch (const Unsatisfiable&) {
        if (req) throw;
        continue;
      }
      entries.emplace_back(Seq({JsonStringLiteral(name), key_sep_, value}), req);
    }
    std::string extra;
    if (!(additional->is_bool() && !additional->boolean)) {
      try {
        std::string value = Visit(*additional, depth + 1);
        std::vector<std::string_view> declared;
        for (const auto& n : names) declared.push_back(n.first);
        extra = Seq({KeyExcept(declared), key_sep_, value});
      } catch (const Unsatisfiable&) {
      }
    }
    return ObjectExpr(entries, extra);
  }

  // _key_except: a JSON string key spelled differently from every name (compared unit by unit: a unit is a
  // character or an escape sequence of the name's JSON spelling), as a trie of the names' units in nested
  // alternatives, each node deviating into the shared string tails.
  struct TrieNode {
    bool ends_name = false;
    std::map<std::string, TrieNode> children;  // by unit; byte order of UTF-8 is code-point order (Python's sort)
  };
  static constexpr int kKeyTrieLevelsPerRule = 48;  // KEY_TRIE_LEVELS_PER_RULE
  static constexpr size_t kMaxKeyUnits = 2000;      // the walk below recurses once per unit

  static std::vector<std::string> JsonUnits(std::string_view name) {
    std::string spelled = JsonString(name);
    std::string_view body(spelled);
    body = body.substr(1, body.size() - 2);
    std::vector<std::string> units;
    for (size_t i = 0; i < body.size();) {
      size_t n = 1;
      unsigned char c = static_cast<unsigned char>(body[i]);
      if (c == '\\') n = body[i + 1] == 'u' ? 6 : 2;
      else if (c >= 0xF0) n = 4;
      else if (c >= 0xE0) n = 3;
      else if (c >= 0xC0) n = 2;
      units.emplace_back(body.substr(i, n));
      i += n;
    }
    return units;
  }

  static std::string ClassChar(std::string_view c) {  // _class_char
    if (c.size() == 1 && (c[0] == ']' || c[0] == '\\' || c[0] == '-' || c[0] == '^')) return "\\" + std::string(c);
    return std::string(c);  // control characters never occur: the JSON spelling escapes them
  }

  static std::string Deviation(const std::vector<std::string_view>& units) {
    bool plain_ascii = std::all_of(units.begin(), units.end(), [](std::string_view u) {
      return u.size() == 1 && static_cast<unsigned char>(u[0]) < 0x80;
    });
    if (plain_ascii) {  // _shared_tail_deviation
      std::string plain;
      for (auto u : units) plain += ClassChar(u);
      return "[^\"\\\\\\x00-\\x1f\\x80-\\U0010ffff" + plain + "] j_key_rest | j_key_wide";
    }
    std::string plain, short_escapes;  // _deviation
    bool long_escape = false;
    for (auto u : units) {
      if (u[0] != '\\') plain += ClassChar(u);
      else if (u.size() == 2) short_escapes += ClassChar(u.substr(1));
      else long_escape = true;
    }
    std::string out = "( [^\"\\\\\\x00-\\x1f" + plain + "]";
    std::string simple;
    for (char c : std::string_view("\"\\/bfnrt")) {
      if (short_escapes.find(c) == std::string::npos) simple.push_back(c);
    }
    std::vector<std::string> escapes;
    if (!simple.empty()) {
      std::string cls = "[";
      for (char c : simple) cls += ClassChar(std::string_view(&c, 1));
      escapes.push_back(cls + "]");
    }
    if (!long_escape) escapes.push_back("\"u\" [0-9a-fA-F]{4}");
    if (!escapes.empty()) {
      out += " | \"\\\\\" ( ";
      for (size_t i = 0; i < escapes.size(); ++i) out += (i ? " | " : "") + escapes[i];
      out += " )";
    }
    return out + " ) j_char* \"\\\"\"";
  }

  std::string TrieAlternatives(const TrieNode& node, int depth) {
    std::vector<std::string_view> units;
    for (const auto& c : node.children) units.push_back(c.first);
    std::string deviation = Deviation(units);
    if (units.empty()) return deviation;
    std::vector<std::string> child_texts;
    for (const auto& c : node.children) child_texts.push_back(TrieAlternatives(c.second, depth + 1));
    std::string out = node.ends_name ? deviation : "\"\\\"\" | " + deviation;
    size_t i = 0;
    for (const auto& c : node.children) {
      out += " | " + Literal(c.first);
      if ((depth + 1) % kKeyTrieLevelsPerRule == 0) out += " " + rules_.Add("key_except", child_texts[i]);
      else out += " ( " + child_texts[i] + " )";
      ++i;
    }
    return out;
  }

  std::string KeyExcept(const std::vector<std::string_view>& names) {
    if (names.empty()) return "j_string";
    TrieNode trie;
    for (auto name : names) {
      std::vector<std::string> units = JsonUnits(name);
      if (units.size() > kMaxKeyUnits) Stop("a property name longer than the native key trie takes");
      TrieNode* node = &trie;
      for (auto& u : units) node = &node->children[u];
      node->ends_name = true;
    }
    static const std::pair<const char*, const char*> kKeyTails[] = {
        {"j_key_rest", R"(j_char* "\"")"},
        {"j_key_wide", R"(( [^\x00-\x7f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) ) j_char* "\"")"}};
    for (const auto& [name, body] : kKeyTails) {
      if (!rules_.Has(name)) rules_.Define(rules_.ReserveExact(name), body);
    }
    return Seq({"\"\\\"\"", rules_.Add("key_except", TrieAlternatives(trie, 0))});
  }

  std::string ObjectExpr(const std::vector<std::pair<std::string, bool>>& entries, const std::string& extra) {
    const std::string& sep = item_sep_;
    std::string extras_rest = extra.empty() ? "" : "( " + sep + " " + extra + " )*";
    std::string first = extra.empty() ? "" : "( " + extra + " " + extras_rest + " )?";
    std::string rest = extras_rest;
    std::vector<const std::string*> run;  // required members since the last optional one, nearest last

    auto join = [](const std::vector<std::string_view>& parts) {
      std::string out;
      for (std::string_view p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out.push_back(' ');
        out.append(p);
      }
      return out;
    };
    auto rest_text = [&]() {
      std::vector<std::string_view> parts;
      for (auto it = run.rbegin(); it != run.rend(); ++it) {
        parts.push_back(sep);
        parts.push_back(**it);
      }
      parts.push_back(rest);
      return join(parts);
    };
    auto first_text = [&]() {
      if (run.empty()) return first;
      std::vector<std::string_view> parts = {*run.back()};
      for (auto it = run.rbegin() + 1; it != run.rend(); ++it) {
        parts.push_back(sep);
        parts.push_back(**it);
      }
      parts.push_back(rest);
      return join(parts);
    };
    for (size_t k = entries.size(); k-- > 0;) {
      const auto& [member, req] = entries[k];
      if (req) {
        run.push_back(&member);
        continue;
      }
      std::string rest_next = rest_text(), first_next = first_text();
      run.clear();
      first = rules_.Add("obj_first_" + std::to_string(k),
                         Seq({member, rest_next}) + " | " + (first_next.empty() ? std::string(kEmpty) : first_next));
      rest = k ? rules_.Add("obj_rest_" + std::to_string(k), Seq({sep, member, rest_next}) + " | " +
                                                                 (rest_next.empty() ? std::string(kEmpty) : rest_next))
               : "";
    }
    std::string body = first_text();
    if (body.empty()) body = kEmpty;
    return rules_.Add("object", Seq({"\"{\"", ws_, body, ws_, "\"}\""}));
  }

  const References& refs_;
  int draft_;
  std::unordered_map<std::string, std::string> ref_rules_;  // $ref target pointer -> rule name
  std::unordered_map<std::string, std::string> alt_rules_;  // anyOf branch $ref target -> rule name
  std::string ws_, item_sep_, key_sep_;
  bool plain_integers_;
  bool enforce_formats_;
  RuleTable rules_;
  int64_t visits_ = 0;
};

}  // namespace

const std::vector<std::string_view>& RecognisedKeywords() { return kRecognised; }

NativeConversion JsonSchemaToEbnf(std::string_view schema_text, const JsonSchemaOptions& options) {
  NativeConversion out;
  if (schema_text.size() > kMaxTextBytes) {
    out.not_handled = "a schema text above the native size limit";
    return out;
  }
  std::string error;
  JsonParseOptions parse;
  parse.max_depth = kMaxJsonDepth;
  std::optional<JsonValue> doc = ParseJson(schema_text, parse, &error);
  if (!doc) {
    out.not_handled = "JSON the native reader does not take: " + error;
    return out;
  }
  try {
    int draft = Draft(*doc);
    Check(*doc, draft, /*is_root=*/true);
    References refs(*doc, draft);
    out.ebnf = Converter(options, refs, draft).Convert(*doc);
  } catch (const NotHandled& e) {
    out.not_handled = e.why;
  }
  return out;
}

}  // namespace xg::json_schema
