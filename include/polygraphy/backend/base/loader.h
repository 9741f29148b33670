// Loaders: lazy, composable callables that produce models (or sessions, bytes, ...).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
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

/// The type a loader (any callable taking no arguments) returns.
template <typename L>
using LoaderResult = std::decay_t<std::invoke_result_t<L&>>;

/// Wraps `loader` (a Loader or any loader class) with user code that receives its result and may
/// modify or replace it (Polygraphy's `func.extend`). `extension` is called as `extension(T&)` when
/// the loader is called; when it returns a T, that value replaces the result, otherwise the (possibly
/// modified) object is returned. Nothing runs until the returned loader is called. Example:
///     auto load = extend(OnnxFromPath("m.onnx"), [](OnnxModel& m) { m->mutable_graph()->set_name("x"); });
template <typename L, typename Extension>
Loader<LoaderResult<L>> extend(L loader, Extension extension) {
    using T = LoaderResult<L>;
    return [loader = std::move(loader), extension = std::move(extension)]() mutable -> T {
        T result = loader();
        if constexpr (std::is_convertible_v<std::invoke_result_t<Extension&, T&>, T>) {
            return extension(result);
        } else {
            extension(result);
            return result;
        }
    };
}

/// A loader that calls `loader` on its first call only and returns that same result to every later call,
/// and to every copy of the returned loader: one model shared by several runners is loaded, converted
/// and saved once. The result is kept as long as a copy of the returned loader lives. Thread-safe; a
/// first call that throws is tried again by the next call.
template <typename L>
Loader<LoaderResult<L>> load_once(L loader) {
    using T = LoaderResult<L>;
    struct State {
        explicit State(L inner) : loader(std::move(inner)) {}
        std::mutex mutex;
        L loader;
        std::optional<T> result;
    };
    auto state = std::make_shared<State>(std::move(loader));
    return [state]() -> T {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (!state->result) state->result = state->loader();
        return *state->result;
    };
}

}  // namespace polygraphy
