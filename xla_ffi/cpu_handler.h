// The CPU handler of the fused grammar step (advance by the last token, write the bitmask), for
// jax.ffi.register_ffi_target(..., platform="cpu"). Built only when the XLA FFI headers are found.
#pragma once

namespace xg {
// The XLA_FFI_Handler* of the CPU grammar step, as an opaque pointer for a PyCapsule.
void* CpuGrammarStepHandler();
}  // namespace xg
