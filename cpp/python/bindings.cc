// pybind11 bindings: thin handles over the C++ objects, no logic. InputError becomes ValueError,
// InternalError becomes RuntimeError. Heavy calls release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "compiler/compiled_grammar.h"
#include "compiler/grammar_compiler.h"
#include "frontends/regex.h"
#include "grammar/builtin_grammars.h"
#include "grammar/combine.h"
#include "frontends/ebnf_parser.h"
#include "frontends/json_schema/formats.h"
#include "frontends/json_schema/json_schema_to_ebnf.h"
#include "grammar/passes.h"
#include "grammar/printer.h"
#include "grammar/productivity.h"
#include "matcher/grammar_matcher.h"
#include "support/check.h"
#include "support/limits.h"
#include "tokenizer/tokenizer_info.h"
#include "automata_bindings.h"
#include "step_bindings.h"

namespace py = pybind11;
using namespace xg;

namespace {

// Python's repr of a shape tuple: (), (5,), (1, 2).
std::string ShapeRepr(const py::array& arr) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) s += (i ? ", " : "") + std::to_string(arr.shape(i));
  return s + (arr.ndim() == 1 ? ",)" : ")");
}

// Row `index` of a packed int32 bitmask (1-D: index must be 0), validated with the messages the
// Python API documents, and long enough for `vocab_size` tokens.
std::pair<uint32_t*, int32_t> BitmaskRow(py::array arr, int64_t index, int32_t vocab_size, const char* what) {
  XG_USER_CHECK(arr.dtype().is(py::dtype::of<int32_t>()))
      << what << ": the bitmask must have dtype int32, got " << std::string(py::str(arr.dtype()));
  if (arr.ndim() == 1) {
    XG_USER_CHECK(index == 0) << what << ": index " << index << " given for a 1-D bitmask (only 0 is valid)";
  } else {
    XG_USER_CHECK(arr.ndim() == 2) << what << ": the bitmask must be 1-D or 2-D, got shape " << ShapeRepr(arr);
    XG_USER_CHECK(index >= 0 && index < arr.shape(0))
        << what << ": index " << index << " is out of range for a bitmask of " << arr.shape(0) << " rows";
  }
  const int32_t words = static_cast<int32_t>(arr.shape(arr.ndim() - 1));
  const int32_t need = (vocab_size + 31) / 32;
  XG_USER_CHECK(words >= need) << what << ": the bitmask row has " << words << " int32 words, but vocab_size "
                               << vocab_size << " needs " << need;
  XG_USER_CHECK(arr.writeable()) << what << ": the bitmask is read-only";
  XG_USER_CHECK(words == 0 || arr.strides(arr.ndim() - 1) == 4) << what << ": the bitmask must be C-contiguous";
  auto* base = static_cast<char*>(arr.mutable_data());
  if (arr.ndim() == 2) base += index * arr.strides(0);
  return {reinterpret_cast<uint32_t*>(base), words};
}

// A binding that validates row `index` of a bitmask, then runs one of the matcher's fills into it
// with the GIL released.
template <void (GrammarMatcher::*Fill)(uint32_t*, int32_t)>
auto FillInto(const char* what) {
  return [what](GrammarMatcher& m, py::array bitmask, int64_t index) {
    auto [ptr, n] = BitmaskRow(bitmask, index, m.grammar().tokenizer().VocabSize(), what);
    py::gil_scoped_release release;
    (m.*Fill)(ptr, n);
  };
}

