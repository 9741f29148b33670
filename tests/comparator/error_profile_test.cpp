#include "polygraphy/comparator/error_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model_builder.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using testing::ModelBuilder;

constexpr double kFloat32Epsilon = 1.1920928955078125e-07;

// x -> Relu(a) -> Mul(b) -> Tanh(c) -> Abs(d); the Mul also reads a weight (an initializer).
onnx::GraphProto chain_graph() {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4}));
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Mul", {"a", "w"}, {"b"}, "mul");
    builder.node("Tanh", {"b"}, {"c"}, "tanh");
    builder.node("Abs", {"c"}, {"d"}, "abs");
    builder.output("d", DataType::kFloat32, Shape{4});
    return builder.build()->graph();
}

// A compared output whose relative L1 error (the growth measure) is `mean_absdiff / magnitude`.
OutputCompareResult compared(double mean_absdiff, double magnitude = 1.0, bool passed = true,
                             DataType dtype = DataType::kFloat32) {
    OutputCompareResult result;
    result.passed = passed;
    result.mean_absdiff = result.max_absdiff = mean_absdiff;
    OutputDistributions distributions;
    distributions.first_dtype = distributions.second_dtype = dtype;
    distributions.second_mean_magnitude = magnitude;
    result.distributions = distributions;
    return result;
}

AccuracyResult accuracy_of(const IterationCompareResult& iteration) {
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"a", "b", {iteration}});
    return accuracy;
}

std::vector<std::string> tensors_of(const ErrorProfile& profile) {
    std::vector<std::string> names;
    for (const auto& entry : profile.entries) names.push_back(entry.tensor);
    return names;
}

TEST(ErrorProfile, GrowthIsMeasuredInDecadesOverTheErrorReachingTheInputs) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-7));  // rounding noise: below the float32 floor
    iteration.set("b", compared(1e-6));
    iteration.set("c", compared(1e-3, 1.0, false));
    iteration.set("d", compared(2e-3, 1.0, false));
    const auto graph = chain_graph();
    const auto profiles = build_error_profiles(accuracy_of(iteration), &graph);
    ASSERT_EQ(profiles.size(), 1u);
    const ErrorProfile& profile = profiles[0];
    EXPECT_THAT(tensors_of(profile), ElementsAre("a", "b", "c", "d"));
    EXPECT_NEAR(profile.entries[0].growth, 0.0, 1e-12);
    EXPECT_NEAR(profile.entries[1].growth, std::log10(1e-6 / kFloat32Epsilon), 1e-9);
    EXPECT_NEAR(profile.entries[2].growth, 3.0, 1e-9);
    EXPECT_NEAR(profile.entries[3].growth, std::log10(2.0), 1e-9);
    EXPECT_EQ(profile.entries[1].node, "mul");
    EXPECT_EQ(profile.entries[1].op_type, "Mul");
    EXPECT_EQ(profile.entries[1].node_index, 1);
}

TEST(ErrorProfile, FastestGrowingLayersAreTheLargestGrowthsWhereTheErrorAtLeastDoubled) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-7));
    iteration.set("b", compared(1e-6));                // +0.92 decades
    iteration.set("c", compared(1e-3, 1.0, false));    // +3 decades: the fastest
    iteration.set("d", compared(1.9e-3, 1.0, false));  // x1.9: too little to mark
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_THAT(profile.fastest_growing, ElementsAre(2u, 1u));
    EXPECT_EQ(profile.entries[2].fastest_growing_rank, 1);
    EXPECT_EQ(profile.entries[1].fastest_growing_rank, 2);
    EXPECT_EQ(profile.entries[3].fastest_growing_rank, 0);
    EXPECT_EQ(profile.entries[0].fastest_growing_rank, 0);
}

TEST(ErrorProfile, AtMostThreeLayersAreMarkedFastestFirst) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-4));  // +2.92 decades over the exact input
    iteration.set("b", compared(1e-3));  // +1
    iteration.set("c", compared(1e+0));  // +3
    iteration.set("d", compared(1e+2));  // +2
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_THAT(profile.fastest_growing, ElementsAre(2u, 0u, 3u));
}

TEST(ErrorProfile, ALayerThatOnlyScalesValuesDoesNotGrowTheError) {
    // The Mul makes values and differences 100 times larger: the relative error stays.
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-4, 1.0));
    iteration.set("b", compared(1e-2, 100.0));
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_NEAR(profile.entries[1].error_level, 1e-4, 1e-15);
    EXPECT_NEAR(profile.entries[1].growth, 0.0, 1e-9);
    EXPECT_THAT(profile.fastest_growing, ElementsAre(0u));
}

TEST(ErrorProfile, UncomparedTensorsPassOnTheErrorOfTheNearestComparedOnes) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-5));
    iteration.set("d", compared(1e-2));  // b and c were not compared
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_THAT(tensors_of(profile), ElementsAre("a", "d"));
    EXPECT_NEAR(profile.entries[1].growth, 3.0, 1e-9);
}

