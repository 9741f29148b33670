// The CLI's Python hooks (`--data-loader-script`, `--compare-func-script`,
// `--data-loader-backend-module torch`), served by a bridge library built with the Python package.
// libpolygraphy and the CLI never link libpython: the bridge, which does, is loaded with dlopen the
// first time a hook is used, so commands without one start as fast as before and run where Python
// is absent.
#pragma once

#include <optional>
#include <string>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/data_loader.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::python_hooks {

/// What the bridge library offers. Every method starts the embedded interpreter when needed and
/// reports Python errors as one-line PolygraphyExceptions ("<flag>: <ExceptionType>: <message>").
class PythonBridge {
public:
    virtual ~PythonBridge() = default;
    /// Runs the script at `path` and calls its function `function` (no arguments); the result, an
    /// iterable or generator of feed dicts (numpy arrays or torch tensors), becomes the data loader.
    virtual DataLoaderFn data_loader_from_script(const std::string& path, const std::string& function) = 0;
    /// Runs the script at `path`; its function `function` compares two IterationResults and returns
    /// a dict of output name -> bool, as Polygraphy's compare functions do.
    virtual CompareFunc compare_func_from_script(const std::string& path, const std::string& function) = 0;
    /// Imports the Python module `name` (e.g. "torch"); PolygraphyException when it cannot.
    virtual void require_module(const std::string& name) = 0;
};

/// The name of the bridge's entry point: `extern "C" PythonBridge* <this>(std::string* error)`,
/// returning an object that lives as long as the process, or nullptr (and why in `error`) when
/// Python or the polygraphy package cannot be started.
inline constexpr const char* kBridgeEntryPoint = "polygraphy_python_bridge";
/// The bridge's file name, in libpolygraphy's private folder (`<libdir>/polygraphy/`).
inline constexpr const char* kBridgeFileName = "libpolygraphy_python_bridge.so";

/// The bridge, loaded once. `flag` names the option that needs it in the error: UnsupportedError
/// "<flag> is not available in this build (...)" when the bridge or its Python cannot be loaded.
PythonBridge& bridge(const std::string& flag);

/// The script and function a hook's option names (Polygraphy's `file.py[:function]`).
struct ScriptFunction {
    std::string path;      ///< the script
    std::string function;  ///< the function it defines
};

/// `script_flag`'s value (e.g. "--data-loader-script"), or nullopt when it was not given. Without
/// `:function`, the function is the deprecated option `name_flag`'s value (which warns when given),
/// else `default_function`. A colon followed by a path separator or nothing is part of the path.
std::optional<ScriptFunction> script_function_argument(const tools::ParsedArgs& args, const std::string& script_flag,
                                                       const std::string& name_flag,
                                                       const std::string& default_function);

}  // namespace polygraphy::python_hooks
