#include "tools/inspect/inspect.h"

#include "polygraphy/backend/onnx/sparsity.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/model.h"

namespace polygraphy::tools {

std::string InspectSparsityTool::description() const {
    return "[EXPERIMENTAL] Display information about whether each weight tensor in an ONNX model follows a 2:4 "
           "structured sparsity pattern.\n";
}

std::vector<std::unique_ptr<ArgGroup>> InspectSparsityTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    return groups;
}

int InspectSparsityTool::run_impl(const ParsedArgs& /*args*/) {
    check_sparsity(*arg_group<OnnxLoadArgs>().onnx_loader()());
    return 0;
}

}  // namespace polygraphy::tools
