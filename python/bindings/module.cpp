// The extension module polygraphy._core: the library's Python bindings. The pure-Python package
// polygraphy/ re-exports them under Polygraphy's module paths.
#include "bindings.h"

PYBIND11_MODULE(_core, module) {
    module.doc() = "Bindings of libpolygraphy; import them from the polygraphy package's modules.";
    polygraphy::python::bind_common(module);
    polygraphy::python::bind_backend(module);
    polygraphy::python::bind_graph(module);
    polygraphy::python::bind_comparator(module);
    polygraphy::python::bind_diff(module);
}
