// Per-node errors for Google's Model Explorer (https://github.com/google-ai-edge/model-explorer):
// a "node data" JSON file to load with "Add per-node data", which colours the graph there too.
#pragma once

#include <cstddef>
#include <string>

#include "polygraphy/comparator/comparator.h"

namespace polygraphy {

/// Writes Model Explorer's node data for one graph (its GraphNodeData: {"name", "results"}): one
/// result per compared output of runner pair `pair` at `iteration`, keyed by the output tensor's
/// name (Model Explorer maps it to the node producing it), whose "value" is the maximum absolute
/// difference and whose "bgColor" is error_colour(). Non-finite differences, which JSON cannot
/// hold, are written as the strings "NaN" / "Infinity"; outputs that could not be compared are
/// left out. With no comparison at all, the file has no results and its name says so. Written
/// atomically; PolygraphyException when it cannot be written or `pair`/`iteration` does not exist.
void save_model_explorer_node_data(const AccuracyResult& accuracy, const std::string& path, std::size_t pair = 0,
                                   std::size_t iteration = 0);

/// The colour save_model_explorer_node_data() gives an output (the HTML report's graph uses the same
/// scale), from the ratio r of its maximum absolute difference to its absolute tolerance: passed
/// with r <= 0.01 "#1a9850", passed "#91cf60"; failed with r <= 10 "#fee08b", <= 100 "#fdae61",
/// <= 1000 "#f46d43", beyond (or not finite) "#a50026".
std::string error_colour(const OutputCompareResult& result);

}  // namespace polygraphy
