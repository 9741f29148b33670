// Per-layer error profile of a comparison: every compared output in topological order, how much its
// error grew over that of its inputs, and the layers where it grew fastest.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/comparator/comparator.h"

namespace polygraphy {

/// One compared output in a profile.
struct ProfileEntry {
    std::string tensor;          ///< the output's name (first runner's)
    int64_t node_index = -1;     ///< index of the producing node in graph.node(); -1 when not a node output
    std::string node;            ///< the producing node's name, or "<op_type>_<index>" when unnamed ("" without a node)
    std::string op_type;         ///< the producing node's operator type ("" without a node)
    OutputCompareResult result;  ///< the comparison figures (histograms included when they were collected)
    /// The error level whose growth is measured: the relative L1 error mean|a-b| / mean|b| when the
    /// comparison collected distributions (so that a layer that merely scales values does not look
    /// like it loses precision), else the mean absolute difference. NaN when not comparable.
    double error_level = 0;
    /// Decades the error level grew over the largest error level reaching the node's inputs (from the
    /// nearest compared tensors upstream; graph inputs and initializers count as exact), both floored
    /// at the error floor. Without a graph, the previous entry counts as the input.
    double growth = 0;
    bool first_divergence = false;  ///< this output is the first divergence of the profile
    int fastest_growing_rank = 0;   ///< 1 for the fastest-growing layer, 2 for the next...; 0 when not marked
};

/// The profile of one runner pair and iteration.
struct ErrorProfile {
    std::string first_runner;   ///< the compared pair's runner names
    std::string second_runner;  ///< the compared pair's runner names
    std::size_t iteration = 0;  ///< iteration index
    /// Compared outputs: produced by graph nodes in topological order; before them outputs that are
    /// no node's (graph inputs), after them names the graph does not have (or all, in comparison
    /// order, without a graph).
    std::vector<ProfileEntry> entries;
    std::vector<std::size_t> fastest_growing;     ///< indices into entries, fastest first
    std::optional<std::size_t> first_divergence;  ///< index into entries
};

/// Up to this many layers are marked as fastest-growing...
constexpr std::size_t kFastestGrowingCount = 3;
/// ...and only those whose error level at least doubled (log10(2) decades).
constexpr double kMinimumGrowthDecades = 0.30103;

/// Error levels below this are rounding noise, not growth: the machine epsilon of the coarser of the
/// two output types (float32's for other types), or 1e-7 for mean absolute differences when the
/// comparison has no distributions.
double error_floor(const OutputCompareResult& result);

/// Builds a profile per runner pair and iteration of `accuracy`. With `graph`, entries follow the
/// graph's topological order and the first divergence is find_first_divergence()'s; without it,
/// the first failing output in comparison order is marked.
std::vector<ErrorProfile> build_error_profiles(const AccuracyResult& accuracy, const onnx::GraphProto* graph);

}  // namespace polygraphy
