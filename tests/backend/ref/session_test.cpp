// Session: graph preparation (order, validation, unsupported ops, constants) and execution.
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "build_paths.h"
#include "model_builder.h"
#include "ops/op_test_util.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::set_attr;
using testing::f32;
using testing::i64;
using testing::tensors_near;

TEST(SessionTest, RunsNodesInTopologicalOrderWhateverTheirListOrder) {
    // y = Neg(Exp(Relu(x))), nodes listed out of order.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.node("Neg", {"b"}, {"y"}, "neg");
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Exp", {"a"}, {"b"}, "exp");
    builder.output("y", DataType::kFloat32, Shape{3});
    Session session(*builder.build());
    EXPECT_EQ(session.execution_order(), (std::vector<std::string>{"relu", "exp", "neg"}));
    const TensorMap out = session.run({{"x", f32({3}, {-1, 0, 1})}});
    // numpy: -np.exp(np.maximum(x, 0))
    EXPECT_TRUE(tensors_near(out.at("y"), f32({3}, {-1, -1, -std::exp(1.0)})));
}

TEST(SessionTest, KeepsTheListedOrderOfIndependentNodes) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Relu", {"x"}, {"a"}, "first");
    builder.node("Neg", {"x"}, {"b"}, "second");
    builder.node("Add", {"a", "b"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1});
    Session session(*builder.build());
    EXPECT_EQ(session.execution_order(), (std::vector<std::string>{"first", "second", "Add_2"}));
}

TEST(SessionTest, ReportsACycleNamingTheNodesOnIt) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Add", {"x", "t2"}, {"t1"}, "a");
    builder.node("Relu", {"t1"}, {"t2"}, "b");
    builder.node("Relu", {"t1"}, {"y"}, "c");  // downstream of the cycle, not on it
    builder.output("y", DataType::kFloat32, Shape{1});
    try {
        Session session(*builder.build());
        FAIL() << "expected a cycle error";
    } catch (const ModelError& error) {
        const std::string message = error.what();
        EXPECT_THAT(message, ::testing::HasSubstr("Graph contains a cycle through nodes 'a' -> 'b' -> 'a'"));
        EXPECT_THAT(message, ::testing::Not(::testing::HasSubstr("'c'")));
    }
}

TEST(SessionTest, ReportsANodeThatConsumesItsOwnOutput) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Add", {"x", "y"}, {"y"}, "self");
    builder.output("y", DataType::kFloat32, Shape{1});
    EXPECT_THROW_MESSAGE(Session(*builder.build()), ModelError, "cycle through nodes 'self' -> 'self'");
}

TEST(SessionTest, ReportsAnInputThatNothingProduces) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Add", {"x", "ghost"}, {"y"}, "adder");
    builder.output("y", DataType::kFloat32, Shape{1});
    EXPECT_THROW_MESSAGE(Session(*builder.build()), ModelError,
                         "Node 'adder' (Add): input 'ghost' is not produced by any node, graph input or initializer");
}

TEST(SessionTest, ReportsDuplicateProducersAndMissingOutputs) {
    {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1});
        builder.node("Relu", {"x"}, {"y"}, "one");
        builder.node("Neg", {"x"}, {"y"}, "two");
        builder.output("y", DataType::kFloat32, Shape{1});
        EXPECT_THROW_MESSAGE(Session(*builder.build()), ModelError,
                             "Tensor 'y' is produced by both node 'one' and node 'two'");
    }
    {
        ModelBuilder builder(17);
        builder.input("x", DataType::kFloat32, Shape{1});
        builder.node("Relu", {"x"}, {"y"});
        builder.output("z", DataType::kFloat32, Shape{1});
        EXPECT_THROW_MESSAGE(Session(*builder.build()), ModelError,
                             "Graph output 'z' is not produced by any node, graph input or initializer");
    }
}