// The native JSON Schema front end's options from the Python keyword arguments.
json_schema::JsonSchemaOptions SchemaOptions(bool any_whitespace,
                                             std::optional<std::pair<std::string, std::string>> separators,
                                             std::optional<int64_t> max_whitespace_cnt, bool plain_integers,
                                             bool enforce_formats, bool any_order) {
  json_schema::JsonSchemaOptions o;
  o.any_whitespace = any_whitespace;
  o.separators = std::move(separators);
  o.max_whitespace_cnt = max_whitespace_cnt;
  o.plain_integers = plain_integers;
  o.enforce_formats = enforce_formats;
  o.any_order = any_order;
  return o;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "xg2jax C++ engine (internal; use the xg2jax package)";
  // xg2jax.LimitError: a resource limit (Limits) was exceeded. An InputError, so code that catches bad input
  // catches it too; a server that wants to tell "too costly" from "malformed" catches it first.
  // xg2jax.InputError: bad input (a malformed grammar, regex, schema text, token id, ...). Both a ValueError and a
  // RuntimeError: xgrammar raises RuntimeError for the same inputs, so code written for it keeps working.
  static py::handle input_error = [&] {
    py::tuple bases = py::make_tuple(py::handle(PyExc_ValueError), py::handle(PyExc_RuntimeError));
    PyObject* type = PyErr_NewException("xg2jax._core.InputError", bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    m.attr("InputError") = py::handle(type);
    return py::handle(type);
  }();
  static py::handle limit_error = py::exception<LimitError>(m, "LimitError", input_error).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const LimitError& e) {
      PyErr_SetString(limit_error.ptr(), e.what());
    } catch (const InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  py::class_<TokenizerInfo, std::shared_ptr<TokenizerInfo>>(m, "TokenizerInfo")
      .def(py::init([](const std::vector<py::bytes>& tokens, int32_t vocab_size, std::vector<int32_t> special,
                       std::vector<int32_t> stop) {
             std::vector<std::string> t;
             t.reserve(tokens.size());
             for (auto& b : tokens) t.emplace_back(b);
             py::gil_scoped_release release;
             return std::make_shared<TokenizerInfo>(std::move(t), vocab_size, special, stop);
           }),
           py::arg("tokens"), py::arg("vocab_size"), py::arg("special_ids"), py::arg("stop_ids"))
      .def_property_readonly("vocab_size", &TokenizerInfo::VocabSize)
      .def_property_readonly("num_tokens", &TokenizerInfo::NumTokens)
      .def_property_readonly("stop_token_ids", &TokenizerInfo::StopIds)
      .def_property_readonly("special_token_ids", &TokenizerInfo::SpecialIds)
      .def("token_bytes", [](const TokenizerInfo& t, int32_t id) {
        XG_USER_CHECK(id >= 0 && id < t.NumTokens()) << "token id " << id << " out of range";
        return py::bytes(t.Token(id));
      })
      .def("memory_bytes", &TokenizerInfo::MemoryBytes)
      .def_property_readonly("num_token_slices", [](const TokenizerInfo& t) { return t.Slices().NumSlices(); });

  py::class_<Grammar>(m, "Grammar")
      .def_static(
          "from_ebnf",
          [](const std::string& text, const std::string& root) {
            py::gil_scoped_release release;
            return ParseEbnf(text, root);
          },
          py::arg("text"), py::arg("root_rule_name") = "root")
      .def_static(
          "from_regex",
          [](const std::string& pattern, bool search) {
            py::gil_scoped_release release;
            return RegexToGrammar(pattern, search ? RegexMode::kSearch : RegexMode::kFullMatch);
          },
          py::arg("pattern"), py::arg("search") = false)
      .def_static("builtin_json_ebnf", [] { return BuiltinJsonGrammarEbnf(); })
      .def("to_string", [](const Grammar& g) { return PrintGrammar(g); })
      .def("normalized", [](const Grammar& g) {
        Grammar copy = g;
        NormalizeGrammar(&copy);
        return copy;
      })
      .def_static("combine",
                  [](const std::vector<const Grammar*>& grammars, bool concat) {
                    return CombineGrammars(grammars, concat ? Combination::kConcat : Combination::kUnion);
                  },
                  py::arg("grammars"), py::arg("concat"))
      .def("with_rule_prefix", &WithRulePrefix, py::arg("prefix"), py::arg("keep") = std::vector<std::string>{})
      .def("unproductive_rules",
           [](const Grammar& g) {
             const std::vector<uint8_t> productive = ProductiveRules(g);
             std::vector<std::string> names;
             for (size_t r = 0; r < productive.size(); ++r) {
               if (!productive[r]) names.push_back(g.rules[r].name);
             }
             return names;
           },
           "names of the rules that cannot match any finite string (grammar/productivity.h)")
      .def_property_readonly("root_rule_name", [](const Grammar& g) { return g.RootName(); })
      .def_property_readonly("num_rules", [](const Grammar& g) { return g.rules.size(); })
      .def_property_readonly("rule_names", [](const Grammar& g) {
        std::vector<std::string> names;
        for (const Rule& r : g.rules) names.push_back(r.name);
        return names;
      });

  py::class_<CompiledGrammar, std::shared_ptr<CompiledGrammar>>(m, "CompiledGrammar")
      .def_property_readonly("grammar", [](const CompiledGrammar& c) { return c.grammar(); })
      .def_property_readonly("tokenizer_info", [](const CompiledGrammar& c) {
        return std::const_pointer_cast<TokenizerInfo>(c.tokenizer_ptr());
      })
      .def_property_readonly("num_states", [](const CompiledGrammar& c) { return c.fsm().NumStates(); })
      .def_property_readonly("num_scannable_states", &CompiledGrammar::NumScannableStates)
      .def_property_readonly("num_built_masks", &CompiledGrammar::NumBuiltEntries)
      .def_property_readonly("num_context_masks", &CompiledGrammar::NumContextEntries)
      .def("build_all_masks", &CompiledGrammar::BuildAllMasks, py::arg("num_threads"),
           py::call_guard<py::gil_scoped_release>())
      .def("memory_size_bytes", &CompiledGrammar::MemoryBytes)
      .def_property_readonly("dispatch_tags",
                             [](const CompiledGrammar& c) {
                               py::list out;
                               for (const DispatchWatch::Tag& t : c.dispatch_watch().Tags()) {
                                 const int32_t id = TokenSentinelId(t.trigger);
                                 py::dict d;
                                 d["trigger"] = py::bytes(id >= 0 ? c.tokenizer().Token(id) : t.trigger);
                                 d["token_id"] = id;
                                 d["rule"] = c.fsm().RuleName(t.rule);
                                 out.append(d);
                               }
                               return out;
                             })
      .def("state_info",
           [](const CompiledGrammar& c, int32_t s) {
             const GrammarFsm& f = c.fsm();
             XG_USER_CHECK(s >= 0 && s < f.NumStates()) << "state " << s << " out of range";
             py::dict d;
             d["rule"] = f.RuleName(f.RuleOf(s));
             d["final"] = f.IsFinal(s);
             py::list edges;
             for (const RuleEdge* e = f.RuleEdgesBegin(s); e != f.RuleEdgesEnd(s); ++e)
               edges.append(py::make_tuple(f.RuleName(e->rule), e->target));
             d["rule_edges"] = edges;
             std::string bytes;
             for (int b = 0; b < 256; ++b)
               if (f.Next(s, static_cast<uint8_t>(b)) >= 0) bytes.push_back(static_cast<char>(b));
             d["bytes"] = py::bytes(bytes);
             return d;
           })
      .def("mask_entry_stats",
           [](const CompiledGrammar& c) {
             // One dict per built entry: where it is and how the vocabulary splits there.
             py::list out;
             static const char* kStorage[] = {"accepted_list", "rejected_list", "bitset"};
             for (int32_t s = 0; s < c.fsm().NumStates(); ++s) {
               const TokenMaskEntry* e = c.BuiltEntry(s);
               if (!e) continue;
               py::dict d;
               d["state"] = s;
               d["rule"] = c.fsm().RuleName(c.fsm().RuleOf(s));
               d["storage"] = kStorage[static_cast<int>(e->storage)];
               d["accepted"] = e->num_accepted;
               d["uncertain"] = e->uncertain.size();
               d["memory_bytes"] = e->MemoryBytes();
               d["build_us"] = e->build_us;
               out.append(d);
             }
             return out;
           });

  m.def("get_max_recursion_depth", &ProcessNestingDepth);
  m.def("set_max_recursion_depth", &SetProcessNestingDepth, py::arg("max_recursion_depth"));
  const Limits defaults;
  py::class_<Limits>(m, "Limits")
      .def(py::init([](int32_t nesting, int64_t items, int64_t work, int32_t chain, int64_t states,
                       int64_t members, int64_t fill_work) {
             return Limits{nesting, items, work, chain, states, members, fill_work};
           }),
           py::kw_only(), py::arg("max_nesting_depth") = defaults.max_nesting_depth,
           py::arg("max_items_per_set") = defaults.max_items_per_set,
           py::arg("max_work_per_byte") = defaults.max_work_per_byte,
           py::arg("max_resume_chain") = defaults.max_resume_chain,
           py::arg("max_automaton_states") = defaults.max_automaton_states,
           py::arg("max_subset_members") = defaults.max_subset_members,
           py::arg("max_fill_work") = defaults.max_fill_work)
      .def_property_readonly("max_nesting_depth", [](const Limits& l) { return NestingDepth(l); })
      .def_readonly("max_items_per_set", &Limits::max_items_per_set)
      .def_readonly("max_work_per_byte", &Limits::max_work_per_byte)
      .def_readonly("max_resume_chain", &Limits::max_resume_chain)
      .def_readonly("max_automaton_states", &Limits::max_automaton_states)
      .def_readonly("max_subset_members", &Limits::max_subset_members)
      .def_readonly("max_fill_work", &Limits::max_fill_work)
      .def("__repr__", [](const Limits& l) {
        return "Limits(max_nesting_depth=" + std::to_string(NestingDepth(l)) +
               ", max_items_per_set=" + std::to_string(l.max_items_per_set) +
               ", max_work_per_byte=" + std::to_string(l.max_work_per_byte) +
               ", max_resume_chain=" + std::to_string(l.max_resume_chain) +
               ", max_automaton_states=" + std::to_string(l.max_automaton_states) +
               ", max_subset_members=" + std::to_string(l.max_subset_members) +
               ", max_fill_work=" + std::to_string(l.max_fill_work) + ")";
      });

  py::class_<GrammarCompiler>(m, "GrammarCompiler")
      .def(py::init([](std::shared_ptr<TokenizerInfo> tok, int max_threads, bool cache_enabled, int64_t limit,
                       const Limits& limits) { return new GrammarCompiler(tok, max_threads, cache_enabled, limit, limits); }),
           py::arg("tokenizer_info"), py::arg("max_threads"), py::arg("cache_enabled"), py::arg("cache_limit_bytes"),
           py::arg("limits"))
      .def_property_readonly("limits", &GrammarCompiler::limits)
      .def(
          "compile_ebnf",
          [](GrammarCompiler& c, const std::string& ebnf, const std::string& root, bool eager) {
            return std::const_pointer_cast<CompiledGrammar>(c.CompileEbnf(ebnf, root, eager));
          },
          py::arg("ebnf"), py::arg("root_rule_name"), py::arg("precompute_masks"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "compile_grammar",
          [](GrammarCompiler& c, const Grammar& g, bool eager) {
            return std::const_pointer_cast<CompiledGrammar>(c.CompileGrammar(g, eager));
          },
          py::arg("grammar"), py::arg("precompute_masks"), py::call_guard<py::gil_scoped_release>())
      .def(
          "compile_regex",
          [](GrammarCompiler& c, const std::string& pattern, bool eager) {
            return std::const_pointer_cast<CompiledGrammar>(c.CompileRegex(pattern, eager));
          },
          py::arg("pattern"), py::arg("precompute_masks"), py::call_guard<py::gil_scoped_release>())
      .def(
          "lookup_source",
          [](GrammarCompiler& c, const std::string& kind, const std::string& source, const std::string& options,
             bool eager) { return std::const_pointer_cast<CompiledGrammar>(c.LookupSource(kind, source, options, eager)); },
          py::arg("kind"), py::arg("source"), py::arg("options"), py::arg("precompute_masks"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "compile_source_ebnf",
          [](GrammarCompiler& c, const std::string& kind, const std::string& source, const std::string& options,
             const std::string& ebnf, bool eager) {
            return std::const_pointer_cast<CompiledGrammar>(c.CompileSourceEbnf(kind, source, options, ebnf, eager));
          },
          py::arg("kind"), py::arg("source"), py::arg("options"), py::arg("ebnf"), py::arg("precompute_masks"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "compile_json_schema_native",
          [](GrammarCompiler& c, const std::string& source, const std::string& options, bool any_whitespace,
             std::optional<std::pair<std::string, std::string>> separators, std::optional<int64_t> max_whitespace_cnt,
             bool plain_integers, bool enforce_formats, bool any_order, bool eager) -> std::shared_ptr<CompiledGrammar> {
            std::string not_handled;
            return std::const_pointer_cast<CompiledGrammar>(c.CompileJsonSchemaNative(
                source, options,
                SchemaOptions(any_whitespace, std::move(separators), max_whitespace_cnt, plain_integers,
                              enforce_formats, any_order),
                eager, &not_handled));
          },
          py::arg("source"), py::arg("options"), py::arg("any_whitespace"), py::arg("separators"),
          py::arg("max_whitespace_cnt"), py::arg("plain_integers"), py::arg("enforce_formats"), py::arg("any_order"),
          py::arg("precompute_masks"), py::call_guard<py::gil_scoped_release>(),
          "Lookup, native JSON Schema conversion and compile in one call without the GIL; None when the native "
          "front end does not convert the schema.")
      .def(
          "compile_builtin_json_grammar",
          [](GrammarCompiler& c, bool eager) {
            return std::const_pointer_cast<CompiledGrammar>(c.CompileBuiltinJsonGrammar(eager));
          },
          py::arg("precompute_masks"), py::call_guard<py::gil_scoped_release>())
      .def("clear_cache", &GrammarCompiler::ClearCache, py::call_guard<py::gil_scoped_release>())
      .def("get_cache_size_bytes", &GrammarCompiler::GetCacheSizeBytes)
      .def("cache_info", [](const GrammarCompiler& c) {
        GrammarCompiler::CacheInfo info;
        {
          py::gil_scoped_release release;
          info = c.GetCacheInfo();
        }
        py::dict d;
        d["grammar_entry_sizes"] = info.grammar_entry_sizes;
        d["rule_entry_sizes"] = info.rule_entry_sizes;
        d["grammar_bytes"] = info.grammar_bytes;
        d["rule_bytes"] = info.rule_bytes;
        d["structure_bytes"] = info.structure_bytes;
        d["num_structures"] = info.num_structures;
        d["num_automata"] = info.num_automata;
        d["structure_flushes"] = info.structure_flushes;
        d["automata_flushes"] = info.automata_flushes;
        d["grammar_hits"] = info.grammar_hits;
        d["grammar_misses"] = info.grammar_misses;
        d["rule_hits"] = info.rule_hits;
        d["rule_misses"] = info.rule_misses;
        d["generation"] = info.generation;
        return d;
      });

  py::class_<GrammarMatcher>(m, "GrammarMatcher")
      .def(py::init([](std::shared_ptr<CompiledGrammar> g, std::optional<std::vector<int32_t>> stops,
                       int32_t max_rollback) { return new GrammarMatcher(g, stops, max_rollback); }),
           py::arg("compiled_grammar"), py::arg("override_stop_tokens"), py::arg("max_rollback_tokens"))
      .def("accept_token", &GrammarMatcher::AcceptToken, py::arg("token_id"), py::call_guard<py::gil_scoped_release>())
      .def(
          "accept_string",
          [](GrammarMatcher& m, const py::bytes& b) {
            std::string s = b;
            py::gil_scoped_release release;
            return m.AcceptString(s);
          },
          py::arg("data"))
      .def("fill", FillInto<&GrammarMatcher::FillNextTokenBitmask>("fill_next_token_bitmask"), py::arg("bitmask"),
           py::arg("index"))
      .def("fill_brute_force", FillInto<&GrammarMatcher::FillNextTokenBitmaskBruteForce>("brute-force fill"),
           py::arg("bitmask"), py::arg("index"))
      .def("find_jump_forward_bytes",
           [](GrammarMatcher& m) {
             std::string s;
             {
               py::gil_scoped_release release;
               s = m.FindJumpForwardString();
             }
             return py::bytes(s);
           })
      .def("take_tag_events", [](GrammarMatcher& m) { return TagEventsToPython(m.TakeTagEvents()); })
      .def("tag_status_bits", &GrammarMatcher::TagStatusBits, py::arg("with_last_step_switches"))
      .def("rollback", &GrammarMatcher::Rollback, py::arg("num_tokens"))
      .def("reset", &GrammarMatcher::Reset)
      .def("fork", &GrammarMatcher::Fork)
      .def("is_terminated", &GrammarMatcher::IsTerminated)
      .def("is_completed", &GrammarMatcher::IsCompleted)
      // (max, min, untempered): the rule temperatures of the next token's paths, max/min None when no path has one.
      .def("next_token_temperatures",
           [](const GrammarMatcher& m) {
             const PathTemperatures t = m.NextTokenTemperatures();
             py::object max = t.max >= 0 ? py::object(py::float_(t.max)) : py::object(py::none());
             py::object min = t.max >= 0 ? py::object(py::float_(t.min)) : py::object(py::none());
             return py::make_tuple(max, min, t.untempered);
           })
      // [(label, captured bytes)]: matcher/capture_recorder.h.
      .def("captures",
           [](const GrammarMatcher& m, bool deduplicate) {
             py::list out;
             for (auto& [label, text] : m.Captures(deduplicate)) out.append(py::make_tuple(label, py::bytes(text)));
             return out;
           },
           py::arg("deduplicate"))
      .def_property_readonly("num_accepted_tokens", &GrammarMatcher::NumAcceptedTokens)
      .def("memory_size_bytes", &GrammarMatcher::MemoryBytes)
      .def_property_readonly("stop_token_ids", &GrammarMatcher::StopTokenIds)
      .def_property_readonly("max_rollback_tokens", &GrammarMatcher::MaxRollbackTokens)
      .def_property_readonly("compiled_grammar", [](const GrammarMatcher& m) {
        return std::const_pointer_cast<CompiledGrammar>(m.grammar_ptr());
      });

  m.def(
      "batch_fill",
      [](std::vector<GrammarMatcher*> matchers, py::array bitmask, std::vector<int32_t> indices, int num_threads) {
        XG_USER_CHECK(bitmask.dtype().is(py::dtype::of<int32_t>()))
            << "batch_fill_next_token_bitmask: the bitmask must have dtype int32";
        XG_USER_CHECK(bitmask.ndim() == 2) << "batch_fill_next_token_bitmask: the bitmask must be 2-D";
        XG_USER_CHECK(bitmask.writeable() && (bitmask.flags() & py::array::c_style))
            << "batch_fill_next_token_bitmask: the bitmask must be writable and C-contiguous";
        int32_t rows = static_cast<int32_t>(bitmask.shape(0));
        for (int32_t i : indices)
          XG_USER_CHECK(i >= 0 && i < rows)
              << "batch_fill_next_token_bitmask: index " << i << " out of range [0, " << rows << ")";
        auto* ptr = static_cast<uint32_t*>(bitmask.mutable_data());
        int32_t wpr = static_cast<int32_t>(bitmask.shape(1));
        py::gil_scoped_release release;
        BatchFillNextTokenBitmask(matchers, ptr, wpr, indices, num_threads);
      },
      py::arg("matchers"), py::arg("bitmask"), py::arg("indices"), py::arg("num_threads"));

  m.def(
      "json_schema_to_ebnf_native",
      [](const std::string& schema_text, bool any_whitespace,
         std::optional<std::pair<std::string, std::string>> separators, std::optional<int64_t> max_whitespace_cnt,
         bool plain_integers, bool enforce_formats, bool any_order,
         const std::string& rule_prefix, std::vector<std::string> string_excludes,
         const std::string& string_style) -> std::pair<std::optional<std::string>, std::string> {
        json_schema::JsonSchemaOptions options = SchemaOptions(any_whitespace, std::move(separators),
                                                               max_whitespace_cnt, plain_integers, enforce_formats,
                                                               any_order);
        options.rule_prefix = rule_prefix;
        options.string_excludes = std::move(string_excludes);
        if (string_style == "gemma") {
          options.string_style = json_schema::StringStyle::kGemma;
        } else if (string_style != "json") {
          throw py::value_error("json_schema_to_ebnf_native: string_style must be \"json\" or \"gemma\", got \"" +
                                string_style + "\"");
        }
        json_schema::NativeConversion out;
        {
          py::gil_scoped_release release;
          out = json_schema::JsonSchemaToEbnf(schema_text, options);
        }
        return {std::move(out.ebnf), std::move(out.not_handled)};
      },
      py::arg("schema_text"), py::arg("any_whitespace"), py::arg("separators"), py::arg("max_whitespace_cnt"),
      py::arg("plain_integers"), py::arg("enforce_formats") = true, py::arg("any_order") = false,
      py::arg("rule_prefix") = "", py::arg("string_excludes") = std::vector<std::string>{},
      py::arg("string_style") = "json",
      "The native JSON Schema front end: (EBNF text, \"\") for a schema it handles, else (None, what it does not "
      "handle); rule_prefix names its rules for embedding (JsonSchemaOptions::rule_prefix). See "
      "cpp/frontends/json_schema/json_schema_to_ebnf.h.");
  m.def("json_schema_formats", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const auto& f : json_schema::StringFormats()) out.emplace_back(f.name, f.rule, f.regex);
    return out;
  }, "(format, rule name, ECMAScript regex of the whole string) per enforced JSON Schema format");
  m.def("json_schema_recognised_keywords", [] {
    std::vector<std::string> out;
    for (auto k : json_schema::RecognisedKeywords()) out.emplace_back(k);
    return out;
  });

  BindStep(m);
  BindAutomata(m);
}
