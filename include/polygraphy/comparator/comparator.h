// The Comparator: runs runners over the same data, compares and validates their outputs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/data_loader.h"
#include "polygraphy/comparator/histogram.h"

namespace polygraphy {

/// A per-output setting: the key "" holds the default for outputs not listed (`--atol 1e-4 out0:1e-2`).
template <typename T>
using PerOutput = OrderedMap<T>;

/// Value for `name` in `settings`, else the "" default, else `fallback`.
template <typename T>
T per_output_value(const PerOutput<T>& settings, const std::string& name, T fallback) {
    if (const T* value = settings.find(name)) return *value;
    if (const T* value = settings.find("")) return *value;
    return fallback;
}

/// Error statistic checked against the tolerances (`--check-error-stat`).
enum class ErrorStat { kElemwise, kMax, kMean, kMedian, kQuantile };
std::optional<ErrorStat> error_stat_from_name(const std::string& name);
std::string error_stat_name(ErrorStat stat);

/// Options of CompareFunc::simple, with Polygraphy's defaults.
struct SimpleCompareOptions {
    bool check_shapes = true;               ///< false: `--no-shape-check`
    PerOutput<double> rtol;                 ///< default 1e-5
    PerOutput<double> atol;                 ///< default 1e-5
    PerOutput<ErrorStat> check_error_stat;  ///< default elemwise
    PerOutput<double> error_quantile;       ///< default 0.99
    bool infinities_compare_equal = false;  ///< matching +-inf values count as equal (`--infinities-compare-equal`)
    bool fail_fast = false;                 ///< stop at the first failing output (`--fail-fast`)
    /// Fill OutputCompareResult::distributions (histograms for HTML reports; one more pass over the
    /// outputs and their differences).
    bool collect_distributions = false;
    /// Fill OutputCompareResult::error_histograms: the errors of every element on fixed decade bins,
    /// which add up across samples and shards (`run --save-summary`).
    bool collect_error_histograms = false;
    /// Polygraphy's plots, written as SVG files (see comparator/plots.h for names and layout):
    /// heatmaps of the absolute and relative differences (`--save-heatmaps DIR`), and the
    /// differences against the second output's magnitude (`--save-error-metrics-plot DIR`). The
    /// `show_*` options write the same figures into a new folder under the system's temporary folder
    /// when no `save_*` folder is given (this build opens no windows), and log where they are.
    /// @{
    std::optional<std::string> save_heatmaps;
    bool show_heatmaps = false;
    std::optional<std::string> save_error_metrics_plot;
    bool show_error_metrics_plot = false;
    /// @}
};

/// Figures of one output comparison (what the report prints and `--report` files record).
/// The quantile figures are for the output's error_quantile (0.99 by default), whatever the statistic.
struct OutputCompareResult {
    bool passed = false;      ///< within tolerance (and comparable)
    std::string output_name;  ///< name in the first result
    std::string other_name;   ///< matched name in the second result
    /// Statistics of the absolute and relative differences.
    /// @{
    double max_absdiff = 0, max_reldiff = 0;
    double mean_absdiff = 0, mean_reldiff = 0;
    double median_absdiff = 0, median_reldiff = 0;
    double quantile_absdiff = 0, quantile_reldiff = 0;
    /// @}
    /// Minimum tolerances that would have passed.
    /// @{
    double required_atol = 0, required_rtol = 0;
    /// @}
    std::string error;  ///< non-empty when the outputs could not be compared
    /// Tolerances and statistic the output was checked with (compare_func::simple; 0 / kElemwise otherwise).
    /// @{
    double atol = 0, rtol = 0;
    ErrorStat check_error_stat = ErrorStat::kElemwise;
    /// @}
    /// Histograms of both outputs and of their differences, when the compare function collected them
    /// (SimpleCompareOptions::collect_distributions) and the outputs could be compared.
    std::optional<OutputDistributions> distributions;
    /// The errors on fixed decade bins, when the compare function collected them
    /// (SimpleCompareOptions::collect_error_histograms) and the outputs could be compared.
    std::optional<ErrorHistograms> error_histograms;
};

/// Results of comparing one iteration of two runners, by output name (first runner's names).
using IterationCompareResult = OrderedMap<OutputCompareResult>;

/// Compares the outputs of two iterations and logs the report. Returns per-output results.
using CompareFunc = std::function<IterationCompareResult(const IterationResult& first, const IterationResult& second)>;

namespace compare_func {
/// Polygraphy's CompareFunc.simple: absolute/relative tolerances with an error statistic.
/// Logs Polygraphy's report (stats of both outputs and of the differences; values and histograms at INFO
/// when an output fails, VERBOSE otherwise). Outputs that cannot be compared (shape mismatch with
/// check_shapes, strings, unmatched volumes) fail with `error` set. Throws PolygraphyException when no
/// output of the first result has a counterpart in the second, UsageError for a quantile outside [0, 1]
/// with the "quantile" statistic.
CompareFunc simple(SimpleCompareOptions options = {});

/// Polygraphy's CompareFunc.indices (`--compare indices`, `--index-tolerance`): for outputs such as Top-K
/// indices, each value along the last axis must appear in the other output at most `index_tolerance`
/// positions away (the last `index_tolerance` values of each batch are not checked). Per-output
/// tolerances use the key "" as default (0). Negative tolerances are a UsageError.
CompareFunc indices(PerOutput<int64_t> index_tolerance = {}, bool fail_fast = false);
}  // namespace compare_func

/// Post-processes one iteration's outputs in place before comparison (Polygraphy's PostprocessFunc).
using PostprocessFunc = std::function<void(IterationResult& result)>;

/// Top-K settings of one output: keep the indices of the `k` largest values along `axis`.
struct TopK {
    int64_t k = 10;     ///< clamped to the axis length; 0 leaves the output unchanged
    int64_t axis = -1;  ///< negative values count from the last axis
};

namespace postprocess_func {
/// Polygraphy's PostprocessFunc.top_k: replaces each output by the int64 indices of its `k` largest
/// values along the axis, largest first, ties in index order (numpy's stable argsort of -x; NaNs last).
/// Per-output settings use the key "" as default; outputs matching no key and no default are left
/// unchanged. Applying it to a string output or an out-of-range axis throws PolygraphyException.
PostprocessFunc top_k(PerOutput<TopK> k);
/// Same, with one setting for every output: `top_k(5)`.
PostprocessFunc top_k(int64_t k = 10, int64_t axis = -1);
}  // namespace postprocess_func

/// Outcome of Comparator::compare_accuracy: for each compared runner pair, one entry per iteration.
class AccuracyResult {
public:
    /// Comparison of two consecutive results.
    struct PairResult {
        std::string first_runner;                        ///< name of the first result
        std::string second_runner;                       ///< name of the second result
        std::vector<IterationCompareResult> iterations;  ///< per iteration, per output
        /// Iterations whose outputs all passed.
        std::size_t passed_iterations() const;
    };

