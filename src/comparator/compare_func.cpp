// CompareFunc::simple: Polygraphy's elementwise/statistical comparison of two iterations' outputs.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "comparator/comparison_log.h"
#include "comparator/differences.h"
#include "comparator/plots.h"
#include "comparator/slice_context.h"
#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/numpy_print.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/data_loader.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy {

std::optional<ErrorStat> error_stat_from_name(const std::string& name) {
    if (name == "elemwise") return ErrorStat::kElemwise;
    if (name == "max") return ErrorStat::kMax;
    if (name == "mean") return ErrorStat::kMean;
    if (name == "median") return ErrorStat::kMedian;
    if (name == "quantile") return ErrorStat::kQuantile;
    return std::nullopt;
}

std::string error_stat_name(ErrorStat stat) {
    switch (stat) {
        case ErrorStat::kElemwise:
            return "elemwise";
        case ErrorStat::kMax:
            return "max";
        case ErrorStat::kMean:
            return "mean";
        case ErrorStat::kMedian:
            return "median";
        case ErrorStat::kQuantile:
            return "quantile";
    }
    return "elemwise";
}

namespace {

using stats::ArrayStats;
using namespace comparison;
using stats::format_g;
using stats::detail::indent_block;
using stats::detail::log_output_stats;

std::string pad35(const std::string& name) {
    return name.size() >= 35 ? name : name + std::string(35 - name.size(), ' ');
}

std::string describe(const Tensor& tensor) {
    return "dtype=" + std::string(dtype_name(tensor.dtype())) + ", shape=" + shape_to_string(tensor.shape());
}

ArrayStats stats_of(const Tensor& tensor, const std::vector<double>& extra_quantiles) {
    return stats::compute_stats(tensor, extra_quantiles);
}

// Python's min()/max() of two floats (NaN-order dependent, like the builtins).
double python_min(double a, double b) {
    return b < a ? b : a;
}
double python_max(double a, double b) {
    return b > a ? b : a;
}

// A 1-D tensor of the elements of `tensor` at `indices` (numpy `out[mismatches]`).
Tensor gather(const Tensor& tensor, const std::vector<int64_t>& indices) {
    Tensor out(tensor.dtype(), Shape{static_cast<int64_t>(indices.size())});
    const std::size_t element = dtype_size(tensor.dtype());
    for (std::size_t i = 0; i < indices.size(); ++i)
        std::memcpy(static_cast<unsigned char*>(out.data()) + i * element,
                    static_cast<const unsigned char*>(tensor.data()) + static_cast<std::size_t>(indices[i]) * element,
                    element);
    return out;
}

struct OutputSettings {
    double atol, rtol, quantile;
    ErrorStat stat;
};

using MatchFn =
    std::function<OutputCompareResult(const std::string& name0, const Tensor& output0, const std::string& name1,
                                      const Tensor& output1, const std::string& runner0, const std::string& runner1)>;

// compare.py default_find_output_func.
std::optional<std::string> find_output(const std::string& name0, std::size_t index,
                                       const std::vector<std::string>& names0, const std::vector<std::string>& names1,
                                       const std::string& runner1) {
    const std::optional<std::string> found = find_str_in_list(name0, names1, index);
    if (!found) return std::nullopt;
    if (*found != name0) {
        const std::optional<std::string> exact = find_str_in_list(*found, names0);
        if (exact && *exact == *found) {
            logger().verbose("Will not compare " + *found + " with " + name0 +
                             ", since the former already has an exact match: " + *exact);
            return std::nullopt;
        }
        logger().warning("Output names did not match exactly. Assuming " + runner1 + " output: " + *found +
                         " corresponds to output: " + name0);
    }
    return found;
}

// compare.py run_comparison: each output of the first result against its match in the second.
IterationCompareResult run_comparison(const IterationResult& first, const IterationResult& second, bool fail_fast,
                                      const MatchFn& match) {
    const std::vector<std::string> names0 = first.outputs.keys(), names1 = second.outputs.keys();
    IterationCompareResult status;
    for (std::size_t index = 0; index < names0.size(); ++index) {
        const std::string& name0 = names0[index];
        const std::optional<std::string> name1 = find_output(name0, index, names0, names1, second.runner_name);
        if (!name1) continue;
        const Tensor& output0 = first.outputs.at(name0);
        const Tensor& output1 = second.outputs.at(*name1);
        logger().start("Comparing Output: '" + name0 + "' (" + describe(output0) + ") with '" + *name1 + "' (" +
                       describe(output1) + ")");
        auto guard = logger().indent();
        OutputCompareResult result = match(name0, output0, *name1, output1, first.runner_name, second.runner_name);
        result.output_name = name0;
        result.other_name = *name1;
        const bool passed = result.passed;
        status.set(name0, std::move(result));
        if (fail_fast && !passed) return status;
    }

    const bool no_common_outputs = status.empty() && (!names0.empty() || !names1.empty());
    comparator_detail::SliceContext* slice = comparator_detail::SliceContext::current();
    if (slice && !no_common_outputs)
        slice->defer_summary();
    else
        comparator_detail::log_iteration_summary(status);

    if (no_common_outputs)
        throw PolygraphyException("All outputs were skipped, no common outputs found!\nNote: " + first.runner_name +
                                  " outputs: " + python_list_repr(names0) + "\nNote: " + second.runner_name +
                                  " outputs: " + python_list_repr(names1));
    return status;
}

class SimpleComparer {
public:
    explicit SimpleComparer(SimpleCompareOptions options) : options_(std::move(options)) {}

