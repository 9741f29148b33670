// OnnxrtRunner and Session on models built in code: values, dtypes, dynamic shapes and errors.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "onnxrt_test_util.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"

namespace polygraphy::onnxrt {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::set_attr;
using polygraphy::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class OnnxrtRunnerTest : public ::testing::Test {
protected:
    void SetUp() override { POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME(); }
};

// y = a + b, both float32 (2, 3).
OnnxModel add_model() {
    ModelBuilder builder(17);
    builder.input("a", DataType::kFloat32, Shape{2, 3});
    builder.input("b", DataType::kFloat32, Shape{2, 3});
    builder.node("Add", {"a", "b"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    return builder.build();
}

// y = Identity(x) for any dtype, with a dynamic leading dim named 'n'.
OnnxModel identity_model(DataType dtype, int64_t opset = 21) {
    ModelBuilder builder(opset);
    if (opset >= 21) builder.ir_version(10);
    builder.input("x", dtype, DynShape{Dim::named("n"), Dim::fixed(3)});
    builder.node("Identity", {"x"}, {"y"});
    builder.output("y", dtype, DynShape{Dim::named("n"), Dim::fixed(3)});
    return builder.build();
}

// Message of the exception `statement` throws, checked to be of type E.
template <typename E, typename F>
std::string error_of(F&& statement) {
    try {
        statement();
    } catch (const E& error) {
        return error.what();
    } catch (const std::exception& error) {
        ADD_FAILURE() << "unexpected exception type: " << error.what();
        return error.what();
    }
    ADD_FAILURE() << "no exception thrown";
    return "";
}

TEST(OnnxrtRunnerNoLibrary, ActivationReportsTheMissingLibrary) {
    if (!built_with_onnxruntime()) GTEST_SKIP() << "built without ONNX-Runtime";
    testing::ScopedEnv env("POLYGRAPHY_ONNXRUNTIME_LIB", "/nonexistent/libonnxruntime.so.1");
    // ctest runs each test in its own process; in a whole-binary run another test may have loaded it.
    if (is_available()) GTEST_SKIP() << "ONNX-Runtime is already loaded in this process";
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    const std::string message = error_of<PolygraphyException>([&] { runner.activate(); });
    EXPECT_THAT(message, StartsWith("Could not load the ONNX-Runtime library (tried: /nonexistent/libonnxruntime.so.1: "));
    EXPECT_THAT(message, HasSubstr("scripts/setup_onnxruntime.sh"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
    EXPECT_FALSE(runner.is_active());
}

TEST_F(OnnxrtRunnerTest, AddComputesValuesAndRecordsTime) {
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    EXPECT_THAT(runner.name(), StartsWith("onnxrt-runner-N"));
    RunnerActivation active(runner);
    const TensorMetadata metadata = runner.get_input_metadata();
    ASSERT_EQ(metadata.keys(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(metadata.at("b").dtype, DataType::kFloat32);
    EXPECT_EQ(metadata.at("b").shape, to_dyn_shape({2, 3}));

    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0.5, -2, 10, 0, -5, 1e3});
    const TensorMap outputs = runner.infer({{"a", a}, {"b", b}});
    ASSERT_EQ(outputs.keys(), std::vector<std::string>{"y"});
    EXPECT_TRUE(outputs.at("y").equals(Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1.5, 0, 13, 4, 0, 1006})));
    ASSERT_TRUE(runner.last_inference_time().has_value());
    EXPECT_GE(*runner.last_inference_time(), 0.0);
    // The inputs were wrapped, not modified.
    EXPECT_TRUE(a.equals(Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6})));
}

TEST_F(OnnxrtRunnerTest, ReluMatMulWithDynamicBatch) {
    // y = Relu(x) @ W with x: ('batch', 3), W: (3, 2).
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    builder.initializer("W", Tensor::from_doubles(DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6}));
    builder.node("Relu", {"x"}, {"r"});
    builder.node("MatMul", {"r", "W"}, {"y"});
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(2)});
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(builder.build())));
    RunnerActivation active(runner);

    const TensorMetadata metadata = runner.get_input_metadata();
    ASSERT_EQ(metadata.size(), 1u);  // the initializer is not an input
    EXPECT_EQ(metadata.at("x").dtype, DataType::kFloat32);
    EXPECT_EQ(metadata.at("x").shape, (DynShape{Dim::named("batch"), Dim::fixed(3)}));

    for (int64_t batch : {1, 4}) {
        std::vector<double> values, expected;
        for (int64_t row = 0; row < batch; ++row) {
            const double x0 = row - 1.0, x1 = -2.0 * row, x2 = 0.5 * row;
            values.insert(values.end(), {x0, x1, x2});
            const double r0 = std::max(x0, 0.0), r1 = std::max(x1, 0.0), r2 = std::max(x2, 0.0);
            expected.insert(expected.end(), {r0 * 1 + r1 * 3 + r2 * 5, r0 * 2 + r1 * 4 + r2 * 6});
        }
        const TensorMap outputs = runner.infer({{"x", Tensor::from_doubles(DataType::kFloat32, {batch, 3}, values)}});
        EXPECT_TRUE(outputs.at("y").equals(Tensor::from_doubles(DataType::kFloat32, {batch, 2}, expected)))
            << "batch " << batch;
    }
}

