#include "tools/args/comparator/postprocess.h"

#include <cstdint>
#include <string_view>

#include "polygraphy/common/exception.h"
#include "tools/args/util.h"

namespace polygraphy::tools {
namespace {

constexpr const char* kFlag = "--postprocess";
constexpr const char* kFormat = "[<out_name>:]top-<K>[,axis=<axis>]";

// `top-<K>[,axis=<axis>]` (the part after the key). Throws UsageError naming the whole argument.
TopK parse_top_k(const std::string& arg, std::string_view value) {
    const auto fail = [&](const std::string& why) {
        throw UsageError("Invalid value in " + std::string(kFlag) + ": " + python_repr(arg) + ". Expected " + kFormat +
                         ", but " + why);
    };
    constexpr std::string_view kPrefix = "top-";
    if (value.substr(0, kPrefix.size()) != kPrefix)
        fail(python_repr(value) + " is not a post-processing function (valid choices are: ['top-<K>'])");
    value.remove_prefix(kPrefix.size());
    const std::size_t comma = value.find(',');
    const std::string_view k_text = value.substr(0, comma);
    TopK setting;
    const auto k = args_util::parse_int(k_text);
    if (!k || *k <= 0) fail("K " + python_repr(k_text) + " is not a positive integer");
    setting.k = *k;
    if (comma != std::string_view::npos) {
        std::string_view option = value.substr(comma + 1);
        constexpr std::string_view kAxis = "axis=";
        if (option.substr(0, kAxis.size()) != kAxis) fail(python_repr(option) + " is not axis=<axis>");
        option.remove_prefix(kAxis.size());
        const auto axis = args_util::parse_int(option);
        if (!axis) fail("the axis " + python_repr(option) + " is not an integer");
        setting.axis = *axis;
    }
    return setting;
}

}  // namespace

std::vector<OptionSpec> ComparatorPostprocessArgs::options() const {
    return {
        Option({"--postprocess", "--postprocess-func"})
            .dest("postprocess")
            .kind(OptionKind::kValues)
            .help("Apply post-processing on the specified outputs prior to comparison. Format: --postprocess "
                  "[<out_name>:]<func>. If no output name is provided, the function is applied to all outputs. For "
                  "example: `--postprocess out0:top-5 out1:top-3` or `--postprocess top-5`. Available "
                  "post-processing functions are: {top-<K>[,axis=<axis>]: Takes the indices of the K highest values "
                  "along the specified axis (defaulting to the last axis), where K is an integer, e.g. top-5 or "
                  "top-5,axis=1}"),
    };
}

void ComparatorPostprocessArgs::parse(const ParsedArgs& args) {
    top_k_ = PerOutput<TopK>();
    if (!args.has("postprocess")) return;
    for (const auto& arg : args.values("postprocess")) {
        const args_util::KeyValue kv = args_util::split_key_value(arg);
        top_k_.set(kv.key, parse_top_k(arg, kv.value));
    }
}

PostprocessFunc ComparatorPostprocessArgs::postprocess_func() const {
    if (!enabled()) return {};
    return postprocess_func::top_k(top_k_);
}

bool ComparatorPostprocessArgs::add_to_job(RunJob& job) const {
    job.postprocess = top_k_;
    return true;
}

}  // namespace polygraphy::tools