    IterationCompareResult operator()(const IterationResult& first, const IterationResult& second) const {
        const std::vector<std::string> names0 = first.outputs.keys(), names1 = second.outputs.keys();
        // A slice of the outputs cannot tell a key naming no output from one naming another slice's.
        const comparator_detail::SliceContext* slice = comparator_detail::SliceContext::current();
        if (!slice || !slice->partial()) {
            check_dict_keys(options_.rtol.keys(), "the rtol dictionary", names0, names1);
            check_dict_keys(options_.atol.keys(), "the atol dictionary", names0, names1);
            check_dict_keys(options_.check_error_stat.keys(), "the check_error_stat dictionary", names0, names1);
            check_dict_keys(options_.error_quantile.keys(), "the quantile dictionary", names0, names1);
        }
        if (!options_.check_shapes)
            logger().info("Strict shape checking disabled. Will attempt to match output shapes before comparisons");

        return run_comparison(first, second, options_.fail_fast,
                              [this](const std::string& name0, const Tensor& output0, const std::string& name1,
                                     const Tensor& output1, const std::string& runner0, const std::string& runner1) {
                                  return match(name0, output0, name1, output1, runner0, runner1);
                              });
    }

private:
    static void check_dict_keys(const std::vector<std::string>& keys, const std::string& dict_name,
                                const std::vector<std::string>& names0, const std::vector<std::string>& names1) {
        std::set<std::string> items(names0.begin(), names0.end());
        items.insert(names1.begin(), names1.end());
        items.insert("");
        std::vector<std::string> extra;
        for (const std::string& key : keys)
            if (!items.count(key)) extra.push_back(key);
        if (extra.empty()) return;
        const std::vector<std::string> item_list(items.begin(), items.end());
        const std::set<std::string> key_set(keys.begin(), keys.end());
        logger().warning("Extra items in " + dict_name + ": " + set_repr(extra) +
                         ".\nNote: items requested were: " + set_repr(item_list) +
                         ", but all items are: " + set_repr(std::vector<std::string>(key_set.begin(), key_set.end())));
    }

    static std::string set_repr(const std::vector<std::string>& items) {
        const std::string list = python_list_repr(items);
        return "{" + list.substr(1, list.size() - 2) + "}";
    }

    OutputSettings settings_for(const std::string& name) const {
        return {per_output_value(options_.atol, name, 1e-5), per_output_value(options_.rtol, name, 1e-5),
                per_output_value(options_.error_quantile, name, 0.99),
                per_output_value(options_.check_error_stat, name, ErrorStat::kElemwise)};
    }

