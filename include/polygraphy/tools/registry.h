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
/// Runner groups reach the ONNX loader chain through their siblings:
/// `arg_groups()->get<OnnxLoadArgs>()->onnx_loader()`.
std::vector<std::unique_ptr<ArgGroup>> builtin_runner_arg_groups();

/// An extension module (Polygraphy's `polygraphy.run.plugins` entry points): adds argument groups,
/// typically a RunnerArgGroup with its own selection flag, to `polygraphy run`.
struct ExtensionModule {
    std::string name;     ///< unique module name (logged at verbose)
    std::string version;  ///< module version
    /// Creates the module's groups for one `run` set-up (they may implement ArgGroup::add_to_script).
    std::function<std::vector<std::unique_ptr<ArgGroup>>()> run_arg_groups;
};
/// Registers a module for every later `polygraphy run` set-up (call before cli_main()).
void register_extension_module(ExtensionModule module);
const std::vector<ExtensionModule>& extension_modules();

}  // namespace polygraphy::tools
