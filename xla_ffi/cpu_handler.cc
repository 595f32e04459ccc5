// The CPU XLA FFI handler of the grammar step, in the three layers of the JAX FFI examples:
// library function (GrammarStep, grammar_step.h), FFI wrapper (GrammarStepCpu below: shapes and
// attributes to arguments, message to ffi::Error), handler symbol (XgGrammarStepCpu, bound with
// XLA_FFI_DEFINE_HANDLER_SYMBOL). CPU buffers are host memory, so the step runs in place.
#include "cpu_handler.h"

#include "grammar_step.h"
#include "step_buffers.h"

namespace xg {
namespace {

ffi::Error GrammarStepCpu(ffi::Buffer<ffi::S32> handles,        // s32[B] registry handles, -1 = no grammar
                          ffi::Buffer<ffi::S32> tokens,         // s32[B] last sampled token, -1 = do not advance
                          ffi::ResultBuffer<ffi::S32> bitmask,  // s32[B, W] packed allowed-token mask
                          ffi::ResultBuffer<ffi::S32> status,   // s32[B] StepStatus bits
                          int32_t strict,                       // 1: a rejected token is an error
                          int32_t max_threads) {                // threads that fill the masks
  std::string msg = CheckStepShapes(handles, tokens, bitmask, status);
  if (msg.empty()) {
    const int64_t batch = handles.dimensions()[0];
    msg = GrammarStep(handles.typed_data(), tokens.typed_data(), batch,
                      reinterpret_cast<uint32_t*>(bitmask->typed_data()), bitmask->dimensions()[1],
                      status->typed_data(), StepOptions{strict != 0, max_threads}, StepSource::kCpuFfi);
  }
  return msg.empty() ? ffi::Error::Success() : ffi::Error::InvalidArgument(msg);
}

}  // namespace
}  // namespace xg

XLA_FFI_DEFINE_HANDLER_SYMBOL(XgGrammarStepCpu, xg::GrammarStepCpu, xg::BindStepSignature(xla::ffi::Ffi::Bind()));

namespace xg {
void* CpuGrammarStepHandler() { return reinterpret_cast<void*>(XgGrammarStepCpu); }
}  // namespace xg
