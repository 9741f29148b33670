// A comparison over many samples, summarised per output: how many samples passed, how the error is
// distributed across them, and which sample is worst (`run` prints it after the per-iteration lines
// when there are two samples or more; the JSON report of `--report` holds it as "dataset"), and the
// tolerances that every sample passes (`--suggest-tolerances`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "polygraphy/comparator/comparator.h"

namespace polygraphy {

/// Quantiles of one figure over the samples (numpy's "linear" method).
struct SampleQuantiles {
    double min = 0;     ///< the smallest
    double median = 0;  ///< the middle
    double p90 = 0;     ///< the 90th percentile
    double max = 0;     ///< the largest
};

/// One output of one runner pair, over every sample compared.
struct OutputDatasetSummary {
    std::string output;            ///< the first runner's name of it
    std::size_t samples = 0;       ///< samples in which it was compared
    std::size_t passed = 0;        ///< samples in which it passed
    std::size_t failed = 0;        ///< samples in which it failed (or could not be compared)
    SampleQuantiles max_abs;       ///< each sample's largest absolute difference
    SampleQuantiles max_rel;       ///< each sample's largest relative difference
    std::size_t worst_sample = 0;  ///< the sample with the largest absolute difference (a failing one first)
};

/// Every output of `pair`, in the order of its first iteration.
std::vector<OutputDatasetSummary> summarize_dataset(const AccuracyResult::PairResult& pair);

/// The table `run` logs: a title line naming the runners and the sample count, then one row per output.
std::string format_dataset_summary(const AccuracyResult::PairResult& pair,
                                   const std::vector<OutputDatasetSummary>& outputs);

/// Tolerances of one output that the elements of every sample compared pass (`run --suggest-tolerances`).
struct SuggestedTolerance {
    std::string output;      ///< the first runner's name of it
    double atol = 0;         ///< the largest absolute difference of any sample (or quantile), rounded up
    double rtol = 0;         ///< the largest relative difference of any sample (or quantile), rounded up
    bool comparable = true;  ///< false when a sample could not be compared (no tolerance makes it pass)
};

/// Per output of `pair`, for an element `pass_rate` in (0, 1]: with 1, each sample's largest
/// absolute and relative difference; below 1, each sample's quantile at the pass rate
/// (OutputCompareResult::quantile_absdiff/reldiff, so the comparison's error quantile must be
/// `pass_rate`). The largest over the samples, rounded up to two significant digits: it passes the
/// samples it came from (with --rtol 0, or --atol 0), and half of it fails the worst one (unless that
/// figure is 0).
std::vector<SuggestedTolerance> suggest_tolerances(const AccuracyResult::PairResult& pair, double pass_rate = 1.0);

/// `Suggested Tolerances | A vs. B | ...` with the two ready-to-paste alternatives: `--atol` per output
/// with `--rtol 0`, and `--rtol` per output with `--atol 0`; below a pass rate of 1, with the
/// `--check-error-stat quantile --error-quantile` that checks them.
std::string format_suggested_tolerances(const AccuracyResult::PairResult& pair,
                                        const std::vector<SuggestedTolerance>& tolerances, double pass_rate = 1.0);

}  // namespace polygraphy