TEST_F(OnnxrtRunnerTest, SessionMetadataKeepsSymbolicAndUnknownDims) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::unknown(), Dim::fixed(4)});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::unknown(), Dim::fixed(4)});
    const auto session = session_from_onnx(*builder.build());
    EXPECT_EQ(session->input_metadata().to_string(), "{x [dtype=float32, shape=('batch', -1, 4)]}");
    const MetadataEntry& entry = session->input_metadata().at("x");
    ASSERT_TRUE(entry.shape.has_value());
    EXPECT_EQ((*entry.shape)[0], Dim::named("batch"));
    EXPECT_EQ((*entry.shape)[1], Dim::unknown());
    EXPECT_EQ(session->output_metadata().keys(), std::vector<std::string>{"y"});
    EXPECT_EQ(session->providers(), std::vector<std::string>{"CPUExecutionProvider"});
}

TEST_F(OnnxrtRunnerTest, IntegerBoolAndFloat16Computations) {
    ModelBuilder builder(17);
    builder.input("i", DataType::kInt64, Shape{3});
    builder.input("j", DataType::kInt64, Shape{3});
    builder.input("p", DataType::kBool, Shape{3});
    builder.input("h", DataType::kFloat16, Shape{3});
    builder.node("Add", {"i", "j"}, {"sum"});
    builder.node("Not", {"p"}, {"not_p"});
    set_attr(builder.node("Cast", {"h"}, {"h32"}), "to", int64_t{1});  // to float32
    builder.node("Greater", {"i", "j"}, {"gt"});
    builder.output("sum", DataType::kInt64, Shape{3});
    builder.output("not_p", DataType::kBool, Shape{3});
    builder.output("h32", DataType::kFloat32, Shape{3});
    builder.output("gt", DataType::kBool, Shape{3});
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(builder.build())));
    RunnerActivation active(runner);

    const Tensor i = Tensor::from_doubles(DataType::kInt64, {3}, {1, -5, 4000000000.0});
    const Tensor j = Tensor::from_doubles(DataType::kInt64, {3}, {2, -6, 4000000000.0});
    const Tensor p = Tensor::from_doubles(DataType::kBool, {3}, {1, 0, 1});
    const Tensor h = Tensor::from_doubles(DataType::kFloat16, {3}, {0.5, -1024, 65504});
    const TensorMap outputs = runner.infer({{"i", i}, {"j", j}, {"p", p}, {"h", h}});
    EXPECT_EQ(outputs.keys(), (std::vector<std::string>{"sum", "not_p", "h32", "gt"}));
    EXPECT_TRUE(outputs.at("sum").equals(Tensor::from_doubles(DataType::kInt64, {3}, {3, -11, 8000000000.0})));
    EXPECT_TRUE(outputs.at("not_p").equals(Tensor::from_doubles(DataType::kBool, {3}, {0, 1, 0})));
    EXPECT_TRUE(outputs.at("h32").equals(Tensor::from_doubles(DataType::kFloat32, {3}, {0.5, -1024, 65504})));
    EXPECT_TRUE(outputs.at("gt").equals(Tensor::from_doubles(DataType::kBool, {3}, {0, 1, 0})));
}

// Every element type ORT's CPU Identity accepts round-trips bit-exactly through it.
class OnnxrtDtypeRoundTrip : public ::testing::TestWithParam<DataType> {
protected:
    void SetUp() override { POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME(); }
};

TEST_P(OnnxrtDtypeRoundTrip, IdentityKeepsBitsAndDtype) {
    const DataType dtype = GetParam();
    const auto session = session_from_onnx(*identity_model(dtype));
    ASSERT_EQ(session->input_metadata().at("x").dtype, dtype);
    ASSERT_EQ(session->output_metadata().at("y").dtype, dtype);

    Tensor input(dtype, {2, 3});
    auto* bytes = static_cast<uint8_t*>(input.data());
    for (std::size_t k = 0; k < input.nbytes(); ++k) bytes[k] = static_cast<uint8_t>(k * 37 + 11);
    if (dtype == DataType::kBool)
        for (std::size_t k = 0; k < input.nbytes(); ++k) bytes[k] &= 1;
    const TensorMap outputs = session->run({{"x", input}});
    EXPECT_TRUE(outputs.at("y").equals(input)) << dtype_name(dtype);
}

