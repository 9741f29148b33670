// polygraphy.comparator (Comparator, CompareFunc, PostprocessFunc, DataLoader, RunResults) and the
// JSON files of polygraphy.json, over the library's.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "polygraphy/comparator/comparator.h"

namespace polygraphy::python {

namespace {

using namespace pybind11::literals;

/// A bound CompareFunc or PostprocessFunc (CompareFunc.simple(...) returns one).
struct CompareFuncObject {
    CompareFunc compare;  ///< the library's function
};
/// A bound PostprocessFunc.
struct PostprocessFuncObject {
    PostprocessFunc postprocess;  ///< the library's function
};

/// The library's DataLoader with the `input_metadata` the Comparator (or the user) sets.
struct DataLoaderObject {
    DataLoader loader;              ///< the generator
    TensorMetadata input_metadata;  ///< used by iteration from Python
};

/// A per-output setting: a number for every output, or a dict of output name -> number ("" = default).
template <typename T>
PerOutput<T> per_output(const py::object& value, const char* what) {
    PerOutput<T> settings;
    if (value.is_none()) return settings;
    try {
        if (py::isinstance<py::dict>(value)) {
            for (auto [name, setting] : value.cast<py::dict>())
                settings.set(name.template cast<std::string>(), setting.template cast<T>());
        } else {
            settings.set("", value.cast<T>());
        }
    } catch (const py::cast_error&) {
        throw UsageError(std::string(what) + ": expected a number or a dict of output name -> number, got " +
                         type_name(value));
    }
    return settings;
}

std::optional<ValRange> val_range(const py::object& value, const char* what) {
    if (value.is_none()) return std::nullopt;
    try {
        auto bounds = value.cast<std::pair<double, double>>();
        return ValRange{bounds.first, bounds.second};
    } catch (const py::cast_error&) {
        throw UsageError(std::string(what) + ": expected a (min, max) tuple, got " + type_name(value));
    }
}

DataLoaderFn data_loader_from_python(const py::object& data_loader) {
    if (data_loader.is_none()) return DataLoader().as_function();
    if (py::isinstance<DataLoaderObject>(data_loader))
        return data_loader.cast<const DataLoaderObject&>().loader.as_function();
    return data_loader_from_iterable(data_loader, "data_loader");
}

/// A compare function: None (CompareFunc.simple()), a bound CompareFunc, or a Python callable
/// (compare_func_from_callable()).
CompareFunc compare_func_from_python(const py::object& compare_func) {
    if (compare_func.is_none()) return compare_func::simple();
    if (py::isinstance<CompareFuncObject>(compare_func)) return compare_func.cast<const CompareFuncObject&>().compare;
    return compare_func_from_callable(compare_func, "compare_func");
}

py::object iteration_output(const IterationResult& iteration, const std::string& name) {
    const Tensor* tensor = iteration.outputs.find(name);
    if (!tensor) throw py::key_error(name);
    return tensor_to_python(*tensor);
}

void bind_results(py::module_& module) {
    py::class_<IterationResult>(module, "IterationResult", "Outputs of one inference: a dict of numpy arrays.")
        .def(py::init([](const py::handle& outputs, std::optional<double> runtime, std::string runner_name) {
                 return IterationResult{tensor_map_from_python(outputs, "Output"), runtime, std::move(runner_name)};
             }),
             "outputs"_a = py::dict(), "runtime"_a = py::none(), "runner_name"_a = "")
        .def_readwrite("runtime", &IterationResult::runtime, "Seconds, or None.")
        .def_readwrite("runner_name", &IterationResult::runner_name)
        .def("__getitem__", &iteration_output)
        .def("__len__", [](const IterationResult& self) { return self.outputs.size(); })
        .def("__contains__",
             [](const IterationResult& self, const std::string& name) { return self.outputs.contains(name); })
        .def("__iter__", [](const IterationResult& self) { return py::iter(py::cast(self.outputs.keys())); })
        .def("keys", [](const IterationResult& self) { return self.outputs.keys(); })
        .def("values", [](const IterationResult& self) { return tensor_map_to_python(self.outputs).attr("values")(); })
        .def("items", [](const IterationResult& self) { return tensor_map_to_python(self.outputs).attr("items")(); });

    py::class_<RunResults>(module, "RunResults", R"doc(
Results of several runners: an ordered list of (runner_name, [IterationResult, ...]), saved and loaded
in Polygraphy's JSON format.)doc")
        .def(py::init<>())
        .def("add", &RunResults::add, "iterations"_a, "runner_name"_a, "Appends the iterations of one runner.")
        .def("extend", &RunResults::extend, "other"_a, "Appends every entry of `other`.")
        .def("save", &RunResults::save, "dest"_a, py::call_guard<py::gil_scoped_release>(),
             "Saves to `dest` atomically, in Polygraphy's JSON format.")
        .def_static("load", &RunResults::load, "src"_a, py::call_guard<py::gil_scoped_release>(),
                    "Loads a file written by save() or by Polygraphy.")
        .def("__len__", &RunResults::size)
        .def("keys",
             [](const RunResults& self) {
                 std::vector<std::string> names;
                 for (const auto& entry : self.lst) names.push_back(entry.first);
                 return names;
             })
        .def("items", [](const RunResults& self) { return self.lst; })
        .def("__iter__", [](const RunResults& self) { return py::iter(py::cast(self.lst)); })
        .def("__getitem__",
             [](const RunResults& self, const std::string& runner_name) {
                 const auto* iterations = self.find(runner_name);
                 if (!iterations) throw py::key_error(runner_name);
                 return *iterations;
             })
        .def("__contains__",
             [](const RunResults& self, const std::string& name) { return self.find(name) != nullptr; });

    module.def(
        "save_inputs",
        [](const py::list& feeds, const std::string& path) {
            InputList inputs;
            for (py::handle feed : feeds) inputs.push_back(tensor_map_from_python(feed, "Input"));
            py::gil_scoped_release release;
            save_inputs(inputs, path);
        },
        "inputs"_a, "path"_a, "Saves a list of feed dicts in Polygraphy's JSON format (atomically).");
    module.def(
        "load_run_results_or_inputs",
        [](const std::string& path) -> py::object {
            std::variant<RunResults, InputList> loaded;
            {
                py::gil_scoped_release release;
                loaded = load_run_results_or_inputs(path);
            }
            if (auto* results = std::get_if<RunResults>(&loaded)) return py::cast(std::move(*results));
            py::list feeds;
            for (const auto& feed : std::get<InputList>(loaded)) feeds.append(tensor_map_to_python(feed));
            return feeds;
        },
        "path"_a, "Loads a RunResults file, or a list of feed dicts from an inputs file.");
}

void bind_compare_funcs(py::module_& module) {
    py::class_<CompareFuncObject>(module, "CompareFunc", "Functions that compare two iterations' outputs.")
        .def_static(
            "simple",
            [](bool check_shapes, const py::object& rtol, const py::object& atol, bool fail_fast,
               const py::object& check_error_stat, bool infinities_compare_equal, const py::object& error_quantile) {
                SimpleCompareOptions options;
                options.check_shapes = check_shapes;
                options.rtol = per_output<double>(rtol, "rtol");
                options.atol = per_output<double>(atol, "atol");
                options.fail_fast = fail_fast;
                for (const auto& [name, stat] : per_output<std::string>(check_error_stat, "check_error_stat")) {
                    auto parsed = error_stat_from_name(stat);
                    if (!parsed) throw UsageError("check_error_stat: unknown statistic '" + stat + "'");
                    options.check_error_stat.set(name, *parsed);
                }
                options.infinities_compare_equal = infinities_compare_equal;
                options.error_quantile = per_output<double>(error_quantile, "error_quantile");
                return CompareFuncObject{compare_func::simple(options)};
            },
            "check_shapes"_a = true, "rtol"_a = py::none(), "atol"_a = py::none(), "fail_fast"_a = false,
            "check_error_stat"_a = py::none(), "infinities_compare_equal"_a = false, "error_quantile"_a = py::none(),
            "Compares with absolute and relative tolerances (numbers, or dicts of output name -> number with \"\" "
            "as the default).")
        .def_static(
            "indices",
            [](const py::object& index_tolerance, bool fail_fast) {
                return CompareFuncObject{
                    compare_func::indices(per_output<int64_t>(index_tolerance, "index_tolerance"), fail_fast)};
            },
            "index_tolerance"_a = py::none(), "fail_fast"_a = false, "Compares indices (e.g. after top_k).");

    py::class_<PostprocessFuncObject>(module, "PostprocessFunc",
                                      "Functions that post-process outputs before comparing.")
        .def_static(
            "top_k", [](int64_t k, int64_t axis) { return PostprocessFuncObject{postprocess_func::top_k(k, axis)}; },
            "k"_a = 10, "axis"_a = -1, "Replaces each output by the indices of its k largest values along axis.");

    py::class_<AccuracyResult>(module, "AccuracyResult", "Outcome of compare_accuracy; bool() says whether all passed.")
        .def("__bool__", [](const AccuracyResult& self) { return static_cast<bool>(self); })
        .def("percentage", &AccuracyResult::percentage, "index"_a = 0,
             "Fraction of passing iterations of runner pair `index`.")
        .def("__len__", [](const AccuracyResult& self) { return self.pairs.size(); });
}

void bind_data_loader(py::module_& module) {
    py::class_<DataLoaderObject>(module, "DataLoader", R"doc(
Generates seeded random inputs exactly as Polygraphy's DataLoader does with numpy. Iterating it from
Python yields `iterations` feed dicts for `input_metadata` (which the Comparator sets).)doc")
        .def(
            py::init([](int64_t seed, int64_t iterations, const py::object& input_metadata, const py::object& int_range,
                        const py::object& float_range, const py::object& val_range_setting) {
                DataLoader::Options options;
                options.seed = seed;
                options.iterations = iterations;
                if (!input_metadata.is_none()) options.input_metadata = input_metadata.cast<TensorMetadata>();
                options.int_range = val_range(int_range, "int_range");
                options.float_range = val_range(float_range, "float_range");
                if (py::isinstance<py::dict>(val_range_setting)) {
                    for (auto [name, range] : val_range_setting.cast<py::dict>())
                        options.val_range.set(name.cast<std::string>(),
                                              *val_range(py::reinterpret_borrow<py::object>(range), "val_range"));
                } else if (auto range = val_range(val_range_setting, "val_range")) {
                    options.val_range.set("", *range);
                }
                return DataLoaderObject{DataLoader(std::move(options)), {}};
            }),
            "seed"_a = 1, "iterations"_a = 1, "input_metadata"_a = py::none(), "int_range"_a = py::none(),
            "float_range"_a = py::none(), "val_range"_a = py::none())
        .def_readwrite("input_metadata", &DataLoaderObject::input_metadata)
        .def("__len__", [](const DataLoaderObject& self) { return self.loader.iterations(); })
        .def("__getitem__", [](const DataLoaderObject& self, int64_t index) {
            if (index < 0 || index >= self.loader.iterations()) throw py::index_error("DataLoader index out of range");
            return tensor_map_to_python(self.loader.generate(index, self.input_metadata));
        });
}

void bind_comparator_class(py::module_& module) {
    py::class_<Comparator>(module, "Comparator", "Runs runners on the same inputs and compares their outputs.")
        .def_static(
            "run",
            [](const std::vector<BaseRunner*>& runners, const py::object& data_loader, int warm_up,
               std::optional<std::string> save_inputs_path) {
                Comparator::RunOptions options;
                options.warm_up = warm_up;
                options.save_inputs_path = std::move(save_inputs_path);
                DataLoaderFn loader = data_loader_from_python(data_loader);
                py::gil_scoped_release release;
                return Comparator::run(runners, loader, options);
            },
            "runners"_a, "data_loader"_a = py::none(), "warm_up"_a = 0, "save_inputs_path"_a = py::none(),
            "Activates each runner in turn and runs it on every feed of `data_loader` (None: the default "
            "DataLoader; else a DataLoader or any iterable or generator of feed dicts, which may read the "
            "`input_metadata` attribute set here, on objects that take attributes). Outputs are copied into the "
            "RunResults.")
        .def_static(
            "compare_accuracy",
            [](const RunResults& run_results, bool fail_fast, const py::object& compare_func) {
                CompareFunc compare = compare_func_from_python(compare_func);
                py::gil_scoped_release release;
                return Comparator::compare_accuracy(run_results, compare, fail_fast);
            },
            "run_results"_a, "fail_fast"_a = false, "compare_func"_a = py::none(),
            "Compares consecutive results (0 vs 1, 1 vs 2, ...) with `compare_func`: CompareFunc.simple() by default, "
            "or "
            "any callable taking two IterationResults and returning a dict of output name -> bool.")
        .def_static(
            "postprocess",
            [](RunResults& run_results, const PostprocessFuncObject& postprocess) -> RunResults& {
                return Comparator::postprocess(run_results, postprocess.postprocess);
            },
            "run_results"_a, "postprocess_func"_a, py::return_value_policy::reference_internal,
            "Applies `postprocess_func` to every output in place; returns run_results.")
        .def_static("validate", &Comparator::validate, "run_results"_a, "check_inf"_a = true, "check_nan"_a = true,
                    "fail_fast"_a = false, py::call_guard<py::gil_scoped_release>(),
                    "Checks every output for NaN and Inf; True when clean.");
}

}  // namespace

void bind_comparator(py::module_& module) {
    bind_results(module);
    bind_compare_funcs(module);
    bind_data_loader(module);
    bind_comparator_class(module);
}

}  // namespace polygraphy::python
