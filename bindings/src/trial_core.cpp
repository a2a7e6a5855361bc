// _vigil.TrialCore: vigil::Trial for the Python Trial/Tensor classes (vigil/trials.py). Every
// call that may read or wait releases the GIL; blocking waits run in slices so Ctrl-C works.
#include <chrono>

#include "bindings.h"
#include "trial/trial.h"
#include "trial_core.h"

namespace vigil::python {

namespace {

std::optional<std::string_view> worker_arg(const std::optional<std::string>& w) {
  if (w) return std::string_view(*w);
  return std::nullopt;
}

py::list collections_as_dicts(const std::vector<format::CollectionConfig>& colls) {
  py::list out;
  for (const auto& c : colls) {
    py::dict d;
    d["name"] = c.name;
    d["include_regex"] = c.include_regex;
    d["tensor_names"] = c.tensor_names;
    d["save_histogram"] = c.save_histogram;
    if (c.reduction_config) {
      py::dict rc;
      py::list reds;
      for (const auto& r : c.reduction_config->reductions) reds.append(py::make_tuple(r.op, r.abs));
      rc["reductions"] = reds;
      rc["save_raw_tensor"] = c.reduction_config->save_raw_tensor;
      rc["save_shape"] = c.reduction_config->save_shape;
      d["reduction_config"] = rc;
    } else {
      d["reduction_config"] = py::none();
    }
    if (c.save_config) {
      py::dict sc;
      for (size_t i = 0; i < 4; ++i) {
        const auto& m = (*c.save_config)[i];
        if (!m) continue;
        py::dict md;
        md["save_interval"] = m->save_interval;
        md["save_steps"] = m->save_steps;
        md["start_step"] = m->start_step;
        md["end_step"] = m->end_step ? py::object(py::int_(*m->end_step)) : py::none();
        sc[py::int_(i + 1)] = md;  // TRAIN, EVAL, PREDICT, GLOBAL = 1..4
      }
      d["save_config"] = sc;
    } else {
      d["save_config"] = py::none();
    }
    out.append(d);
  }
  return out;
}

}  // namespace

std::shared_ptr<Trial> open_trial_interruptible(const std::string& path, std::optional<int64_t> begin,
                                                std::optional<int64_t> end) {
  TrialOptions options = trial_options_from_env();
  options.range_begin = begin;
  options.range_end = end;
  options.collections_timeout = kWaitSlice;
  while (true) {
    Result<std::shared_ptr<Trial>> t = fail(Error::internal("not opened"));
    {
      py::gil_scoped_release nogil;
      t = Trial::open(path, options);
    }
    if (t || t.error().code != ErrorCode::Timeout) return unwrap(std::move(t));
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // smdebug waits for the files forever
  }
}

void wait_interruptible(Trial& trial, const std::vector<int64_t>& steps, Mode mode) {
  while (true) {
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      r = trial.wait_for_steps(steps, mode, {}, kWaitSlice);
    }
    if (r || r.error().code != ErrorCode::Timeout) return unwrap(std::move(r));
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

void register_trial_core(py::module_& m) {
  using TrialPtr = std::shared_ptr<Trial>;
  py::class_<Trial, TrialPtr> core(m, "TrialCore", "A trial read by Vigil's host (wrapped by vigil.trials.Trial).");

  m.def(
      "open_trial",
      [](const std::string& path, std::optional<int64_t> begin, std::optional<int64_t> end) {
        return open_trial_interruptible(path, begin, end);
      },
      py::arg("path"), py::arg("range_begin") = py::none(), py::arg("range_end") = py::none(),
      "Opens a trial directory (waits for its collection files like smdebug).");

  core.def_property_readonly("path", [](const Trial& t) { return t.path().string(); })
      .def_property_readonly("name", [](const Trial& t) { return t.name(); })
      .def(
          "tensor_names",
          [](Trial& t, std::optional<int64_t> step, int mode, std::optional<std::vector<std::string>> regex,
             std::optional<std::string> collection) {
            TensorNameQuery q;
            q.step = step;
            q.mode = mode_or_global(mode);
            if (regex) q.regex = *regex;
            q.collection = collection;
            Result<std::vector<std::string>> r;
            {
              py::gil_scoped_release nogil;
              r = t.tensor_names(q);
            }
            return unwrap(std::move(r));
          },
          py::arg("step"), py::arg("mode"), py::arg("regex"), py::arg("collection"))
      .def("has_tensor", [](Trial& t, const std::string& name) {
        py::gil_scoped_release nogil;
        return t.has_tensor(name);
      })
      .def("steps", [](Trial& t, int mode, bool incomplete) {
        Result<std::vector<int64_t>> r;
        {
          py::gil_scoped_release nogil;
          r = t.steps(mode_or_global(mode), incomplete);
        }
        return unwrap(std::move(r));
      })
      .def("modes", [](Trial& t) {
        std::vector<int> out;
        for (Mode md : t.modes()) out.push_back(static_cast<int>(md));
        return out;
      })
      .def("mode_modestep", [](Trial& t, int64_t g) -> std::optional<std::pair<int, int64_t>> {
        std::optional<std::pair<Mode, int64_t>> r;
        {
          py::gil_scoped_release nogil;
          r = t.mode_modestep(g);
        }
        if (!r) return std::nullopt;
        return std::make_pair(static_cast<int>(r->first), r->second);
      })
      .def("global_step", [](Trial& t, int mode, int64_t s) {
        py::gil_scoped_release nogil;
        return t.global_step(mode_or_global(mode), s);
      })
      .def("workers", [](Trial& t) {
        Result<std::vector<std::string>> r;
        {
          py::gil_scoped_release nogil;
          r = t.workers();
        }
        return unwrap(std::move(r));
      })
      .def("collections", [](Trial& t) { return collections_as_dicts(t.collections()); })
      .def("has_passed_step", [](Trial& t, int64_t step, int mode) {
        Result<StepState> r;
        {
          py::gil_scoped_release nogil;
          r = t.has_passed_step(step, mode_or_global(mode));
        }
        return static_cast<int>(unwrap(std::move(r)));
      })
      .def("wait_for_steps",
           [](Trial& t, const std::vector<int64_t>& steps, int mode) { wait_interruptible(t, steps, mode_or_global(mode)); })
      .def("refresh", [](Trial& t) {
        Result<void> r;
        {
          py::gil_scoped_release nogil;
          r = t.refresh();
        }
        unwrap(std::move(r));
      })
      .def("hold_refresh", &Trial::hold_refresh)
      .def("release_refresh", &Trial::release_refresh)
      .def("assume_training_ended", &Trial::assume_training_ended)
      .def("last_complete_step", [](Trial& t) {
        py::gil_scoped_release nogil;
        return t.last_complete_step();
      })
      .def("loaded_all_steps", [](Trial& t) {
        py::gil_scoped_release nogil;
        return t.loaded_all_steps();
      })
      .def("training_ended", [](Trial& t) {
        py::gil_scoped_release nogil;
        return t.training_ended();
      })
      .def("num_workers", &Trial::num_workers)
      // ---- per tensor ----
      .def("tensor_steps", [](Trial& t, const std::string& name, int mode, bool incomplete) {
        Result<std::vector<int64_t>> r;
        {
          py::gil_scoped_release nogil;
          r = t.tensor_steps(name, mode_or_global(mode), incomplete);
        }
        return unwrap(std::move(r));
      })
      .def(
          "buffer",
          [](Trial& t, const std::string& name, int64_t step, int mode, std::optional<std::string> worker) {
            Result<TensorValue> r;
            {
              py::gil_scoped_release nogil;
              r = t.value(name, step, mode_or_global(mode), worker_arg(worker));
            }
            return buffer_of(unwrap(std::move(r)));
          },
          py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def(
          "value",
          [](Trial& t, const std::string& name, int64_t step, int mode, std::optional<std::string> worker) {
            Result<TensorValue> r;
            {
              py::gil_scoped_release nogil;
              r = t.value(name, step, mode_or_global(mode), worker_arg(worker));
            }
            return numpy_array(buffer_of(unwrap(std::move(r))));
          },
          py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def(
          "reduction_value",
          [](Trial& t, const std::string& name, int64_t step, const std::string& op, bool abs, int mode,
             std::optional<std::string> worker) {
            Result<ReductionValue> r;
            {
              py::gil_scoped_release nogil;
              r = t.reduction_value(name, step, op, abs, mode_or_global(mode), worker_arg(worker));
            }
            auto v = unwrap(std::move(r));
            return numpy_scalar(v.dtype, v.value);
          },
          py::arg("name"), py::arg("step"), py::arg("reduction"), py::arg("abs"), py::arg("mode"), py::arg("worker"))
      .def(
          "reduction_value_info",
          [](Trial& t, const std::string& name, int64_t step, const std::string& op, bool abs, int mode,
             std::optional<std::string> worker) {
            Result<ReductionValue> r;
            {
              py::gil_scoped_release nogil;
              r = t.reduction_value(name, step, op, abs, mode_or_global(mode), worker_arg(worker));
            }
            auto v = unwrap(std::move(r));
            return py::make_tuple(numpy_scalar(v.dtype, v.value), v.saved);
          },
          py::arg("name"), py::arg("step"), py::arg("reduction"), py::arg("abs"), py::arg("mode"), py::arg("worker"),
          "(value, saved): the reduction and whether it was read from a saved record.")
      .def(
          "reduction_values",
          [](Trial& t, const std::string& name, int64_t step, int mode, std::optional<std::string> worker) {
            Result<std::vector<SavedReduction>> r;
            {
              py::gil_scoped_release nogil;
              r = t.reduction_values(name, step, mode_or_global(mode), worker_arg(worker));
            }
            py::list out;
            for (const auto& sr : unwrap(std::move(r)))
              out.append(py::make_tuple(std::string(reduction_name(sr.op)), sr.abs, numpy_array(buffer_of(sr.value))));
            return out;
          },
          py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def(
          "shape",
          [](Trial& t, const std::string& name, int64_t step, int mode, std::optional<std::string> worker) {
            Result<std::vector<int64_t>> r;
            {
              py::gil_scoped_release nogil;
              r = t.shape(name, step, mode_or_global(mode), worker_arg(worker));
            }
            return unwrap(std::move(r));
          },
          py::arg("name"), py::arg("step"), py::arg("mode"), py::arg("worker"))
      .def("tensor_workers", [](Trial& t, const std::string& name, int64_t step, int mode) {
        Result<std::vector<std::string>> r;
        {
          py::gil_scoped_release nogil;
          r = t.tensor_workers(name, step, mode_or_global(mode));
        }
        return unwrap(std::move(r));
      });
}

}  // namespace vigil::python
