#include "polygraphy/backend/base/runner.h"

#include <cctype>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <string_view>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

// `<prefix>-N<k>-<MM/DD/YY>-<HH:MM:SS>`, k counting per prefix, as Polygraphy names runners.
std::string make_runner_name(const std::string& prefix) {
    static std::mutex mutex;
    static std::map<std::string, int> counts;
    int count;
    {
        std::lock_guard<std::mutex> lock(mutex);
        count = counts[prefix]++;
    }
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%m/%d/%y-%H:%M:%S", &local);
    return prefix + "-N" + std::to_string(count) + "-" + stamp;
}

}  // namespace

std::string runner_name_without_time(const std::string& name) {
    // "-MM/DD/YY-HH:MM:SS": 18 characters, digits where the format has them.
    constexpr std::string_view kPattern = "-dd/dd/dd-dd:dd:dd";
    if (name.size() <= kPattern.size()) return name;
    const std::string_view stamp = std::string_view(name).substr(name.size() - kPattern.size());
    for (std::size_t i = 0; i < kPattern.size(); ++i) {
        const bool digit = std::isdigit(static_cast<unsigned char>(stamp[i])) != 0;
        if (kPattern[i] == 'd' ? !digit : stamp[i] != kPattern[i]) return name;
    }
    return name.substr(0, name.size() - kPattern.size());
}

BaseRunner::BaseRunner(const std::string& name_prefix, std::optional<std::string> name)
    : name_(name && !name->empty() ? *name : make_runner_name(name_prefix)) {}

BaseRunner::~BaseRunner() = default;

void BaseRunner::activate() {
    if (active_)
        throw PolygraphyException(name_ + " | Runner is already active; deactivate it before activating again.");
    activate_impl();
    active_ = true;
}

void BaseRunner::deactivate() {
    if (!active_) throw PolygraphyException(name_ + " | Runner is not active; activate it before deactivating.");
    active_ = false;
    deactivate_impl();
}

TensorMetadata BaseRunner::get_input_metadata() {
    if (!active_) throw PolygraphyException(name_ + " | Must be activated prior to calling get_input_metadata()");
    return get_input_metadata_impl();
}

TensorMap BaseRunner::infer(const TensorMap& feed, bool check_inputs) {
    if (!active_) throw PolygraphyException(name_ + " | Must be activated prior to calling infer()");

    if (check_inputs) {
        const TensorMetadata metadata = get_input_metadata_impl();
        for (const auto& [name, entry] : metadata) {
            const Tensor* tensor = feed.find(name);
            if (!tensor)
                throw InputError("Input tensor: " + name + " | Is missing from the feed.\nNote: expected inputs: " +
                                 metadata.to_string() + ", given: " + TensorMetadata::from_feed_dict(feed).to_string());
            if (entry.dtype && *entry.dtype != tensor->dtype())
                throw InputError("Input tensor: " + name + " | Received unexpected dtype.\nNote: expected dtype: " +
                                 std::string(dtype_name(*entry.dtype)) + ", received: " +
                                 std::string(dtype_name(tensor->dtype())));
            if (entry.shape && !shape_matches(tensor->shape(), *entry.shape))
                throw InputError("Input tensor: " + name + " | Received incompatible shape: " +
                                 shape_to_string(tensor->shape()) +
                                 ".\nNote: expected a shape compatible with: " + dyn_shape_to_string(*entry.shape));
        }
        for (const auto& [name, tensor] : feed) {
            if (!metadata.contains(name))
                throw InputError("Input tensor: " + name + " | Is not an input of the model.\nNote: expected inputs: " +
                                 metadata.to_string());
        }
    }

    backend_inference_time_.reset();
    const auto start = std::chrono::steady_clock::now();
    TensorMap outputs = infer_impl(feed);
    const auto end = std::chrono::steady_clock::now();
    last_inference_time_ = backend_inference_time_ ? *backend_inference_time_
                                                   : std::chrono::duration<double>(end - start).count();
    return outputs;
}

}  // namespace polygraphy

namespace polygraphy {

TensorMap clone(const TensorMap& outputs) {
    TensorMap copies;
    for (const auto& [name, tensor] : outputs) copies.set(name, tensor.clone());
    return copies;
}

}  // namespace polygraphy
