// Internal: a layered drawing of a model's graph for the HTML report, computed once in C++ so that the
// page only has to draw what is in view (it stays responsive at tens of thousands of nodes).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy::layout {

/// Size of a node's box and the gaps between boxes, in layout units (CSS pixels at zoom 1).
/// @{
constexpr double kNodeWidth = 150, kNodeHeight = 30, kColumnGap = 30, kLayerGap = 36;
/// @}

/// Node positions (centres) and edges of a graph's top-level nodes.
struct GraphLayout {
    std::vector<double> x, y;                        ///< per node of graph.node(), in its order
    std::vector<int32_t> layer;                      ///< per node: its row, top to bottom
    std::vector<std::pair<int32_t, int32_t>> edges;  ///< (producer, consumer) node indices, one per tensor use
    double width = 0, height = 0;                    ///< extent of the drawing (x from 0 to width, y from 0 to height)
};

/// Layered (Sugiyama-style) layout: each node one row below its deepest producer; nodes without
/// inputs (constants) just above their first consumer; within a row, nodes ordered by the mean
/// position of their neighbours over a few down and up sweeps; rows centred. Linear in the graph's
/// size per sweep. Graph inputs and initializers are not drawn as nodes.
GraphLayout layout_graph(const onnx::GraphProto& graph);

}  // namespace polygraphy::layout
