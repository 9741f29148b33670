#include "convert.h"

#include <cstring>
#include <vector>

#include <pybind11/stl.h>

#include "polygraphy/common/datatype.h"

namespace polygraphy::python {

std::string type_name(const py::handle& object) {
    return py::str(py::type::handle_of(object).attr("__name__"));
}

DataType dtype_from_numpy(const py::dtype& dtype, const std::string& what) {
    const char kind = dtype.kind();
    if (kind == 'U' || kind == 'O' || kind == 'S') return DataType::kString;
    const std::string descr = py::str(dtype.attr("str"));
    if (auto type = dtype_from_npy_descr(descr)) return *type;
    throw InputError(what + " has numpy dtype " + std::string(py::str(static_cast<const py::handle&>(dtype))) + " (" +
                     descr + "), which polygraphy does not support");
}

py::object dtype_to_numpy(std::optional<DataType> dtype) {
    if (!dtype) return py::none();
    if (*dtype == DataType::kString) return py::dtype("O");
    auto descr = dtype_to_npy_descr(*dtype);
    if (!descr) throw UnsupportedError("dtype " + std::string(dtype_name(*dtype)) + " has no numpy equivalent");
    return py::dtype(*descr);
}

std::optional<DataType> dtype_from_python(const py::handle& object) {
    if (object.is_none()) return std::nullopt;
    py::dtype dtype;
    try {
        dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(object));
    } catch (const py::error_already_set&) {
        throw UsageError("not a numpy dtype: " + std::string(py::repr(object)));
    }
    return dtype_from_numpy(dtype, "dtype");
}

std::shared_ptr<void> keep_python_object(py::object object) {
    return std::shared_ptr<void>(object.release().ptr(), [](void* pointer) {
        // Interpreter shutdown: Python has already freed its objects.
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        Py_DECREF(static_cast<PyObject*>(pointer));
    });
}

namespace {

Shape shape_of(const py::array& array) {
    return Shape(array.shape(), array.shape() + array.ndim());
}

Tensor string_tensor_from_array(const py::array& array, const std::string& what) {
    Tensor tensor(DataType::kString, shape_of(array));
    auto& strings = tensor.strings();
    py::object flat = array.attr("ravel")();
    std::size_t index = 0;
    for (py::handle item : flat) {
        if (py::isinstance<py::bytes>(item)) {
            strings[index++] = item.cast<std::string>();
        } else if (py::isinstance<py::str>(item)) {
            strings[index++] = item.cast<std::string>();
        } else {
            throw InputError(what + " holds a " + type_name(item) + " in a string array");
        }
    }
    return tensor;
}

}  // namespace

Tensor tensor_from_python(const py::handle& value, const std::string& what) {
    if (value.is_none() || py::isinstance<py::dict>(value))
        throw InputError(what + " must be a numpy array, got " + type_name(value));
    // A torch tensor (seed 002's "Enabling PyTorch", --data-loader-backend-module torch) is read through
    // its numpy view, which shares a CPU tensor's memory.
    py::object source = py::reinterpret_borrow<py::object>(value);
    if (py::str(py::type::handle_of(value).attr("__module__")).cast<std::string>() == "torch")
        source = source.attr("detach")().attr("cpu")().attr("numpy")();
    py::array array;
    try {
        array = py::array::ensure(source, py::array::c_style);
    } catch (const py::error_already_set&) {
    }
    if (!array) throw InputError(what + " must be a numpy array, got " + type_name(value));
    const DataType dtype = dtype_from_numpy(array.dtype(), what);
    if (dtype == DataType::kString) return string_tensor_from_array(array, what);
    void* data = array.mutable_data();
    Shape shape = shape_of(array);
    return Tensor::wrap(dtype, std::move(shape), keep_python_object(std::move(array)), data);
}

py::object tensor_to_python(const Tensor& tensor) {
    const Shape& shape = tensor.shape();
    if (tensor.dtype() == DataType::kString) {
        py::list items;
        for (const auto& text : tensor.strings()) items.append(py::str(text));
        py::tuple dims = py::cast(shape);
        return py::module_::import("numpy").attr("array")(items, py::arg("dtype") = "O").attr("reshape")(dims);
    }
    // The capsule owns a (shallow) copy of the tensor: the array shares its buffer and keeps it alive.
    auto* owner = new Tensor(tensor);
    py::capsule base(owner, [](void* pointer) { delete static_cast<Tensor*>(pointer); });
    py::object dtype = dtype_to_numpy(tensor.dtype());
    return py::array(py::reinterpret_borrow<py::dtype>(dtype), std::vector<py::ssize_t>(shape.begin(), shape.end()),
                     tensor.data(), base);
}

TensorMap tensor_map_from_python(const py::handle& mapping, const std::string& kind) {
    if (!py::isinstance<py::dict>(mapping) && !py::hasattr(mapping, "items"))
        throw InputError(kind + "s must be a dict of name -> numpy array, got " + type_name(mapping));
    TensorMap tensors;
    for (py::handle item : mapping.attr("items")()) {
        auto pair = item.cast<py::tuple>();
        if (!py::isinstance<py::str>(pair[0]))
            throw InputError(kind + " names must be strings, got " + type_name(pair[0]));
        const auto name = pair[0].cast<std::string>();
        tensors.set(name, tensor_from_python(pair[1], kind + " '" + name + "'"));
    }
    return tensors;
}

