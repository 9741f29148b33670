#include "tools/args/comparator/compare.h"

#include <algorithm>

#include "polygraphy/common/exception.h"
#include "tools/args/util.h"

namespace polygraphy::tools {
namespace {

const std::vector<std::string> kErrorStats = {"max", "mean", "median", "elemwise", "quantile"};

}  // namespace

std::vector<OptionSpec> CompareFuncSimpleArgs::options() const {
    return {
        Option({"--no-shape-check"}).kind(OptionKind::kFlag).help("Disable checking that output shapes match exactly"),
        Option({"--rtol", "--rel-tol"})
            .dest("rtol")
            .kind(OptionKind::kValues)
            .help("Relative tolerance for output comparison. This is expressed as a percentage of the second set of "
                  "output values. For example, a value of 0.01 would check that the first set of outputs is within 1% "
                  "of the second. To specify per-output tolerances, use the format: --rtol [<out_name>:]<rtol>. If no "
                  "output name is provided, the tolerance is used for any outputs not explicitly specified. For "
                  "example: --rtol 1e-5 out0:1e-4 out1:1e-3. Note that the default tolerance typically works well for "
                  "FP32 but may be too strict for lower precisions like FP16 or INT8."),
        Option({"--atol", "--abs-tol"})
            .dest("atol")
            .kind(OptionKind::kValues)
            .help("Absolute tolerance for output comparison. To specify per-output tolerances, use the format: --atol "
                  "[<out_name>:]<atol>. If no output name is provided, the tolerance is used for any outputs not "
                  "explicitly specified. For example: --atol 1e-5 out0:1e-4 out1:1e-3. Note that the default tolerance "
                  "typically works well for FP32 but may be too strict for lower precisions like FP16 or INT8."),
        Option({"--check-error-stat"})
            .kind(OptionKind::kValues)
            .help("The error statistic to check. For details on possible values, see the documentation for "
                  "CompareFunc.simple(). To specify per-output values, use the format: --check-error-stat "
                  "[<out_name>:]<stat>. If no output name is provided, the value is used for any outputs not "
                  "explicitly specified. For example: --check-error-stat max out0:mean out1:median"),
        Option({"--infinities-compare-equal"})
            .kind(OptionKind::kFlag)
            .help("If set, then any matching +-inf values in outputs will have an absdiff of 0. Otherwise, by default "
                  "they will have an absdiff of NaN."),
        Option({"--save-heatmaps"})
            .help(
                "[EXPERIMENTAL] Directory in which to save heatmaps of the absolute and relative error. Not available "
                "in this build"),
        Option({"--show-heatmaps"})
            .kind(OptionKind::kFlag)
            .help("[EXPERIMENTAL] Whether to display heatmaps of the absolute and relative error. Not available in "
                  "this build"),
        Option({"--save-error-metrics-plot"})
            .help("[EXPERIMENTAL] Path to directory to save error metrics plot(s). Not available in this build"),
        Option({"--show-error-metrics-plot"})
            .kind(OptionKind::kFlag)
            .help("[EXPERIMENTAL] Whether to display the error metrics plots. Not available in this build"),
        Option({"--error-quantile"})
            .kind(OptionKind::kValues)
            .help("The error quantile to compare. Float, valid range [0, 1]. To specify per-output values, use the "
                  "format: --error-quantile [<out_name>:]<stat>. If no output name is provided, the value is used for "
                  "any outputs not explicitly specified. For example: --error-quantile 0.95 out0:0.8 out1:0.9"),
    };
}

std::vector<std::string> CompareFuncSimpleArgs::option_dests() const {
    std::vector<std::string> dests;
    for (const auto& spec : options()) dests.push_back(option_dest(spec));
    return dests;
}

void CompareFuncSimpleArgs::parse(const ParsedArgs& args) {
    for (const char* dest : {"save_heatmaps", "show_heatmaps", "save_error_metrics_plot", "show_error_metrics_plot"}) {
        if (!args.has(dest)) continue;
        throw UnsupportedError(args.occurrences(dest).front().flag +
                               " is not available in this build (it needs matplotlib)");
    }
    options_ = SimpleCompareOptions{};
    options_.check_shapes = !args.flag("no_shape_check");
    options_.infinities_compare_equal = args.flag("infinities_compare_equal");
    if (args.has("rtol")) options_.rtol = args_util::parse_per_key_numbers("--rtol", args.values("rtol"), 0.0);
    if (args.has("atol")) options_.atol = args_util::parse_per_key_numbers("--atol", args.values("atol"), 0.0);
    if (args.has("error_quantile"))
        options_.error_quantile =
            args_util::parse_per_key_numbers("--error-quantile", args.values("error_quantile"), 0.0, 1.0);
    if (args.has("check_error_stat")) {
        for (const auto& [name, stat_name] :
             args_util::parse_per_key_strings("--check-error-stat", args.values("check_error_stat"))) {
            const auto stat = error_stat_from_name(stat_name);
            if (!stat || std::find(kErrorStats.begin(), kErrorStats.end(), stat_name) == kErrorStats.end())
                throw UsageError("Invalid choice for check_error_stat: " + stat_name +
                                 ".\nNote: Valid choices are: " + python_list_repr(kErrorStats));
            options_.check_error_stat.set(name, *stat);
        }
    }
}

std::vector<OptionSpec> CompareFuncIndicesArgs::options() const {
    return {
        Option({"--index-tolerance"})
            .kind(OptionKind::kValues)
            .help("Index tolerance for output comparison. For details on what this means, see the API documentation "
                  "for `CompareFunc.indices()`. To specify per-output tolerances, use the format: --index-tolerance "
                  "[<out_name>:]<index_tol>. If no output name is provided, the tolerance is used for any outputs not "
                  "explicitly specified. For example: --index_tolerance 1 out0:0 out1:3."),
    };
}

void CompareFuncIndicesArgs::parse(const ParsedArgs& args) {
    index_tolerance_ = OrderedMap<int64_t>();
    if (args.has("index_tolerance"))
        index_tolerance_ = args_util::parse_per_key_ints("--index-tolerance", args.values("index_tolerance"), 0);
}

bool CompareFuncSimpleArgs::add_to_job(RunJob& /*job*/) const {
    return true;
}

bool CompareFuncIndicesArgs::add_to_job(RunJob& /*job*/) const {
    return true;
}

}  // namespace polygraphy::tools