    OutputCompareResult match(const std::string& name0, const Tensor& output0, const std::string& name1,
                              const Tensor& output1, const std::string& runner0, const std::string& runner1) const {
        const OutputSettings settings = settings_for(name0);
        OutputCompareResult result;
        result.output_name = name0;
        result.other_name = name1;
        result.atol = settings.atol;
        result.rtol = settings.rtol;
        result.check_error_stat = settings.stat;
        logger().info("Tolerance: [abs=" + format_g(settings.atol, 5) + ", rel=" + format_g(settings.rtol, 5) +
                      "] | Checking " + error_stat_name(settings.stat) + " error");
        logger().extra_verbose("Note: Comparing " + runner0 + " vs. " + runner1);

        if (options_.check_shapes && output0.shape() != output1.shape()) {
            result.error = "Will not compare outputs of different shapes.";
            logger().error("FAILED | Output: `" + name0 +
                           "` | Will not compare outputs of different shapes.\nNote: Output shapes are " +
                           shape_to_string(output0.shape()) + " and " + shape_to_string(output1.shape()) + ".");
            logger().log_once(
                Severity::kError,
                "Note: Use --no-shape-check or set check_shapes=False to attempt to compare values anyway.");
            return result;
        }
        if (output0.dtype() == DataType::kString || output1.dtype() == DataType::kString ||
            output0.dtype() == DataType::kComplex64 || output1.dtype() == DataType::kComplex64 ||
            output0.dtype() == DataType::kComplex128 || output1.dtype() == DataType::kComplex128) {
            result.error = "Cannot compare outputs of types " + std::string(dtype_name(output0.dtype())) + " and " +
                           std::string(dtype_name(output1.dtype()));
            logger().error("FAILED | Output: '" + name0 + "' | " + result.error);
            return result;
        }

        const Tensor matched1 = try_match_shape(output1, to_dyn_shape(output0.shape()), [](const DynShape& shape) {
            // Array shapes print as tuples (Polygraphy passes output0.shape here).
            Shape dims;
            for (const Dim& dim : shape) dims.push_back(dim.value);
            return shape_to_string(dims);
        });
        if (matched1.numel() != output0.numel()) {
            result.error = "Could not match the shape of '" + name1 + "' " + shape_to_string(output1.shape()) +
                           " to the shape of '" + name0 + "' " + shape_to_string(output0.shape());
            logger().error("FAILED | Output: '" + name0 + "' | " + result.error);
            return result;
        }
        const Tensor matched0 = output0.reshaped(matched1.shape());

        check_outputs_match(matched0, name0, matched1, name1, settings, runner0, runner1, result);
        const std::string tolerances =
            "(rel=" + python_float_repr(settings.rtol) + ", abs=" + python_float_repr(settings.atol) + ")";
        if (!result.passed)
            logger().error("FAILED | Output: '" + name0 + "' | Difference exceeds tolerance " + tolerances);
        else
            logger().finish("PASSED | Output: '" + name0 + "' | Difference is within tolerance " + tolerances);
        return result;
    }

    Differences differences(const Tensor& out0, const Tensor& out1, const OutputSettings& settings,
                            const std::vector<double>& extra_quantiles, bool want_output_stats) const {
        if (out0.dtype() == DataType::kBool && out1.dtype() == DataType::kBool)
            return compute_bool_differences(out0, out1, settings.stat == ErrorStat::kElemwise, settings.atol,
                                            settings.rtol, *pool_);

        const DataType up0 = cast_up(out0.dtype()), up1 = cast_up(out1.dtype());
        const DataType compute = promote(up0, up1);
        SweepOptions sweep;
        sweep.b_float = dtype_is_floating(up1);
        // The epsilon is added in the second output's (cast-up) dtype.
        sweep.epsilon = up1 == DataType::kFloat32 ? static_cast<double>(static_cast<float>(kEpsilon)) : kEpsilon;
        sweep.infinities_equal = options_.infinities_compare_equal;
        sweep.atol = settings.atol;
        sweep.rtol = settings.rtol;
        sweep.extra_quantiles = extra_quantiles;
        sweep.pool = pool_.get();
        // An output's statistics can come from the float32 sweep when its float32 values are its cast_up.
        auto float_like = [](DataType dtype) { return cast_up(dtype) == DataType::kFloat32; };
        if (want_output_stats && float_like(out0.dtype())) sweep.stats0_dtype = out0.dtype();
        if (want_output_stats && float_like(out1.dtype())) sweep.stats1_dtype = out1.dtype();

        const Shape& shape = out0.shape();
        auto run = [&](auto tag, DataType t_dtype, auto rtag, DataType r_dtype) {
            using T = decltype(tag);
            using R = decltype(rtag);
            std::unique_ptr<T[]> storage0, storage1;
            const T* a = as_type<T>(out0, t_dtype, storage0);
            const T* b = as_type<T>(out1, t_dtype, storage1);
            return compute_differences<T, R>(a, b, shape, t_dtype, r_dtype, sweep);
        };
        switch (compute) {
            case DataType::kFloat32:
                return run(float{}, DataType::kFloat32, float{}, DataType::kFloat32);
            case DataType::kFloat64:
                return run(double{}, DataType::kFloat64, double{}, DataType::kFloat64);
            case DataType::kInt32:
                return run(int32_t{}, DataType::kInt32, double{}, DataType::kFloat64);
            case DataType::kUInt64:
                return run(uint64_t{}, DataType::kUInt64, double{}, DataType::kFloat64);
            case DataType::kInt64:
                return run(int64_t{}, DataType::kInt64, double{}, DataType::kFloat64);
            default:
                break;  // bool + bool is handled above
        }
        throw UnsupportedError("Cannot compare outputs of types " + std::string(dtype_name(out0.dtype())) + " and " +
                               std::string(dtype_name(out1.dtype())));
    }

