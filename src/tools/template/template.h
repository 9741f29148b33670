// `polygraphy template`: starting programs to edit a model (Polygraphy's template tool, in C++).
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Template Subtools": `onnx-gs`, `shard-hints`, and `trt-network` / `trt-config`, which need
/// TensorRT and say that it is not available in this build.
std::unique_ptr<Tool> make_template_tool();

/// `template onnx-gs MODEL -o edit.cpp`: writes a C++ program that loads the model (with the ONNX
/// loading options given), leaves a place to edit its graph through the graph API of
/// backend/onnx/graph.h, and saves it as `<model>_updated.onnx` (onnx_edit_program()). Polygraphy
/// writes a Python script over ONNX-GraphSurgeon instead.
class OnnxGsTemplateTool : public Tool {
public:
    OnnxGsTemplateTool() : Tool("onnx-gs") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `template shard-hints MODEL -o hints.json`: writes the hints file of `multi-device shard` for the
/// model's attention layers (suggest_shard_hints(), backend/onnx/shard.h), as Polygraphy does.
class ShardHintsTemplateTool : public Tool {
public:
    ShardHintsTemplateTool() : Tool("shard-hints") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
