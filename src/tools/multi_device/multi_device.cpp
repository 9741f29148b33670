#include "tools/multi_device/multi_device.h"

#include "polygraphy/backend/onnx/shard.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/model.h"

namespace polygraphy::tools {

std::unique_ptr<Tool> make_multi_device_tool() {
    return std::make_unique<DispatchingTool>("multi-device", "Multi-Device related operations on an onnx model.",
                                             "Multi-Device Subtools",
                                             std::vector<DispatchingTool::SubtoolFactory>{make_subtool<ShardTool>});
}

std::string ShardTool::description() const {
    return "Convert a SD model to a MD model using a sharding hints file (from `polygraphy template\n"
           "shard-hints`): DistCollective nodes reduce-scatter the hinted inputs and all-gather the attention\n"
           "layers' K and V and the hinted outputs.\n";
}

std::vector<std::unique_ptr<ArgGroup>> ShardTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::vector<OptionSpec> ShardTool::tool_options() const {
    return {
        Option({"-s", "--hint"}).dest("hint_file").required(true).help("Hints file to describe shardable layers."),
    };
}

int ShardTool::run_impl(const ParsedArgs& args) {
    const std::string hint_file = *args.value("hint_file");
    logger().info("Loading sharding hints from: " + hint_file);
    const ShardHints hints = shard_hints_from_json(read_file(hint_file), hint_file);
    logger().info("Loaded hints: parallelism=" + hints.parallelism +
                  ", group_size=" + std::to_string(hints.group_size) + ", root=" + std::to_string(hints.root) +
                  ", groups=" + std::to_string(hints.groups.size()) + " group(s)");

    OnnxModel model = arg_group<OnnxLoadArgs>().onnx_loader()();
    ShardStats stats;
    try {
        stats = shard_model(*model, hints);
    } catch (const ModelError& error) {
        throw ModelError(hint_file + ": " + error.what());
    }
    logger().info("Inserted " + std::to_string(stats.reduce_scatters) + " reduce-scatter(s), " +
                  std::to_string(stats.all_gathers) + " all-gather(s) and " + std::to_string(stats.transposes) +
                  " transpose(s)");
    arg_group<OnnxSaveArgs>().save(*model);
    return 0;
}

}  // namespace polygraphy::tools
