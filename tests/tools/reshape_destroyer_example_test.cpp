// The example extension module of examples/dev/02_extending_polygraphy_run (built in-tree into
// POLYGRAPHY_TEST_PLUGIN_DIR/example) on models that exercise its loader and runner through
// `polygraphy run --res-des`. The README's own steps are checked by tests/plugins/example_sdk_test.sh.
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "plugin_test_util.h"
#include "build_paths.h"

namespace polygraphy::tools {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::TempDir;

CommandResult run_example(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    return testing::run_with_plugins(std::string(POLYGRAPHY_TEST_PLUGIN_DIR) + "/example", args);
}

Tensor int64_tensor(const std::vector<int64_t>& values) {
    std::vector<double> doubles(values.begin(), values.end());
    return Tensor::from_doubles(DataType::kInt64, Shape{static_cast<int64_t>(values.size())}, doubles);
}

class ReshapeDestroyerExample : public ::testing::Test {
protected:
    std::string save(const ModelBuilder& builder, const std::string& name) {
        const std::string path = dir_.file(name);
        builder.save(path);
        return path;
    }
    TempDir dir_;
};

TEST_F(ReshapeDestroyerExample, NoOpReshapeFromAnInitializerIsReplacedAndMatchesTheReferenceRuntime) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("shape", int64_tensor({2, 3}));
    builder.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    const std::string model = save(builder, "m.onnx");

    auto result = run_example({model, "--res-des", "--ref"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Replacing no-op reshape: reshape with an Identity node"));
    EXPECT_THAT(result.output, Not(HasSubstr("Renamed")));
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched | Outputs: ['y']"));

    result = run_example({model, "--res-des", "--res-des-rename-nodes"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Renamed Identity node to: reshape_destroyed"));
}

TEST_F(ReshapeDestroyerExample, ShapeFromAConstantNodeAndChainsOfReshapes) {
    // x -Reshape(Constant [2,3])-> a -Reshape(init [2,3])-> y: the second is found through the first's output.
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    auto& constant = builder.node("Constant", {}, {"const_shape"}, "const");
    testing::set_attr(constant, "value", int64_tensor({2, 3}));
    builder.node("Reshape", {"x", "const_shape"}, {"a"}, "first");
    builder.initializer("shape", int64_tensor({2, 3}));
    builder.node("Reshape", {"a", "shape"}, {"y"}, "second");
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    const std::string model = save(builder, "chain.onnx");

    // The runner accepts only Identity nodes, so this passes only if the Constant went too.
    const auto result = run_example({model, "--res-des", "--ref"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Replacing no-op reshape: first with an Identity node"));
    EXPECT_THAT(result.output, HasSubstr("Replacing no-op reshape: second with an Identity node"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
}

TEST_F(ReshapeDestroyerExample, ReshapesThatMayChangeTheShapeStayAndTheRunnerRefusesThem) {
    struct Case {
        const char* name;
        DynShape input;
        std::vector<int64_t> new_shape;
    };
    const std::vector<Case> cases = {
        {"real", {Dim::fixed(2), Dim::fixed(3)}, {3, 2}},        // a real reshape
        {"minus_one", {Dim::fixed(2), Dim::fixed(3)}, {2, -1}},  // same result, but not statically equal
        {"dynamic", {Dim::named("N"), Dim::fixed(3)}, {2, 3}},   // input shape unknown before inference
        {"rank", {Dim::fixed(2), Dim::fixed(3)}, {2, 3, 1}},     // different rank
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, c.input);
        builder.initializer("shape", int64_tensor(c.new_shape));
        builder.node("Reshape", {"x", "shape"}, {"y"}, std::string("reshape_") + c.name);
        builder.output("y", DataType::kFloat32, DynShape{});
        const std::string model = save(builder, std::string(c.name) + ".onnx");
        const auto result = run_example({model, "--res-des", "--input-shapes", "x:[2,3]"});
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, Not(HasSubstr("Replacing no-op reshape")));
        EXPECT_THAT(result.output, HasSubstr(std::string("[!] Encountered an unsupported type of node: Reshape (node "
                                                         "'reshape_") +
                                             c.name + "')\n    Note: This runner only supports Identity nodes!"));
    }
}

TEST_F(ReshapeDestroyerExample, SpeedIsValidatedAndSlowModesSleep) {
    const std::string model = dir_.file("identity.onnx");
    testing::save_identity_model(model, Shape{1});

    auto result = run_example({model, "--res-des", "--res-des-speed", "warp"});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("polygraphy run: error: argument --res-des-speed: invalid choice: 'warp' (choose from "
                          "'slow', 'medium', 'fast')"));

    // Not a timing assertion on the machine's speed: a sleep of 500 ms is a lower bound on the time reported.
    result = run_example({model, "--res-des", "--res-des-speed=medium"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const auto at = result.output.find("Average inference time: ");
    ASSERT_NE(at, std::string::npos) << result.output;
    const double ms = std::stod(result.output.substr(at + 24));
    EXPECT_GE(ms, 500.0) << result.output;
}

}  // namespace
}  // namespace polygraphy::tools
