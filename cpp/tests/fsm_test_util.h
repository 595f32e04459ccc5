// Test helpers: the automata of an EBNF grammar after the compiler's normalising passes, and whether
// the Earley parser accepts a whole string on them.
#pragma once

#include <cstdint>
#include <string>

#include "fsm/grammar_fsm.h"
#include "frontends/ebnf_parser.h"
#include "grammar/passes.h"
#include "parser/earley_parser.h"

namespace xg {

inline GrammarFsm NormalizedFsm(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf);
  NormalizeGrammar(&g);
  return GrammarFsm::Build(g);
}

inline bool FsmAccepts(const GrammarFsm& fsm, const std::string& s) {
  EarleyParser p(&fsm);
  p.Reset();
  for (char c : s)
    if (!p.Advance(static_cast<uint8_t>(c))) return false;
  return p.CanAcceptEnd();
}

}  // namespace xg
