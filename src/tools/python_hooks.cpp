// Loads the Python bridge library on first use (see polygraphy/tools/python_hooks.h).
#include "polygraphy/tools/python_hooks.h"

#include <dlfcn.h>

#include <mutex>

#include "common/install_layout.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::python_hooks {

PythonBridge& bridge(const std::string& flag) {
    static std::once_flag once;
    static PythonBridge* loaded = nullptr;
    static std::string failure;
    std::call_once(once, [] {
        const std::filesystem::path folder = install_layout::private_folder();
        if (folder.empty()) {
            failure = "the Python bridge cannot be located";
            return;
        }
        const std::string path = (folder / kBridgeFileName).string();
        // RTLD_GLOBAL: the extension modules the embedded interpreter imports find libpython's symbols.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!handle) {
            const char* error = dlerror();
            failure = error ? error : ("cannot load " + path);
            return;
        }
        using EntryPoint = PythonBridge* (*)(std::string*);
        auto entry = reinterpret_cast<EntryPoint>(dlsym(handle, kBridgeEntryPoint));
        if (!entry) {
            failure = path + " has no " + kBridgeEntryPoint;
            return;
        }
        loaded = entry(&failure);
    });
    if (!loaded)
        throw UnsupportedError(flag + " is not available in this build (it runs Python code, and the Python " +
                               "bindings are not installed: " + failure + ")");
    return *loaded;
}

namespace {

// "--data-loader-script" -> "data_loader_script".
std::string dest_of(const std::string& flag) {
    std::string dest = flag.substr(2);
    for (char& c : dest)
        if (c == '-') c = '_';
    return dest;
}

}  // namespace

std::optional<ScriptFunction> script_function_argument(const tools::ParsedArgs& args, const std::string& script_flag,
                                                       const std::string& name_flag,
                                                       const std::string& default_function) {
    const auto name = args.value(dest_of(name_flag));
    if (name)
        logger().warning(name_flag + " is deprecated and will be removed in Polygraphy 0.50.0. Use " + script_flag +
                         " my_custom_script.py:" + *name + " instead.");
    const auto argument = args.value(dest_of(script_flag));
    if (!argument) return std::nullopt;
    const auto colon = argument->rfind(':');
    if (colon == std::string::npos || colon + 1 == argument->size() ||
        argument->find_first_of("/\\", colon) != std::string::npos)
        return ScriptFunction{*argument, name.value_or(default_function)};
    return ScriptFunction{argument->substr(0, colon), argument->substr(colon + 1)};
}

}  // namespace polygraphy::python_hooks
