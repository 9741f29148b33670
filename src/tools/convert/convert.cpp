// `polygraphy convert`.
#include "tools/convert/convert.h"

#include <filesystem>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/backend/unavailable.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/model.h"

namespace polygraphy::tools {

std::string ConvertTool::description() const {
    return "Convert models to other formats.\n";
}

std::vector<std::unique_ptr<ArgGroup>> ConvertTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "inputs"}));
    for (auto& group : make_tf_arg_groups(UnavailableArgsFor::kConvert)) groups.push_back(std::move(group));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{"onnx-", false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    for (auto& group : make_trt_arg_groups(UnavailableArgsFor::kConvert)) groups.push_back(std::move(group));
    return groups;
}

std::vector<OptionSpec> ConvertTool::tool_options() const {
    return {
        Option({"--convert-to"})
            .choices({"onnx", "trt", "onnx-like-trt-network"})
            .help("The format to attempt to convert the model to.'onnx-like-trt-network' is EXPERIMETNAL and converts "
                  "a TensorRT network to a format usable for visualization. See 'OnnxLikeFromNetwork' for details. "
                  "Only 'onnx' is available in this build"),
    };
}

int ConvertTool::run_impl(const ParsedArgs& args) {
    const auto& save = arg_group<OnnxSaveArgs>();
    std::string target;
    if (auto given = args.value("convert_to")) {
        target = *given;
    } else {
        const std::string extension = std::filesystem::path(save.path().value_or("")).extension().string();
        if (extension == ".onnx")
            target = "onnx";
        else if (extension == ".engine" || extension == ".plan")
            target = "trt";
        else
            throw PolygraphyException(
                "Could not automatically determine model type based on output path: " + save.path().value_or("") +
                "\nPlease specify the desired output format with --convert-to");
    }
    if (target != "onnx")
        throw UnsupportedError(std::string(kTensorRtUnavailable) + ": cannot convert to '" + target +
                               "' (only --convert-to onnx is supported)");
    OnnxModel model = arg_group<OnnxLoadArgs>().onnx_loader()();
    save.save(*model);
    return 0;
}

}  // namespace polygraphy::tools
