// The bridge library of the CLI's Python hooks (polygraphy/tools/python_hooks.h): embeds Python,
// imports the polygraphy package (so that its bindings convert the values) and runs user scripts.
// The CLI loads it with dlopen only when a hook's flag is given.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include <pybind11/embed.h>

#include "../bindings/convert.h"
#include "polygraphy/tools/python_hooks.h"

namespace polygraphy::python {
namespace {

namespace fs = std::filesystem;

}  // namespace

// "TypeName: message" of the Python exception in `error`, on one line. Needs the GIL.
std::string describe(const py::error_already_set& error) {
    std::string type = error.type() ? std::string(py::str(error.type().attr("__name__"))) : "Error";
    std::string message = error.value() ? std::string(py::str(error.value())) : "";
    for (char& c : message)
        if (c == '\n') c = ' ';
    return message.empty() ? type : type + ": " + message;
}

namespace {

// Runs `body` with the GIL held; Python errors become one-line PolygraphyExceptions prefixed by `what`.
template <typename Body>
auto with_python(const std::string& what, Body&& body) -> decltype(body()) {
    py::gil_scoped_acquire gil;
    try {
        return body();
    } catch (const py::error_already_set& error) {
        throw PolygraphyException(what + ": " + describe(error));
    }
}

// The folder holding the polygraphy package: beside the installed bridge (relative path set by the
// build; or a wheel's, where the bridge is polygraphy/_libs/lib/polygraphy/), else the build tree's.
std::string package_folder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&package_folder), &info) != 0 && info.dli_fname) {
        const fs::path folder = fs::path(info.dli_fname).parent_path();
        const fs::path installed = folder / POLYGRAPHY_BRIDGE_TO_PACKAGE;
        if (fs::exists(installed / "polygraphy" / "__init__.py")) return installed.lexically_normal().string();
        for (fs::path wheel = folder; wheel.has_relative_path(); wheel = wheel.parent_path())
            if (wheel.filename() == "_libs" && fs::exists(wheel.parent_path() / "__init__.py"))
                return wheel.parent_path().parent_path().string();
    }
    return POLYGRAPHY_BUILD_PACKAGE_FOLDER;
}

class Bridge final : public python_hooks::PythonBridge {
public:
    Bridge() {
        py::initialize_interpreter(/*init_signal_handlers=*/false);
        {
            py::module_ sys = py::module_::import("sys");
            sys.attr("path").attr("insert")(0, package_folder());
            // The interpreter is never finalised, so block-buffered output (stdout to a pipe or file)
            // would be lost at exit; line buffering also keeps a script's prints in order with the log.
            for (const char* stream : {"stdout", "stderr"})
                sys.attr(stream).attr("reconfigure")(py::arg("line_buffering") = true);
            // Registers the bound types (IterationResult, TensorMetadata) the conversions use.
            py::module_::import("polygraphy._core");
        }
        // The hooks acquire the GIL when they run; the interpreter lives until the process ends.
        PyEval_SaveThread();
    }

    DataLoaderFn data_loader_from_script(const std::string& path, const std::string& function) override {
        const std::string what = "--data-loader-script " + path;
        DataLoaderFn loader = with_python(
            what, [&] { return data_loader_from_iterable(call_script_function(what, path, function), what); });
        return [loader, what](std::size_t iteration, const TensorMetadata& metadata) {
            try {
                return loader(iteration, metadata);
            } catch (const py::error_already_set& error) {
                py::gil_scoped_acquire gil;
                throw PolygraphyException(what + ": " + describe(error));
            }
        };
    }

    CompareFunc compare_func_from_script(const std::string& path, const std::string& function) override {
        const std::string what = "--compare-func-script " + path;
        CompareFunc compare =
            with_python(what, [&] { return compare_func_from_callable(script_function(what, path, function), what); });
        return [compare, what](const IterationResult& first, const IterationResult& second) {
            try {
                return compare(first, second);
            } catch (const py::error_already_set& error) {
                py::gil_scoped_acquire gil;
                throw PolygraphyException(what + ": " + describe(error));
            }
        };
    }

    void require_module(const std::string& name) override {
        with_python("Python module '" + name + "' cannot be imported", [&] { py::module_::import(name.c_str()); });
    }

private:
    // The function `function` the script at `path` defines (the script runs once per call).
    static py::object script_function(const std::string& what, const std::string& path, const std::string& function) {
        if (!fs::is_regular_file(path)) throw UsageError(what + ": no such file");
        py::dict names = py::module_::import("runpy").attr("run_path")(path);
        if (!names.contains(function)) throw UsageError(what + ": the script defines no function '" + function + "'");
        py::object callable = names[function.c_str()];
        if (!PyCallable_Check(callable.ptr()))
            throw UsageError(what + ": '" + function + "' is a " + type_name(callable) + ", not a function");
        return callable;
    }

    static py::object call_script_function(const std::string& what, const std::string& path,
                                           const std::string& function) {
        return script_function(what, path, function)();
    }
};

}  // namespace
}  // namespace polygraphy::python

extern "C" __attribute__((visibility("default"))) polygraphy::python_hooks::PythonBridge* polygraphy_python_bridge(
    std::string* error) {
    static polygraphy::python::Bridge* bridge = nullptr;
    static std::string failure;
    static std::once_flag once;
    std::call_once(once, [] {
        try {
            bridge = new polygraphy::python::Bridge();  // never destroyed: the interpreter outlives it
        } catch (const pybind11::error_already_set& e) {
            failure = polygraphy::python::describe(e);
        } catch (const std::exception& e) {
            failure = e.what();
        }
    });
    if (!bridge && error) *error = failure;
    return bridge;
}
