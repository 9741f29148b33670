// The tools of the `polygraphy` command, the runner groups of `polygraphy run`, extension modules.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "polygraphy/tools/args/arg_group.h"
#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Every tool, in the order `polygraphy -h` lists them. Names are unique (InternalError otherwise).
std::vector<std::unique_ptr<Tool>> make_tools();

/// THE list of runner argument groups built into `polygraphy run`, in the order their selection
/// flags are listed (`--ref`, `--trt`, `--tf`; the last two refuse to run). Add a backend here: its
/// RunnerArgGroup (plus any groups it depends on, e.g. session options) and nothing else changes.
/// Runner groups describe their runner (RunnerArgGroup::runner_step()); the job builds it over its model.
std::vector<std::unique_ptr<ArgGroup>> builtin_runner_arg_groups();

/// An extension module (Polygraphy's `polygraphy.run.plugins` entry points): adds argument groups,
/// typically a RunnerArgGroup with its own selection flag, to `polygraphy run`, and optionally
/// whole tools. Modules are usually shared libraries loaded by load_extension_modules() (see
/// polygraphy/extension.h); code linking the library may also register one directly.
struct ExtensionModule {
    std::string name;     ///< unique module name (logged at verbose)
    std::string version;  ///< module version
    /// Fresh groups for one `polygraphy run` set-up (may be empty when the module only adds tools).
    /// Their part of a `run` job: ArgGroup::add_to_job(), RunnerArgGroup::runner_step().
    std::function<std::vector<std::unique_ptr<ArgGroup>>()> run_arg_groups;
    /// Fresh tools, listed after the built-in ones (may be empty).
    std::function<std::vector<std::unique_ptr<Tool>>()> tools = {};
    /// The shared library it came from; empty for modules registered in-process.
    std::string path = {};
};
/// Registers a module for every later `polygraphy run` set-up (call before cli_main()).
/// InternalError when it adds nothing or its name is taken. Does not check flags: shared-library
/// modules go through load_extension_module(), which does.
void register_extension_module(ExtensionModule module);
const std::vector<ExtensionModule>& extension_modules();

/// Where extension modules are searched, in order: the entries of POLYGRAPHY_PLUGIN_PATH
/// (colon-separated; empty entries are skipped, never meaning the current directory), then
/// default_extension_module_folder().
std::vector<std::string> extension_module_folders();
/// <libdir>/polygraphy/plugins, <libdir> being the folder of libpolygraphy.so (found with dladdr).
std::string default_extension_module_folder();

/// Loads every `*.so` of extension_module_folders() (folders in order, files by name); the first
/// call only, later calls do nothing (cli_main() calls it). A folder that any user may write to
/// gets a warning. Failures are warnings (see load_extension_module()).
void load_extension_modules();

/// Loads one module file, all or nothing: dlopen, ABI version check, registration into a staging
/// area, creation of its groups and tools, flag/tool-name clash checks against the built-in tools
/// and the modules already loaded. Returns true when the module was added; otherwise logs ONE
/// warning `Ignoring extension module <path>: <cause>` and returns false. A file already loaded
/// (same canonical path) is skipped silently (returns false).
bool load_extension_module(const std::string& path);

namespace detail {
/// The registry behind extension_modules(); the loader stages a candidate here while checking it.
std::vector<ExtensionModule>& module_registry();
}  // namespace detail

}  // namespace polygraphy::tools
