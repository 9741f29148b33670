// `polygraphy inspect sparsity`.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// `inspect sparsity M.onnx`: check_sparsity() (sparsity.h) logs, for each weight 2:4 sparsity
/// applies to, whether it follows the pattern.
class InspectSparsityTool : public Tool {
public:
    InspectSparsityTool() : Tool("sparsity") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
