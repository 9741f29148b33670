// Loaders: lazy, composable callables that produce models (or sessions, bytes, ...).
#pragma once

#include <functional>
#include <utility>

namespace polygraphy {

/// A Loader is any callable that takes no arguments and returns T. Loaders compose by taking other
/// loaders: `ModifyOutputs(OnnxFromPath("m.onnx"), ...)`. Nothing is loaded until the outermost
/// loader is called. Each loader class also has an immediately-evaluated function twin
/// (`onnx_from_path(...)` for `OnnxFromPath(...)()`).
template <typename T>
using Loader = std::function<T()>;

/// Wraps an already-built object as a loader that returns it (Polygraphy accepts objects and callables alike).
template <typename T>
Loader<T> loader_from_value(T value) {
    return [value = std::move(value)]() { return value; };
}

/// Wraps `loader` with user code that receives its result and may modify or replace it
/// (Polygraphy's `func.extend`). `extension` is called as `extension(T&)`; the (possibly modified)
/// object is returned. Example:
///     auto load = extend(OnnxFromPath("m.onnx"), [](OnnxModel& m) { m->mutable_graph()->set_name("x"); });
template <typename T, typename Extension>
Loader<T> extend(Loader<T> loader, Extension extension) {
    return [loader = std::move(loader), extension = std::move(extension)]() {
        T result = loader();
        extension(result);
        return result;
    };
}

}  // namespace polygraphy