INSTANTIATE_TEST_SUITE_P(AllCpuTypes, OnnxrtDtypeRoundTrip,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                           DataType::kBFloat16, DataType::kInt8, DataType::kInt16, DataType::kInt32,
                                           DataType::kInt64, DataType::kUInt8, DataType::kUInt16, DataType::kUInt32,
                                           DataType::kUInt64, DataType::kBool, DataType::kFloat8E4M3FN,
                                           DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                                           DataType::kFloat8E5M2FNUZ),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                             return std::string(dtype_name(info.param));
                         });

// ORT's CPU Identity has no 4-bit kernels: int4/uint4 go through (De)QuantizeLinear instead, with
// an odd element count so the half-filled last byte of ORT's packed layout is exercised.
TEST_F(OnnxrtRunnerTest, FourBitIntegersArePackedAndUnpacked) {
    for (const DataType dtype : {DataType::kInt4, DataType::kUInt4}) {
        ModelBuilder builder(21);
        builder.ir_version(10);
        builder.input("q", dtype, Shape{5});
        builder.input("f", DataType::kFloat32, Shape{5});
        builder.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {}, {1.0}));
        builder.node("DequantizeLinear", {"q", "scale"}, {"dequantized"});
        set_attr(builder.node("QuantizeLinear", {"f", "scale"}, {"quantized"}), "output_dtype",
                 int64_t{dtype_to_onnx(dtype)});
        builder.output("dequantized", DataType::kFloat32, Shape{5});
        builder.output("quantized", dtype, Shape{5});
        const auto session = session_from_onnx(*builder.build());
        EXPECT_EQ(session->input_metadata().at("q").dtype, dtype);

        const std::vector<double> values =
            dtype == DataType::kInt4 ? std::vector<double>{-8, 7, -1, 3, -5} : std::vector<double>{0, 15, 9, 1, 6};
        Tensor four_bit(dtype, {5});  // one element per byte (int8 / uint8 storage)
        for (std::size_t k = 0; k < values.size(); ++k)
            four_bit.data_as<uint8_t>()[k] = static_cast<uint8_t>(static_cast<int8_t>(values[k]));
        const TensorMap outputs =
            session->run({{"q", four_bit}, {"f", Tensor::from_doubles(DataType::kFloat32, {5}, values)}});
        EXPECT_TRUE(outputs.at("dequantized").equals(Tensor::from_doubles(DataType::kFloat32, {5}, values)))
            << dtype_name(dtype);
        EXPECT_TRUE(outputs.at("quantized").equals(four_bit)) << dtype_name(dtype);
    }
}

TEST_F(OnnxrtRunnerTest, StringsRoundTripWithEmbeddedNulAndEmpty) {
    const auto session = session_from_onnx(*identity_model(DataType::kString, 17));
    Tensor input(DataType::kString, {2, 3});
    input.strings() = {"hello", "", std::string("a\0b", 3), "ünïcødé", std::string(1000, 'x'), "z"};
    const Tensor output = session->run({{"x", input}}).at("y");
    EXPECT_EQ(output.dtype(), DataType::kString);
    EXPECT_EQ(output.shape(), (Shape{2, 3}));
    EXPECT_EQ(output.strings(), input.strings());
}

TEST_F(OnnxrtRunnerTest, ScalarsAndEmptyTensors) {
    ModelBuilder builder(17);
    builder.input("s", DataType::kFloat32, Shape{});
    builder.input("e", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(3)});
    builder.node("Neg", {"s"}, {"neg"});
    builder.node("Relu", {"e"}, {"relu"});
    builder.output("neg", DataType::kFloat32, Shape{});
    builder.output("relu", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(3)});
    const auto session = session_from_onnx(*builder.build());
    const TensorMap outputs = session->run(
        {{"s", Tensor::from_doubles(DataType::kFloat32, {}, {2.5})}, {"e", Tensor(DataType::kFloat32, {0, 3})}});
    EXPECT_TRUE(outputs.at("neg").equals(Tensor::from_doubles(DataType::kFloat32, {}, {-2.5})));
    EXPECT_EQ(outputs.at("relu").shape(), (Shape{0, 3}));
}