    void log_mismatches(const Tensor& out0, const Tensor& out1, const Differences& diffs,
                        const OutputSettings& settings, const std::string& runner0, const std::string& runner1) const {
        if (!logger().enabled(Severity::kExtraVerbose)) return;
        std::vector<int64_t> indices;
        const int64_t n = out0.numel();
        for (int64_t i = 0; i < n; ++i) {
            const double d = diffs.absdiff.value_as_double(i), r = diffs.reldiff.value_as_double(i);
            if ((d > settings.atol || std::isnan(d)) && (r > settings.rtol || std::isnan(r))) indices.push_back(i);
        }
        auto guard = logger().indent();
        if (logger().enabled(Severity::kSuperVerbose)) {
            const int64_t rank = out0.rank();
            Tensor where(DataType::kInt64, Shape{static_cast<int64_t>(indices.size()), rank});
            int64_t* data = where.data_as<int64_t>();
            for (std::size_t k = 0; k < indices.size(); ++k) {
                int64_t flat = indices[k];
                for (int64_t axis = rank; axis-- > 0;) {
                    data[static_cast<int64_t>(k) * rank + axis] = flat % out0.shape()[static_cast<std::size_t>(axis)];
                    flat /= out0.shape()[static_cast<std::size_t>(axis)];
                }
            }
            logger().super_verbose("Mismatched indices:\n" + numpy::array_str(where));
        }
        logger().extra_verbose(pad35(runner0) + " | Mismatched values:\n" +
                               numpy::array_str(gather(out0, indices)));
        logger().extra_verbose(pad35(runner1) + " | Mismatched values:\n" +
                               numpy::array_str(gather(out1, indices)));
    }

