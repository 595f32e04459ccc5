// The automaton of a TagDispatch rule (grammar.h): free text watched by the Aho-Corasick automaton of its
// triggers and excludes (automata/aho_corasick.h), with one rule edge per trigger.
//
// Construction. Each Aho-Corasick state s whose outputs hold no exclude becomes a state (states whose
// outputs hold an exclude are dead: the free text may not contain one, so edges into them are dropped).
//  - No trigger among s's outputs: s is free text, final (the construct may end anywhere in free text,
//    even inside a partial trigger), with s's Aho-Corasick row on bytes below kFirstReservedByte (grammar.h) and
//    on the reserved bytes only along trie edges toward a trigger (TokenTagDispatch's token sentinels).
//  - A trigger t among s's outputs (it has just completed): the text must dispatch. s is not final; it has a
//    rule edge on t's rule to the start state (loop_after_dispatch) or to a final state with no edges (the
//    construct is done), and keeps only the trie edges toward a longer trigger (taking that one instead).
// The start state is the root. The automaton is deterministic: one run per byte, one edge per rule (two
// triggers of one rule share the edge's target). A free-text step reads one row of this automaton, so it
// costs the same with 5 tags or 500; the states number at most the triggers' and excludes' bytes plus two.
//
// TokenTagDispatch (Expr::token_free_text): the free text is tokens, read as token sentinels (grammar.h). The free
// state reads 0xFF, then the id's digits along the trie of the trigger and exclude ids: a digit with none of them
// below goes to a shared chain back to the free state (any other token is free text), a trigger id reaches its
// trigger state (rule edges as above), an exclude id has no edge.
#pragma once

#include <cstdint>

#include "fsm/rule_dfa_cache.h"
#include "grammar/grammar.h"

namespace xg {

// The automaton of expression `body` (a kTagDispatch) with rule edges labelled by grammar rule ids. Throws
// LimitError past max_states states.
LocalDfa TagDispatchDfa(const Grammar& g, int32_t body, int64_t max_states);

}  // namespace xg
