// Bindings of the batch grammar step: thin wrappers, no logic. The host step (used by the
// io_callback path) validates its numpy buffers here and runs GrammarStep with the GIL released.
#include "step_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>

#include "grammar_step.h"
#include "handle_registry.h"
#include "matcher/mask_prefetch.h"
#include "support/check.h"
#ifdef XG2JAX_HAVE_XLA_FFI
#include "cpu_handler.h"
#endif

namespace py = pybind11;

namespace xg {
namespace {

// A C-contiguous int32 numpy array of rank `ndim` (and leading dimension `rows` when >= 0).
int32_t* Int32Buffer(py::array& arr, const char* name, int ndim, py::ssize_t rows, bool writable) {
  XG_USER_CHECK(arr.dtype().is(py::dtype::of<int32_t>()))
      << "grammar step: " << name << " must have dtype int32, got " << std::string(py::str(arr.dtype()));
  XG_USER_CHECK(arr.ndim() == ndim) << "grammar step: " << name << " must be " << ndim << "-D, got " << arr.ndim()
                                    << "-D";
  XG_USER_CHECK(rows < 0 || arr.shape(0) == rows)
      << "grammar step: " << name << " has " << arr.shape(0) << " rows, expected " << rows;
  XG_USER_CHECK(arr.flags() & py::array::c_style) << "grammar step: " << name << " must be C-contiguous";
  XG_USER_CHECK(!writable || arr.writeable()) << "grammar step: " << name << " is read-only";
  return static_cast<int32_t*>(writable ? arr.mutable_data() : const_cast<void*>(arr.data()));
}

StepSource ParseSource(const std::string& s) {
  if (s == "cpu_ffi") return StepSource::kCpuFfi;
  if (s == "cuda_ffi") return StepSource::kCudaFfi;
  XG_USER_CHECK(s == "host") << "step_call_count: unknown source '" << s << "' (cpu_ffi, cuda_ffi, host)";
  return StepSource::kHostCallback;
}

}  // namespace

py::list TagEventsToPython(std::vector<TagEvent> events) {
  py::list out;
  for (TagEvent& e : events) out.append(py::make_tuple(e.start, e.tag, e.token_index, py::bytes(e.text)));
  return out;
}

void BindStep(py::module_& m) {
  m.def(
      "handle_add",
      [](std::shared_ptr<CompiledGrammar> g, std::optional<std::vector<int32_t>> stops, int32_t max_rollback,
         int64_t owner) {
        return HandleRegistry::Global().Add(GrammarMatcher(std::move(g), std::move(stops), max_rollback), owner);
      },
      py::arg("compiled_grammar"), py::arg("override_stop_tokens"), py::arg("max_rollback_tokens"),
      py::arg("owner") = -1);
  m.def(
      "handle_add_matcher",
      [](const GrammarMatcher& matcher, int64_t owner) { return HandleRegistry::Global().Add(matcher.Fork(), owner); },
      py::arg("matcher"), py::arg("owner") = -1);
  m.def("handle_new_owner", [] { return HandleRegistry::Global().NewOwner(); });
  m.def("handle_free", [](int32_t h) { HandleRegistry::Global().Free(h); }, py::arg("handle"));
  m.def("handle_snapshot", [](int32_t h) { return HandleRegistry::Global().Snapshot(h); }, py::arg("handle"));
  m.def("handle_num_live", [] { return HandleRegistry::Global().NumLive(); });
  m.def(
      "handle_take_tag_events",
      [](const std::vector<int32_t>& handles) {
        // Per handle, the switches its matcher made since the last call (tag_tracker.h), under the slot's lock.
        py::list out;
        for (int32_t h : handles) {
          std::vector<TagEvent> events;
          if (h >= 0) {
            std::shared_ptr<HandleRegistry::Slot> slot = HandleRegistry::Global().Find(h);
            XG_USER_CHECK(slot != nullptr) << "grammar handle " << h << " is unknown or already freed";
            std::lock_guard lock(slot->mu);
            events = slot->matcher.TakeTagEvents();
          }
          out.append(TagEventsToPython(std::move(events)));
        }
        return out;
      },
      py::arg("handles"));

  m.def(
      "grammar_step",
      [](py::array handles, py::array tokens, py::array bitmask, py::array status, bool strict, int max_threads) {
        const int32_t* h = Int32Buffer(handles, "handles", 1, -1, false);
        const py::ssize_t batch = handles.shape(0);
        const int32_t* t = Int32Buffer(tokens, "tokens", 1, batch, false);
        auto* b = reinterpret_cast<uint32_t*>(Int32Buffer(bitmask, "bitmask", 2, batch, true));
        int32_t* s = Int32Buffer(status, "status", 1, batch, true);
        const int64_t words = bitmask.shape(1);
        std::string msg;
        {
          py::gil_scoped_release release;
          msg = GrammarStep(h, t, batch, b, words, s, StepOptions{strict, max_threads}, StepSource::kHostCallback);
        }
        XG_USER_CHECK(msg.empty()) << msg;
      },
      py::arg("handles"), py::arg("tokens"), py::arg("bitmask"), py::arg("status"), py::arg("strict"),
      py::arg("max_threads"));
  m.def("step_call_count", [](const std::string& source) { return StepCallCount(ParseSource(source)); },
        py::arg("source"));
  m.def("ffi_handlers", [] {
    py::dict out;
#ifdef XG2JAX_HAVE_XLA_FFI
    out["cpu"] = py::capsule(CpuGrammarStepHandler());
#endif
    return out;
  });
  m.def("step_function", [] { return py::capsule(reinterpret_cast<void*>(&xg2jax_grammar_step)); });

  py::class_<std::shared_future<void>>(m, "MaskPrefetch")
      .def(
          "wait",
          [](const std::shared_future<void>& f, double timeout_s) {
            bool done;
            {
              py::gil_scoped_release release;
              done = f.wait_for(std::chrono::duration<double>(timeout_s)) == std::future_status::ready;
            }
            if (done) f.get();  // rethrows a build error
            return done;
          },
          py::arg("timeout_s"));
  m.def(
      "prefetch_masks",
      [](const std::vector<int32_t>& handles, int k, int max_threads) {
        std::vector<GrammarMatcher> snapshots;
        snapshots.reserve(handles.size());
        for (int32_t h : handles) {
          if (h >= 0) snapshots.push_back(HandleRegistry::Global().Snapshot(h));
        }
        std::vector<const GrammarMatcher*> ptrs;
        for (const GrammarMatcher& s : snapshots) ptrs.push_back(&s);
        PrefetchPlan plan = PlanMaskPrefetch(ptrs, k);
        std::vector<int32_t> states;
        for (const auto& p : plan.states) states.push_back(p.second);
        std::vector<int64_t> costs = plan.costs;
        return py::make_tuple(StartMaskPrefetch(std::move(plan), max_threads), states, costs);
      },
      py::arg("handles"), py::arg("k"), py::arg("max_threads"));
}

}  // namespace xg
