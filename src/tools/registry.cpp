#include "tools/registry.h"

#include <set>

#include "tools/args/backend/onnxrt/runner.h"
#include "tools/args/backend/ref/runner.h"
#include "tools/args/backend/unavailable.h"
#include "tools/check/check.h"
#include "tools/convert/convert.h"
#include "tools/data/data.h"
#include "tools/debug/debug.h"
#include "tools/inspect/inspect.h"
#include "tools/multi_device/multi_device.h"
#include "tools/plugin/plugin.h"
#include "tools/run/run.h"
#include "tools/surgeon/surgeon.h"
#include "tools/template/template.h"

namespace polygraphy::tools {

std::vector<ExtensionModule>& detail::module_registry() {
    static std::vector<ExtensionModule> modules;
    return modules;
}

using detail::module_registry;

std::vector<std::unique_ptr<Tool>> make_tools() {
    std::vector<std::unique_ptr<Tool>> tools;
    tools.push_back(std::make_unique<RunTool>());
    tools.push_back(std::make_unique<ConvertTool>());
    tools.push_back(make_inspect_tool());
    tools.push_back(make_check_tool());
    tools.push_back(make_surgeon_tool());
    tools.push_back(make_template_tool());
    tools.push_back(make_debug_tool());
    tools.push_back(make_data_tool());
    tools.push_back(make_plugin_tool());
    tools.push_back(make_multi_device_tool());
    for (const auto& module : extension_modules())
        if (module.tools)
            for (auto& tool : module.tools()) tools.push_back(std::move(tool));

    std::set<std::string> names;
    for (const auto& tool : tools)
        if (!names.insert(tool->name()).second) throw InternalError("two tools are named '" + tool->name() + "'");
    return tools;
}

std::vector<std::unique_ptr<ArgGroup>> builtin_runner_arg_groups() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<RefRunnerArgs>());
    groups.push_back(std::make_unique<PluginRefRunnerArgs>());
    groups.push_back(make_onnxrt_runner_args());
    // Backends this build does not have: their selection flags fail with a clear message.
    groups.push_back(make_trt_runner_args());
    groups.push_back(make_tf_runner_args());
    return groups;
}

void register_extension_module(ExtensionModule module) {
    if (!module.run_arg_groups && !module.tools)
        throw InternalError("extension module '" + module.name + "' provides no argument groups and no tools");
    for (const auto& existing : module_registry())
        if (existing.name == module.name)
            throw InternalError("extension module '" + module.name + "' is registered twice");
    module_registry().push_back(std::move(module));
}

const std::vector<ExtensionModule>& extension_modules() {
    return module_registry();
}

}  // namespace polygraphy::tools