    void check_outputs_match(const Tensor& out0, const std::string& name0, const Tensor& out1, const std::string& name1,
                             const OutputSettings& settings, const std::string& runner0, const std::string& runner1,
                             OutputCompareResult& result) const {
        if (logger().enabled(Severity::kSuperVerbose)) {
            logger().super_verbose(pad35(runner0) + " | Output: " + name0 + " (" + describe(out0) + "):\n" +
                                   indent_block(numpy::array_str(out0)));
            logger().super_verbose(pad35(runner1) + " | Output: " + name1 + " (" + describe(out1) + "):\n" +
                                   indent_block(numpy::array_str(out1)));
        }

        // The quantile is only checked for the "quantile" statistic; an invalid one is an error there only.
        std::vector<double> extra;
        if (settings.stat == ErrorStat::kQuantile || (settings.quantile >= 0.0 && settings.quantile <= 1.0))
            extra.push_back(settings.quantile);
        const bool show_outputs = logger().enabled(Severity::kInfo);
        const Differences diffs = differences(out0, out1, settings, extra, show_outputs);
        if (diffs.second_has_zero && dtype_is_floating(cast_up(out1.dtype())))
            logger().log_once(Severity::kWarning,
                              pad35(runner1) + " | Output: " + name1 +
                                  ": Some values are 0. Will add a small epsilon quantity to these when computing "
                                  "relative difference. Note that this may cause some relative differences to be "
                                  "extremely high. ");

        const ArrayStats abs_stats = diffs.abs_stats ? *diffs.abs_stats : stats_of(diffs.absdiff, extra);
        const ArrayStats rel_stats = diffs.rel_stats ? *diffs.rel_stats : stats_of(diffs.reldiff, extra);
        // Bool XOR differences have no quantiles (numpy cannot compute them); Polygraphy would fail there.
        const double abs_quantile = abs_stats.quantiles.empty() ? abs_stats.max : abs_stats.quantiles[0];
        const double rel_quantile = rel_stats.quantiles.empty() ? rel_stats.max : rel_stats.quantiles[0];

        auto stat_failed = [](double diff, double tolerance) { return std::isnan(diff) || diff > tolerance; };
        bool failed = false;
        switch (settings.stat) {
            case ErrorStat::kMean:
                failed = stat_failed(abs_stats.mean, settings.atol) && stat_failed(rel_stats.mean, settings.rtol);
                break;
            case ErrorStat::kMedian:
                failed = stat_failed(abs_stats.median, settings.atol) && stat_failed(rel_stats.median, settings.rtol);
                break;
            case ErrorStat::kMax:
                failed = stat_failed(abs_stats.max, settings.atol) && stat_failed(rel_stats.max, settings.rtol);
                break;
            case ErrorStat::kQuantile:
                failed = stat_failed(abs_quantile, settings.atol) && stat_failed(rel_quantile, settings.rtol);
                break;
            case ErrorStat::kElemwise:
                failed = diffs.mismatched;
                log_mismatches(out0, out1, diffs, settings, runner0, runner1);
                break;
        }

        if (show_outputs) {
            const ArrayStats stats0 = diffs.stats0 ? *diffs.stats0 : stats_of(out0, {});
            const ArrayStats stats1 = diffs.stats1 ? *diffs.stats1 : stats_of(out1, {});
            const std::pair<double, double> hist_range = {python_min(stats0.min, stats1.min),
                                                          python_max(stats0.max, stats1.max)};
            log_output_stats(out0, stats0, failed, runner0 + ": " + name0, hist_range);
            log_output_stats(out1, stats1, failed, runner1 + ": " + name1, hist_range);
        }

        result.passed = !failed;
        result.max_absdiff = abs_stats.max;
        result.max_reldiff = rel_stats.max;
        result.mean_absdiff = abs_stats.mean;
        result.mean_reldiff = rel_stats.mean;
        result.median_absdiff = abs_stats.median;
        result.median_reldiff = rel_stats.median;
        result.quantile_absdiff = abs_quantile;
        result.quantile_reldiff = rel_quantile;
        switch (settings.stat) {
            case ErrorStat::kMean:
                result.required_atol = abs_stats.mean, result.required_rtol = rel_stats.mean;
                break;
            case ErrorStat::kMedian:
                result.required_atol = abs_stats.median, result.required_rtol = rel_stats.median;
                break;
            case ErrorStat::kQuantile:
                result.required_atol = abs_quantile, result.required_rtol = rel_quantile;
                break;
            default:
                result.required_atol = abs_stats.max, result.required_rtol = rel_stats.max;
        }

        logger().info("Error Metrics: " + name0);
        {
            auto guard = logger().indent();
            std::string message = "Minimum Required Tolerance: " + error_stat_name(settings.stat) +
                                  " error | [abs=" + format_g(result.required_atol, 5) +
                                  "] OR [rel=" + format_g(result.required_rtol, 5) + "]";
            if (settings.stat == ErrorStat::kElemwise)
                message += " (requirements may be lower if both abs/rel tolerances are set)";
            else if (settings.stat == ErrorStat::kQuantile)
                message += " (quantile=" + format_g(settings.quantile, 4) + ")";
            logger().info(message);
            if (const auto dir = figure_dir(options_.save_error_metrics_plot, options_.show_error_metrics_plot,
                                            "error-metrics", metrics_show_dir_)) {
                auto plot_guard = logger().indent();
                plots::save_error_metrics_plot(diffs.absdiff, diffs.reldiff, out1, runner0, runner1, name0, name1,
                                               *dir);
            }
            const auto heatmap_dir =
                figure_dir(options_.save_heatmaps, options_.show_heatmaps, "heatmaps", heatmaps_show_dir_);
            log_output_stats(diffs.absdiff, abs_stats, failed, "Absolute Difference", std::nullopt);
            if (heatmap_dir) {
                auto plot_guard = logger().indent();
                plots::save_heatmaps(diffs.absdiff, "Absolute Error | " + name0, *heatmap_dir, false);
            }
            log_output_stats(diffs.reldiff, rel_stats, failed, "Relative Difference", std::nullopt);
            if (heatmap_dir) {
                auto plot_guard = logger().indent();
                plots::save_heatmaps(diffs.reldiff, "Relative Error | " + name0, *heatmap_dir, true);
            }
        }
        if (options_.collect_distributions) result.distributions = distributions(out0, out1, diffs);
        if (options_.collect_error_histograms)
            result.error_histograms = ErrorHistograms{decade_histogram(diffs.absdiff), decade_histogram(diffs.reldiff)};
        logger().extra_verbose("Finished comparing: '" + name0 + "' (" + describe(out0) + ") [" + runner0 + "] and '" +
                               name1 + "' (" + describe(out1) + ") [" + runner1 + "]");
    }

