// `polygraphy check`: model checks.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Check Subtools" below.
std::unique_ptr<Tool> make_check_tool();

/// `check lint M.onnx [-o report.json]`: lint_onnx() with inputs from the Data Loader options
/// (generated, or --load-inputs), the JSON report saved with -o. A model that cannot be parsed is
/// one `onnx_loader` exception entry. Exit status 1 when an exception entry was found, else 0.
class CheckLintTool : public Tool {
public:
    CheckLintTool() : Tool("lint") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& /*args*/) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
