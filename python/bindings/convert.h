// Conversions between Python objects (numpy arrays, dicts, callables) and the library's types,
// shared by the binding files of the extension module polygraphy._core.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "polygraphy/backend/base/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/data_loader.h"

namespace polygraphy::python {

namespace py = pybind11;

/// The library dtype of a numpy dtype; InputError naming `what` for dtypes it cannot hold
/// (big-endian, structured, datetime...).
DataType dtype_from_numpy(const py::dtype& dtype, const std::string& what);
/// The numpy dtype of a library dtype, or None when the dtype is unknown (nullopt).
py::object dtype_to_numpy(std::optional<DataType> dtype);
/// A library dtype from a Python object: None (unknown), a numpy dtype or anything np.dtype() takes
/// ("float32", np.float32), else UsageError.
std::optional<DataType> dtype_from_python(const py::handle& object);

/// A tensor over the array-like `value` (`what` names it in errors, e.g. "Input 'x'"). A
/// C-contiguous numeric array is wrapped without copying and kept alive by the tensor; other
/// layouts are copied into a contiguous array first; str/object arrays become string tensors.
Tensor tensor_from_python(const py::handle& value, const std::string& what);
/// A numpy array sharing the tensor's buffer (the array keeps the buffer alive); string tensors
/// are copied into an object array. UnsupportedError for dtypes numpy has no type for (bfloat16, float8, int4).
py::object tensor_to_python(const Tensor& tensor);

/// Feed dict (any mapping of str -> array-like) to a TensorMap, in the mapping's order. `kind`
/// ("Input", "Output") names the values in errors; a value that is not a mapping is an InputError.
TensorMap tensor_map_from_python(const py::handle& mapping, const std::string& kind);
/// A dict of numpy arrays sharing the tensors' buffers, in order.
py::dict tensor_map_to_python(const TensorMap& tensors);

/// A declared shape from a Python sequence: ints are fixed, strings named dynamic dims, None or
/// negative ints unknown. None gives nullopt (unknown rank).
std::optional<DynShape> dyn_shape_from_python(const py::handle& shape);
/// The inverse: a tuple (ints, strings for named dims, None for unknown ones), or None.
py::object dyn_shape_to_python(const std::optional<DynShape>& shape);

/// A data loader over a Python iterable or generator of feed dicts (Polygraphy's contract): the
/// iterator is made on the first call, after `input_metadata` was set on objects that take
/// attributes. UsageError naming `what` for an object that is not iterable; Python errors raised
/// while iterating propagate as py::error_already_set.
DataLoaderFn data_loader_from_iterable(const py::object& data_loader, const std::string& what);
/// A compare function over a Python callable taking two IterationResults and returning a dict of
/// output name -> bool (Polygraphy's contract). UsageError naming `what` for a non-callable;
/// PolygraphyException when a call returns anything else.
CompareFunc compare_func_from_callable(const py::object& compare_func, const std::string& what);

/// Releases a Python reference from any thread (tensors wrapping numpy arrays may die in a thread
/// that does not hold the GIL).
std::shared_ptr<void> keep_python_object(py::object object);

/// A loader object of the bindings (OnnxFromPath, SessionFromOnnx, ...): a Python callable over a
/// library Loader<T>, so that a chain of bound loaders runs without returning to Python.
template <typename T>
struct LoaderObject {
    Loader<T> load;  ///< the library loader
};

/// Python callable `callable` as a library loader whose result goes through `convert` (called
/// with the GIL held). Safe to call and destroy from any thread.
template <typename T>
Loader<T> loader_from_callable(py::object callable, std::function<T(const py::object& result)> convert) {
    auto holder = keep_python_object(std::move(callable));
    return [holder, convert = std::move(convert)]() -> T {
        py::gil_scoped_acquire gil;
        py::object result = py::reinterpret_borrow<py::function>(static_cast<PyObject*>(holder.get()))();
        return convert(result);
    };
}

/// The Python type name of `object`, for error messages.
std::string type_name(const py::handle& object);

/// A loader from what a user passes where Polygraphy takes "a loader or an object": a bound
/// loader object of type T is used as is, a T becomes a loader returning it, and any other
/// callable is called when the loader runs and must return a T. `what` names the argument and
/// `expected` the type T in errors (UsageError when the argument is neither, PolygraphyException
/// when a callable returns something else).
template <typename T>
Loader<T> loader_from_python(const py::object& object, const std::string& what, const std::string& expected) {
    if (py::isinstance<LoaderObject<T>>(object)) return object.cast<const LoaderObject<T>&>().load;
    if (object.is_none()) throw UsageError(what + ": expected a loader, a callable or " + expected + ", got None");
    try {
        return loader_from_value(object.cast<T>());
    } catch (const py::cast_error&) {
    }
    if (!PyCallable_Check(object.ptr()))
        throw UsageError(what + ": expected a loader, a callable or " + expected + ", got " + type_name(object));
    return loader_from_callable<T>(object, [what, expected](const py::object& result) {
        try {
            return result.cast<T>();
        } catch (const py::cast_error&) {
            throw PolygraphyException(what + ": the loader returned " + type_name(result) + ", expected " + expected);
        }
    });
}

}  // namespace polygraphy::python
