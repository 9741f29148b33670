// `polygraphy convert`: ONNX to ONNX (fp16, outputs, shape inference, external data).
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// `convert M.onnx -o out.onnx [--convert-to onnx] [--fp-to-fp16] [--save-external-data ...]`.
/// The target comes from --convert-to or the output's extension (.onnx; .engine/.plan -> trt);
/// TensorRT targets fail with "TensorRT is not available in this build".
class ConvertTool : public Tool {
public:
    ConvertTool() : Tool("convert") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
