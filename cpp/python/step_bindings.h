// Bindings of the batch grammar step (xla_ffi/): handle registry, host step, FFI handler capsules,
// mask prefetch. Called from the module definition in bindings.cc.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "matcher/tag_tracker.h"

namespace xg {
void BindStep(pybind11::module_& m);
// Tag events as Python tuples (start: bool, tag: int, token_index: int, text: bytes).
pybind11::list TagEventsToPython(std::vector<TagEvent> events);
}  // namespace xg
