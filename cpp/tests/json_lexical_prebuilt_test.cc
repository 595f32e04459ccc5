// The automata of the JSON lexical rules, built once per process (compiled_grammar.cc) from
// JsonLexicalRulesEbnf, cover every lexical rule a native conversion writes under the common option sets:
// compiling a converted schema builds automata only for its own rules.
#include <gtest/gtest.h>

#include <string>

#include "frontends/ebnf_parser.h"
#include "frontends/json_schema/json_schema_to_ebnf.h"
#include "fsm/grammar_fsm.h"
#include "fsm/rule_dfa_cache.h"
#include "grammar/passes.h"

namespace xg {
namespace {

Grammar NormalizedEbnf(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf, "root");
  NormalizeGrammar(&g);
  return g;
}

TEST(JsonLexicalPrebuilt, ConvertedSchemasBuildOnlyTheirOwnRules) {
  const char* const kSchemas[] = {
      "{}",
      R"({"type": "array", "items": {"type": "number"}})",
      R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}})",
      R"({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"],
          "additionalProperties": {"type": ["null", "object"]}})",
  };
  for (bool any_whitespace : {true, false}) {
    for (bool plain_integers : {true, false}) {
      json_schema::JsonSchemaOptions options;
      options.any_whitespace = any_whitespace;
      options.plain_integers = plain_integers;
      RuleDfaCache lexical;
      GrammarFsm::Build(NormalizedEbnf(json_schema::JsonLexicalRulesEbnf(options)), GrammarFsm::kDefaultMaxStates,
                        &lexical);
      const PrebuiltRuleDfas prebuilt(lexical);
      for (const char* schema : kSchemas) {
        SCOPED_TRACE(std::string(schema) + (any_whitespace ? " any_whitespace" : "") +
                     (plain_integers ? " plain_integers" : ""));
        const json_schema::NativeConversion conv = json_schema::JsonSchemaToEbnf(schema, options);
        ASSERT_TRUE(conv.ebnf.has_value()) << conv.not_handled;
        const Grammar g = NormalizedEbnf(*conv.ebnf);
        // Automata built (not found among the prebuilt ones) go into `cache`: at most one per rule of the
        // schema's own (a lexical rule's name starts with "j_").
        RuleDfaCache cache;
        const GrammarFsm with = GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache, std::nullopt,
                                                  GrammarFsm::kDefaultMaxSubsetMembers, &prebuilt);
        size_t own_rules = 0;
        for (const Rule& r : g.rules) own_rules += r.name.rfind("j_", 0) != 0;
        EXPECT_LE(cache.Size(), own_rules);
        EXPECT_EQ(with.NumStates(), GrammarFsm::Build(g).NumStates());
      }
    }
  }
}

}  // namespace
}  // namespace xg
