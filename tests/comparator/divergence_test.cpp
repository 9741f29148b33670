#include "polygraphy/comparator/divergence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

// x -> Relu(a) -> Neg(b) -> Abs(c), and a side branch a -> Sigmoid(d).
onnx::GraphProto chain_graph() {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Neg", {"a"}, {"b"}, "neg");
    builder.node("Abs", {"b"}, {"c"});
    builder.node("Sigmoid", {"a"}, {"d"}, "sigmoid");
    builder.output("c", DataType::kFloat32, Shape{4});
    return builder.build()->graph();
}

IterationCompareResult results(std::initializer_list<std::pair<const char*, bool>> verdicts) {
    IterationCompareResult iteration;
    for (const auto& [name, passed] : verdicts) {
        OutputCompareResult result;
        result.passed = passed;
        result.output_name = result.other_name = name;
        result.max_absdiff = passed ? 0.0 : 0.5;
        iteration.set(name, result);
    }
    return iteration;
}

TEST(FirstDivergence, IsTheEarliestFailingNodeWhoseInputsAgree) {
    const auto divergence =
        find_first_divergence(chain_graph(), results({{"a", true}, {"b", false}, {"c", false}, {"d", true}}));
    ASSERT_TRUE(divergence.has_value());
    EXPECT_EQ(divergence->node_name, "neg");
    EXPECT_EQ(divergence->op_type, "Neg");
    EXPECT_EQ(divergence->tensor, "b");
    EXPECT_EQ(divergence->figures.max_absdiff, 0.5);
}

TEST(FirstDivergence, UnnamedNodesGetOpTypeAndIndex) {
    const auto divergence = find_first_divergence(chain_graph(), results({{"b", true}, {"c", false}}));
    ASSERT_TRUE(divergence.has_value());
    EXPECT_EQ(divergence->node_name, "Abs_2");
}

TEST(FirstDivergence, NoneWhenEverythingPassesOrOnlyUncomparedTensorsDiffer) {
    EXPECT_FALSE(find_first_divergence(chain_graph(), results({{"a", true}, {"c", true}})).has_value());
    EXPECT_FALSE(find_first_divergence(chain_graph(), IterationCompareResult{}).has_value());
}

TEST(FirstDivergence, SearchesPairsAndIterationsInOrder) {
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"r0", "r1", {results({{"c", true}}), results({{"a", false}, {"c", false}})}});
    const auto divergence = find_first_divergence(chain_graph(), accuracy);
    ASSERT_TRUE(divergence.has_value());
    EXPECT_EQ(divergence->iteration, 1u);
    EXPECT_EQ(divergence->node_name, "relu");
    EXPECT_EQ(divergence->first_runner, "r0");
    EXPECT_THAT(describe_divergence(*divergence),
                HasSubstr("First divergence: node 'relu' (Relu), output 'a' | r0 vs. r1 | Iteration: 1"));
}

TEST(AccuracyReport, RecordsEveryTensorAndTheDivergence) {
    testing::TempDir dir;
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"r0", "r1", {results({{"a", true}, {"b", false}})}});
    const auto divergence = find_first_divergence(chain_graph(), accuracy);
    save_accuracy_report(accuracy, divergence, dir.file("report.json"));
    const std::string text = read_file(dir.file("report.json"));
    EXPECT_THAT(text, HasSubstr("\"passed\": false"));
    EXPECT_THAT(text, HasSubstr("\"node\": \"neg\""));
    EXPECT_THAT(text, HasSubstr("\"runners\": [\n"));
    EXPECT_THAT(text, HasSubstr("\"a\": {\n"));
    EXPECT_THAT(text, HasSubstr("\"max_abs_diff\": 0.5"));

    save_accuracy_report(AccuracyResult{}, std::nullopt, dir.file("empty.json"));
    EXPECT_THAT(read_file(dir.file("empty.json")), HasSubstr("\"first_divergence\": null"));
}

}  // namespace
}  // namespace polygraphy
