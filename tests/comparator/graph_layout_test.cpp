#include "comparator/graph_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model_builder.h"

namespace polygraphy {
namespace {

using testing::ModelBuilder;

// Every node is on a row below each of its producers, and no two boxes of a row overlap.
void expect_layered(const onnx::GraphProto& graph, const layout::GraphLayout& placed) {
    ASSERT_EQ(placed.x.size(), static_cast<std::size_t>(graph.node_size()));
    for (const auto& [from, to] : placed.edges)
        EXPECT_LT(placed.layer[static_cast<std::size_t>(from)], placed.layer[static_cast<std::size_t>(to)])
            << graph.node(from).name() << " -> " << graph.node(to).name();
    std::map<int32_t, std::vector<double>> rows;
    for (std::size_t i = 0; i < placed.x.size(); ++i) {
        rows[placed.layer[i]].push_back(placed.x[i]);
        EXPECT_GE(placed.x[i] - layout::kNodeWidth / 2, -1e-9);
        EXPECT_LE(placed.x[i] + layout::kNodeWidth / 2, placed.width + 1e-9);
        EXPECT_LE(placed.y[i], placed.height);
    }
    for (auto& [layer, xs] : rows) {
        std::sort(xs.begin(), xs.end());
        for (std::size_t i = 1; i < xs.size(); ++i) EXPECT_GE(xs[i] - xs[i - 1], layout::kNodeWidth);
    }
}

TEST(GraphLayout, NodesSitOneRowBelowTheirDeepestProducer) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Neg", {"a"}, {"b"}, "neg");
    builder.node("Constant", {}, {"k"}, "constant");
    builder.node("Add", {"a", "b"}, {"c"}, "add");
    builder.node("Mul", {"c", "k"}, {"y"}, "mul");
    builder.output("y", DataType::kFloat32, Shape{2});
    const auto graph = builder.build()->graph();
    const layout::GraphLayout placed = layout::layout_graph(graph);
    EXPECT_EQ(placed.layer, (std::vector<int32_t>{0, 1, 2, 2, 3}));  // the constant sits just above the Mul
    EXPECT_EQ(placed.edges.size(), 5u);
    expect_layered(graph, placed);
}

TEST(GraphLayout, AnEmptyGraphHasNoNodes) {
    const layout::GraphLayout placed = layout::layout_graph(onnx::GraphProto{});
    EXPECT_TRUE(placed.x.empty());
    EXPECT_EQ(placed.width, 0);
}

TEST(GraphLayout, TenThousandNodesAreLaidOut) {
    // 2,500 blocks of a diamond: split, two branches, join.
    ModelBuilder builder;
    builder.input("t0", DataType::kFloat32, Shape{2});
    std::string previous = "t0";
    for (int block = 0; block < 2500; ++block) {
        const std::string id = std::to_string(block);
        builder.node("Relu", {previous}, {"s" + id});
        builder.node("Neg", {"s" + id}, {"l" + id});
        builder.node("Abs", {"s" + id}, {"r" + id});
        builder.node("Add", {"l" + id, "r" + id}, {"j" + id});
        previous = "j" + id;
    }
    builder.output(previous, DataType::kFloat32, Shape{2});
    const auto graph = builder.build()->graph();
    const layout::GraphLayout placed = layout::layout_graph(graph);
    EXPECT_EQ(placed.x.size(), 10000u);
    EXPECT_EQ(placed.edges.size(), 4u * 2500 + 2499);
    expect_layered(graph, placed);
    EXPECT_EQ(placed.layer.back(), 3 * 2500 - 1);
}

}  // namespace
}  // namespace polygraphy
