// The signature and shape checks shared by the CPU and CUDA handlers: the operands of one grammar step are
//   handles  s32[B]     registry handles, -1 = row without a grammar
//   tokens   s32[B]     token sampled last per row, -1 = do not advance
//   bitmask  s32[B, W]  (result) packed allowed-token mask, LSB first, 1 = allowed
//   status   s32[B]     (result) StepStatus bits per row
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "xla/ffi/api/ffi.h"

namespace xg {

namespace ffi = xla::ffi;

// "" if the shapes agree, else a message naming the operand.
inline std::string CheckStepShapes(const ffi::Buffer<ffi::S32>& handles, const ffi::Buffer<ffi::S32>& tokens,
                                   ffi::ResultBuffer<ffi::S32>& bitmask,
                                   ffi::ResultBuffer<ffi::S32>& status) {
  auto hd = handles.dimensions(), td = tokens.dimensions(), bd = bitmask->dimensions(), sd = status->dimensions();
  if (hd.size() != 1) return "xg2jax grammar step: handles must be 1-D [batch]";
  const int64_t b = hd[0];
  if (td.size() != 1 || td[0] != b) return "xg2jax grammar step: tokens must have shape [batch] like the handles";
  if (bd.size() != 2 || bd[0] != b) return "xg2jax grammar step: the bitmask result must have shape [batch, words]";
  if (sd.size() != 1 || sd[0] != b) return "xg2jax grammar step: the status result must have shape [batch]";
  return "";
}

// The step's operands and attributes, appended to a binding (after any context the handler takes).
template <typename Binding>
auto BindStepSignature(Binding binding) {
  return std::move(binding)
      .template Arg<ffi::Buffer<ffi::S32>>()            // handles
      .template Arg<ffi::Buffer<ffi::S32>>()            // tokens
      .template Ret<ffi::Buffer<ffi::S32>>()            // bitmask
      .template Ret<ffi::Buffer<ffi::S32>>()            // status
      .template Attr<int32_t>("strict")
      .template Attr<int32_t>("max_threads");
}

}  // namespace xg