TEST(SessionTest, ReportsEveryUnsupportedOperatorAtOnce) {
    ModelBuilder builder(17);
    builder.opset_import("custom", 3);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Relu", {"x"}, {"a"}, "fine");
    builder.node("MyOp", {"a"}, {"b"}, "n1", "custom");
    builder.node("Frobnicate", {"b"}, {"c"}, "n2");
    builder.node("MyOp", {"c"}, {"y"}, "", "other.domain");
    builder.output("y", DataType::kFloat32, Shape{1});
    try {
        Session session(*builder.build());
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& error) {
        EXPECT_EQ(std::string(error.what()),
                  "Unsupported operators: node 'n1' (MyOp, domain 'custom', opset 3), node 'n2' (Frobnicate, domain "
                  "'ai.onnx', opset 17), node 'MyOp_3' (MyOp, domain 'other.domain', opset 1)");
    }
}

TEST(SessionTest, AnOperatorOlderThanItsFirstVersionIsUnsupported) {
    ModelBuilder builder(8);  // Erf exists from opset 9
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Erf", {"x"}, {"y"}, "erf");
    builder.output("y", DataType::kFloat32, Shape{1});
    EXPECT_THROW_MESSAGE(Session(*builder.build()), UnsupportedError, "node 'erf' (Erf, domain 'ai.onnx', opset 8)");
}

TEST(SessionTest, ReleasesIntermediatesAfterTheirLastConsumer) {
    // x -> Relu x10 -> y: at most the input and output of one node are alive at a time.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    std::string previous = "x";
    for (int i = 0; i < 10; ++i) {
        const std::string next = i == 9 ? std::string("y") : std::string("t").append(std::to_string(i));
        builder.node(i % 2 ? "Abs" : "Neg", {previous}, {next});
        previous = next;
    }
    builder.output("y", DataType::kFloat32, Shape{4});
    Session session(*builder.build());
    RunStats stats;
    const TensorMap out = session.run({{"x", f32({4}, {-2, -1, 1, 2})}}, &stats);
    EXPECT_EQ(stats.nodes_executed, 10u);
    EXPECT_EQ(stats.peak_live_intermediates, 2u);
    // numpy: np.abs(-x) after each pair, so np.abs(x)
    EXPECT_TRUE(tensors_near(out.at("y"), f32({4}, {2, 1, 1, 2})));
}

