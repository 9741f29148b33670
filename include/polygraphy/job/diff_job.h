// DiffJob: what `polygraphy debug diff A.onnx B.onnx` does, as data. Two different graphs of one
// network (B an fp16, quantized, optimized or re-exported version of A) run on the same inputs;
// their tensors are paired (match_graphs(), comparator/graph_match.h), and each pair gets:
//   - its total error: B's value against A's;
//   - its local error: B's group of nodes run alone on A's values of the paired tensors it reads,
//     against A's value (what B's layer itself gets wrong, without what reaches it from upstream).
// The blame table ranks B's groups by local error; the first divergence is the earliest group whose
// local error fails the tolerances.
//
//     DiffJob job;
//     job.a = ModelJob{"model.onnx"};
//     job.b = ModelJob{"model_fp16.onnx"};
//     job.tolerances = {1e-3, 1e-3};
//     DiffResult result = run_diff_job(job);
//     logger().info(format_blame_table(result, 10));
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "polygraphy/comparator/error_figures.h"
#include "polygraphy/comparator/graph_match.h"
#include "polygraphy/job/run_job.h"

namespace polygraphy {

/// What the blame table ranks B's layers by (`--blame-by`).
enum class BlameFigure {
    kError,  ///< "error": the local relative RMS error, whatever its kind
    kGain,   ///< "gain": the magnitude of the local gain error, the systematic part (a wrong scale),
             ///< which quantization and rounding noise leave near 0
};

/// Everything `debug diff` does.
struct DiffJob {
    ModelJob a = {};                        ///< the reference graph
    ModelJob b = {};                        ///< the graph under test
    RunnerStep runner_a = RefRunnerStep{};  ///< `--backend-a`
    RunnerStep runner_b = RefRunnerStep{};  ///< `--backend-b`; local runs use it where the built-in runtime lacks an op
    DataLoaderJob data_loader = {};         ///< A's inputs; B gets the same values (cast to its input dtypes)
    DiffTolerances tolerances = {};         ///< `--atol`, `--rtol`
    GraphMatchOptions matching = {};        ///< `--input-map`; the pairs of `--match-file`
    std::optional<std::string> save_matches = std::nullopt;  ///< `--save-matches`: the pairs found
    std::optional<std::string> report_path = std::nullopt;   ///< `--report FILE.json`
    /// `--model-explorer-node-data A.json B.json`: each graph's local errors as Model Explorer node data.
    std::optional<std::pair<std::string, std::string>> model_explorer_paths = std::nullopt;
    /// `--compare-memory-budget`: the most bytes B's paired tensors of one sample may take at once (see
    /// run_diff_job()); nullopt: the size of B's weights, at least kDefaultCompareMemoryBudget.
    std::optional<std::size_t> memory_budget = std::nullopt;
    std::size_t top = 10;                                    ///< `--top`: rows of the blame table
    BlameFigure blame_by = BlameFigure::kError;              ///< `--blame-by`
};

/// One pair's figures.
struct PairDiff {
    TensorPair pair;                                      ///< the two tensors, how they were paired, their groups
    ErrorFigures total;                                   ///< B's value against A's
    std::optional<ErrorFigures> local;                    ///< B's group alone on A's values, against A's
    std::string local_error;                              ///< why there is no local figure ("" when there is)
    std::string b_op_types;                               ///< B's group, as "FusedConv" or "Q+DQ+Conv"
    /// Both groups' nodes (node_display_name()).
    /// @{
    std::vector<std::string> a_node_names, b_node_names;
    /// @}
};

/// What run_diff_job() found.
struct DiffResult {
    GraphMatching matching;                                      ///< inputs and unmatched tensors; pairs are in `pairs`
    std::vector<PairDiff> pairs;                                 ///< in B's graph order
    std::vector<std::size_t> blame;                              ///< indices into `pairs`, largest local error first
    std::optional<std::size_t> first_divergence = std::nullopt;  ///< earliest pair whose local figures fail
    std::size_t iterations = 0;                                  ///< samples compared
    std::size_t b_slices = 1;                                    ///< slices B ran in, per sample
    /// Every pair of graph outputs passed the tolerances (`debug diff` exits with 0 exactly then).
    bool passed = true;
};

/// Runs `job`: loads both models (inlining local functions), pairs their tensors, runs both on each
/// sample with their paired tensors marked, and computes every pair's total and local figures.
/// Memory stays bounded: A's paired values of one sample are kept (the local runs read them); B's
/// are compared as they come, and when they do not fit the compare memory budget at once B runs in
/// slices of nodes (plan_graph_slices(), as a layer-wise `run` does), each freed before the next. Writes the
/// match file and the report when the job asks. UsageError for graphs whose inputs cannot be
/// paired (names, dtypes or shapes), for nothing matched beyond the graph outputs, and for a match
/// file naming tensors that do not exist; PolygraphyException for what fails to run.
DiffResult run_diff_job(const DiffJob& job);

/// The blame table: the `top` pairs with the largest local error, with both names, how each was
/// matched, and the local and total error; then the first divergence.
std::string format_blame_table(const DiffResult& result, std::size_t top);

/// Writes Model Explorer's node data of one graph (`side_a`: A's tensors, else B's): each pair's
/// local error (its total error where it has none), coloured against the absolute tolerance as
/// save_model_explorer_node_data() colours a comparison.
void save_diff_model_explorer_node_data(const DiffResult& result, const DiffJob& job, bool side_a,
                                        const std::string& path);

/// Writes the report (atomically): for a path ending in .html/.htm (is_html_report_path()) an HTML
/// page over B's graph `b_graph` (required then): the local and the total errors of every pair as
/// two comparisons (each row names B's tensor and A's), the graph coloured by local error; else the
/// JSON report, whose schema the README gives.
void save_diff_report(const DiffResult& result, const DiffJob& job, const std::string& path,
                      const onnx::GraphProto* b_graph = nullptr);

}  // namespace polygraphy
