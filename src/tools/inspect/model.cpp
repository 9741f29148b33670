// `polygraphy inspect model`.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/dds.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/backend/unavailable.h"
#include "tools/args/model.h"
#include "tools/inspect/inspect.h"
#include "tools/inspect/unbounded_dds.h"

namespace polygraphy::tools {

std::string InspectModelTool::description() const {
    return "Display information about a model, including inputs and outputs, as well as layers and their "
           "attributes.\n";
}

std::vector<std::unique_ptr<ArgGroup>> InspectModelTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    for (auto& group : make_tf_arg_groups(UnavailableArgsFor::kInspectModel)) groups.push_back(std::move(group));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>());
    // Plugins, layer precisions, tensor data types and parser flags act on the TensorRT network
    // built from the model, which only --display-as trt shows: refused like it.
    for (auto& group : make_trt_arg_groups(UnavailableArgsFor::kInspectModel)) groups.push_back(std::move(group));
    return groups;
}

std::vector<OptionSpec> InspectModelTool::tool_options() const {
    return {
        Option({"--convert-to", "--display-as"})
            .dest("display_as")
            .choices({"trt"})
            .help("Try to convert the model to the specified format before displaying. Not available in this build "
                  "(TensorRT)"),
        Option({"--show"})
            .kind(OptionKind::kValues)
            .choices({"layers", "attrs", "weights"})
            .help("Controls what is displayed: {'layers': Display basic layer information like name, op, inputs, and "
                  "outputs, 'attrs': Display all available per-layer attributes; has no effect if 'layers' is not "
                  "enabled, 'weights': Display all weights in the model; if 'layers' is enabled, also shows per-layer "
                  "constants}. More than one option may be specified"),
        Option({"--list-unbounded-dds"})
            .dest("show_unbounded_dds")
            .kind(OptionKind::kFlag)
            .help("List all tensors with unbounded Data-Dependent Shapes (DDS). Note that listing unbounded DDS only "
                  "works for models that have been constant folded and have shapes inferred."),
        Option({"--combine-tensor-info"})
            .help("Path to a tensor JSON file to combine into an engine's layer information. Not available in this "
                  "build (TensorRT)"),
    };
}

int InspectModelTool::run_impl(const ParsedArgs& args) {
    if (args.has("display_as") || args.has("combine_tensor_info"))
        throw UnsupportedError("TensorRT is not available in this build (--display-as trt, --combine-tensor-info)");

    const auto show = args.values("show");
    auto shows = [&](const char* aspect) { return std::find(show.begin(), show.end(), aspect) != show.end(); };
    OnnxSummaryOptions options;
    options.show_layers = shows("layers");
    options.show_attrs = shows("attrs");
    options.show_weights = shows("weights");

    const auto& load = arg_group<OnnxLoadArgs>();
    const std::string& path = *arg_group<ModelArgs>().path();
    const bool outputs_changed = load.outputs() || !load.exclude_outputs().empty();
    OnnxModel model;
    std::optional<OnnxFileModel> file_model;
    if (!options.show_weights) {
        // Nothing needs the values: read the structure only (no weights, no external data).
        model = onnx_structure_from_path(path);
    } else if (std::filesystem::exists(path) && !onnx_file_may_use_external_data(path)) {
        // The weights are in the file: each is read when it is printed, so memory stays small.
        file_model.emplace(path);
        model = file_model->model();
        options.decode = [&file_model](const onnx::TensorProto& tensor) { return file_model->decode_tensor(tensor); };
    } else {
        model = load.onnx_loader()();  // external data: the loader resolves it (unless --ignore-external-data)
    }
    if (outputs_changed && (file_model || !options.show_weights))
        model = modify_outputs(model, load.outputs().value_or(std::vector<std::string>{}), load.exclude_outputs());
    // Shapes of intermediate tensors for --show layers (libonnx; best effort, never fails).
    if (arg_group<OnnxInferShapesArgs>().do_shape_inference()) infer_value_info(*model);
    logger().info("==== ONNX Model ====\n" + str_from_onnx(*model, options));
    if (args.flag("show_unbounded_dds"))
        logger().info("Found tensors with unbounded DDS: " + unbounded_dds_str(find_unbounded_dds_tensors(*model)));
    return 0;
}

}  // namespace polygraphy::tools
