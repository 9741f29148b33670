// polygraphy.backend.{base,onnx,onnxrt,ref}: loaders and runners over the library's.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::python {

namespace {

using namespace pybind11::literals;

/// Distinct C++ types for the bound loader classes (one Python class each, sharing LoaderObject<T>).
template <typename Tag, typename T>
struct NamedLoader : LoaderObject<T> {
    explicit NamedLoader(Loader<T> loader) : LoaderObject<T>{std::move(loader)} {}
};
struct OnnxFromPathTag;
struct ModifyOutputsTag;
struct SaveOnnxTag;
struct BytesFromOnnxTag;
struct BytesFromPathTag;
struct OnnxFromBytesTag;
struct OnnxrtSessionTag;
struct RefSessionTag;

using OnnxModelLoader = LoaderObject<OnnxModel>;
using BytesLoader = LoaderObject<std::string>;
using OnnxrtSessionLoader = LoaderObject<std::shared_ptr<onnxrt::Session>>;
using RefSessionLoader = LoaderObject<std::shared_ptr<ref::Session>>;

/// A model argument: a loader, a model, a callable returning one, or a path (loaded with OnnxFromPath).
OnnxLoader onnx_loader(const py::object& model) {
    if (py::isinstance<py::str>(model)) return OnnxFromPath(model.cast<std::string>());
    return loader_from_python<OnnxModel>(model, "model", "an ONNX model");
}

/// A bytes argument: bytes, a loader of bytes, or a callable returning bytes.
Loader<std::string> bytes_loader(const py::object& bytes) {
    if (py::isinstance<py::bytes>(bytes)) return loader_from_value(bytes.cast<std::string>());
    if (py::isinstance<BytesLoader>(bytes)) return bytes.cast<const BytesLoader&>().load;
    if (!PyCallable_Check(bytes.ptr()))
        throw UsageError("model bytes: expected bytes, a loader or a callable, got " + type_name(bytes));
    return loader_from_callable<std::string>(bytes, [](const py::object& result) {
        if (!py::isinstance<py::bytes>(result))
            throw PolygraphyException("model bytes: the loader returned " + type_name(result) + ", expected bytes");
        return result.cast<std::string>();
    });
}

/// Calls a loader of the library without the GIL (loading may take long and call back into Python).
template <typename T>
T call_loader(const LoaderObject<T>& loader) {
    py::gil_scoped_release release;
    return loader.load();
}

/// A Python subclass of BaseRunner: the *_impl methods are looked up on the Python object.
class PythonRunner : public BaseRunner {
public:
    using BaseRunner::BaseRunner;

protected:
    void activate_impl() override { PYBIND11_OVERRIDE(void, BaseRunner, activate_impl, ); }
    void deactivate_impl() override { PYBIND11_OVERRIDE(void, BaseRunner, deactivate_impl, ); }
    TensorMetadata get_input_metadata_impl() override {
        PYBIND11_OVERRIDE_PURE(TensorMetadata, BaseRunner, get_input_metadata_impl, );
    }
    TensorMap infer_impl(const TensorMap& feed) override {
        py::gil_scoped_acquire gil;
        py::function implementation = py::get_override(static_cast<const BaseRunner*>(this), "infer_impl");
        if (!implementation) throw UnsupportedError("runner '" + name() + "' does not implement infer_impl()");
        py::object outputs = implementation(tensor_map_to_python(feed));
        return tensor_map_from_python(outputs, "Output");
    }

