// The CUDA XLA FFI handler of the grammar step. The matchers live on the host, so the handler
//   1. copies handles and tokens device -> host on the handler's stream and synchronises,
//   2. runs the host step (xg2jax_grammar_step, reached through a function pointer that the Python
//      bindings hand over, so this module shares the one HandleRegistry of xg2jax._core),
//   3. copies the bitmask and the status host -> device on the same stream and synchronises before
//      the host buffers are reused.
// It is deliberately not marked CUDA-graph compatible: a captured graph would replay the copies
// without running the host step.
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <vector>

#include "grammar_step.h"
#include "step_buffers.h"

namespace xg {
namespace {

using StepFn = int (*)(const int32_t*, const int32_t*, int64_t, uint32_t*, int64_t, int32_t*, int32_t, int32_t,
                       int32_t, char*, size_t);
std::atomic<StepFn> g_step{nullptr};

ffi::Error CudaError(cudaError_t e, const char* what) {
  return ffi::Error::Internal(std::string("xg2jax grammar step (CUDA): ") + what + ": " + cudaGetErrorString(e));
}

ffi::Error GrammarStepCuda(cudaStream_t stream,                   // the computation's stream
                           ffi::Buffer<ffi::S32> handles,         // s32[B] registry handles, -1 = no grammar
                           ffi::Buffer<ffi::S32> tokens,          // s32[B] last sampled token, -1 = do not advance
                           ffi::ResultBuffer<ffi::S32> bitmask,   // s32[B, W] packed allowed-token mask
                           ffi::ResultBuffer<ffi::S32> status,    // s32[B] StepStatus bits
                           int32_t strict, int32_t max_threads) {
  std::string msg = CheckStepShapes(handles, tokens, bitmask, status);
  if (!msg.empty()) return ffi::Error::InvalidArgument(msg);
  StepFn step = g_step.load();
  if (step == nullptr) return ffi::Error::Internal("xg2jax grammar step (CUDA): the host step function is not set");
  const int64_t batch = handles.dimensions()[0], words = bitmask->dimensions()[1];
  thread_local std::vector<int32_t> h, t, s;
  thread_local std::vector<uint32_t> mask;
  h.resize(batch);
  t.resize(batch);
  s.resize(batch);
  mask.resize(static_cast<size_t>(batch * words));
  cudaError_t e = cudaMemcpyAsync(h.data(), handles.typed_data(), batch * 4, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(t.data(), tokens.typed_data(), batch * 4, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return CudaError(e, "copying handles and tokens to the host");
  char err[1024];
  if (step(h.data(), t.data(), batch, mask.data(), words, s.data(), strict, max_threads,
           static_cast<int32_t>(StepSource::kCudaFfi), err, sizeof(err)) != 0) {
    return ffi::Error::InvalidArgument(err);
  }
  e = cudaMemcpyAsync(bitmask->typed_data(), mask.data(), mask.size() * 4, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(status->typed_data(), s.data(), batch * 4, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return CudaError(e, "copying the bitmask to the device");
  return ffi::Error::Success();
}

}  // namespace

void SetCudaStepFunction(void* fn) { g_step.store(reinterpret_cast<StepFn>(fn)); }

}  // namespace xg

XLA_FFI_DEFINE_HANDLER_SYMBOL(XgGrammarStepCuda, xg::GrammarStepCuda,
                              xg::BindStepSignature(
                                  xla::ffi::Ffi::Bind().Ctx<xla::ffi::PlatformStream<cudaStream_t>>()));

namespace xg {
void* CudaGrammarStepHandler() { return reinterpret_cast<void*>(XgGrammarStepCuda); }
}  // namespace xg
