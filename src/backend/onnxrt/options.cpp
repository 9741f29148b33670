// The parts of the ONNX-Runtime backend that need no library: provider matching, option names, and
// the session loader's description (built with or without ONNX Runtime).
#include <algorithm>
#include <cctype>

#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::onnxrt {
namespace {

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

}  // namespace

std::vector<std::string> resolve_providers(const std::vector<std::string>& requested,
                                           const std::vector<std::string>& available) {
    std::vector<std::string> resolved;
    for (const std::string& name : requested) {
        std::optional<std::string> match;
        if (std::find(available.begin(), available.end(), name) != available.end()) match = name;
        const std::string wanted = lower(name);
        for (std::size_t i = 0; !match && !wanted.empty() && i < available.size(); ++i) {
            const std::string candidate = lower(available[i]);
            if (candidate.find(wanted) != std::string::npos || wanted.find(candidate) != std::string::npos)
                match = available[i];
        }
        if (!match)
            throw PolygraphyException("Could not find specified ONNX-Runtime execution provider.\nNote: Requested "
                                      "provider was: " + name + ", but available providers are: " +
                                      python_list_repr(available));
        // The same provider twice would make ORT fail with a less clear message.
        if (std::find(resolved.begin(), resolved.end(), *match) == resolved.end()) resolved.push_back(*match);
    }
    return resolved;
}

std::optional<GraphOptimizationLevel> graph_optimization_level_from_name(const std::string& name) {
    const std::string key = lower(name);
    if (key == "disable") return GraphOptimizationLevel::kDisableAll;
    if (key == "basic") return GraphOptimizationLevel::kBasic;
    if (key == "extended") return GraphOptimizationLevel::kExtended;
    if (key == "all") return GraphOptimizationLevel::kAll;
    return std::nullopt;
}

std::optional<ExecutionMode> execution_mode_from_name(const std::string& name) {
    const std::string key = lower(name);
    if (key == "sequential") return ExecutionMode::kSequential;
    if (key == "parallel") return ExecutionMode::kParallel;
    return std::nullopt;
}

SessionFromOnnx::SessionFromOnnx(OnnxLoader model, Loader<std::string> bytes, std::optional<std::string> path,
                                 SessionOptions options)
    : model_(std::move(model)), bytes_(std::move(bytes)), path_(std::move(path)), options_(std::move(options)) {}

SessionFromOnnx::SessionFromOnnx(OnnxLoader model, SessionOptions options)
    : SessionFromOnnx(std::move(model), nullptr, std::nullopt, std::move(options)) {}

SessionFromOnnx SessionFromOnnx::from_bytes(Loader<std::string> model_bytes, SessionOptions options) {
    return SessionFromOnnx(nullptr, std::move(model_bytes), std::nullopt, std::move(options));
}

SessionFromOnnx SessionFromOnnx::from_path(std::string model_path, SessionOptions options) {
    return SessionFromOnnx(nullptr, nullptr, std::move(model_path), std::move(options));
}

}  // namespace polygraphy::onnxrt
