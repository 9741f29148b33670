// `polygraphy surgeon prune`, `weight-strip` and `weight-reconstruct`: the subtools that rewrite
// a model's weights (sparsity.h and weight_strip.h do the work).
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// `surgeon prune M.onnx -o out.onnx`: prune_model_2_4().
class SurgeonPruneTool : public Tool {
public:
    SurgeonPruneTool() : Tool("prune") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon weight-strip M.onnx -o out.onnx [--exclude-list FILE]`: strip_weights(); the file
/// names one initializer per line (trailing whitespace ignored).
class SurgeonWeightStripTool : public Tool {
public:
    SurgeonWeightStripTool() : Tool("weight-strip") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon weight-reconstruct M.onnx -o out.onnx`: reconstruct_weights().
class SurgeonWeightReconstructTool : public Tool {
public:
    SurgeonWeightReconstructTool() : Tool("weight-reconstruct") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
