// polygraphy.exception, polygraphy.logger, polygraphy.common and polygraphy.json over the library's.
#include <cctype>

#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::python {

namespace {

using namespace pybind11::literals;

void bind_exceptions(py::module_& module) {
    // Registered base first: pybind11 tries the translators of later registrations first, so each
    // library exception becomes its most derived Python class, with the library's message.
    auto& base = py::register_exception<PolygraphyException>(module, "PolygraphyException");
    py::register_exception<FormatError>(module, "PolygraphyFormatError", base.ptr());
    py::register_exception<ModelError>(module, "PolygraphyModelError", base.ptr());
    py::register_exception<UnsupportedError>(module, "PolygraphyUnsupportedError", base.ptr());
    py::register_exception<InputError>(module, "PolygraphyInputError", base.ptr());
    py::register_exception<UsageError>(module, "PolygraphyUsageError", base.ptr());
    py::register_exception<InternalError>(module, "PolygraphyInternalError", PyExc_RuntimeError);
}

void bind_logger(py::module_& module) {
    // The process-wide logger is never destroyed from Python.
    py::class_<Logger, std::unique_ptr<Logger, py::nodelete>> logger(module, "Logger", R"doc(
Polygraphy's logger (G_LOGGER): messages on stdout with [V] [I] [W] [E] [!] prefixes. `severity` is the
threshold; critical() logs and raises PolygraphyException, as in Polygraphy.)doc");
    // Polygraphy's names: G_LOGGER.INFO is a severity, G_LOGGER.info() logs at it (critical() is below).
    const char* const names[] = {"ultra_verbose", "super_verbose", "extra_verbose", "verbose", "info",
                                 "start",         "finish",        "warning",       "error",   "critical"};
    for (const char* name : names) {
        Severity severity{};
        if (!severity_from_name(name, severity)) throw InternalError(std::string("no severity named ") + name);
        std::string constant(name);
        for (char& c : constant) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        logger.attr(constant.c_str()) = static_cast<int>(severity);
        if (severity == Severity::kCritical) continue;
        logger.def(
            name, [severity](Logger& self, const std::string& message) { self.log(severity, message); }, "message"_a,
            "Logs `message` at the severity the name says.");
    }
    logger
        .def_property(
            "severity", [](const Logger& self) { return static_cast<int>(self.severity()); },
            [](Logger& self, int severity) { self.set_severity(static_cast<Severity>(severity)); },
            "Messages below this severity (e.g. G_LOGGER.VERBOSE) are not printed.")
        .def("log_file", &Logger::set_log_file, "path"_a, "Also appends every message to `path`.")
        .def(
            "critical",
            [](Logger& self, const std::string& message) {
                self.critical(message);
                throw PolygraphyException(message);
            },
            "message"_a, "Logs `[!] message` and raises PolygraphyException(message).");
    // Python scripts see what the library does, as Polygraphy's users do (the library alone is silent).
    Logger::global().set_severity(Severity::kInfo);
    module.attr("G_LOGGER") = py::cast(&Logger::global(), py::return_value_policy::reference);
}

void bind_metadata(py::module_& module) {
    py::class_<MetadataEntry>(module, "MetaData", "Dtype (numpy, or None) and shape (tuple, or None) of one tensor.")
        .def_property_readonly("dtype", [](const MetadataEntry& entry) { return dtype_to_numpy(entry.dtype); })
        .def_property_readonly("shape", [](const MetadataEntry& entry) { return dyn_shape_to_python(entry.shape); })
        .def("__repr__", [](const MetadataEntry& entry) {
            return "MetaData(dtype=" + (entry.dtype ? std::string(dtype_name(*entry.dtype)) : "None") +
                   ", shape=" + (entry.shape ? dyn_shape_to_string(*entry.shape) : "None") + ")";
        });
    py::class_<TensorMetadata>(module, "TensorMetadata", R"doc(
Names mapped to dtypes and shapes, in order, like a dict of MetaData. Shapes take ints, strings (named
dynamic dims) and None (unknown dims).)doc")
        .def(py::init<>())
        .def(
            "add",
            [](TensorMetadata& self, const std::string& name, const py::object& dtype, const py::object& shape)
                -> TensorMetadata& { return self.add(name, dtype_from_python(dtype), dyn_shape_from_python(shape)); },
            "name"_a, "dtype"_a = py::none(), "shape"_a = py::none(), py::return_value_policy::reference_internal,
            "Adds or replaces `name`; returns self, for chaining.")
        .def_static("from_feed_dict",
                    [](const py::handle& feed_dict) {
                        return TensorMetadata::from_feed_dict(tensor_map_from_python(feed_dict, "Input"));
                    })
        .def("__len__", &TensorMetadata::size)
        .def("__contains__", [](const TensorMetadata& self, const std::string& name) { return self.contains(name); })
        .def("__getitem__",
             [](const TensorMetadata& self, const std::string& name) {
                 const MetadataEntry* entry = self.find(name);
                 if (!entry) throw py::key_error(name);
                 return *entry;
             })
        .def("keys", &TensorMetadata::keys)
        .def("__iter__", [](const TensorMetadata& self) { return py::iter(py::cast(self.keys())); })
        .def("items",
             [](const TensorMetadata& self) {
                 py::list items;
                 for (const auto& [name, entry] : self) items.append(py::make_tuple(name, entry));
                 return items;
             })
        .def("__str__", &TensorMetadata::to_string)
        .def("__repr__", &TensorMetadata::to_string);
}

}  // namespace

void bind_common(py::module_& module) {
    bind_exceptions(module);
    bind_logger(module);
    bind_metadata(module);
}

}  // namespace polygraphy::python