TEST(ErrorProfile, ANodeGrowsOverTheLargerOfItsInputsErrors) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("Relu", {"x"}, {"p"}, "left");
    builder.node("Neg", {"x"}, {"q"}, "right");
    builder.node("Add", {"p", "q"}, {"s"}, "add");
    builder.output("s", DataType::kFloat32, Shape{4});
    const auto graph = builder.build()->graph();
    IterationCompareResult iteration;
    iteration.set("p", compared(1e-6));
    iteration.set("q", compared(1e-4));
    iteration.set("s", compared(1e-3));
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_NEAR(profile.entries[2].growth, 1.0, 1e-9);
}

TEST(ErrorProfile, EntriesFollowTheTopologicalOrderNotTheFileOrder) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("Abs", {"b"}, {"c"}, "last");
    builder.node("Neg", {"a"}, {"b"}, "middle");
    builder.node("Relu", {"x"}, {"a"}, "first");
    builder.output("c", DataType::kFloat32, Shape{4});
    const auto graph = builder.build()->graph();
    IterationCompareResult iteration;
    iteration.set("c", compared(1e-3));
    iteration.set("other", compared(1e-3));  // a name the graph does not have: last
    iteration.set("a", compared(1e-5));
    iteration.set("b", compared(1e-4));
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_THAT(tensors_of(profile), ElementsAre("a", "b", "c", "other"));
    EXPECT_EQ(profile.entries[3].node_index, -1);
}

TEST(ErrorProfile, MarksTheFirstDivergenceOfTheGraph) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-7));
    iteration.set("b", compared(1e-7));
    iteration.set("c", compared(1e-2, 1.0, false));
    iteration.set("d", compared(1e-2, 1.0, false));
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    ASSERT_TRUE(profile.first_divergence.has_value());
    EXPECT_EQ(*profile.first_divergence, 2u);
    EXPECT_TRUE(profile.entries[2].first_divergence);
    EXPECT_FALSE(profile.entries[3].first_divergence);
}

TEST(ErrorProfile, WithoutAGraphTheComparisonOrderIsTheChain) {
    IterationCompareResult iteration;
    iteration.set("y1", compared(1e-6));
    iteration.set("y0", compared(1e-3, 1.0, false));
    iteration.set("y2", compared(1e-3, 1.0, false));
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), nullptr)[0];
    EXPECT_THAT(tensors_of(profile), ElementsAre("y1", "y0", "y2"));
    EXPECT_NEAR(profile.entries[1].growth, 3.0, 1e-9);
    EXPECT_NEAR(profile.entries[2].growth, 0.0, 1e-9);
    ASSERT_TRUE(profile.first_divergence.has_value());
    EXPECT_EQ(*profile.first_divergence, 1u);  // the first failing output
}

TEST(ErrorProfile, NanErrorsGrowWithoutBoundAndIncomparableOutputsDoNotGrow) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-6));
    iteration.set("b", compared(std::numeric_limits<double>::quiet_NaN(), 1.0, false));
    OutputCompareResult broken;
    broken.error = "Will not compare outputs of different shapes.";
    iteration.set("c", broken);
    const auto graph = chain_graph();
    const ErrorProfile profile = build_error_profiles(accuracy_of(iteration), &graph)[0];
    EXPECT_TRUE(std::isinf(profile.entries[1].growth));
    EXPECT_EQ(profile.entries[1].fastest_growing_rank, 1);
    EXPECT_TRUE(std::isnan(profile.entries[2].error_level));
    EXPECT_EQ(profile.entries[2].growth, 0);
}

TEST(ErrorProfile, OneProfilePerPairAndIteration) {
    IterationCompareResult iteration;
    iteration.set("a", compared(1e-6));
    AccuracyResult accuracy;
    accuracy.pairs.push_back({"r0", "r1", {iteration, iteration}});
    accuracy.pairs.push_back({"r1", "r2", {iteration}});
    const auto profiles = build_error_profiles(accuracy, nullptr);
    ASSERT_EQ(profiles.size(), 3u);
    EXPECT_EQ(profiles[1].first_runner, "r0");
    EXPECT_EQ(profiles[1].iteration, 1u);
    EXPECT_EQ(profiles[2].second_runner, "r2");
}

TEST(ErrorFloor, IsTheCoarserTypesEpsilon) {
    EXPECT_EQ(error_floor(compared(1, 1, true, DataType::kFloat32)), kFloat32Epsilon);
    OutputCompareResult half = compared(1, 1, true, DataType::kFloat32);
    half.distributions->first_dtype = DataType::kFloat16;
    EXPECT_EQ(error_floor(half), 0.0009765625);
    EXPECT_EQ(error_floor(compared(1, 1, true, DataType::kInt64)), kFloat32Epsilon);
    EXPECT_EQ(error_floor(OutputCompareResult{}), 1e-7);
}

}  // namespace
}  // namespace polygraphy