py::dict tensor_map_to_python(const TensorMap& tensors) {
    py::dict result;
    for (const auto& [name, tensor] : tensors) result[py::str(name)] = tensor_to_python(tensor);
    return result;
}

std::optional<DynShape> dyn_shape_from_python(const py::handle& shape) {
    if (shape.is_none()) return std::nullopt;
    if (py::isinstance<py::str>(shape) || !py::isinstance<py::sequence>(shape))
        throw UsageError("a shape must be a sequence of ints, strings or None, got " + type_name(shape));
    DynShape dims;
    for (py::handle dim : shape) {
        if (dim.is_none()) {
            dims.push_back(Dim::unknown());
        } else if (py::isinstance<py::str>(dim)) {
            dims.push_back(Dim::named(dim.cast<std::string>()));
        } else if (py::isinstance<py::int_>(dim) || py::hasattr(dim, "__index__")) {
            const auto value = py::int_(py::reinterpret_borrow<py::object>(dim)).cast<int64_t>();
            dims.push_back(value < 0 ? Dim::unknown() : Dim::fixed(value));
        } else {
            throw UsageError("a shape dimension must be an int, a string or None, got " + type_name(dim));
        }
    }
    return dims;
}

py::object dyn_shape_to_python(const std::optional<DynShape>& shape) {
    if (!shape) return py::none();
    py::tuple dims(shape->size());
    for (std::size_t i = 0; i < shape->size(); ++i) {
        const Dim& dim = (*shape)[i];
        if (!dim.is_dynamic()) {
            dims[i] = py::int_(dim.value);
        } else if (!dim.param.empty()) {
            dims[i] = py::str(dim.param);
        } else {
            dims[i] = py::none();
        }
    }
    return dims;
}

namespace {

/// Shared state of a data loader over a Python iterable: the iterator is made on the first call,
/// after `input_metadata` was set on the object when it takes attributes (the seeds' loaders read it).
struct IterableState {
    py::object iterable;
    py::object iterator;
    ~IterableState() {
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        iterator = py::object();
        iterable = py::object();
    }
};

}  // namespace

DataLoaderFn data_loader_from_iterable(const py::object& data_loader, const std::string& what) {
    if (!py::hasattr(data_loader, "__iter__") && !py::hasattr(data_loader, "__getitem__"))
        throw UsageError(what + ": expected an iterable or generator of feed dicts, got " + type_name(data_loader));
    auto state = std::make_shared<IterableState>();
    state->iterable = data_loader;
    return data_loader_from_generator([state](const TensorMetadata& input_metadata) -> std::optional<TensorMap> {
        py::gil_scoped_acquire gil;
        if (!state->iterator) {
            // Offered to any object that takes attributes (lists and generators do not).
            if (PyObject_SetAttrString(state->iterable.ptr(), "input_metadata", py::cast(input_metadata).ptr()) != 0) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError) && !PyErr_ExceptionMatches(PyExc_TypeError))
                    throw py::error_already_set();
                PyErr_Clear();
            }
            state->iterator = py::iter(state->iterable);
        }
        PyObject* next = PyIter_Next(state->iterator.ptr());
        if (!next) {
            if (PyErr_Occurred()) throw py::error_already_set();
            return std::nullopt;
        }
        return tensor_map_from_python(py::reinterpret_steal<py::object>(next), "Input");
    });
}

CompareFunc compare_func_from_callable(const py::object& compare_func, const std::string& what) {
    if (!PyCallable_Check(compare_func.ptr()))
        throw UsageError(what + ": expected a CompareFunc or a callable, got " + type_name(compare_func));
    auto holder = keep_python_object(compare_func);
    return [holder, what](const IterationResult& first, const IterationResult& second) {
        py::gil_scoped_acquire gil;
        py::object numpy_bool = py::module_::import("numpy").attr("bool_");
        py::object verdicts = py::reinterpret_borrow<py::object>(static_cast<PyObject*>(holder.get()))(first, second);
        if (!py::hasattr(verdicts, "items"))
            throw PolygraphyException(what + " must return a dict of output name -> bool, got " + type_name(verdicts));
        IterationCompareResult result;
        for (py::handle item : verdicts.attr("items")()) {
            auto pair = item.cast<py::tuple>();
            const std::string name = py::str(pair[0]);
            if (!PyBool_Check(pair[1].ptr()) && !py::isinstance(pair[1], numpy_bool))
                throw PolygraphyException(what + " returned a " + type_name(pair[1]) + " for output '" + name +
                                          "', expected a bool");
            OutputCompareResult output;
            output.passed = pair[1].cast<bool>();
            output.output_name = name;
            output.other_name = name;
            result.set(name, std::move(output));
        }
        return result;
    };
}

}  // namespace polygraphy::python
