// Bindings of the batch grammar step (xla_ffi/): handle registry, host step, FFI handler capsules,
// mask prefetch. Called from the module definition in bindings.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace xg {
void BindStep(pybind11::module_& m);
}  // namespace xg