TEST_F(OnnxrtRunnerTest, SessionOptionsAreApplied) {
    SessionOptions options;
    options.intra_op_num_threads = 1;
    options.inter_op_num_threads = 2;
    options.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
    options.execution_mode = ExecutionMode::kParallel;
    options.providers = {"CPUExecutionProvider"};
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(add_model()), options));
    RunnerActivation active(runner);
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_TRUE(runner.infer({{"a", a}, {"b", a}}).at("y").equals(
        Tensor::from_doubles(DataType::kFloat32, {2, 3}, {2, 4, 6, 8, 10, 12})));
}

TEST_F(OnnxrtRunnerTest, NegativeThreadCountIsRejected) {
    SessionOptions options;
    options.intra_op_num_threads = -1;
    const std::string message = error_of<PolygraphyException>([&] { session_from_onnx(*add_model(), options); });
    EXPECT_THAT(message, StartsWith("ONNX-Runtime thread counts must be >= 0"));
}

TEST_F(OnnxrtRunnerTest, UnknownProviderListsAvailableProviders) {
    SessionOptions options;
    options.providers = {"cpu", "no-such-provider"};
    const std::string message = error_of<PolygraphyException>([&] { session_from_onnx(*add_model(), options); });
    EXPECT_THAT(message, StartsWith("Could not find specified ONNX-Runtime execution provider.\nNote: Requested "
                                    "provider was: no-such-provider, but available providers are: ["));
    EXPECT_THAT(message, HasSubstr("'CPUExecutionProvider'"));
}

// The npm build lists CUDA even where its provider library is not installed: enabling it must then
// fail with one message naming the provider and the providers that can be enabled, free of
// ONNX-Runtime's internal text (where CUDA does work, the session simply runs).
TEST_F(OnnxrtRunnerTest, ListedProviderThatCannotLoadIsOneLineError) {
    const auto available = available_providers();
    if (std::find(available.begin(), available.end(), "CUDAExecutionProvider") == available.end())
        GTEST_SKIP() << "this ONNX-Runtime does not list CUDAExecutionProvider";
    SessionOptions options;
    options.providers = {"cuda"};
    try {
        const auto session = session_from_onnx(*add_model(), options);
        EXPECT_EQ(session->providers(), std::vector<std::string>{"CUDAExecutionProvider"});
    } catch (const PolygraphyException& error) {
        const std::string message = error.what();
        EXPECT_NE(dynamic_cast<const UnsupportedError*>(&error), nullptr);
        EXPECT_THAT(message, StartsWith("This ONNX-Runtime build "));
        EXPECT_THAT(message, ::testing::ContainsRegex("(has only the CPU execution provider: CUDAExecutionProvider "
                                                      "cannot be enabled|cannot enable CUDAExecutionProvider)"));
        EXPECT_THAT(message, HasSubstr("\nNote: providers that can be enabled: ['CPUExecutionProvider'"));
        EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
        EXPECT_THAT(message, Not(HasSubstr("onnxruntime::")));
    }
}

TEST_F(OnnxrtRunnerTest, SessionFromPathAndBytes) {
    TempDir dir;
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.save(dir.file("relu.onnx"));
    const Tensor x = Tensor::from_doubles(DataType::kFloat32, {2}, {-1, 2});
    const Tensor expected = Tensor::from_doubles(DataType::kFloat32, {2}, {0, 2});

    const auto from_path = SessionFromOnnx::from_path(dir.file("relu.onnx"))();
    EXPECT_TRUE(from_path->run({{"x", x}}).at("y").equals(expected));
    const auto from_bytes = SessionFromOnnx::from_bytes(loader_from_value(bytes_from_onnx(*builder.build())))();
    EXPECT_TRUE(from_bytes->run({{"x", x}}).at("y").equals(expected));
    EXPECT_TRUE(session_from_path(dir.file("relu.onnx"))->run({{"x", x}}).at("y").equals(expected));
}

