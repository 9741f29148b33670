// Layer-by-layer analysis of a comparison: which node's output diverged first, and a JSON report of
// every compared tensor's error figures.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "polygraphy/comparator/comparator.h"

namespace polygraphy {

/// The earliest node (in the graph's topological node order) with a failing compared output while
/// every compared input of that node passed: where the two runners started to disagree.
struct Divergence {
    std::string first_runner;   ///< the compared pair's runner names
    std::string second_runner;  ///< the compared pair's runner names
    std::size_t iteration = 0;  ///< iteration index of the comparison
    std::string tensor;     ///< the failing output of the node
    std::string node_name;  ///< the node's name, or "<op_type>_<index>" when unnamed
    std::string op_type;           ///< the node's operator type
    OutputCompareResult figures;  ///< the failing output's comparison figures
};

/// Looks for the first divergence in one iteration's results. Graph inputs, initializers and tensors
/// that were not compared count as agreeing. nullopt when no compared node output failed (for
/// example when only graph inputs differ, or everything passed).
std::optional<Divergence> find_first_divergence(const onnx::GraphProto& graph, const IterationCompareResult& results);

/// Searches every pair and iteration of `accuracy` in order and returns the first divergence found.
std::optional<Divergence> find_first_divergence(const onnx::GraphProto& graph, const AccuracyResult& accuracy);

/// One line for the log: "First divergence: node 'conv2' (Conv), output 'conv2_out' | max abs diff=..., ..."
std::string describe_divergence(const Divergence& divergence);

/// Writes per-tensor error figures of every compared pair, iteration and output, plus the first
/// divergence when given, as JSON (written atomically):
///     {"passed": bool, "first_divergence": {...} | null,
///      "comparisons": [{"runners": [a, b], "iterations": [{"outputs": {name: {"passed": ..., "max_abs_diff": ...}}}]}]}
/// A non-empty `error` (why the comparison could not complete) is recorded as "error" and makes
/// "passed" false.
void save_accuracy_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                          const std::string& path, const std::string& error = "");

}  // namespace polygraphy