TEST(SessionTest, KeepsATensorUntilItsLastConsumerInADiamond) {
    // a = Relu(x); b = Neg(a); c = Exp(a); d = Add(b, c); a must live until Exp ran.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"});
    builder.node("Neg", {"a"}, {"b"});
    builder.node("Exp", {"a"}, {"c"});
    builder.node("Add", {"b", "c"}, {"d"});
    builder.node("Sigmoid", {"x"}, {"unused"});  // consumed by nobody: released at once
    builder.output("d", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    RunStats stats;
    const TensorMap out = session.run({{"x", f32({2}, {-1, 2})}}, &stats);
    EXPECT_EQ(stats.peak_live_intermediates, 3u);  // a, b, c while Exp runs
    // numpy: -relu(x) + exp(relu(x))
    EXPECT_TRUE(tensors_near(out.at("d"), f32({2}, {1.0, -2 + std::exp(2.0)})));
    EXPECT_EQ(out.size(), 1u);
}

TEST(SessionTest, ReturnsOutputsThatAreInputsOrInitializers) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("w", f32({2}, {5, 6}));
    builder.node("Neg", {"x"}, {"y"});
    builder.output("x", DataType::kFloat32, Shape{2});
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("w", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    const Tensor x = f32({2}, {1, 2});
    const TensorMap out = session.run({{"x", x}});
    EXPECT_EQ(out.keys(), (std::vector<std::string>{"x", "y", "w"}));
    EXPECT_TRUE(out.at("x").equals(x));
    EXPECT_TRUE(tensors_near(out.at("y"), f32({2}, {-1, -2})));
    EXPECT_TRUE(tensors_near(out.at("w"), f32({2}, {5, 6})));
}

TEST(SessionTest, InitializersThatAreInputsAreOverridableDefaults) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.input("bias", DataType::kFloat32, Shape{2});
    builder.initializer("bias", f32({2}, {10, 20}));
    builder.node("Add", {"x", "bias"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    EXPECT_EQ(session.input_metadata().keys(), (std::vector<std::string>{"x"}));
    EXPECT_TRUE(tensors_near(session.run({{"x", f32({2}, {1, 2})}}).at("y"), f32({2}, {11, 22})));
    EXPECT_TRUE(
        tensors_near(session.run({{"x", f32({2}, {1, 2})}, {"bias", f32({2}, {0, 1})}}).at("y"), f32({2}, {1, 3})));
}

TEST(SessionTest, EvaluatesConstantNodesAtPreparation) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    auto& constant = builder.node("Constant", {}, {"c"}, "const");
    set_attr(constant, "value", f32({2}, {3, 4}));
    builder.node("Mul", {"x", "c"}, {"y"}, "mul");
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("c", DataType::kFloat32, Shape{2});
    Session session(*builder.build());
    EXPECT_EQ(session.execution_order(), (std::vector<std::string>{"mul"}));
    const TensorMap out = session.run({{"x", f32({2}, {1, 2})}});
    EXPECT_TRUE(tensors_near(out.at("y"), f32({2}, {3, 8})));
    EXPECT_TRUE(tensors_near(out.at("c"), f32({2}, {3, 4})));
}

TEST(SessionTest, KernelsSeeConstantInputs) {
    // Reshape's shape from a Constant node and from an initializer: both work, and a bad constant
    // shape fails when the node runs with the node named.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("bad_shape", i64({2}, {4, 4}));
    builder.node("Reshape", {"x", "bad_shape"}, {"y"}, "reshape");
    builder.output("y", DataType::kFloat32, Shape{4, 4});
    Session session(*builder.build());
    EXPECT_THROW_MESSAGE(session.run({{"x", testing::iota(DataType::kFloat32, {2, 3})}}), ModelError,
                         "Node 'reshape' (Reshape): cannot reshape input of shape (2, 3) (6 elements) into shape "
                         "[4, 4] (16 elements)");
}

TEST(SessionTest, OmittedOptionalInputsAreEmptyNames) {
    ModelBuilder builder(13);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.initializer("hi", f32({}, {1}));
    builder.node("Clip", {"x", "", "hi"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{3});
    Session session(*builder.build());
    // numpy: np.minimum(x, 1)
    EXPECT_TRUE(tensors_near(session.run({{"x", f32({3}, {-5, 0.5, 5})}}).at("y"), f32({3}, {-5, 0.5, 1})));
}

TEST(SessionTest, MissingFeedInputIsAnInputError) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1});
    Session session(*builder.build());
    EXPECT_THROW_MESSAGE(session.run({}), InputError, "Input 'x' is missing from the feed");
}

TEST(SessionTest, ThreadOptions) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1});
    const OnnxModel model = builder.build();
    EXPECT_EQ(Session(*model, SessionOptions{3}).num_threads(), 3);
    EXPECT_GE(Session(*model, SessionOptions{0}).num_threads(), 1);
    EXPECT_THROW_MESSAGE(Session(*model, SessionOptions{-1}), PolygraphyException, "Invalid number of threads: -1");
}

TEST(SessionTest, LargeElementwiseWorkIsTheSameWithManyThreads) {
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{300, 257});
    builder.input("b", DataType::kFloat32, Shape{257});
    builder.node("Add", {"a", "b"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{300, 257});
    const OnnxModel model = builder.build();
    const Tensor a = polygraphy::testing::random_tensor({300, 257}, 1);
    const Tensor b = polygraphy::testing::random_tensor({257}, 2);
    const Tensor one = Session(*model, SessionOptions{1}).run({{"a", a}, {"b", b}}).at("y");
    const Tensor four = Session(*model, SessionOptions{4}).run({{"a", a}, {"b", b}}).at("y");
    EXPECT_TRUE(one.equals(four));
    // numpy: a + b (broadcast over rows)
    EXPECT_FLOAT_EQ(one.data_as<float>()[257 * 299 + 256],
                    a.data_as<float>()[257 * 299 + 256] + b.data_as<float>()[256]);
}

