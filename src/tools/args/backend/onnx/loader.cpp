#include "tools/args/backend/onnx/loader.h"

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/model.h"
#include "tools/args/util.h"

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

std::optional<InferShapesStep> OnnxInferShapesArgs::step() const {
    if (!do_shape_inference_ && !force_fallback_) return std::nullopt;
    return InferShapesStep{force_fallback_};
}

void OnnxInferShapesArgs::infer_shapes(onnx::ModelProto& model) const {
    if (const auto infer = step()) polygraphy::infer_shapes(model, infer->force_fallback);
}

bool OnnxInferShapesArgs::add_to_job(RunJob& /*job*/) const {
    return true;
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

std::optional<SaveOnnxStep> OnnxSaveArgs::step() const {
    if (!path_) return std::nullopt;
    SaveOnnxStep step{*path_, std::nullopt};
    if (external_data_path_)
        step.external_data = ExternalDataOptions{*external_data_path_, external_data_size_threshold_};
    return step;
}

void OnnxSaveArgs::save(const onnx::ModelProto& model) const {
    const auto save_step = step();
    if (!save_step) throw InternalError("OnnxSaveArgs::save called without an output path");
    save_model(model, *save_step);
}

bool OnnxSaveArgs::add_to_job(RunJob& /*job*/) const {
    return true;
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
        Option({"--fp-to-bf16"}).kind(OptionKind::kFlag).help("As --fp-to-fp16, to bfloat16"),
        Option({"--node-block-list"})
            .dest("node_block_list")
            .kind(OptionKind::kValues)
            .metavar("NODE")
            .help("With --fp-to-fp16/--fp-to-bf16: node(s), by ONNX name, that stay in float32 (what `debug "
                  "precision` finds)"),
        Option({"--op-block-list"})
            .dest("op_block_list")
            .kind(OptionKind::kValues)
            .metavar("OP")
            .help("With --fp-to-fp16/--fp-to-bf16: op type(s) that stay in float32, besides the default ones"),
        Option({"--block-list-file"})
            .dest("block_list_file")
            .metavar("FILE.json")
            .help("With --fp-to-fp16/--fp-to-bf16: a JSON file of block lists, {\"node_block_list\": [...], "
                  "\"op_block_list\": [...]}, as `debug precision --save-block-list` writes it and "
                  "onnxconverter-common's convert_float_to_float16 takes them"),
    };
    if (config_.outputs_opt_prefix) {
        const std::string prefix = *config_.outputs_opt_prefix;
        options.push_back(
            Option({"--" + prefix + "outputs"})
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
    fp_to_16_bits_.reset();
    const bool to_fp16 = args.flag("fp_to_fp16"), to_bf16 = args.flag("fp_to_bf16");
    if (to_fp16 && to_bf16) throw UsageError("--fp-to-fp16 and --fp-to-bf16 exclude each other: give one");
    const bool lists = args.has("node_block_list") || args.has("op_block_list") || args.has("block_list_file");
    if (!to_fp16 && !to_bf16) {
        if (lists)
            throw UsageError(
                "--node-block-list, --op-block-list and --block-list-file apply to --fp-to-fp16 or --fp-to-bf16");
        return;
    }
    Fp16Options options;
    options.target = to_bf16 ? DataType::kBFloat16 : DataType::kFloat16;
    if (const auto path = args.value("block_list_file")) {
        Fp16BlockLists file = read_fp16_block_lists(*path);
        options.node_block_list = std::move(file.node_block_list);
        options.op_block_list = std::move(file.op_block_list);
    }
    for (const auto& name : args.values("node_block_list")) options.node_block_list.push_back(name);
    for (const auto& op : args.values("op_block_list")) options.op_block_list.push_back(op);
    fp_to_16_bits_ = std::move(options);
}

ModelJob OnnxLoadArgs::model_job() const {
    const auto& model = required_group<ModelArgs>();
    if (!model.path()) throw UsageError("An ONNX model is required, but no model file was provided");
    ModelJob job{*model.path(), external_data_dir_, ignore_external_data_, {}};
    if (const auto* infer = group<OnnxInferShapesArgs>())
        if (auto step = infer->step()) job.steps.push_back(*step);
    if (outputs_ || !exclude_outputs_.empty())
        job.steps.push_back(ModifyOutputsStep{outputs_.value_or(std::vector<std::string>{}), exclude_outputs_});
    if (fp_to_16_bits_) job.steps.push_back(ConvertToFp16Step{*fp_to_16_bits_});
    if (const auto* save = group<OnnxSaveArgs>(); config_.allow_saving && save)
        if (auto step = save->step()) job.steps.push_back(*step);
    return job;
}

OnnxLoader OnnxLoadArgs::onnx_loader() const {
    return build_model_loader(model_job());
}

bool OnnxLoadArgs::add_to_job(RunJob& job) const {
    if (required_group<ModelArgs>().path()) job.model = model_job();
    return true;
}

}  // namespace polygraphy::tools
