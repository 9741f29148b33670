#include "tools/args/debug/debug_args.h"
#include "tools/debug/debug.h"

namespace polygraphy::tools {

std::string RepeatTool::description() const {
    return "[EXPERIMENTAL] Run an arbitrary command repeatedly, sorting generated artifacts\n"
           "into `good` and `bad` directories.\n";
}

std::vector<std::unique_ptr<ArgGroup>> RepeatTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<CheckCmdArgs>());
    groups.push_back(std::make_unique<ArtifactSortArgs>());
    groups.push_back(std::make_unique<IterativeDebugArgs>(IterativeDebugArgs::Config{std::nullopt, true}));
    return groups;
}

int RepeatTool::run_impl(const ParsedArgs& /*args*/) {
    arg_group<IterativeDebugArgs>().iterate({});
    return 0;
}

}  // namespace polygraphy::tools
