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

std::vector<std::unique_ptr<ArgGroup>> make_trt_arg_groups() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(trt_group(
        "TensorRT Builder Configuration", "creating the TensorRT BuilderConfig.",
        {
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
            value({"--calibration-cache"}, "Path to load/save a calibration cache"),
            value({"--load-timing-cache"}, "Path to load tactic timing cache"),
            value({"--save-tactics", "--save-tactic-replay"}, "Path to save a Polygraphy tactic replay file"),
            value({"--load-tactics", "--load-tactic-replay"}, "Path to load a Polygraphy tactic replay file"),
            values({"--tactic-sources"}, "Tactic sources to enable", OptionKind::kAnyValues),
            flag("--refittable", "Enable the engine to be refitted with new weights after it is built"),
            flag("--strip-plan", "Builds the engine with the refittable weights stripped"),
            flag("--use-dla", "[EXPERIMENTAL] Use DLA as the default device type"),
            flag("--allow-gpu-fallback", "[EXPERIMENTAL] Allow layers unsupported on the DLA to fall back to GPU"),
            values({"--pool-limit", "--memory-pool-limit"}, "Memory pool limits"),
            value({"--builder-optimization-level"}, "The builder optimization level", ValueType::kInt),
            value({"--max-aux-streams"}, "The maximum number of auxiliary streams", ValueType::kInt),
        }));
    groups.push_back(trt_group("TensorRT Plugin Loading", "loading TensorRT plugins.",
                               {values({"--plugins"}, "Path(s) of plugin libraries to load")}));
    groups.push_back(trt_group("ONNX-TRT Parser Flags", "setting flags for TensorRT's ONNX parser",
                               {values({"--onnx-flags"}, "Flag(s) for adjusting the default parsing behavior"),
                                flag("--plugin-instancenorm", "Switch to clear the kNATIVE_INSTANCENORM flag")}));
    groups.push_back(
        trt_group("TensorRT Network Loading", "loading TensorRT networks.",
                  {
                      values({"--trt-outputs"}, "Name(s) of TensorRT output(s) to mark in the network"),
                      values({"--trt-exclude-outputs"}, "Name(s) of TensorRT output(s) to unmark as outputs"),
                      values({"--layer-precisions"}, "Compute precision to use for each layer"),
                      values({"--tensor-dtypes", "--tensor-datatypes"}, "Data type to use for each network I/O tensor"),
                      values({"--tensor-formats"}, "Formats to allow for each network I/O tensor"),
                      value({"--trt-network-func-name"}, "[DEPRECATED] Name of the function that loads the network"),
                      values({"--trt-network-postprocess-script", "--trt-npps"},
                             "Python script(s) that post-process the TensorRT network"),
                      flag("--strongly-typed", "Mark the network as being strongly typed"),
                      values({"--mark-debug"}, "Name(s) of tensors to mark as debug tensors"),
                  }));
    groups.push_back(trt_group("TensorRT Engine Saving", "saving TensorRT engines.",
                               {value({"--save-engine"}, "Path to save the TensorRT Engine"),
                                value({"--save-timing-cache"}, "Path to save tactic timing cache")}));
    groups.push_back(trt_group("TensorRT Engine", "loading or building TensorRT engines.",
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

std::vector<std::unique_ptr<ArgGroup>> make_tf_arg_groups() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(tf_group(
        "TensorFlow-TensorRT Integration", "TensorFlow-TensorRT.",
        {flag("--tftrt", "Enable TF-TRT integration"),
         value({"--minimum-segment-size"}, "Minimum length of a segment to convert to TensorRT", ValueType::kInt),
         flag("--dynamic-op", "Enable dynamic mode (defers engine build until runtime)")}));
    groups.push_back(tf_group("TensorFlow Model Loading", "loading TensorFlow models.",
                              {value({"--ckpt"}, "[EXPERIMENTAL] Name of the checkpoint to load"),
                               values({"--tf-outputs"}, "Name(s) of TensorFlow output(s)"),
                               value({"--save-pb"}, "Path to save the TensorFlow frozen graphdef"),
                               value({"--save-tensorboard"}, "[EXPERIMENTAL] Path to save a TensorBoard visualization"),
                               flag("--freeze-graph", "[EXPERIMENTAL] Attempt to freeze the graph")}));
    groups.push_back(tf_group("TensorFlow Session Configuration", "creating the TensorFlow SessionConfig.",
                              {value({"--gpu-memory-fraction"},
                                     "Maximum percentage of GPU memory TensorFlow can allocate", ValueType::kFloat),
                               flag("--allow-growth", "Allow GPU memory allocated by TensorFlow to grow"),
                               flag("--xla", "[EXPERIMENTAL] Attempt to run graph with xla")}));
    groups.push_back(tf_group("TensorFlow-ONNX Model Conversion", "converting TensorFlow models to ONNX.",
                              {value({"--opset"}, "Opset to use when converting to ONNX", ValueType::kInt)}));
    return groups;
}

}  // namespace polygraphy::tools