TEST(SessionTest, OneLongRowIsSplitBetweenThreads) {
    // Same-shape operands coalesce into a single row; it is split between threads.
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{3, 40000});
    builder.input("b", DataType::kFloat32, Shape{3, 40000});
    builder.node("Sub", {"a", "b"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{3, 40000});
    const OnnxModel model = builder.build();
    const Tensor a = polygraphy::testing::random_tensor({3, 40000}, 3);
    const Tensor b = polygraphy::testing::random_tensor({3, 40000}, 4);
    const Tensor y = Session(*model, SessionOptions{5}).run({{"a", a}, {"b", b}}).at("y");
    for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_EQ(y.data_as<float>()[i], a.data_as<float>()[i] - b.data_as<float>()[i]) << i;  // numpy: a - b
}

TEST(SessionTest, RunsConcurrentlyFromSeveralThreads) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{64});
    builder.node("Mul", {"x", "x"}, {"sq"});
    builder.node("Sub", {"sq", "x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{64});
    const Session session(*builder.build(), SessionOptions{1});
    std::vector<Tensor> results(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            const Tensor x = polygraphy::testing::random_tensor({64}, static_cast<uint32_t>(t));
            for (int repeat = 0; repeat < 50; ++repeat) results[t] = session.run({{"x", x}}).at("y");
        });
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < 4; ++t) {
        const Tensor x = polygraphy::testing::random_tensor({64}, static_cast<uint32_t>(t));
        for (int64_t i = 0; i < 64; ++i) {
            const float v = x.data_as<float>()[i];
            ASSERT_EQ(results[t].data_as<float>()[i], v * v - v);  // numpy: x * x - x
        }
    }
}

