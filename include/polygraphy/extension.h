// The extension-module SDK: what a plugin shared library exports so that `polygraphy` loads it.
//
// An extension module is a shared library (CMake `add_library(... MODULE ...)`, linked against
// polygraphy::polygraphy) that exports two C entry points:
//
//     extern "C" POLYGRAPHY_EXTENSION_EXPORT int polygraphy_extension_abi_version() {
//         return POLYGRAPHY_EXTENSION_ABI_VERSION;  // the version of the headers it was built with
//     }
//     extern "C" POLYGRAPHY_EXTENSION_EXPORT void polygraphy_register_extension(
//         polygraphy::ExtensionRegistrar& registrar) {
//         registrar.set_module_info("polygraphy_my_module", "0.0.1");
//         registrar.add_run_arg_group<MyLoaderArgs>();   // option groups of `polygraphy run`
//         registrar.add_run_arg_group<MyRunnerArgs>();   // a RunnerArgGroup adds a runner (`--my-runner`)
//         registrar.add_tool<MyTool>();                  // optional: a whole new subtool
//         registrar.add_ref_kernel({"my.ops", "MyOp", 1, 1, 1, 1, 1, compute});  // optional: MyOp on --ref
//     }
//
// (POLYGRAPHY_EXTENSION(registrar) { ... } writes both for you.)
//
// Discovery (once per process, when `polygraphy` starts): every `*.so` file in the folders of
// POLYGRAPHY_PLUGIN_PATH (colon-separated, in order), then in <libdir>/polygraphy/plugins where
// <libdir> is the folder holding libpolygraphy.so (i.e. <prefix>/lib/polygraphy/plugins once
// installed); files of one folder in name order. Nothing is loaded from the current directory.
//
// Loading is all or nothing: the module registers into a staging area; it is added only when its
// ABI version matches, polygraphy_register_extension returned normally, its groups and tools can
// be created and none of its flags or tool names clash with built-in ones or with modules loaded
// before it. Otherwise one `[W]` line names the module file and the cause and the tool goes on
// without it.
//
// ABI: modules receive and return C++ objects (ArgGroup, BaseRunner, std::function...), so a module
// must be built with the same compiler family and C++ standard library as libpolygraphy, against
// the headers of the Polygraphy it is loaded into. POLYGRAPHY_EXTENSION_ABI_VERSION changes
// whenever a change of these headers would break already-built modules; a module reporting another
// version is refused at load.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "polygraphy/backend/ref/custom_kernel.h"
#include "polygraphy/tools/args/arg_group.h"
#include "polygraphy/tools/tool.h"

/// Version of the extension interface (ExtensionRegistrar and the headers it exposes).
#define POLYGRAPHY_EXTENSION_ABI_VERSION \
    6  // 3: ArgGroup::add_to_job, RunnerArgGroup::runner_step (RunJob), Tool without the parser header;
       // OutputCompareResult, SimpleCompareOptions and CompareJob grew (HTML reports);
       // 4: Logger::log/log_once take the caller's source location, Logger members added;
       // 5: stats::array_to_string/PrintOptions became numpy::array_str/PrintOptions (common/numpy_print.h);
       // 6: ExtensionRegistrar::add_ref_kernel (custom kernels of the built-in runtime)

/// Marks the entry points as exported even when a module builds with -fvisibility=hidden.
#define POLYGRAPHY_EXTENSION_EXPORT __attribute__((visibility("default")))

namespace polygraphy {

/// Names of the two symbols a module exports.
inline constexpr const char* kExtensionAbiVersionSymbol = "polygraphy_extension_abi_version";
inline constexpr const char* kExtensionRegisterSymbol = "polygraphy_register_extension";

/// What a module's polygraphy_register_extension() may add. Everything goes to a staging area that
/// is committed only when the whole registration succeeded (see the file comment). Factories are
/// called each time a tool is set up, so they must create fresh objects.
class ExtensionRegistrar {
public:
    /// Creates a fresh argument group.
    using ArgGroupFactory = std::function<std::unique_ptr<tools::ArgGroup>()>;
    /// Creates a fresh tool.
    using ToolFactory = std::function<std::unique_ptr<tools::Tool>()>;

    virtual ~ExtensionRegistrar() = default;

    /// Name and version listed by `polygraphy --version` ("Extension Module: <name> | Version: <v>").
    /// Default: the file name without `lib` and `.so`, version "unknown". Names are unique.
    virtual void set_module_info(std::string name, std::string version) = 0;
    /// Adds an argument group to `polygraphy run`, after the built-in runner groups and the groups of
    /// modules loaded earlier, in the order of these calls. Its options appear in `polygraphy run -h`
    /// under the group's title and are parsed and validated like built-in ones; a RunnerArgGroup also
    /// gets a runner-selection flag (its runner_flag()) under "Runners".
    virtual void add_run_arg_group(ArgGroupFactory factory) = 0;
    /// Adds a subtool (`polygraphy <tool->name()>`), listed after the built-in tools.
    virtual void add_tool(ToolFactory factory) = 0;
    /// Adds a kernel of the module's own operator to the built-in runtime (`--ref`, `--pluginref`), so
    /// that a custom operator whose ONNX Runtime kernel comes from `--onnxrt-custom-op-libs` runs on
    /// both and can be compared. Registered with the module (register_custom_kernel); a kernel that
    /// register_custom_kernel would refuse makes the whole module refused.
    virtual void add_ref_kernel(ref::CustomKernel kernel) = 0;

    /// add_run_arg_group() for a default-constructible group type.
    template <typename Group>
    void add_run_arg_group() {
        add_run_arg_group(ArgGroupFactory([] { return std::make_unique<Group>(); }));
    }
    /// add_tool() for a default-constructible tool type.
    template <typename T>
    void add_tool() {
        add_tool(ToolFactory([] { return std::make_unique<T>(); }));
    }
};

}  // namespace polygraphy

extern "C" {
/// Exported by every module: must return POLYGRAPHY_EXTENSION_ABI_VERSION as seen when it was built.
using PolygraphyExtensionAbiVersionFn = int (*)();
/// Exported by every module: registers what it adds. May throw (the module is then skipped).
using PolygraphyRegisterExtensionFn = void (*)(polygraphy::ExtensionRegistrar&);
}

/// Defines both entry points; the body registers through `registrar_name`:
///     POLYGRAPHY_EXTENSION(registrar) { registrar.add_run_arg_group<MyArgs>(); }
#define POLYGRAPHY_EXTENSION(registrar_name)                                        \
    extern "C" POLYGRAPHY_EXTENSION_EXPORT int polygraphy_extension_abi_version() { \
        return POLYGRAPHY_EXTENSION_ABI_VERSION;                                    \
    }                                                                               \
    extern "C" POLYGRAPHY_EXTENSION_EXPORT void polygraphy_register_extension(      \
        ::polygraphy::ExtensionRegistrar& registrar_name)