    /// True when every output of every iteration of every pair passed (vacuously true when empty).
    explicit operator bool() const;
    /// Fraction in [0, 1] of the passing iterations of pair `index`, like Polygraphy's percentage():
    /// 1.0 when there are no pairs or no iterations. Throws PolygraphyException for an index out of range.
    double percentage(std::size_t index = 0) const;

    std::vector<PairResult> pairs;  ///< results 0 vs 1, 1 vs 2, ...
};

/// A comparison of results that arrive in slices of their outputs: a layer-wise run in bounded
/// memory runs the runners once per slice of the outputs (every runner, every iteration) and
/// compares each slice before the next is produced. The merged AccuracyResult, and the per-output
/// lines of the log, are those of Comparator::compare_accuracy over the whole results (with one
/// iteration, in the same order); each iteration's verdict and each pair's summary are logged after
/// the last slice. Comparator::compare_accuracy is this with a single slice.
class SlicedComparison {
public:
    /// Compares with `compare_func`; with `fail_fast`, stops at the first failing iteration of a slice.
    explicit SlicedComparison(CompareFunc compare_func, bool fail_fast = false);

    /// Compares consecutive results of `slice` (0 vs 1, 1 vs 2, ...) iteration by iteration, as
    /// compare_accuracy does. Every slice must hold the same results (names, order), else
    /// PolygraphyException. `last`: no slice follows (the verdicts and summaries are logged). Returns
    /// false once fail_fast stopped at a failure: compare no further slices.
    bool compare(const RunResults& slice, bool last);
    /// Outputs compared so far, over every pair and iteration.
    std::size_t outputs_compared() const { return outputs_compared_; }
    /// The comparisons of every slice so far, merged.
    const AccuracyResult& result() const { return accuracy_; }

private:
    CompareFunc compare_func_;
    bool fail_fast_;
    bool first_slice_ = true;
    bool stopped_ = false;
    std::size_t outputs_compared_ = 0;
    AccuracyResult accuracy_;
};

/// Runs runners over the same inputs and compares their results (Polygraphy's Comparator).
class Comparator {
public:
    /// Options of run() (`--warm-up`, `--save-inputs`).
    struct RunOptions {
        int warm_up = 0;                              ///< untimed runs before the timed ones
        std::optional<std::string> save_inputs_path;  ///< `--save-inputs`
    };