    friend void bind_backend(py::module_&);
};

template <typename Tag, typename T>
py::class_<NamedLoader<Tag, T>, LoaderObject<T>> bind_loader(py::module_& module, const char* name, const char* doc) {
    return py::class_<NamedLoader<Tag, T>, LoaderObject<T>>(module, name, doc);
}

void bind_onnx(py::module_& module) {
    py::class_<onnx::ModelProto, std::shared_ptr<onnx::ModelProto>>(module, "ModelProto",
                                                                    "An ONNX model held by the library.")
        .def_property(
            "graph_name", [](const onnx::ModelProto& model) { return model.graph().name(); },
            [](onnx::ModelProto& model, const std::string& name) { model.mutable_graph()->set_name(name); },
            "The graph's name (settable, e.g. in a function extending a loader with func.extend).")
        .def_property_readonly(
            "output_names",
            [](const onnx::ModelProto& model) {
                std::vector<std::string> names;
                for (const auto& output : model.graph().output()) names.push_back(output.name());
                return names;
            },
            "Names of the graph outputs, in order.")
        .def(
            "SerializeToString", [](const onnx::ModelProto& model) { return py::bytes(bytes_from_onnx(model)); },
            "The serialized model, external weights read in (bytes_from_onnx).");

    py::class_<OnnxModelLoader>(module, "BaseLoadOnnx", "A loader of ONNX models; call it to load.")
        .def("__call__", &call_loader<OnnxModel>, "Loads the model.");
    py::class_<BytesLoader>(module, "BaseLoadBytes", "A loader of bytes; call it to load.")
        .def(
            "__call__", [](const BytesLoader& loader) { return py::bytes(call_loader(loader)); }, "Loads the bytes.");

    bind_loader<OnnxFromPathTag, OnnxModel>(module, "OnnxFromPath", "Loads an ONNX model file (lazily).")
        .def(py::init([](std::string path, std::optional<std::string> external_data_dir, bool ignore_external_data) {
                 return NamedLoader<OnnxFromPathTag, OnnxModel>(
                     OnnxFromPath(std::move(path), std::move(external_data_dir), ignore_external_data));
             }),
             "path"_a, "external_data_dir"_a = py::none(), "ignore_external_data"_a = false);
    bind_loader<OnnxFromBytesTag, OnnxModel>(module, "OnnxFromBytes", "Parses a serialized ONNX model (lazily).")
        .def(py::init([](const py::object& bytes) {
                 return NamedLoader<OnnxFromBytesTag, OnnxModel>(OnnxFromBytes(bytes_loader(bytes)));
             }),
             "serialized_onnx"_a);
    bind_loader<ModifyOutputsTag, OnnxModel>(module, "ModifyOutputs",
                                             "Re-marks the outputs of a model (lazily); outputs=['mark', 'all'] "
                                             "marks every tensor.")
        .def(py::init([](const py::object& model, std::optional<std::vector<std::string>> outputs,
                         std::optional<std::vector<std::string>> exclude_outputs) {
                 return NamedLoader<ModifyOutputsTag, OnnxModel>(
                     ModifyOutputs(onnx_loader(model), outputs.value_or(std::vector<std::string>{}),
                                   exclude_outputs.value_or(std::vector<std::string>{})));
             }),
             "model"_a, "outputs"_a = py::none(), "exclude_outputs"_a = py::none());
    bind_loader<SaveOnnxTag, OnnxModel>(module, "SaveOnnx", "Saves the model (atomically) and returns it (lazily).")
        .def(py::init([](const py::object& model, std::string path) {
                 return NamedLoader<SaveOnnxTag, OnnxModel>(SaveOnnx(onnx_loader(model), std::move(path)));
             }),
             "model"_a, "path"_a);
    bind_loader<BytesFromOnnxTag, std::string>(module, "BytesFromOnnx", "Serializes a model to bytes (lazily).")
        .def(py::init([](const py::object& model) {
                 return NamedLoader<BytesFromOnnxTag, std::string>(BytesFromOnnx(onnx_loader(model)));
             }),
             "model"_a);
    bind_loader<BytesFromPathTag, std::string>(module, "BytesFromPath", "Reads a file's bytes (lazily).")
        .def(py::init([](std::string path) {
                 return NamedLoader<BytesFromPathTag, std::string>(BytesFromPath(std::move(path)));
             }),
             "path"_a);

    // The immediately evaluated twins.
    module.def(
        "onnx_from_path",
        [](const std::string& path, std::optional<std::string> external_data_dir, bool ignore_external_data) {
            py::gil_scoped_release release;
            return onnx_from_path(path, std::move(external_data_dir), ignore_external_data);
        },
        "path"_a, "external_data_dir"_a = py::none(), "ignore_external_data"_a = false,
        "Loads an ONNX model file now.");
    module.def(
        "onnx_from_bytes", [](const py::bytes& bytes) { return onnx_from_bytes(bytes.cast<std::string>()); },
        "serialized_onnx"_a, "Parses a serialized ONNX model now.");
    module.def(
        "modify_outputs",
        [](OnnxModel model, std::optional<std::vector<std::string>> outputs,
           std::optional<std::vector<std::string>> exclude_outputs) {
            return modify_outputs(std::move(model), outputs.value_or(std::vector<std::string>{}),
                                  exclude_outputs.value_or(std::vector<std::string>{}));
        },
        "model"_a, "outputs"_a = py::none(), "exclude_outputs"_a = py::none(),
        "Re-marks the outputs of `model` now (in place); returns it.");
    module.def(
        "save_onnx",
        [](OnnxModel model, const std::string& path) {
            if (!model) throw UsageError("save_onnx: expected an ONNX model, got None");
            save_onnx(*model, path);
            return model;
        },
        "model"_a, "path"_a, "Saves `model` to `path` now (atomically); returns it.");
    module.def(
        "bytes_from_onnx", [](const onnx::ModelProto& model) { return py::bytes(bytes_from_onnx(model)); }, "model"_a,
        "Serializes `model` now.");
    module.def(
        "bytes_from_path", [](const std::string& path) { return py::bytes(bytes_from_path(path)); }, "path"_a,
        "Reads a file's bytes now.");
}

void bind_runners(py::module_& module) {
    py::class_<BaseRunner, PythonRunner>(module, "BaseRunner", R"doc(
A runner: activate() (or `with runner:`), then infer(feed_dict) any number of times, then deactivate().
infer() returns a dict of numpy arrays that share the runner's output buffers: a runner may reuse
them on the next infer(), so keep outputs of several inferences with copy.deepcopy(outputs).
Python subclasses implement get_input_metadata_impl() and infer_impl(feed_dict), and may implement
activate_impl() and deactivate_impl(); they take part in Comparator.run like built-in runners.)doc")
        .def(py::init([](std::optional<std::string> name, std::optional<std::string> prefix) {
                 return new PythonRunner(prefix.value_or("custom-runner"), std::move(name));
             }),
             "name"_a = py::none(), "prefix"_a = py::none())
        .def_property_readonly("name", &BaseRunner::name, "The runner's unique name (the RunResults entry name).")
        .def_property_readonly("is_active", &BaseRunner::is_active, "Whether the runner is active.")
        .def("activate", &BaseRunner::activate, py::call_guard<py::gil_scoped_release>(),
             "Activates the runner (expensive: builds the session). PolygraphyException when already active.")
        .def("deactivate", &BaseRunner::deactivate, py::call_guard<py::gil_scoped_release>(),
             "Deactivates the runner. PolygraphyException when not active.")
        .def("get_input_metadata", &BaseRunner::get_input_metadata, py::call_guard<py::gil_scoped_release>(),
             "Names, dtypes and shapes of the model's inputs (a TensorMetadata). Requires an active runner.")
        .def(
            "infer",
            [](BaseRunner& runner, const py::handle& feed_dict, bool check_inputs) {
                TensorMap feed = tensor_map_from_python(feed_dict, "Input");
                TensorMap outputs;
                {
                    py::gil_scoped_release release;
                    outputs = runner.infer(feed, check_inputs);
                }
                return tensor_map_to_python(outputs);
            },
            "feed_dict"_a, "check_inputs"_a = true,
            "Runs one inference on a dict of numpy arrays (wrapped without copies when C-contiguous) and returns "
            "a dict of numpy arrays sharing the runner's output buffers (see the class). Requires an active "
            "runner; with check_inputs, wrong names, dtypes or shapes raise PolygraphyInputError.")
        .def("last_inference_time", &BaseRunner::last_inference_time,
             "Seconds taken by the last infer(), or None before the first.")
        .def(
            "__enter__",
            [](BaseRunner& runner) -> BaseRunner& {
                py::gil_scoped_release release;
                runner.activate();
                return runner;
            },
            py::return_value_policy::reference)
        .def("__exit__", [](BaseRunner& runner, const py::args&) {
            py::gil_scoped_release release;
            if (runner.is_active()) runner.deactivate();
        });

    py::class_<onnxrt::Session, std::shared_ptr<onnxrt::Session>>(module, "OnnxrtSession", "An ONNX-Runtime session.")
        .def_property_readonly("input_metadata", &onnxrt::Session::input_metadata)
        .def_property_readonly("output_metadata", &onnxrt::Session::output_metadata)
        .def_property_readonly("providers", &onnxrt::Session::providers);
    py::class_<OnnxrtSessionLoader>(module, "BaseLoadOnnxrtSession", "A loader of ONNX-Runtime sessions.")
        .def("__call__", &call_loader<std::shared_ptr<onnxrt::Session>>, "Creates the session.");
    bind_loader<OnnxrtSessionTag, std::shared_ptr<onnxrt::Session>>(
        module, "OnnxrtSessionFromOnnx",
        "Builds an ONNX-Runtime session (lazily) from a model path (read by ONNX-Runtime itself), serialized "
        "bytes, a loader of bytes, or an ONNX model or its loader. intra_op_num_threads=0 is ONNX-Runtime's "
        "default (one thread per physical core); custom_op_libs are ONNX-Runtime custom-op libraries to load "
        "(RegisterCustomOps).")
        .def(py::init([](const py::object& model, std::optional<std::vector<std::string>> providers,
                         int intra_op_num_threads, std::vector<std::string> custom_op_libs) {
                 onnxrt::SessionOptions options;
                 if (providers) options.providers = *providers;
                 options.intra_op_num_threads = intra_op_num_threads;
                 options.custom_op_libraries = std::move(custom_op_libs);
                 if (py::isinstance<py::str>(model))
                     return NamedLoader<OnnxrtSessionTag, std::shared_ptr<onnxrt::Session>>(
                         onnxrt::SessionFromOnnx::from_path(model.cast<std::string>(), options));
                 if (py::isinstance<py::bytes>(model) || py::isinstance<BytesLoader>(model))
                     return NamedLoader<OnnxrtSessionTag, std::shared_ptr<onnxrt::Session>>(
                         onnxrt::SessionFromOnnx::from_bytes(bytes_loader(model), options));
                 return NamedLoader<OnnxrtSessionTag, std::shared_ptr<onnxrt::Session>>(
                     onnxrt::SessionFromOnnx(onnx_loader(model), options));
             }),
             "model"_a, "providers"_a = py::none(), "intra_op_num_threads"_a = 0,
             "custom_op_libs"_a = std::vector<std::string>{});
    py::class_<onnxrt::OnnxrtRunner, BaseRunner>(module, "OnnxrtRunner",
                                                 "Runs a model with ONNX-Runtime. infer() returns new arrays each time "
                                                 "(no buffer reuse).")
        .def(py::init([](const py::object& session, std::optional<std::string> name) {
                 return new onnxrt::OnnxrtRunner(
                     loader_from_python<std::shared_ptr<onnxrt::Session>>(session, "sess", "an ONNX-Runtime session"),
                     std::move(name));
             }),
             "sess"_a, "name"_a = py::none());

    py::class_<ref::Session, std::shared_ptr<ref::Session>>(module, "RefSession",
                                                            "A prepared graph of the built-in runtime.")
        .def_property_readonly("input_metadata", &ref::Session::input_metadata)
        .def_property_readonly("output_metadata", &ref::Session::output_metadata);
    py::class_<RefSessionLoader>(module, "BaseLoadRefSession", "A loader of built-in runtime sessions.")
        .def("__call__", &call_loader<std::shared_ptr<ref::Session>>, "Prepares the session.");
    bind_loader<RefSessionTag, std::shared_ptr<ref::Session>>(
        module, "RefSessionFromOnnx",
        "Prepares a model (a path, a model or its loader) for the built-in runtime (lazily).")
        .def(py::init([](const py::object& model, int num_threads, bool fuse_activations) {
                 ref::SessionOptions options;
                 options.num_threads = num_threads;
                 options.fuse_activations = fuse_activations;
                 return NamedLoader<RefSessionTag, std::shared_ptr<ref::Session>>(
                     ref::SessionFromOnnx(onnx_loader(model), options));
             }),
             "model"_a, "num_threads"_a = 0, "fuse_activations"_a = true);
    py::class_<ref::RefRunner, BaseRunner>(module, "RefRunner",
                                           "Runs a model on the built-in CPU runtime. infer() returns new output "
                                           "buffers each time (no reuse); an output that passes an input through "
                                           "(Identity) may share that input's memory.")
        .def(py::init([](const py::object& session, std::optional<std::string> name) {
                 return new ref::RefRunner(
                     loader_from_python<std::shared_ptr<ref::Session>>(session, "sess", "a built-in runtime session"),
                     std::move(name));
             }),
             "sess"_a, "name"_a = py::none());
}

}  // namespace

void bind_backend(py::module_& module) {
    bind_onnx(module);
    bind_runners(module);
}

}  // namespace polygraphy::python