TEST_F(OnnxrtRunnerTest, MissingModelFileIsNotAModelError) {
    const std::string message = error_of<PolygraphyException>(
        [] { SessionFromOnnx::from_path("/nonexistent/model.onnx")(); });
    EXPECT_THAT(message, HasSubstr("/nonexistent/model.onnx"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST_F(OnnxrtRunnerTest, RefusedModelIsOneLineModelError) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    auto& node = builder.node("Relu", {"x"}, {"y"}, "bad_relu");
    set_attr(node, "no_such_attribute", int64_t{3});
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(builder.build())));
    const std::string message = error_of<ModelError>([&] { runner.activate(); });
    EXPECT_THAT(message, StartsWith("ONNX-Runtime could not create a session for the model: "));
    EXPECT_THAT(message, HasSubstr("no_such_attribute"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
    EXPECT_FALSE(runner.is_active());
}

TEST_F(OnnxrtRunnerTest, UnsupportedOperatorIsModelError) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("NoSuchOp", {"x"}, {"y"}, "mystery", "com.example");
    builder.opset_import("com.example", 1);
    builder.output("y", DataType::kFloat32, Shape{2});
    const std::string message = error_of<ModelError>([&] { session_from_onnx(*builder.build()); });
    EXPECT_THAT(message, HasSubstr("NoSuchOp"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST_F(OnnxrtRunnerTest, InputsOrtRejectsAreInputErrors) {
    OnnxrtRunner runner(SessionFromOnnx(loader_from_value(add_model())));
    RunnerActivation active(runner);
    const Tensor good = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor wrong_dtype = Tensor::from_doubles(DataType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor wrong_shape = Tensor::from_doubles(DataType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6});
    const Tensor wrong_rank = Tensor::from_doubles(DataType::kFloat32, {6}, {1, 2, 3, 4, 5, 6});

    // check_inputs=false: the feed reaches ONNX-Runtime, which rejects it with its own message.
    std::string message =
        error_of<InputError>([&] { runner.infer({{"a", good}, {"b", wrong_dtype}}, /*check_inputs=*/false); });
    EXPECT_THAT(message, StartsWith("ONNX-Runtime inference failed: "));
    EXPECT_THAT(message, HasSubstr("data type"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));

    message = error_of<InputError>([&] { runner.infer({{"a", good}, {"b", wrong_shape}}, false); });
    EXPECT_THAT(message, HasSubstr("dimensions"));
    message = error_of<InputError>([&] { runner.infer({{"a", good}, {"b", wrong_rank}}, false); });
    EXPECT_THAT(message, HasSubstr("rank"));
    message = error_of<InputError>([&] { runner.infer({{"a", good}}, false); });
    EXPECT_THAT(message, StartsWith("Input tensor: b | Is missing from the feed."));
    message = error_of<InputError>([&] { runner.infer({{"a", good}, {"b", good}, {"c", good}}, false); });
    EXPECT_THAT(message, StartsWith("ONNX-Runtime inference failed: "));
    EXPECT_THAT(message, HasSubstr("c"));

    // The runner still works after rejected inputs.
    EXPECT_EQ(runner.infer({{"a", good}, {"b", good}}).size(), 1u);
}

TEST_F(OnnxrtRunnerTest, UndefinedTensorIsInputError) {
    const auto session = session_from_onnx(*add_model());
    const std::string message = error_of<InputError>([&] { session->run({{"a", Tensor()}, {"b", Tensor()}}); });
    EXPECT_EQ(message, "Input tensor: a | Has an undefined dtype.");
}

TEST_F(OnnxrtRunnerTest, NonTensorOutputIsUnsupported) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("SequenceConstruct", {"x", "x"}, {"seq"});
    auto* output = builder.proto().mutable_graph()->add_output();
    output->set_name("seq");
    output->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
    const auto session = session_from_onnx(*builder.build());
    EXPECT_FALSE(session->output_metadata().at("seq").dtype.has_value());
    const std::string message = error_of<UnsupportedError>(
        [&] { session->run({{"x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2})}}); });
    EXPECT_THAT(message, StartsWith("Output tensor: seq | Is not a tensor"));
}

TEST_F(OnnxrtRunnerTest, ReactivationBuildsANewSession) {
    int loads = 0;
    Loader<std::shared_ptr<Session>> counting = [&loads]() {
        ++loads;
        return session_from_onnx(*add_model());
    };
    OnnxrtRunner runner(counting, "my-runner");
    EXPECT_EQ(runner.name(), "my-runner");
    EXPECT_EQ(loads, 0);  // lazy until activation
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    for (int round = 1; round <= 2; ++round) {
        RunnerActivation active(runner);
        EXPECT_EQ(loads, round);
        EXPECT_EQ(runner.infer({{"a", a}, {"b", a}}).at("y").value_as_double(5), 12.0);
    }
    EXPECT_FALSE(runner.is_active());
}

TEST_F(OnnxrtRunnerTest, OutputsAreIndependentBetweenInferences) {
    const auto session = session_from_onnx(*add_model());
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 0, 0, 0, 0, 0});
    const Tensor first = session->run({{"a", a}, {"b", b}}).at("y");
    const Tensor second = session->run({{"a", b}, {"b", b}}).at("y");
    EXPECT_TRUE(first.equals(a));
    EXPECT_TRUE(second.equals(b));
}

}  // namespace
}  // namespace polygraphy::onnxrt
