// `polygraphy inspect`: model, data, capability and sparsity subtools.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Inspection Subtools" below.
std::unique_ptr<Tool> make_inspect_tool();

/// `inspect model M.onnx [--show layers attrs weights]`: str_from_onnx() logged under
/// `==== ONNX Model ====`. Without `weights` the model is read by onnx_structure_from_path (no
/// weights, no external data: fast on large models); with it, fully (external data included
/// unless --ignore-external-data). `--list-unbounded-dds` adds the tensors
/// find_unbounded_dds_tensors() finds. `--display-as trt` and `--combine-tensor-info` are
/// TensorRT-only and refused.
class InspectModelTool : public Tool {
public:
    InspectModelTool() : Tool("model") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `inspect data F.json`: a RunResults or inputs file (ours or Polygraphy's), per runner, iteration
/// and tensor: dtype, shape and stats (inspect_data_str()).
class InspectDataTool : public Tool {
public:
    InspectDataTool() : Tool("data") {}
    std::string description() const override;

protected:
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `inspect capability M.onnx [--backend ref|onnxrt] [-o DIR]`: which nodes a backend can run;
/// the graph is partitioned into supported/unsupported subgraphs saved under DIR (default
/// `polygraphy_capability_dumps`) with a summary table (also DIR/results.txt). See capability.h.
class InspectCapabilityTool : public Tool {
public:
    InspectCapabilityTool() : Tool("capability") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

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
