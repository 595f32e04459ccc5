// Bindings of the code-point automata (automata/codepoint_dfa.h) for the JSON Schema front end: the
// submodule `_core.automata`. Called from the module definition in bindings.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace xg {
void BindAutomata(pybind11::module_& m);
}  // namespace xg