    // The extremes and mean magnitude of an output: from the statistics the comparison already has
    // when they are all finite (min_positive is left unset: it is not needed here), else a new pass.
    static ValueRange range_of(const Tensor& output, const std::optional<ArrayStats>& stats) {
        if (!stats || stats->nan_count > 0 || !std::isfinite(stats->min) || !std::isfinite(stats->max) ||
            !std::isfinite(stats->avg_magnitude))
            return value_range(output);
        ValueRange range;
        range.count = stats->size;
        range.min = stats->min;
        range.max = stats->max;
        range.mean_magnitude = stats->avg_magnitude;
        return range;
    }

    // What a report keeps of this comparison: histograms, never the tensors.
    static OutputDistributions distributions(const Tensor& out0, const Tensor& out1, const Differences& diffs) {
        OutputDistributions result;
        result.first_dtype = out0.dtype();
        result.second_dtype = out1.dtype();
        result.first_shape = out0.shape();
        result.second_shape = out1.shape();
        const ValueRange range0 = range_of(out0, diffs.stats0), range1 = range_of(out1, diffs.stats1);
        std::tie(result.first_values, result.second_values) =
            shared_linear_histograms(out0, range0, out1, range1, kReportHistogramBins);
        result.second_mean_magnitude = range1.mean_magnitude;
        result.absdiff = log_histogram(diffs.absdiff, kReportHistogramBins);
        result.reldiff = log_histogram(diffs.reldiff, kReportHistogramBins);
        return result;
    }

    // Folder for a figure: the save_* folder, or with only show_*, a new temporary folder (once per
    // comparer; this build opens no windows, so showing means writing files and saying where).
    static std::optional<std::string> figure_dir(const std::optional<std::string>& save, bool show,
                                                 const std::string& kind, std::optional<std::string>& show_dir) {
        if (save) {
            if (show)
                logger().log_once(Severity::kInfo,
                                  "Note: this build cannot display figures; see the files in " + *save);
            return save;
        }
        if (!show) return std::nullopt;
        if (!show_dir) {
            std::string pattern =
                (std::filesystem::temp_directory_path() / ("polygraphy-" + kind + "-XXXXXX")).string();
            if (!mkdtemp(pattern.data()))
                throw PolygraphyException("Could not create a temporary folder for the " + kind + " figures under " +
                                          std::filesystem::temp_directory_path().string());
            show_dir = pattern;
            logger().warning("This build cannot display figures: writing the " + kind + " figures to " + pattern +
                             " instead (open the SVG files in a browser)");
        }
        return show_dir;
    }

    SimpleCompareOptions options_;
    std::unique_ptr<ScratchPool> pool_ = std::make_unique<ScratchPool>();
    mutable std::optional<std::string> heatmaps_show_dir_, metrics_show_dir_;
};

// How f"{value}" prints a numpy scalar: numpy formats the Python number it converts to, so float32
// 0.1 prints as 0.10000000149011612, integers as ints and booleans as True/False.
std::string python_scalar_str(DataType dtype, double value) {
    if (dtype == DataType::kBool) return value != 0 ? "True" : "False";
    if (dtype_is_integer(dtype)) return fmt::format("{:.0f}", value);
    return python_float_repr(value);
}

// compare.py CompareFunc.indices: positions of equal values along the last axis, within a tolerance.
class IndicesComparer {
public:
    IndicesComparer(PerOutput<int64_t> index_tolerance, bool fail_fast)
        : index_tolerance_(std::move(index_tolerance)), fail_fast_(fail_fast) {}

