// xg2jax._ffi_cuda: a separate extension (built only with a CUDA toolkit; cudart linked statically,
// so importing it needs no GPU driver) that exposes the CUDA handler. It holds no matcher state: the
// host step function comes from xg2jax._core through set_step_function.
#include <pybind11/pybind11.h>

namespace xg {
void SetCudaStepFunction(void* fn);
void* CudaGrammarStepHandler();
}  // namespace xg

namespace py = pybind11;

PYBIND11_MODULE(_ffi_cuda, m) {
  m.doc() = "xg2jax CUDA grammar-step handler (internal)";
  m.def("handler", [] { return py::capsule(xg::CudaGrammarStepHandler()); });
  m.def("set_step_function", [](py::capsule fn) { xg::SetCudaStepFunction(fn.get_pointer()); }, py::arg("fn"));
}
