// PrecisionJob: what `polygraphy debug precision MODEL.onnx` does, as data. It finds a small set of
// nodes to keep in higher precision so that the low-precision model passes a check on every sample:
//   - fp16 / bf16: a candidate is a node of the float32 model that the conversion would compute in
//     16 bits; keeping it means blocking it (Fp16Options::node_block_list);
//   - int8: the model is a QDQ model; a candidate is an activation's QuantizeLinear with the
//     DequantizeLinear nodes that read it; keeping it means removing that pair (the tensor stays
//     float). The reference is the model with every such pair removed.
// The search:
//   1. one `debug diff` replay (run_diff_job) of the reference against the model with nothing kept
//      ranks the candidates by their local error;
//   2. the shortest prefix of that ranking that passes is found by bisection (or greedily, one more
//      node at a time);
//   3. segments of that prefix, halved while they fail, then single nodes, are given back to low
//      precision, least blamed first, while the check still passes, until every kept node fails the
//      check when given back alone (1-minimal, verified).
//
//     PrecisionJob job;
//     job.model = ModelJob{"model.onnx"};
//     job.check.tolerances = {1e-2, 1e-2};
//     job.data_loader.generator.iterations = 8;
//     PrecisionResult result = run_precision_job(job);
//     // result.kept: the nodes to keep in float32, by ONNX name
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/comparator/error_figures.h"
#include "polygraphy/job/run_job.h"

namespace polygraphy {

/// The low precision searched (`--precision`).
enum class LowPrecision { kFp16, kBf16, kInt8 };

/// What a candidate model must satisfy, on every sample, against the reference's graph outputs.
struct PrecisionCheck {
    DiffTolerances tolerances = {1e-3, 1e-3};  ///< `--atol`, `--rtol`
    /// `--check-error-stat`: which figure the tolerances bound, as in `run`: every element (numpy's
    /// isclose), or the largest or mean absolute / relative difference (fails when both exceed).
    enum class ErrorStat { kElementwise, kMax, kMean };
    ErrorStat error_stat = ErrorStat::kElementwise;    ///< `--check-error-stat`
    std::optional<double> min_cosine = std::nullopt;   ///< `--check-cosine`: each output's cosine similarity
    std::optional<double> min_sqnr_db = std::nullopt;  ///< `--check-sqnr`: each output's SQNR in dB
    /// `--check CMD`: a verdict of its own on the candidate model, instead of the figures above.
    std::function<bool(const onnx::ModelProto& candidate)> external = {};
};

/// How the kept set is searched (`--search`).
enum class PrecisionSearch {
    kBisect,  ///< bisection over the length of the ranked prefix
    kGreedy,  ///< the ranked prefix grows by one node until it passes
    /// No ranking: segments of the nodes in graph order, halved while they fail, as onnxconverter-common's
    /// auto_convert_mixed_precision searches (for comparison; its answer is not checked 1-minimal).
    kNodeOrder,
};

/// Everything `debug precision` does.
struct PrecisionJob {
    ModelJob model = {};  ///< the float32 model (int8: the QDQ model)
    LowPrecision precision = LowPrecision::kFp16;               ///< `--precision`
    DataLoaderJob data_loader = {};                             ///< every sample it gives is checked
    PrecisionCheck check = {};                                  ///< what a candidate must satisfy
    PrecisionSearch search = PrecisionSearch::kBisect;          ///< `--search`
    ref::SessionOptions session = {};                           ///< the built-in runtime evaluates every candidate
    std::vector<std::string> op_block_list = {};                ///< fp16/bf16: op types kept from the start
    std::optional<std::string> output_path = std::nullopt;      ///< `-o`: the mixed-precision model
    std::optional<std::string> block_list_path = std::nullopt;  ///< `--save-block-list`: the JSON block lists
};

/// One evaluation of the search: the candidates kept and the verdict.
struct PrecisionEvaluation {
    std::size_t kept = 0;  ///< candidates kept in higher precision
    bool passed = false;   ///< the check passed on every sample
    std::string failure;  ///< the first output and sample that failed, and how ("" when passed)
};

/// What run_precision_job() found.
struct PrecisionResult {
    /// The nodes kept in higher precision, by ONNX name, in graph order (int8: each kept tensor's
    /// QuantizeLinear and DequantizeLinear nodes, which the mixed model no longer has).
    std::vector<std::string> kept;
    /// int8: the tensors kept in float (whose Q/DQ pair was removed), in graph order.
    std::vector<std::string> kept_tensors;
    /// The block lists that give the mixed model (fp16/bf16: for convert_to_fp16(); int8: the nodes
    /// that read a kept tensor, as ONNX Runtime's quantizer takes them in `nodes_to_exclude`).
    Fp16BlockLists block_lists;
    std::vector<std::string> ranking;          ///< the candidates, most blamed first (labels as in `kept`)
    std::size_t candidates = 0;                ///< how many nodes (int8: tensors) could be kept
    std::size_t samples = 0;                   ///< samples every evaluation checks
    std::size_t evaluations = 0;               ///< candidate models built and checked (the ranking's diff not counted)
    double seconds = 0;                        ///< the whole search, ranking included
    double ranking_seconds = 0;                ///< the `debug diff` replay
    std::vector<PrecisionEvaluation> history;  ///< every evaluation, in order
    /// Every kept candidate was given back to low precision alone and the check then failed.
    bool one_minimal = false;
    onnx::ModelProto mixed;  ///< the mixed-precision model
};

/// Runs `job` (see the top of this file). Writes the mixed model and the block lists when the job
/// asks. UsageError, before searching, for: a model that fails the check at full precision (outputs
/// that are not finite; with an external check, its verdict on the model itself), a check that fails
/// even with every candidate kept, a model with no candidate (int8: no activation Q/DQ pair), an
/// op_block_list naming no op of the model. UnsupportedError naming the op for a precision the
/// built-in runtime cannot compute it in.
PrecisionResult run_precision_job(const PrecisionJob& job);

/// The candidates of `model` for `precision`, in graph order, with the nodes of each (fp16/bf16: one
/// node, named; int8: the QuantizeLinear and its DequantizeLinear nodes). Unnamed nodes are named
/// "<op>_<index>" in `model` first, so that every answer is a name.
struct PrecisionCandidate {
    std::string label;               ///< the node's name (int8: the tensor's name)
    std::vector<std::string> nodes;  ///< node names
};
std::vector<PrecisionCandidate> precision_candidates(onnx::ModelProto& model, LowPrecision precision,
                                                     const std::vector<std::string>& op_block_list = {});

/// `model` with the candidates `kept` (labels) in higher precision: fp16/bf16 converted with them
/// blocked, int8 with their Q/DQ pairs removed.
onnx::ModelProto mixed_precision_model(const onnx::ModelProto& model, LowPrecision precision,
                                       const std::vector<PrecisionCandidate>& candidates,
                                       const std::vector<std::string>& kept,
                                       const std::vector<std::string>& op_block_list = {});

/// The summary lines: kept nodes, evaluations, time, 1-minimality.
std::string format_precision_result(const PrecisionResult& result, LowPrecision precision);

}  // namespace polygraphy