    IterationCompareResult operator()(const IterationResult& first, const IterationResult& second) const {
        return run_comparison(first, second, fail_fast_,
                              [this](const std::string& name0, const Tensor& output0, const std::string& name1,
                                     const Tensor& output1, const std::string& runner0, const std::string& runner1) {
                                  return match(name0, output0, name1, output1, runner0, runner1);
                              });
    }

private:
    OutputCompareResult match(const std::string& name0, const Tensor& output0, const std::string& name1,
                              const Tensor& output1, const std::string& runner0, const std::string& runner1) const {
        const int64_t tolerance = per_output_value(index_tolerance_, name0, int64_t{0});
        OutputCompareResult result;
        if (output0.shape() != output1.shape()) {
            result.error = "Cannot compare outputs of different shapes.";
            logger().error(result.error);
            return result;
        }
        if (output0.dtype() == DataType::kString || output1.dtype() == DataType::kString) {
            result.error = "Cannot compare outputs of type string";
            logger().error("FAILED | Output: '" + name0 + "' | " + result.error);
            return result;
        }
        // Batches of the last axis (a scalar is one batch of one value).
        const int64_t width = output0.rank() ? output0.shape().back() : 1;
        const int64_t batches = width ? output0.numel() / width : 0;
        const int64_t compared = std::max<int64_t>(0, width - std::max<int64_t>(tolerance, 0));
        bool passed = true;
        for (int64_t batch = 0; batch < batches && (passed || !fail_fast_); ++batch) {
            const int64_t base = batch * width;
            for (int64_t index0 = 0; index0 < compared; ++index0) {
                const double value = output0.value_as_double(base + index0);
                if (value == output1.value_as_double(base + index0)) continue;
                int64_t index1 = -1;
                for (int64_t j = 0; j < width && index1 < 0; ++j)
                    if (output1.value_as_double(base + j) == value) index1 = j;
                if (index1 < 0) {
                    logger().error("FAILED | Value: " + python_scalar_str(output0.dtype(), value) +
                                   " not found in output");
                } else if (std::llabs(index1 - index0) > tolerance) {
                    logger().error("FAILED | Difference exceeds index tolerance (" + std::to_string(tolerance) + ")");
                } else {
                    continue;
                }
                passed = false;
                if (fail_fast_) break;
            }
        }
        result.passed = passed;
        if (!passed && fail_fast_) return result;

        if (logger().enabled(Severity::kInfo) && output0.dtype() != DataType::kComplex64 &&
            output0.dtype() != DataType::kComplex128) {
            const ArrayStats stats0 = stats_of(output0, {}), stats1 = stats_of(output1, {});
            const std::pair<double, double> hist_range = {python_min(stats0.min, stats1.min),
                                                          python_max(stats0.max, stats1.max)};
            log_output_stats(output0, stats0, !passed, runner0 + ": " + name0, hist_range);
            log_output_stats(output1, stats1, !passed, runner1 + ": " + name1, hist_range);
        }
        if (passed)
            logger().finish("PASSED | Difference is within index tolerance (" + std::to_string(tolerance) + ")");
        return result;
    }

    PerOutput<int64_t> index_tolerance_;
    bool fail_fast_;
};

}  // namespace

namespace compare_func {
CompareFunc simple(SimpleCompareOptions options) {
    auto comparer = std::make_shared<SimpleComparer>(std::move(options));
    return
        [comparer](const IterationResult& first, const IterationResult& second) { return (*comparer)(first, second); };
}

CompareFunc indices(PerOutput<int64_t> index_tolerance, bool fail_fast) {
    for (const auto& [name, tolerance] : index_tolerance)
        if (tolerance < 0)
            throw UsageError("Index tolerance must not be negative.\nNote: given: " + std::to_string(tolerance) +
                             (name.empty() ? std::string() : " for output '" + name + "'"));
    auto comparer = std::make_shared<IndicesComparer>(std::move(index_tolerance), fail_fast);
    return
        [comparer](const IterationResult& first, const IterationResult& second) { return (*comparer)(first, second); };
}
}  // namespace compare_func

}  // namespace polygraphy