    /// Activates each runner in turn, feeds it every iteration of `data_loader` (generated once with
    /// the first runner's input metadata, then coerced to each runner's inputs) and collects outputs
    /// (cloned, so runner buffer reuse is harmless). Logs progress as Polygraphy does.
    static RunResults run(const std::vector<BaseRunner*>& runners, const DataLoaderFn& data_loader,
                          const RunOptions& options);
    /// Receives each iteration's result as soon as its runner produced it (the runner's name, the
    /// iteration's index and the result that run() returns), e.g. to save it while the run goes on.
    using IterationCallback =
        std::function<void(const std::string& runner, std::size_t iteration, const IterationResult& result)>;
    /// run() calling `on_iteration` for every iteration of every runner, in order.
    static RunResults run(const std::vector<BaseRunner*>& runners, const DataLoaderFn& data_loader,
                          const RunOptions& options, const IterationCallback& on_iteration);
    /// With the default data loader (one iteration of seeded random data).
    static RunResults run(const std::vector<BaseRunner*>& runners) {
        return run(runners, DataLoader().as_function(), RunOptions{});
    }
    /// With default run options (no warm-up, inputs not saved).
    static RunResults run(const std::vector<BaseRunner*>& runners, const DataLoaderFn& data_loader) {
        return run(runners, data_loader, RunOptions{});
    }

    /// Applies `postprocess_func` to every iteration of every runner in `results`, in place
    /// (Polygraphy's Comparator.postprocess, e.g. with postprocess_func::top_k before compare_func::indices).
    /// Returns `results`.
    static RunResults& postprocess(RunResults& results, const PostprocessFunc& postprocess_func);

    /// Compares consecutive results (0 vs 1, 1 vs 2, ...) iteration by iteration (up to the shorter
    /// one's count); outputs are matched by name (exact, case-insensitive substring, then position with
    /// a warning). Logs the report and an accuracy summary per pair. With `fail_fast`, returns at the
    /// first failing iteration (no summary). Iterations without a runner_name are reported under their
    /// entry's name.
    static AccuracyResult compare_accuracy(const RunResults& results, const CompareFunc& compare_func,
                                           bool fail_fast = false);
    /// With compare_func::simple() and its defaults.
    static AccuracyResult compare_accuracy(const RunResults& results) {
        return compare_accuracy(results, compare_func::simple());
    }

    /// NaN/Inf check of every output of every result (`--validate`). Returns true when clean.
    static bool validate(const RunResults& results, bool check_inf = true, bool check_nan = true,
                         bool fail_fast = false);
};

}  // namespace polygraphy
