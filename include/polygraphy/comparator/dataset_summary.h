// A comparison over many samples, summarised per output: how many samples passed, how the error is
// distributed across them, and which sample is worst (`run` prints it after the per-iteration lines
// when there are two samples or more; the JSON report of `--report` holds it as "dataset"), and the
// tolerances that every sample passes (`--suggest-tolerances`).
//
// The same summary is what a sharded run saves (`run --shard I/N --save-summary`) and `data merge`
// adds up: DatasetSummary keeps, per output, each sample's outcome (never a tensor) and the errors of
// every element on fixed bins, so that the summary of the whole dataset is rebuilt exactly from its
// shards: counts, maxima, quantiles and histograms are equal, and sums too (they are recomputed in
// sample order).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/histogram.h"

namespace polygraphy {

namespace json {
class Writer;
}

/// Quantiles of one figure over the samples (numpy's "linear" method).
struct SampleQuantiles {
    double min = 0;     ///< the smallest
    double median = 0;  ///< the middle
    double p90 = 0;     ///< the 90th percentile
    double max = 0;     ///< the largest
};

/// What a summary keeps of one output in one sample.
struct SampleOutcome {
    std::size_t sample = 0;  ///< the sample's index in the whole dataset
    bool passed = false;     ///< within tolerance
    bool compared = true;    ///< false: the outputs could not be compared (the figures are NaN)
    double max_abs = 0;      ///< the largest absolute difference
    double max_rel = 0;      ///< the largest relative difference
    double mean_abs = 0;     ///< the mean absolute difference
    double mean_rel = 0;     ///< the mean relative difference
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
    /// Sums over the samples that could be compared, added in sample order.
    /// @{
    double sum_max_abs = 0, sum_max_rel = 0, sum_mean_abs = 0, sum_mean_rel = 0;
    /// @}
    /// Every element's errors over every sample, on fixed decade bins (when the comparison
    /// collected them: SimpleCompareOptions::collect_error_histograms).
    std::optional<ErrorHistograms> histograms;
    std::vector<SampleOutcome> per_sample;  ///< by sample index
};

/// Writes the figures of `output` as members of the object `writer` has open: "samples", "passed",
/// "failed", "max_abs_diff" and "max_rel_diff" (each {"min", "median", "p90", "max"}) and
/// "worst_sample" (the "dataset" of a JSON report, and the start of each output of a saved summary).
void write_output_figures(json::Writer& writer, const OutputDatasetSummary& output);

/// Sorts `summary.per_sample` by sample and computes every other figure from it (counts,
/// quantiles, worst sample, sums); leaves `output` and `histograms` alone.
void complete_output_summary(OutputDatasetSummary& summary);

/// Which sample of the dataset each iteration of a comparison is: `first + iteration * stride`
/// (a shard of a dataset split by stride, see DatasetShard in polygraphy/job/run_job.h).
struct SampleIndexing {
    std::size_t first = 0;   ///< the sample of iteration 0
    std::size_t stride = 1;  ///< samples between consecutive iterations
};

/// Every output of `pair`, in the order of its first iteration; samples numbered by `indexing`.
std::vector<OutputDatasetSummary> summarize_dataset(const AccuracyResult::PairResult& pair,
                                                    SampleIndexing indexing = {});

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

/// Where one sample's comparison first went wrong (find_first_divergence() of its iteration).
struct SampleDivergence {
    std::size_t sample = 0;  ///< the sample's index in the whole dataset
    std::string node;        ///< the node's name
    std::string op_type;     ///< its operator
    std::string tensor;      ///< the failing output of the node
    double max_abs = 0;      ///< that output's largest absolute difference
};

/// One runner pair over the samples of a summary.
struct PairDatasetSummary {
    std::string first_runner;                         ///< the pair's runner names
    std::string second_runner;                        ///< the pair's runner names
    std::vector<OutputDatasetSummary> outputs;        ///< in the order of the first sample's outputs
    std::vector<SampleDivergence> first_divergences;  ///< one per failing sample where a node was found, by sample
};

/// What `run --save-summary` writes and `data merge` reads and writes: a run's comparison over
/// (a shard of) a dataset, without tensors, with what identifies the run so that only the parts of
/// one run are merged.
struct DatasetSummary {
    /// The identity of the run; parts merge only when all three are equal.
    /// @{
    std::string model_fingerprint;    ///< the model's graph and the size of its weights
    std::string dataset_fingerprint;  ///< every sample of the whole dataset (names, types, shapes, values)
    std::string options_fingerprint;  ///< the runners and the comparison's settings
    /// @}
    std::size_t dataset_samples = 0;        ///< samples in the whole dataset
    std::size_t shard_count = 1;            ///< the shards the dataset was split into (1: not split)
    std::vector<std::size_t> shards;        ///< the shards this summary holds, ascending
    std::vector<std::size_t> samples;       ///< the samples it holds, ascending
    std::vector<PairDatasetSummary> pairs;  ///< one per compared runner pair

    /// Every output of every sample of every pair passed.
    bool passed() const;
};

/// The samples of shard `index` of `count` over a dataset of `samples` samples: every count-th one,
/// starting at `index`.
std::vector<std::size_t> shard_samples(std::size_t index, std::size_t count, std::size_t samples);

/// Writes `summary` as JSON, atomically (nothing is left behind when writing fails).
void save_dataset_summary(const DatasetSummary& summary, const std::string& path);

/// Reads a summary save_dataset_summary() wrote. FormatError naming the file for anything else: not
/// JSON, truncated, a missing or mistyped field, or figures that contradict each other (the samples
/// of its shards, counts that do not add up).
DatasetSummary load_dataset_summary(const std::string& path);

/// Merges the summaries of the shards of one run (`data merge`), in any order: a part given twice
/// (a requeued job) counts once. Each part is (a name for messages, the summary). PolygraphyException
/// naming the parts for parts of different runs (model, dataset, options, runners, shard count),
/// parts that share some shards but not all, and for missing shards (named).
DatasetSummary merge_dataset_summaries(const std::vector<std::pair<std::string, DatasetSummary>>& parts);

/// The comparison a summary describes, as an AccuracyResult with one iteration per sample (figures
/// only: what an HTML report of the merged summary draws; `data merge --report`).
AccuracyResult accuracy_from_summary(const DatasetSummary& summary);

}  // namespace polygraphy
