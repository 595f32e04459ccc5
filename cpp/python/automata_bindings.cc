// `_core.automata`: thin handles over CodepointDfa. Builders release the GIL. Strings to run are
// passed as UTF-32-LE bytes (Python's "surrogatepass" encoding), so a JSON key holding a lone
// surrogate is read as the code point it is rather than failing to convert.
#include "automata_bindings.h"

#include <pybind11/stl.h>

#include <cstring>

#include "automata/codepoint_dfa.h"
#include "automata/regex_parser.h"

namespace py = pybind11;

namespace xg {
namespace {

std::vector<uint32_t> Utf32(const py::bytes& b) {
  const std::string s = b;
  std::vector<uint32_t> out(s.size() / 4);
  if (!out.empty()) std::memcpy(out.data(), s.data(), out.size() * 4);
  return out;
}



py::list RangesToList(const CodepointRanges& r) {
  py::list out;
  for (auto [lo, hi] : r) out.append(py::make_tuple(lo, hi));
  return out;
}

}  // namespace

void BindAutomata(py::module_& m) {
  py::module_ a = m.def_submodule("automata", "code-point automata (internal; see automata/codepoint_dfa.h)");
  py::class_<CodepointDfa, std::shared_ptr<CodepointDfa>>(a, "CodepointDfa")
      .def_property_readonly("num_states", &CodepointDfa::num_states)
      .def_property_readonly("num_components", &CodepointDfa::num_components)
      .def_property_readonly("num_atoms", &CodepointDfa::num_atoms)
      .def_property_readonly("atoms", [](const CodepointDfa& d) { return RangesToList(d.atoms()); },
                             "the partition of [0, 0x10FFFF] the transitions are defined on")
      .def("next",
           [](const CodepointDfa& d, int32_t q, int32_t atom) {
             XG_USER_CHECK(q >= 0 && q < d.num_states() && atom >= 0 && atom < d.num_atoms())
                 << "state " << q << " or atom " << atom << " out of range";
             return d.Next(q, atom);
           },
           py::arg("state"), py::arg("atom"), "the successor state, -1 when dead")
      .def("accept_matrix",
           [](const CodepointDfa& d) {
             std::string out(static_cast<size_t>(d.num_states()) * d.num_components(), '\0');
             for (int32_t q = 0; q < d.num_states(); ++q) {
               for (int32_t i = 0; i < d.num_components(); ++i) {
                 out[static_cast<size_t>(q) * d.num_components() + i] = d.Accepts(q, i) ? 1 : 0;
               }
             }
             return py::bytes(out);
           },
           "num_states x num_components bytes: 1 where component i accepts in state q")
      .def("run", [](const CodepointDfa& d, const py::bytes& utf32) { return d.Run(Utf32(utf32)); },
           py::arg("utf32le"), "the state reached on the UTF-32-LE code points, -1 when dead")
      .def("accepts", [](const CodepointDfa& d, int32_t q, int32_t i) { return q >= 0 && d.Accepts(q, i); },
           py::arg("state"), py::arg("component") = 0)
      .def("with_accepting",
           [](const CodepointDfa& d, const std::vector<int32_t>& states) {
             return std::make_shared<CodepointDfa>(d.WithAccepting(states));
           },
           py::arg("states"))
      .def("emission_plan",
           [](const CodepointDfa& d, int64_t max_merge_work) {
             EmissionPlan plan;
             {
               py::gil_scoped_release release;
               plan = PlanEmission(d, max_merge_work);
             }
             py::list states;
             for (const EmissionPlan::State& s : plan.states) {
               py::list edges;
               for (const auto& [t, r] : s.edges) edges.append(py::make_tuple(t, RangesToList(r)));
               states.append(py::make_tuple(s.id, s.accepting, RangesToList(s.loop), edges));
             }
             return py::make_tuple(plan.start, states);
           },
           py::arg("max_merge_work"),
           "(start or -1, [(state, accepting, loop ranges, [(target, ranges)])]) of the trimmed, merged automaton");

  a.def("regex_syntax_error",
        [](const std::string& pattern) -> py::object {
          try {
            regex::ParseRegexPattern(pattern, {{0, kMaxCodepoint}});
          } catch (const RegexError& e) {
            return py::str("at position " + std::to_string(e.position()) + ": " + e.description());
          }
          return py::none();
        },
        py::arg("pattern"), "\"at position P: what\" when the regex parser rejects `pattern`, else None");
  a.def("search_dfa",
        [](const std::string& pattern, int64_t max_states) {
          py::gil_scoped_release release;
          return std::make_shared<CodepointDfa>(SearchDfa(pattern, max_states));
        },
        py::arg("pattern"), py::arg("max_states"));
  a.def("names_dfa",
        [](const std::vector<std::string>& names) {
          py::gil_scoped_release release;
          return std::make_shared<CodepointDfa>(NamesDfa(names));
        },
        py::arg("names"));
  a.def("length_dfa",
        [](int64_t lo, int64_t hi, int64_t max_states) { return std::make_shared<CodepointDfa>(LengthDfa(lo, hi, max_states)); },
        py::arg("lo"), py::arg("hi"), py::arg("max_states"));
  a.def("product",
        [](const std::vector<const CodepointDfa*>& dfas, int64_t max_states) {
          py::gil_scoped_release release;
          return std::make_shared<CodepointDfa>(ProductDfa(dfas, max_states));
        },
        py::arg("dfas"), py::arg("max_states"));
  a.def("product_with_length",
        [](const std::vector<const CodepointDfa*>& dfas, int32_t num_required, int64_t lo, int64_t hi,
           int64_t max_states) {
          py::gil_scoped_release release;
          return std::make_shared<CodepointDfa>(ProductWithLength(dfas, num_required, lo, hi, max_states));
        },
        py::arg("dfas"), py::arg("num_required"), py::arg("lo"), py::arg("hi"), py::arg("max_states"));
}

}  // namespace xg
