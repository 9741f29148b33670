#include "tools/inspect/inspect.h"

namespace polygraphy::tools {

std::unique_ptr<Tool> make_inspect_tool() {
    return std::make_unique<DispatchingTool>(
        "inspect", "View information about various types of files.\n", "Inspection Subtools",
        std::vector<DispatchingTool::SubtoolFactory>{make_subtool<InspectModelTool>, make_subtool<InspectDataTool>,
                                                     make_subtool<InspectCapabilityTool>,
                                                     make_subtool<InspectSparsityTool>});
}

}  // namespace polygraphy::tools
