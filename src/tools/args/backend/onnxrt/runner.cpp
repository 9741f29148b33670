// OnnxrtRunnerArgs: parses the ONNX-Runtime session options into the job's OnnxrtRunnerSteps.
#include "tools/args/backend/onnxrt/runner.h"

#include <charconv>

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {
namespace {

constexpr const char* kProviders = "providers";
constexpr const char* kIntraOpThreads = "onnxrt_intra_op_threads";
constexpr const char* kInterOpThreads = "onnxrt_inter_op_threads";
constexpr const char* kOptimizationLevel = "onnxrt_graph_optimization_level";
constexpr const char* kExecutionMode = "onnxrt_execution_mode";
constexpr const char* kSaveOptimizedModel = "onnxrt_save_optimized_model";
constexpr const char* kCustomOpLibs = "onnxrt_custom_op_libs";

int parse_thread_count(const ParsedArgs& args, const char* dest, const std::string& flag) {
    const std::optional<std::string> text = args.value(dest);
    if (!text) return 0;
    int value = -1;
    const char* end = text->data() + text->size();
    const auto [ptr, error] = std::from_chars(text->data(), end, value);
    if (error != std::errc() || ptr != end || value < 0)
        throw UsageError("Invalid value for " + flag + ": '" + *text +
                         "'.\nNote: expected a whole number >= 0 (0: ONNX-Runtime's default)");
    return value;
}

// Fields are moved in, not assigned from literals (GCC 12 reports a false -Wrestrict on the latter).
OptionSpec make_option(std::vector<std::string> flags, std::string dest, OptionKind kind, std::string metavar,
                       std::string help, std::vector<std::string> choices = {}) {
    OptionSpec spec;
    spec.flags = std::move(flags);
    spec.dest = std::move(dest);
    spec.kind = kind;
    spec.metavar = std::move(metavar);
    spec.help = std::move(help);
    spec.choices = std::move(choices);
    return spec;
}

}  // namespace

std::vector<OptionSpec> OnnxrtRunnerArgs::options() const {
    return {
        make_option({"--providers", "--execution-providers"}, kProviders, OptionKind::kValues, "PROVIDER",
                    "A list of execution providers to use in order of priority. Each provider may be either an exact "
                    "match or a case-insensitive partial match for the execution providers available in "
                    "ONNX-Runtime. For example, a value of 'cpu' would match the 'CPUExecutionProvider'"),
        make_option({"--onnxrt-intra-op-threads"}, kIntraOpThreads, OptionKind::kValue, "N",
                    "Threads ONNX-Runtime uses inside one operator. 0 (default) lets ONNX-Runtime choose"),
        make_option({"--onnxrt-inter-op-threads"}, kInterOpThreads, OptionKind::kValue, "N",
                    "Threads ONNX-Runtime uses to run independent operators in parallel execution mode. 0 (default) "
                    "lets ONNX-Runtime choose"),
        make_option({"--onnxrt-graph-optimization-level"}, kOptimizationLevel, OptionKind::kValue, "LEVEL",
                    "ONNX-Runtime graph optimization level. Defaults to 'all'",
                    {"disable", "basic", "extended", "all"}),
        make_option({"--onnxrt-execution-mode"}, kExecutionMode, OptionKind::kValue, "MODE",
                    "Whether ONNX-Runtime runs operators one at a time or independent ones in parallel. Defaults to "
                    "'sequential'",
                    {"sequential", "parallel"}),
        make_option({"--onnxrt-save-optimized-model"}, kSaveOptimizedModel, OptionKind::kValue, "FILE",
                    "Save the graph ONNX-Runtime runs, after its optimizations at --onnxrt-graph-optimization-level, "
                    "to FILE (its fused com.microsoft operators run on --ref too)"),
        make_option({"--onnxrt-custom-op-libs"}, kCustomOpLibs, OptionKind::kValues, "LIB",
                    "ONNX-Runtime custom-op libraries (shared libraries exporting RegisterCustomOps) to load into the "
                    "session, for models with custom operators. Their kernels on the built-in runtime come from "
                    "extension modules (--pluginref)"),
    };
}

void OnnxrtRunnerArgs::parse(const ParsedArgs& args) {
    onnxrt::SessionOptions options;
    if (args.has(kProviders)) {
        options.providers = args.values(kProviders);
        if (options.providers.empty()) throw UsageError("--providers needs at least one execution provider");
        for (const std::string& provider : options.providers)
            if (provider.empty()) throw UsageError("--providers: an execution provider name cannot be empty");
    }
    options.intra_op_num_threads = parse_thread_count(args, kIntraOpThreads, "--onnxrt-intra-op-threads");
    options.inter_op_num_threads = parse_thread_count(args, kInterOpThreads, "--onnxrt-inter-op-threads");
    if (const auto text = args.value(kOptimizationLevel)) {
        const auto level = onnxrt::graph_optimization_level_from_name(*text);
        if (!level)
            throw UsageError("Invalid value for --onnxrt-graph-optimization-level: '" + *text +
                             "'.\nNote: choose from: disable, basic, extended, all");
        options.graph_optimization_level = *level;
    }
    if (const auto text = args.value(kExecutionMode)) {
        const auto mode = onnxrt::execution_mode_from_name(*text);
        if (!mode)
            throw UsageError("Invalid value for --onnxrt-execution-mode: '" + *text +
                             "'.\nNote: choose from: sequential, parallel");
        options.execution_mode = *mode;
    }
    if (const auto path = args.value(kSaveOptimizedModel)) {
        if (path->empty()) throw UsageError("--onnxrt-save-optimized-model needs a file path");
        options.optimized_model_path = *path;
    }
    if (args.has(kCustomOpLibs)) {
        options.custom_op_libraries = args.values(kCustomOpLibs);
        if (options.custom_op_libraries.empty())
            throw UsageError("--onnxrt-custom-op-libs needs at least one library path");
        for (const std::string& library : options.custom_op_libraries)
            if (library.empty()) throw UsageError("--onnxrt-custom-op-libs: a library path cannot be empty");
    }
    session_options_ = std::move(options);
}

std::optional<std::string> OnnxrtRunnerArgs::unavailable_reason() const {
    if (onnxrt::built_with_onnxruntime()) return std::nullopt;
    std::string reason;
    onnxrt::is_available(&reason);
    return reason;
}

RunnerStep OnnxrtRunnerArgs::runner_step() const {
    return OnnxrtRunnerStep{session_options_};
}

bool OnnxrtRunnerArgs::add_to_job(RunJob& /*job*/) const {
    return true;
}

std::unique_ptr<RunnerArgGroup> make_onnxrt_runner_args() {
    return std::make_unique<OnnxrtRunnerArgs>();
}

}  // namespace polygraphy::tools
