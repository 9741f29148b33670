// RefRunner: lifecycle, metadata, and the input checks of BaseRunner seen through it.
#include "polygraphy/backend/ref/runner.h"
#include "model_builder.h"
#include "ops/op_test_util.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using testing::f32;
using testing::i64;
using testing::tensors_near;

OnnxModel add_model() {
    // y = x + bias, with `bias` an initializer that is also listed as a graph input.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(2)});
    builder.input("bias", DataType::kFloat32, Shape{2});
    builder.initializer("bias", f32({2}, {1, 2}));
    builder.node("Add", {"x", "bias"}, {"y"});
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(2)});
    return builder.build();
}

TEST(RefRunnerTest, NameHasTheRefRunnerPrefix) {
    RefRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    EXPECT_THAT(runner.name(), ::testing::StartsWith("ref-runner-N"));
    RefRunner named(SessionFromOnnx(loader_from_value(add_model())), "custom");
    EXPECT_EQ(named.name(), "custom");
}

TEST(RefRunnerTest, InfersAfterActivation) {
    RefRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    RunnerActivation active(runner);
    const TensorMetadata metadata = runner.get_input_metadata();
    EXPECT_EQ(metadata.keys(), (std::vector<std::string>{"x"}));  // initializers are not inputs
    EXPECT_EQ(metadata.at("x").dtype, DataType::kFloat32);
    const TensorMap out = runner.infer({{"x", f32({1, 2}, {10, 20})}});
    // numpy: x + [1, 2]
    EXPECT_TRUE(tensors_near(out.at("y"), f32({1, 2}, {11, 22})));
    EXPECT_TRUE(runner.last_inference_time().has_value());
}

TEST(RefRunnerTest, ActivateTwiceAndInferInactiveAreClearErrors) {
    RefRunner runner(SessionFromOnnx(loader_from_value(add_model())), "r");
    EXPECT_THROW_MESSAGE(runner.infer({{"x", f32({1, 2}, {1, 2})}}), PolygraphyException,
                         "r | Must be activated prior to calling infer()");
    EXPECT_THROW_MESSAGE(runner.get_input_metadata(), PolygraphyException, "Must be activated");
    runner.activate();
    EXPECT_THROW_MESSAGE(runner.activate(), PolygraphyException, "r | Runner is already active");
    runner.deactivate();
    EXPECT_THROW_MESSAGE(runner.deactivate(), PolygraphyException, "Runner is not active");
}

TEST(RefRunnerTest, ActivateBuildsTheSessionAndDeactivateReleasesIt) {
    int builds = 0;
    std::weak_ptr<Session> last;
    Loader<std::shared_ptr<Session>> loader = [&] {
        ++builds;
        auto session = SessionFromOnnx(loader_from_value(add_model()))();
        last = session;
        return session;
    };
    RefRunner runner(loader);
    EXPECT_EQ(builds, 0);  // lazy
    runner.activate();
    EXPECT_EQ(builds, 1);
    EXPECT_FALSE(last.expired());
    runner.deactivate();
    EXPECT_TRUE(last.expired());
    runner.activate();  // can be activated again
    EXPECT_EQ(builds, 2);
    EXPECT_TRUE(tensors_near(runner.infer({{"x", f32({1, 2}, {0, 0})}}).at("y"), f32({1, 2}, {1, 2})));
    runner.deactivate();
}

TEST(RefRunnerTest, ModelErrorsSurfaceAtActivation) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("NoSuchOp", {"x"}, {"y"}, "mystery");
    builder.output("y", DataType::kFloat32, Shape{1});
    RefRunner runner(SessionFromOnnx(loader_from_value(builder.build())));
    EXPECT_THROW_MESSAGE(runner.activate(), UnsupportedError,
                         "Unsupported operators: node 'mystery' (NoSuchOp, domain 'ai.onnx', opset 17)");
    EXPECT_FALSE(runner.is_active());
}

TEST(RefRunnerTest, BadFeedsAreInputErrorsNamingTheInput) {
    RefRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    RunnerActivation active(runner);
    EXPECT_THROW_MESSAGE(runner.infer({}), InputError, "Input tensor: x | Is missing from the feed.");
    EXPECT_THROW_MESSAGE(runner.infer({{"x", f32({1, 2}, {1, 2})}, {"z", f32({1}, {1})}}), InputError,
                         "Input tensor: z | Is not an input of the model.");
    EXPECT_THROW_MESSAGE(runner.infer({{"x", i64({1, 2}, {1, 2})}}), InputError,
                         "Input tensor: x | Received unexpected dtype.");
    EXPECT_THROW_MESSAGE(runner.infer({{"x", f32({1, 3}, {1, 2, 3})}}), InputError,
                         "Input tensor: x | Received incompatible shape: (1, 3)");
    // Unchecked inference goes straight to the session: the kernel reports the broadcast error.
    EXPECT_THROW_MESSAGE(runner.infer({{"x", f32({1, 3}, {1, 2, 3})}}, /*check_inputs=*/false), ModelError,
                         "Node 'Add_0' (Add): cannot broadcast shapes (1, 3) and (2,)");
}

}  // namespace
}  // namespace polygraphy::ref
