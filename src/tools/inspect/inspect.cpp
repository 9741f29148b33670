#include "tools/inspect/inspect.h"

namespace polygraphy::tools {

std::string InspectTool::description() const {
    return "View information about various types of files.\n";
}

Subtools InspectTool::make_subtools() const {
    Subtools subtools{"Inspection Subtools", {}};
    subtools.tools.push_back(std::make_unique<InspectModelTool>());
    subtools.tools.push_back(std::make_unique<InspectDataTool>());
    subtools.tools.push_back(std::make_unique<InspectCapabilityTool>());
    subtools.tools.push_back(std::make_unique<InspectSparsityTool>());
    return subtools;
}

int InspectTool::run_impl(const ParsedArgs& /*args*/) {
    throw InternalError("'inspect' only dispatches to its subtools");
}

}  // namespace polygraphy::tools
