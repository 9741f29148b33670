#include "polygraphy/tools/args/backend/onnx/loader.h"
#include "polygraphy/tools/script.h"

#include <filesystem>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/tools/args/model.h"
#include "polygraphy/tools/args/util.h"

namespace polygraphy::tools {

// ---- OnnxInferShapesArgs -------------------------------------------------------------------------

std::vector<OptionSpec> OnnxInferShapesArgs::options() const {
    std::vector<OptionSpec> options;
    if (config_.default_on) {
        options.push_back(Option({"--no-shape-inference"})
                              .dest("no_shape_inference")
                              .kind(OptionKind::kFlag)
                              .help("Disable ONNX shape inference when loading the model"));
    } else {
        options.push_back(Option({"--shape-inference", "--do-shape-inference"})
                              .dest("do_shape_inference")
                              .kind(OptionKind::kFlag)
                              .help("Enable ONNX shape inference when loading the model"));
    }
    if (config_.allow_force_fallback)
        options.push_back(
            Option({"--force-fallback-shape-inference"})
                .kind(OptionKind::kFlag)
                .help("Force Polygraphy to use the built-in runtime to determine metadata for tensors in the graph. "
                      "This can be useful in cases where ONNX shape inference does not generate correct "
                      "information. Note that this will cause dynamic dimensions to become static"));
    options.push_back(Option({"--no-onnxruntime-shape-inference"})
                          .dest("allow_onnxruntime")
                          .kind(OptionKind::kFlag)
                          .help("Disable using ONNX-Runtime's shape inference utilities. Accepted for compatibility: "
                                "this build uses ONNX shape inference, or the built-in runtime for models ONNX shape "
                                "inference does not know"));
    return options;
}

void OnnxInferShapesArgs::parse(const ParsedArgs& args) {
    do_shape_inference_ = config_.default_on ? !args.flag("no_shape_inference") : args.flag("do_shape_inference");
    force_fallback_ = config_.allow_force_fallback && args.flag("force_fallback_shape_inference");
}

void OnnxInferShapesArgs::infer_shapes(onnx::ModelProto& model) const {
    if (!do_shape_inference_ && !force_fallback_) return;
    polygraphy::infer_shapes(model, force_fallback_);
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
                          .help("Whether to save weight data in external file(s). To use a non-default path, supply "
                                "the desired path as an argument. This is always a relative path; external data is "
                                "always written to the same directory as the model")
                          .const_value(""));
    options.push_back(Option({"--external-data-size-threshold"})
                          .help("The size threshold, in bytes, above which tensor data will be stored in the external "
                                "file. Tensors smaller that this threshold will remain in the ONNX file. Optionally, "
                                "use a `K`, `M`, or `G` suffix to indicate KiB, MiB, or GiB respectively. Has no "
                                "effect if `--save-external-data` is not set. Defaults to 1024 bytes"));
    options.push_back(Option({"--no-save-all-tensors-to-one-file"})
                          .dest("all_tensors_to_one_file")
                          .kind(OptionKind::kFlag)
                          .help("Do not save all tensors to a single file when saving external data. Accepted for "
                                "compatibility: this build always writes one external data file"));
    return options;
}

void OnnxSaveArgs::parse(const ParsedArgs& args) {
    path_ = args.value("save_onnx");
    external_data_path_ = args.value("external_data_path");
    external_data_size_threshold_ = 1024;
    if (auto threshold = args.value("external_data_size_threshold")) {
        external_data_size_threshold_ =
            static_cast<std::size_t>(args_util::parse_num_bytes("--external-data-size-threshold", *threshold));
        if (!external_data_path_)
            logger().warning("--external-data-size-threshold has no effect since --save-external-data is not set");
    }
    if (args.flag("all_tensors_to_one_file"))
        logger().warning("--no-save-all-tensors-to-one-file is not supported: all tensors are saved to one file");
}

void OnnxSaveArgs::save(const onnx::ModelProto& model) const {
    if (!path_) throw InternalError("OnnxSaveArgs::save called without an output path");
    // A missing output folder is created (by the atomic writer), as Polygraphy and the JSON outputs do.
    if (external_data_path_)
        save_onnx_with_external_data(model, *path_, ExternalDataOptions{*external_data_path_, external_data_size_threshold_});
    else
        save_onnx(model, *path_);
}

// ---- OnnxLoadArgs --------------------------------------------------------------------------------

std::vector<std::type_index> OnnxLoadArgs::depends_on() const {
    return {std::type_index(typeid(ModelArgs))};
}

std::vector<OptionSpec> OnnxLoadArgs::options() const {
    std::vector<OptionSpec> options = {
        Option({"--external-data-dir", "--load-external-data", "--ext"})
            .dest("external_data_dir")
            .help("Path to a directory containing external data for the model. Generally, this is only required if "
                  "the external data is not stored in the model directory."),
        Option({"--ignore-external-data"})
            .kind(OptionKind::kFlag)
            .help("Ignore external data and just load the model structure without any weights. The model will be "
                  "usable only for purposes that don't require weights, such as extracting subgraphs or inspecting "
                  "model structure. This can be useful in cases where external data is not available."),
        Option({"--fp-to-fp16"})
            .kind(OptionKind::kFlag)
            .help("Convert all floating point tensors in an ONNX model to 16-bit precision. Graph inputs and outputs "
                  "keep their types (Casts are inserted) and ops that need float32 stay in float32"),
    };
    if (config_.outputs_opt_prefix) {
        const std::string prefix = *config_.outputs_opt_prefix;
        options.push_back(Option({"--" + prefix + "outputs"})
                              .dest("onnx_outputs")
                              .kind(OptionKind::kValues)
                              .help("Name(s) of ONNX tensor(s) to mark as output(s). Using the special value 'mark all' "
                                    "indicates that all tensors should be used as outputs"));
        options.push_back(Option({"--" + prefix + "exclude-outputs"})
                              .dest("onnx_exclude_outputs")
                              .kind(OptionKind::kValues)
                              .help("[EXPERIMENTAL] Name(s) of ONNX output(s) to unmark as outputs."));
    }
    return options;
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
    fp_to_fp16_ = args.flag("fp_to_fp16");
}

