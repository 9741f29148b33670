#include "tools/args/model.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/unavailable.h"
#include "tools/args/util.h"

namespace polygraphy::tools {
namespace {

const std::vector<std::string> kTfTypes = {"frozen", "keras", "ckpt"};
const std::vector<std::string> kTrtTypes = {"engine", "uff", "trt-network-script"};

bool contains(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

std::string ModelArgs::input_shapes_flag() const {
    std::string stem = config_.input_shapes_opt;
    if (!stem.empty() && stem.back() == 's') stem.pop_back();
    return "--" + stem + "-shapes";
}

std::vector<OptionSpec> ModelArgs::options() const {
    std::vector<OptionSpec> options = {
        Option({"model_file"})
            .kind(config_.model_required ? OptionKind::kValue : OptionKind::kOptionalValue)
            .help("Path to the model")
            .positional(true),
        Option({"--model-type"})
            .help("The type of the input model: {'frozen': TensorFlow frozen graph; 'keras': Keras model; 'ckpt': "
                  "TensorFlow checkpoint directory; 'onnx': ONNX model; 'engine': TensorRT engine; "
                  "'trt-network-script': A Python script that defines a `load_network` function; 'uff': UFF file "
                  "[deprecated]; 'caffe': Caffe prototxt [deprecated]}. Only 'onnx' is available in this build")
            .choices({"frozen", "keras", "ckpt", "onnx", "engine", "uff", "trt-network-script", "caffe"}),
    };
    if (!config_.input_shapes_opt.empty()) {
        const std::string flag = input_shapes_flag();
        options.push_back(
            Option({flag, "--" + config_.input_shapes_opt})
                .dest("input_shapes")
                .kind(OptionKind::kValues)
                .help("Model input(s) and their shape(s). Used to determine shapes to use while generating "
                      "input data for inference. Format: " +
                      flag + " <name>:<shape>. For example: " + flag + " image:[1,3,224,224] other_input:[10]"));
    }
    return options;
}

void ModelArgs::parse(const ParsedArgs& args) {
    input_shapes_ = TensorMetadata();
    if (!config_.input_shapes_opt.empty() && args.has("input_shapes"))
        input_shapes_ = args_util::parse_input_shapes(input_shapes_flag(), args.values("input_shapes"));

    path_ = args.value("model_file");
    std::error_code error;  // unreadable paths are reported by the loader, not thrown here
    if (path_ && !std::filesystem::exists(*path_, error)) logger().warning("Model path does not exist: " + *path_);
    // As Polygraphy's parse_path: an existing path is used (and printed) absolute, like os.path.abspath.
    else if (path_)
        if (auto absolute = std::filesystem::absolute(*path_, error); !error)
            path_ = absolute.lexically_normal().string();

    model_type_.reset();
    if (auto given = args.value("model_type")) {
        model_type_ = *given;
    } else if (path_) {
        static const std::map<std::string, std::string> kByExtension = {
            {".hdf5", "keras"},    {".uff", "uff"},     {".prototxt", "caffe"},  {".onnx", "onnx"},
            {".engine", "engine"}, {".plan", "engine"}, {".graphdef", "frozen"}, {".py", "trt-network-script"},
        };
        const std::string extension = std::filesystem::path(*path_).extension().string();
        if (std::filesystem::is_directory(*path_, error)) {
            model_type_ = "ckpt";
        } else if (auto found = kByExtension.find(extension); found != kByExtension.end()) {
            model_type_ = found->second;
        } else {
            throw UsageError("Could not automatically determine model type for: " + *path_ +
                             "\nPlease explicitly specify the type with the --model-type option");
        }
    }
    if (!model_type_ || *model_type_ == "onnx") return;
    if (contains(kTrtTypes, *model_type_))
        throw UnsupportedError(std::string(kTensorRtUnavailable) + " (model type: " + *model_type_ + ")");
    if (contains(kTfTypes, *model_type_))
        throw UnsupportedError(std::string(kTensorFlowUnavailable) + " (model type: " + *model_type_ + ")");
    throw UnsupportedError("Caffe models are not supported (model type: " + *model_type_ + ")");
}

bool ModelArgs::add_to_job(RunJob& /*job*/) const {
    return true;
}

}  // namespace polygraphy::tools