TEST(SessionTest, ProfileTimesEveryStepOfTheRunsAfterTheFirst) {
    // Conv -> Relu (folded: one step "Conv+Relu") -> Neg.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 2, 4, 4});
    builder.initializer("w", polygraphy::testing::random_tensor({3, 2, 3, 3}, 1));
    set_attr(builder.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.node("Neg", {"r"}, {"y"}, "neg");
    builder.output("y", DataType::kFloat32, Shape{1, 3, 4, 4});
    const OnnxModel model = builder.build();
    const TensorMap feed{{"x", polygraphy::testing::random_tensor({1, 2, 4, 4}, 2)}};

    EXPECT_FALSE(Session(*model, SessionOptions{1}).profile().has_value());  // off by default

    SessionOptions options{1};
    options.profile = true;
    const Session session(*model, options);
    EXPECT_EQ(session.profile()->runs, 0u);
    EXPECT_THAT(format_profile(*session.profile()), ::testing::HasSubstr("no run counted"));
    for (int run = 0; run < 3; ++run) session.run(feed);
    const SessionProfile profile = *session.profile();
    EXPECT_EQ(profile.runs, 2u);  // the first run prepares the kernels' primitives and is not counted
    ASSERT_EQ(profile.nodes.size(), 2u);
    EXPECT_EQ(profile.nodes[0].name, "conv");
    EXPECT_EQ(profile.nodes[0].op_type, "Conv+Relu");
    EXPECT_EQ(profile.nodes[1].name, "neg");
    EXPECT_EQ(profile.nodes[1].op_type, "Neg");
    double nodes_total = 0;
    for (const auto& node : profile.nodes) {
        EXPECT_GT(node.seconds, 0.0) << node.name;
        nodes_total += node.seconds;
    }
    EXPECT_GE(profile.total_seconds, nodes_total);

    const std::string text = format_profile(profile, 1);
    EXPECT_THAT(text, ::testing::HasSubstr("Profile of 2 run(s)"));
    EXPECT_THAT(text, ::testing::HasSubstr("Conv+Relu"));
    EXPECT_THAT(text, ::testing::HasSubstr("Slowest nodes (1 of 2)"));
}

// The profile counts each product's floating-point operations (2 per multiply-add), so that
// --ref-profile prints its GFLOP/s and its share of the machine's sgemm peak: a Conv (with its folded
// Relu), a MatMul, a Gemm with transA, and nothing for the other operators.
TEST(SessionTest, ProfileCountsTheOperationsOfEveryProduct) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 2, 4, 4});
    builder.initializer("w", polygraphy::testing::random_tensor({3, 2, 3, 3}, 1));
    set_attr(builder.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"c"}, {"r"}, "relu");
    builder.initializer("shape", Tensor::from_doubles(DataType::kInt64, {2}, {3, 16}));
    builder.node("Reshape", {"r", "shape"}, {"f"}, "flatten");
    builder.initializer("m", polygraphy::testing::random_tensor({16, 5}, 2));
    builder.node("MatMul", {"f", "m"}, {"p"}, "matmul");
    builder.initializer("g", polygraphy::testing::random_tensor({3, 7}, 3));
    set_attr(builder.node("Gemm", {"p", "g"}, {"y"}, "gemm"), "transA", int64_t{1});  // [5, 3] x [3, 7]
    builder.output("y", DataType::kFloat32, Shape{5, 7});
    SessionOptions options{1};
    options.profile = true;
    const Session session(*builder.build(), options);
    const TensorMap feed{{"x", polygraphy::testing::random_tensor({1, 2, 4, 4}, 4)}};
    for (int run = 0; run < 4; ++run) session.run(feed);
    const SessionProfile profile = *session.profile();
    ASSERT_EQ(profile.runs, 3u);
    std::map<std::string, double> flops;
    for (const auto& node : profile.nodes) flops[node.name] = node.flops;
    EXPECT_EQ(flops.at("conv"), 3.0 * 2 * (3 * 16) * (2 * 9));  // outputs x (C x taps) x 2, 3 runs
    EXPECT_EQ(flops.at("matmul"), 3.0 * 2 * (3 * 5) * 16);
    EXPECT_EQ(flops.at("gemm"), 3.0 * 2 * (5 * 7) * 3);
    EXPECT_EQ(flops.at("flatten"), 0.0);
    EXPECT_EQ(profile.threads, 1);
    EXPECT_GT(profile.peak_gflops, 1.0);  // oneDNN's sgemm on one core
    const std::string text = format_profile(profile);
    EXPECT_THAT(text, ::testing::HasSubstr("GFLOP/s"));
    EXPECT_THAT(text, ::testing::HasSubstr("of peak"));
    EXPECT_THAT(text, ::testing::ContainsRegex("matmul +MatMul +[0-9.]+ +[0-9.]+% +[0-9.]+ +[0-9]+%"));
}

TEST(SessionTest, SessionFromOnnxBuildsFromALoader) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Neg", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1});
    SessionFromOnnx loader(loader_from_value(builder.build()));
    std::shared_ptr<Session> session = loader();
    EXPECT_TRUE(tensors_near(session->run({{"x", f32({1}, {2})}}).at("y"), f32({1}, {-2})));
    EXPECT_EQ(session->output_metadata().keys(), (std::vector<std::string>{"y"}));
}

TEST(SessionTest, ModelsFromTheSharedFolderPrepare) {
    // Optional: real Polygraphy test models, when ../shared is present.
    const char* override_dir = std::getenv("POLYGRAPHY_SHARED_DIR");
    const std::string dir =
        std::string(override_dir ? override_dir : POLYGRAPHY_SHARED_DIR) + "/models/polygraphy-tests/";
    if (!std::ifstream(dir + "identity.onnx").good()) GTEST_SKIP() << "no shared models";
    for (const char* name : {"identity.onnx", "and.onnx", "pow_scalar.onnx", "nonzero.onnx", "no_op_reshape.onnx",
                             "cleanable.onnx", "multi_output.onnx", "tensor_attr.onnx"}) {
        std::ifstream file(dir + name, std::ios::binary);
        onnx::ModelProto model;
        ASSERT_TRUE(model.ParseFromIstream(&file)) << name;
        EXPECT_NO_THROW(Session session(model)) << name;
    }
}

}  // namespace
}  // namespace polygraphy::ref
