#include "tools/args/backend/unavailable.h"

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {
namespace {

// The first option of `options` that was given, by command-line position.
std::optional<std::string> first_given(const std::vector<OptionSpec>& options, const ParsedArgs& args) {
    std::optional<std::pair<std::size_t, std::string>> first;
    for (const auto& spec : options) {
        for (const auto& occurrence : args.occurrences(option_dest(spec)))
            if (!first || occurrence.position < first->first) first = {occurrence.position, occurrence.flag};
    }
    if (!first) return std::nullopt;
    return first->second;
}

OptionSpec flag(std::string name, std::string help) {
    return Option({std::move(name)}).kind(OptionKind::kFlag).help(std::move(help));
}

OptionSpec value(std::vector<std::string> names, std::string help, ValueType type = ValueType::kString) {
    return Option(std::move(names)).help(std::move(help)).type(type);
}

OptionSpec values(std::vector<std::string> names, std::string help, OptionKind kind = OptionKind::kValues) {
    return Option(std::move(names)).kind(kind).help(std::move(help));
}

std::unique_ptr<ArgGroup> trt_group(std::string title, std::string description, std::vector<OptionSpec> options) {
    return std::make_unique<UnavailableArgGroup>(UnavailableOptions{
        std::move(title), "Options related to " + description, kTensorRtUnavailable, std::move(options)});
}

std::unique_ptr<ArgGroup> tf_group(std::string title, std::string description, std::vector<OptionSpec> options) {
    return std::make_unique<UnavailableArgGroup>(UnavailableOptions{
        std::move(title), "Options related to " + description, kTensorFlowUnavailable, std::move(options)});
}

}  // namespace

void UnavailableOptions::check(const ParsedArgs& args) const {
    if (auto given = first_given(options, args)) throw UnsupportedError(reason + " (option: " + *given + ")");
}

RunnerStep UnavailableRunnerArgGroup::runner_step() const {
    throw UnsupportedError(spec_.reason + " (option: " + flag_ + ")");
}

std::unique_ptr<RunnerArgGroup> make_trt_runner_args() {
    return std::make_unique<UnavailableRunnerArgGroup>(
        UnavailableOptions{
            "TensorRT Inference",
            "Options related to running inference with TensorRT.",
            kTensorRtUnavailable,
            {
                value({"--optimization-profile"}, "The index of optimization profile to use for inference",
                      ValueType::kInt),
                Option({"--allocation-strategy"})
                    .help("The way activation memory is allocated")
                    .choices({"static", "profile", "runtime"}),
                value({"--weight-streaming-budget"}, "The amount of GPU memory that TensorRT can use for weights"),
            }},
        "TensorRT", "--trt");
}

std::vector<std::unique_ptr<ArgGroup>> make_trt_arg_groups(UnavailableArgsFor tool) {
    const bool run = tool == UnavailableArgsFor::kRun, convert = tool == UnavailableArgsFor::kConvert;
    std::vector<std::unique_ptr<ArgGroup>> groups;
    if (run || convert) {
        std::vector<OptionSpec> config = {
            values({"--trt-min-shapes"}, "The minimum shapes the optimization profile(s) will support"),
            values({"--trt-opt-shapes"}, "The shapes for which the optimization profile(s) will be most performant"),
            values({"--trt-max-shapes"}, "The maximum shapes the optimization profile(s) will support"),
            flag("--tf32", "Enable tf32 precision in TensorRT"),
            flag("--fp16", "Enable fp16 precision in TensorRT"),
            flag("--bf16", "Enable bf16 precision in TensorRT"),
            flag("--fp8", "Enable fp8 precision in TensorRT"),
            flag("--int8", "Enable int8 precision in TensorRT"),
            Option({"--precision-constraints"})
                .help("If set to `prefer`, TensorRT will restrict available tactics to layer precisions")
                .choices({"prefer", "obey", "none"}),
            flag("--sparse-weights", "Enable optimizations for sparse weights in TensorRT"),
            flag("--version-compatible", "Builds an engine designed to be forward TensorRT version compatible"),
            flag("--exclude-lean-runtime", "Exclude the lean runtime from a version compatible engine"),
            value({"--calibration-cache"}, "Path to load/save a calibration cache"),
            value({"--calib-base-cls", "--calibration-base-class"}, "The name of the calibration base class to use"),
            value({"--quantile"}, "The quantile to use for IInt8LegacyCalibrator", ValueType::kFloat),
            value({"--regression-cutoff"}, "The regression cutoff to use for IInt8LegacyCalibrator", ValueType::kFloat),
            value({"--load-timing-cache"}, "Path to load tactic timing cache"),
            flag("--error-on-timing-cache-miss", "Emit an error when a tactic being timed is not in the timing cache"),
            flag("--disable-compilation-cache", "Disable caching JIT-compiled code"),
            value({"--save-tactics", "--save-tactic-replay"}, "Path to save a Polygraphy tactic replay file"),
            value({"--load-tactics", "--load-tactic-replay"}, "Path to load a Polygraphy tactic replay file"),
            values({"--tactic-sources"}, "Tactic sources to enable", OptionKind::kAnyValues),
            value({"--trt-config-script"}, "Path to a Python script that creates a TensorRT IBuilderConfig"),
            value({"--trt-config-func-name"}, "[DEPRECATED] Name of the function in --trt-config-script"),
            value({"--trt-config-postprocess-script", "--trt-cpps"},
                  "[EXPERIMENTAL] Path to a Python script that modifies a TensorRT IBuilderConfig"),
            flag("--trt-safety-restricted", "Enable safety scope checking in TensorRT"),
            flag("--refittable", "Enable the engine to be refitted with new weights after it is built"),
            flag("--strip-plan", "Builds the engine with the refittable weights stripped"),
            flag("--use-dla", "[EXPERIMENTAL] Use DLA as the default device type"),
            flag("--allow-gpu-fallback", "[EXPERIMENTAL] Allow layers unsupported on the DLA to fall back to GPU"),
            values({"--pool-limit", "--memory-pool-limit"}, "Memory pool limits"),
            values({"--preview-features"}, "Preview features to enable", OptionKind::kAnyValues),
            value({"--builder-optimization-level"}, "The builder optimization level", ValueType::kInt),
            value({"--hardware-compatibility-level"}, "The hardware compatibility level to use for the engine"),
            value({"--max-aux-streams"}, "The maximum number of auxiliary streams", ValueType::kInt),
            values({"--quantization-flags"}, "Int8 quantization flags to enable", OptionKind::kAnyValues),
            value({"--profiling-verbosity"}, "The verbosity of NVTX annotations in the generated engine"),
            flag("--weight-streaming", "Build a weight streamable engine"),
            value({"--runtime-platform"}, "The target runtime platform of the TensorRT engine"),
        };
        if (convert) {
            config.push_back(value({"--engine-capability"}, "The desired engine capability"));
            config.push_back(flag("--direct-io", "Disallow reformatting layers at network input/output tensors"));
        }
        config.push_back(value({"--tiling-optimization-level"}, "The tiling optimization level"));
        groups.push_back(
            trt_group("TensorRT Builder Configuration", "creating the TensorRT BuilderConfig.", std::move(config)));
    }
    groups.push_back(trt_group("TensorRT Plugin Loading", "loading TensorRT plugins.",
                               {values({"--plugins"}, "Path(s) of plugin libraries to load")}));
    groups.push_back(trt_group("ONNX-TRT Parser Flags", "setting flags for TensorRT's ONNX parser",
                               {values({"--onnx-flags"}, "Flag(s) for adjusting the default parsing behavior"),
                                flag("--plugin-instancenorm", "Switch to clear the kNATIVE_INSTANCENORM flag")}));
    std::vector<OptionSpec> network;
    if (tool != UnavailableArgsFor::kInspectModel) {
        network.push_back(values({"--trt-outputs"}, "Name(s) of TensorRT output(s) to mark in the network"));
        network.push_back(values({"--trt-exclude-outputs"}, "Name(s) of TensorRT output(s) to unmark as outputs"));
    }
    network.push_back(values({"--layer-precisions"}, "Compute precision to use for each layer"));
    network.push_back(
        values({"--tensor-dtypes", "--tensor-datatypes"}, "Data type to use for each network I/O tensor"));
    if (convert) network.push_back(values({"--tensor-formats"}, "Formats to allow for each network I/O tensor"));
    network.push_back(value({"--trt-network-func-name"}, "[DEPRECATED] Name of the function that loads the network"));
    network.push_back(values({"--trt-network-postprocess-script", "--trt-npps"},
                             "Python script(s) that post-process the TensorRT network"));
    network.push_back(flag("--strongly-typed", "Mark the network as being strongly typed"));
    network.push_back(values({"--mark-debug"}, "Name(s) of tensors to mark as debug tensors"));
    network.push_back(flag("--mark-unfused-tensors-as-debug-tensors", "Mark unfused tensors as debug tensors"));
    groups.push_back(trt_group("TensorRT Network Loading", "loading TensorRT networks.", std::move(network)));
    if (run)
        groups.push_back(trt_group("TensorRT Engine Saving", "saving TensorRT engines.",
                                   {value({"--save-engine"}, "Path to save the TensorRT Engine")}));
    groups.push_back(
        trt_group("TensorRT Engine", "loading or building TensorRT engines.",
                  {value({"--save-timing-cache"}, "Path to save tactic timing cache if building an engine")}));
    if (!convert)
        groups.push_back(trt_group("TensorRT Engine", "loading TensorRT engines.",
                                   {value({"--load-runtime"}, "Path from which to load a runtime")}));
    return groups;
}

std::unique_ptr<RunnerArgGroup> make_tf_runner_args() {
    return std::make_unique<UnavailableRunnerArgGroup>(
        UnavailableOptions{"TensorFlow Inference",
                           "Options related to running inference with TensorFlow.",
                           kTensorFlowUnavailable,
                           {value({"--save-timeline"}, "[EXPERIMENTAL] Directory to save timeline JSON files")}},
        "TensorFlow", "--tf");
}

std::vector<std::unique_ptr<ArgGroup>> make_tf_arg_groups(UnavailableArgsFor tool) {
    const bool run = tool == UnavailableArgsFor::kRun, inspect = tool == UnavailableArgsFor::kInspectModel;
    std::vector<std::unique_ptr<ArgGroup>> groups;
    if (run)
        groups.push_back(tf_group(
            "TensorFlow-TensorRT Integration", "TensorFlow-TensorRT.",
            {Option({"--tftrt", "--use-tftrt"})
                 .dest("use_tftrt")
                 .kind(OptionKind::kFlag)
                 .help("Enable TF-TRT integration"),
             value({"--minimum-segment-size"}, "Minimum length of a segment to convert to TensorRT", ValueType::kInt),
             flag("--dynamic-op", "Enable dynamic mode (defers engine build until runtime)")}));
    std::vector<OptionSpec> loading = {value({"--ckpt"}, "[EXPERIMENTAL] Name of the checkpoint to load")};
    if (!inspect) loading.push_back(values({"--tf-outputs"}, "Name(s) of TensorFlow output(s)"));
    if (run) {
        loading.push_back(value({"--save-pb"}, "Path to save the TensorFlow frozen graphdef"));
        loading.push_back(value({"--save-tensorboard"}, "[EXPERIMENTAL] Path to save a TensorBoard visualization"));
    }
    loading.push_back(flag("--freeze-graph", "[EXPERIMENTAL] Attempt to freeze the graph"));
    groups.push_back(tf_group("TensorFlow Model Loading", "loading TensorFlow models.", std::move(loading)));
    if (run)
        groups.push_back(tf_group("TensorFlow Session Configuration", "creating the TensorFlow SessionConfig.",
                                  {value({"--gpu-memory-fraction"},
                                         "Maximum percentage of GPU memory TensorFlow can allocate", ValueType::kFloat),
                                   flag("--allow-growth", "Allow GPU memory allocated by TensorFlow to grow"),
                                   flag("--xla", "[EXPERIMENTAL] Attempt to run graph with xla")}));
    if (!inspect)
        groups.push_back(tf_group("TensorFlow-ONNX Model Conversion", "converting TensorFlow models to ONNX.",
                                  {value({"--opset"}, "Opset to use when converting to ONNX", ValueType::kInt)}));
    return groups;
}

}  // namespace polygraphy::tools
