#include "polygraphy/tools/args/backend/onnx/loader.h"
#include "polygraphy/tools/script.h"

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/tools/args/model.h"

namespace polygraphy::tools {

// ---- OnnxInferShapesArgs -------------------------------------------------------------------------

std::vector<OptionSpec> OnnxInferShapesArgs::options() const {
    return {
        Option({"--shape-inference", "--do-shape-inference"})
            .dest("do_shape_inference")
            .kind(OptionKind::kFlag)
            .help("Enable ONNX shape inference when loading the model. Accepted for compatibility: this build has no "
                  "separate shape inference pass"),
        Option({"--no-onnxruntime-shape-inference"})
            .dest("allow_onnxruntime")
            .kind(OptionKind::kFlag)
            .help("Disable using ONNX-Runtime's shape inference utilities. Accepted for compatibility"),
    };
}

void OnnxInferShapesArgs::parse(const ParsedArgs& args) {
    do_shape_inference_ = args.flag("do_shape_inference");
    if (do_shape_inference_)
        logger().warning(
            "--shape-inference has no effect in this build: the model is used as loaded (the runtime infers "
            "shapes while running)");
}

// ---- OnnxSaveArgs --------------------------------------------------------------------------------

std::vector<OptionSpec> OnnxSaveArgs::options() const {
    std::vector<OptionSpec> options;
    if (!config_.output_opt.empty()) {
        std::vector<std::string> flags;
        if (!config_.output_short_opt.empty()) flags.push_back(config_.output_short_opt);
        flags.push_back("--" + config_.output_opt);
        options.push_back(
            Option(flags).dest("save_onnx").help("Path to save the ONNX model").required(config_.output_required));
    }
    options.push_back(Option({"--save-external-data", "--external-data-path"})
                          .dest("external_data_path")
                          .kind(OptionKind::kOptionalValue)
                          .help("Whether to save weight data in external file(s). Not available in this build yet")
                          .const_value(""));
    options.push_back(Option({"--external-data-size-threshold"})
                          .help("The size threshold, in bytes, above which tensor data will be stored in the external "
                                "file. Has no effect if `--save-external-data` is not set"));
    options.push_back(Option({"--no-save-all-tensors-to-one-file"})
                          .dest("all_tensors_to_one_file")
                          .kind(OptionKind::kFlag)
                          .help("Do not save all tensors to a single file when saving external data. Has no effect if "
                                "`--save-external-data` is not set"));
    return options;
}

void OnnxSaveArgs::parse(const ParsedArgs& args) {
    path_ = args.value("save_onnx");
    if (args.has("external_data_path"))
        throw UnsupportedError(
            "--save-external-data is not available in this build yet: models are saved with "
            "their weights inside the .onnx file");
}

// ---- OnnxLoadArgs --------------------------------------------------------------------------------

std::vector<std::type_index> OnnxLoadArgs::depends_on() const {
    return {std::type_index(typeid(ModelArgs))};
}

std::vector<OptionSpec> OnnxLoadArgs::options() const {
    return {
        Option({"--external-data-dir", "--load-external-data", "--ext"})
            .dest("external_data_dir")
            .help("Path to a directory containing external data for the model. Generally, this is only required if "
                  "the external data is not stored in the model directory."),
        Option({"--ignore-external-data"})
            .kind(OptionKind::kFlag)
            .help("Ignore external data and just load the model structure without any weights. The model will be "
                  "usable only for purposes that don't require weights, such as extracting subgraphs or inspecting "
                  "model structure. This can be useful in cases where external data is not available."),
        Option({"--onnx-outputs"})
            .kind(OptionKind::kValues)
            .help("Name(s) of ONNX tensor(s) to mark as output(s). Using the special value 'mark all' indicates that "
                  "all tensors should be used as outputs"),
        Option({"--onnx-exclude-outputs"})
            .kind(OptionKind::kValues)
            .help("[EXPERIMENTAL] Name(s) of ONNX output(s) to unmark as outputs."),
        Option({"--fp-to-fp16"})
            .kind(OptionKind::kFlag)
            .help("Convert all floating point tensors in an ONNX model to 16-bit precision. Not available in this "
                  "build yet"),
    };
}

void OnnxLoadArgs::parse(const ParsedArgs& args) {
    outputs_.reset();
    if (args.has("onnx_outputs")) {
        const auto names = args.values("onnx_outputs");
        outputs_ = names == kMarkAll ? kMarkAll : names;
    }
    exclude_outputs_ = args.values("onnx_exclude_outputs");
    external_data_dir_ = args.value("external_data_dir");
    ignore_external_data_ = args.flag("ignore_external_data");
    if (args.flag("fp_to_fp16")) throw UnsupportedError("--fp-to-fp16 is not available in this build yet");
}

OnnxLoader OnnxLoadArgs::onnx_loader() const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path()) throw UsageError("An ONNX model is required, but no model file was provided");
    OnnxLoader loader = OnnxFromPath(*model.path(), external_data_dir_, ignore_external_data_);
    if (outputs_ || !exclude_outputs_.empty())
        loader = ModifyOutputs(std::move(loader), outputs_.value_or(std::vector<std::string>{}), exclude_outputs_);
    if (const auto* save = group<OnnxSaveArgs>(); save && save->path())
        loader = SaveOnnx(std::move(loader), *save->path());
    return loader;
}

std::optional<std::string> OnnxLoadArgs::unmodified_model_path() const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path() || outputs_ || !exclude_outputs_.empty() || external_data_dir_ || ignore_external_data_)
        return std::nullopt;
    if (const auto* save = group<OnnxSaveArgs>(); save && save->path()) return std::nullopt;
    // External data goes through OnnxFromPath, whose checks keep its locations inside the folder.
    if (onnx_file_may_use_external_data(*model.path())) return std::nullopt;
    return model.path();
}

bool OnnxInferShapesArgs::add_to_script(Script& /*script*/) const {
    return true;  // no effect in this build (see parse())
}

bool OnnxSaveArgs::add_to_script(Script& /*script*/) const {
    return true;  // part of OnnxLoadArgs' loader chain
}

bool OnnxLoadArgs::add_to_script(Script& /*script*/) const {
    return true;  // the loader chain is added by the runners that use it (add_onnx_loader)
}

std::string OnnxLoadArgs::add_onnx_loader(Script& script) const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path()) throw UsageError("An ONNX model is required, but no model file was provided");
    script.add_include("polygraphy/backend/onnx/loader.h");
    std::string expression = "OnnxLoader(OnnxFromPath(" + Script::quote(*model.path());
    if (external_data_dir_ || ignore_external_data_)
        expression += ", " + (external_data_dir_ ? Script::quote(*external_data_dir_) : std::string("std::nullopt"));
    if (ignore_external_data_) expression += ", true";
    expression += "))";
    std::string name = script.add_loader(expression, "load_onnx");
    if (outputs_ || !exclude_outputs_.empty()) {
        const std::string outputs = !outputs_               ? "std::vector<std::string>{}"
                                    : *outputs_ == kMarkAll ? "kMarkAll"
                                                            : Script::string_vector(*outputs_);
        std::string modify = "OnnxLoader(ModifyOutputs(" + name + ", " + outputs;
        if (!exclude_outputs_.empty()) modify += ", " + Script::string_vector(exclude_outputs_);
        name = script.add_loader(modify + "))", "modified_onnx");
    }
    if (const auto* save = group<OnnxSaveArgs>(); save && save->path())
        name =
            script.add_loader("OnnxLoader(SaveOnnx(" + name + ", " + Script::quote(*save->path()) + "))", "saved_onnx");
    return name;
}

}  // namespace polygraphy::tools