OnnxLoader OnnxLoadArgs::onnx_loader() const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path()) throw UsageError("An ONNX model is required, but no model file was provided");
    OnnxLoader loader = OnnxFromPath(*model.path(), external_data_dir_, ignore_external_data_);
    if (const auto* infer = group<OnnxInferShapesArgs>();
        infer && (infer->do_shape_inference() || infer->force_fallback()))
        loader = extend(std::move(loader), [infer](OnnxModel& onnx_model) { infer->infer_shapes(*onnx_model); });
    if (outputs_ || !exclude_outputs_.empty())
        loader = ModifyOutputs(std::move(loader), outputs_.value_or(std::vector<std::string>{}), exclude_outputs_);
    if (fp_to_fp16_) loader = extend(std::move(loader), [](OnnxModel& onnx_model) { convert_to_fp16(*onnx_model); });
    if (const auto* save = group<OnnxSaveArgs>(); config_.allow_saving && save && save->path())
        loader = extend(std::move(loader), [save](OnnxModel& onnx_model) { save->save(*onnx_model); });
    return loader;
}

std::optional<std::string> OnnxLoadArgs::unmodified_model_path() const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path() || outputs_ || !exclude_outputs_.empty() || external_data_dir_ || ignore_external_data_ ||
        fp_to_fp16_)
        return std::nullopt;
    if (const auto* infer = group<OnnxInferShapesArgs>();
        infer && (infer->do_shape_inference() || infer->force_fallback()))
        return std::nullopt;
    if (const auto* save = group<OnnxSaveArgs>(); config_.allow_saving && save && save->path()) return std::nullopt;
    // External data goes through OnnxFromPath, whose checks keep its locations inside the folder.
    if (onnx_file_may_use_external_data(*model.path())) return std::nullopt;
    return model.path();
}

bool OnnxInferShapesArgs::add_to_script(Script& /*script*/) const {
    return true;  // part of OnnxLoadArgs' loader chain (add_onnx_loader)
}

bool OnnxSaveArgs::add_to_script(Script& /*script*/) const {
    return true;  // part of OnnxLoadArgs' loader chain
}

bool OnnxLoadArgs::add_to_script(Script& /*script*/) const {
    return true;  // the loader chain is added by the runners that use it (add_onnx_loader)
}

std::string OnnxLoadArgs::add_onnx_loader(Script& script) const {
    // The same chain as onnx_loader(), step for step.
    const auto& model = required_group<ModelArgs>();
    if (!model.path()) throw UsageError("An ONNX model is required, but no model file was provided");
    script.add_include("polygraphy/backend/onnx/loader.h");
    std::string expression = "OnnxLoader(OnnxFromPath(" + Script::quote(*model.path());
    if (external_data_dir_ || ignore_external_data_)
        expression += ", " + (external_data_dir_ ? Script::quote(*external_data_dir_) : std::string("std::nullopt"));
    if (ignore_external_data_) expression += ", true";
    expression += "))";
    std::string name = script.add_loader(expression, "load_onnx");
    if (const auto* infer = group<OnnxInferShapesArgs>();
        infer && (infer->do_shape_inference() || infer->force_fallback())) {
        script.add_include("polygraphy/backend/onnx/graph.h");
        name = script.add_loader("extend(" + name + ", [](OnnxModel& model) { infer_shapes(*model" +
                                     (infer->force_fallback() ? ", true" : "") + "); })",
                                 "shape_inferred_onnx");
    }
    if (outputs_ || !exclude_outputs_.empty()) {
        const std::string outputs = !outputs_               ? "std::vector<std::string>{}"
                                    : *outputs_ == kMarkAll ? "kMarkAll"
                                                            : Script::string_vector(*outputs_);
        std::string modify = "OnnxLoader(ModifyOutputs(" + name + ", " + outputs;
        if (!exclude_outputs_.empty()) modify += ", " + Script::string_vector(exclude_outputs_);
        name = script.add_loader(modify + "))", "modified_onnx");
    }
    if (fp_to_fp16_) {
        script.add_include("polygraphy/backend/onnx/graph.h");
        name = script.add_loader("extend(" + name + ", [](OnnxModel& model) { convert_to_fp16(*model); })", "fp16_onnx");
    }
    if (const auto* save = group<OnnxSaveArgs>(); config_.allow_saving && save && save->path()) {
        if (save->external_data_path()) {
            script.add_include("polygraphy/backend/onnx/graph.h");
            name = script.add_loader(
                "extend(" + name + ", [](OnnxModel& model) { save_onnx_with_external_data(*model, " +
                    Script::quote(*save->path()) + ", ExternalDataOptions{" + Script::quote(*save->external_data_path()) +
                    ", " + std::to_string(save->external_data_size_threshold()) + "}); })",
                "saved_onnx");
        } else {
            name = script.add_loader("OnnxLoader(SaveOnnx(" + name + ", " + Script::quote(*save->path()) + "))",
                                     "saved_onnx");
        }
    }
    return name;
}

}  // namespace polygraphy::tools
