// `polygraphy multi-device shard`: rewrites a single-device model into a multi-device one for context
// parallelism, from the hints file `template shard-hints` writes (backend/onnx/shard.h).
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Multi-Device Subtools".
std::unique_ptr<Tool> make_multi_device_tool();

/// `multi-device shard MODEL -s hints.json -o OUT`: shard_model() with the hints, then saves the model.
/// The hints are read and checked before the model is loaded.
class ShardTool : public Tool {
public:
    ShardTool() : Tool("shard") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
