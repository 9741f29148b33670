// OnnxrtRunnerArgs: parses the ONNX-Runtime session options and creates OnnxrtRunners.
#include "polygraphy/tools/args/backend/onnxrt_args.h"
#include "polygraphy/tools/script.h"

#include <charconv>

#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/tools/args/backend/onnx/loader.h"

namespace polygraphy::tools {
namespace {

constexpr const char* kProviders = "providers";
constexpr const char* kIntraOpThreads = "onnxrt_intra_op_threads";
constexpr const char* kInterOpThreads = "onnxrt_inter_op_threads";
constexpr const char* kOptimizationLevel = "onnxrt_graph_optimization_level";
constexpr const char* kExecutionMode = "onnxrt_execution_mode";

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
                    "ONNX-Runtime graph optimization level. Defaults to 'all'", {"disable", "basic", "extended", "all"}),
        make_option({"--onnxrt-execution-mode"}, kExecutionMode, OptionKind::kValue, "MODE",
                    "Whether ONNX-Runtime runs operators one at a time or independent ones in parallel. Defaults to "
                    "'sequential'",
                    {"sequential", "parallel"}),
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
    session_options_ = std::move(options);
}

std::optional<std::string> OnnxrtRunnerArgs::unavailable_reason() const {
    if (onnxrt::built_with_onnxruntime()) return std::nullopt;
    std::string reason;
    onnxrt::is_available(&reason);
    return reason;
}

std::unique_ptr<BaseRunner> OnnxrtRunnerArgs::make_runner() {
    onnxrt::load_library();  // report a missing ONNX-Runtime before any runner starts
    if (!model_loader_hook_) {
        if (auto path = required_group<OnnxLoadArgs>().unmodified_model_path())
            return std::make_unique<onnxrt::OnnxrtRunner>(onnxrt::SessionFromOnnx::from_path(*path, session_options_));
    }
    // Without a hook, the model comes from the tool's ONNX loading group, like every ONNX runner's.
    OnnxLoader model = model_loader_hook_ ? model_loader_hook_() : required_group<OnnxLoadArgs>().onnx_loader();
    if (!model) throw InternalError("OnnxrtRunnerArgs: the model loader hook returned an empty loader");
    return std::make_unique<onnxrt::OnnxrtRunner>(onnxrt::SessionFromOnnx(std::move(model), session_options_));
}

std::unique_ptr<RunnerArgGroup> make_onnxrt_runner_args(OnnxrtRunnerArgs::ModelLoaderHook model_loader_hook) {
    return std::make_unique<OnnxrtRunnerArgs>(std::move(model_loader_hook));
}

bool OnnxrtRunnerArgs::add_to_script(Script& script) const {
    if (model_loader_hook_) return false;  // the hook is code this process holds, not a script line
    script.add_include("polygraphy/backend/onnxrt/runner.h");
    // Only settings that differ from the defaults are written, as designated initializers.
    static const char* kLevels[] = {"kDisableAll", "kBasic", "kExtended", "kAll"};
    static const char* kModes[] = {"kSequential", "kParallel"};
    const onnxrt::SessionOptions defaults;
    const auto& o = session_options_;
    std::vector<std::string> fields;
    if (o.providers != defaults.providers) fields.push_back(".providers = " + Script::string_vector(o.providers));
    if (o.intra_op_num_threads != defaults.intra_op_num_threads)
        fields.push_back(".intra_op_num_threads = " + std::to_string(o.intra_op_num_threads));
    if (o.inter_op_num_threads != defaults.inter_op_num_threads)
        fields.push_back(".inter_op_num_threads = " + std::to_string(o.inter_op_num_threads));
    if (o.graph_optimization_level != defaults.graph_optimization_level)
        fields.push_back(std::string(".graph_optimization_level = onnxrt::GraphOptimizationLevel::") +
                         kLevels[static_cast<int>(o.graph_optimization_level)]);
    if (o.execution_mode != defaults.execution_mode)
        fields.push_back(std::string(".execution_mode = onnxrt::ExecutionMode::") +
                         kModes[static_cast<int>(o.execution_mode)]);
    std::string options;
    if (!fields.empty()) {
        options = ", onnxrt::SessionOptions{";
        for (std::size_t i = 0; i < fields.size(); ++i) options += (i ? ", " : "") + fields[i];
        options += "}";
    }
    std::string session;
    if (auto path = required_group<OnnxLoadArgs>().unmodified_model_path()) {
        session = script.add_loader("onnxrt::SessionFromOnnx::from_path(" + Script::quote(*path) + options + ")",
                                    "build_onnxrt_session");
    } else {
        const std::string model = required_group<OnnxLoadArgs>().add_onnx_loader(script);
        session = script.add_loader("onnxrt::SessionFromOnnx(" + model + options + ")", "build_onnxrt_session");
    }
    script.add_runner("std::make_unique<onnxrt::OnnxrtRunner>(" + session + ")");
    return true;
}

}  // namespace polygraphy::tools
