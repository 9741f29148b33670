// `polygraphy surgeon extract/sanitize/insert` and `polygraphy convert` end to end: every written
// model is loaded back and run on the built-in runtime against the original.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::set_attr;
using testing::TempDir;

namespace fs = std::filesystem;

Tensor int64s(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kInt64, shape, values);
}

// x -> Add(W) -> a -> Relu -> b -> Reshape(b, Concat(Unsqueeze(Gather(Shape(b))), [-1])) -> r -> Mul(Constant*2) -> y,
// plus a dead Sigmoid.
ModelBuilder sample(const DynShape& x_shape = {Dim::fixed(2), Dim::fixed(3)}) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, x_shape);
    builder.initializer("W", testing::random_tensor({3}, 1));
    builder.initializer("two", Tensor::from_doubles(DataType::kFloat32, {3}, {2, 2, 2}));
    builder.initializer("idx0", int64s({}, {0}));
    builder.initializer("axes0", int64s({1}, {0}));
    builder.initializer("minus1", int64s({1}, {-1}));
    auto& constant = builder.node("Constant", {}, {"c0"}, "const0");
    set_attr(constant, "value", Tensor::from_doubles(DataType::kFloat32, {3}, {0.5, -1, 3}));
    builder.node("Mul", {"c0", "two"}, {"scale"}, "scale_mul");
    builder.node("Add", {"x", "W"}, {"a"}, "add");
    builder.node("Relu", {"a"}, {"b"}, "relu");
    builder.node("Shape", {"b"}, {"s"}, "shape");
    builder.node("Gather", {"s", "idx0"}, {"n"}, "gather");
    builder.node("Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
    auto& concat = builder.node("Concat", {"n1", "minus1"}, {"newshape"}, "concat");
    set_attr(concat, "axis", int64_t{0});
    builder.node("Reshape", {"b", "newshape"}, {"r"}, "reshape");
    builder.node("Mul", {"r", "scale"}, {"y"}, "mul");
    builder.node("Sigmoid", {"x"}, {"dead"}, "dead_sigmoid");
    builder.output("y", DataType::kFloat32, DynShape{Dim::unknown(), Dim::fixed(3)});
    return builder;
}

TensorMap run_ref(const onnx::ModelProto& model, const TensorMap& feed) {
    return ref::Session(model).run(feed);
}

TensorMap feed_of(const std::string& name, const Shape& shape) {
    TensorMap feed;
    feed.set(name, testing::random_tensor(shape, 7));
    return feed;
}

OnnxModel load_quietly(const std::string& path) {
    ::testing::internal::CaptureStdout();
    OnnxModel model = onnx_from_path(path);
    ::testing::internal::GetCapturedStdout();
    return model;
}

// The written model passes `check lint` (checker, graph checks, test inference).
void expect_lint_passes(const std::string& path) {
    auto lint = run_polygraphy({"check", "lint", path});
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_THAT(lint.output, Not(HasSubstr("[E]")));
}

std::vector<std::string> op_types(const onnx::ModelProto& model) {
    std::vector<std::string> ops;
    for (const auto& node : model.graph().node()) ops.push_back(node.op_type());
    return ops;
}

class SurgeonCli : public ::testing::Test {
protected:
    void SetUp() override {
        model_path_ = dir_.file("model.onnx");
        sample().save(model_path_);
    }
    TempDir dir_;
    std::string model_path_;
};

// ---- extract ------------------------------------------------------------------------------------

TEST_F(SurgeonCli, ExtractWritesARunnableSubgraph) {
    const std::string out = dir_.file("sub.onnx");
    auto result = run_polygraphy({"surgeon", "extract", model_path_, "--inputs", "a:auto:auto", "--outputs", "r:auto",
                                  "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("[I] RUNNING | Command: "));
    EXPECT_THAT(result.output, HasSubstr("[I] Original Model:"));
    EXPECT_THAT(result.output, HasSubstr("[I] Running shape inference to derive shapes and/or data types for `auto` "
                                         "arguments."));
    EXPECT_THAT(result.output, HasSubstr("[I] Saving ONNX model to: " + out));
    EXPECT_THAT(result.output, HasSubstr("[I] New Model:"));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime: "));

    expect_lint_passes(out);
    OnnxModel sub = load_quietly(out);
    EXPECT_THAT(op_types(*sub), ::testing::ElementsAre("Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape"));
    OnnxModel original = modify_outputs(load_quietly(model_path_), {"a", "r"});
    const TensorMap expected = run_ref(*original, feed_of("x", {2, 3}));
    TensorMap feed;
    feed.set("a", expected.at("a"));
    EXPECT_TRUE(run_ref(*sub, feed).at("r").equals(expected.at("r")));
}

TEST_F(SurgeonCli, ExtractUsesGivenShapesAndTypes) {
    const std::string out = dir_.file("sub.onnx");
    auto result = run_polygraphy(
        {"surgeon", "extract", model_path_, "--inputs", "b:[5,3]:float32", "--outputs", "r:float32", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("Running shape inference")));
    OnnxModel sub = load_quietly(out);
    MetadataEntry input = metadata_from_value_info(sub->graph().input(0));
    EXPECT_EQ(dyn_shape_to_string(*input.shape), "(5, 3)");
    EXPECT_EQ(run_ref(*sub, feed_of("b", {5, 3})).at("r").shape(), (Shape{5, 3}));
}

TEST_F(SurgeonCli, ExtractRejectsBadTensorsWithoutWritingAnything) {
    const std::string out = dir_.file("sub.onnx");
    auto unknown = run_polygraphy({"surgeon", "extract", model_path_, "--inputs", "zz:auto:auto", "-o", out});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.output, HasSubstr("[!] Tensor 'zz' given as a subgraph input does not exist in the model"));
    EXPECT_THAT(unknown.output, HasSubstr("[E] FAILED | Runtime: "));

    auto not_cut = run_polygraphy(
        {"surgeon", "extract", model_path_, "--inputs", "b:auto:auto", "--outputs", "dead:auto", "-o", out});
    EXPECT_EQ(not_cut.exit_code, 1);
    EXPECT_THAT(not_cut.output, HasSubstr("[!] The subgraph inputs do not cut the graph: node 'dead_sigmoid' (Sigmoid) "
                                          "needs graph input 'x', which is not among the subgraph inputs"));

    auto bad_dtype = run_polygraphy({"surgeon", "extract", model_path_, "--inputs", "a:[2,3]", "-o", out});
    EXPECT_EQ(bad_dtype.exit_code, 1);
    EXPECT_THAT(bad_dtype.output, HasSubstr("[!] Invalid value in --inputs: 'a:[2,3]'"));
    EXPECT_FALSE(fs::exists(out));
}

// ---- sanitize -----------------------------------------------------------------------------------

TEST_F(SurgeonCli, SanitizeFoldsCleansAndSortsWithSameOutputs) {
    const std::string out = dir_.file("clean.onnx");
    auto result = run_polygraphy(
        {"surgeon", "sanitize", model_path_, "--fold-constants", "--cleanup", "--toposort", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Folded 6 of 10 node(s) into constants"));
    expect_lint_passes(out);
    OnnxModel clean = load_quietly(out);
    EXPECT_THAT(op_types(*clean), ::testing::ElementsAre("Add", "Relu", "Reshape", "Mul"));
    const TensorMap feed = feed_of("x", {2, 3});
    EXPECT_TRUE(run_ref(*clean, feed).at("y").equals(run_ref(*load_quietly(model_path_), feed).at("y")));
}

TEST_F(SurgeonCli, SanitizeOverridesInputShapesThenFoldsShapes) {
    const std::string dynamic = dir_.file("dynamic.onnx");
    sample({Dim::named("batch"), Dim::fixed(3)}).save(dynamic);
    const std::string out = dir_.file("static.onnx");
    auto result = run_polygraphy({"surgeon", "sanitize", dynamic, "--override-input-shapes", "x:[4,3]",
                                  "--fold-constants", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    OnnxModel model = load_quietly(out);
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(model->graph().input(0)).shape), "(4, 3)");
    EXPECT_THAT(op_types(*model), ::testing::ElementsAre("Add", "Relu", "Reshape", "Mul"));
    const TensorMap feed = feed_of("x", {4, 3});
    EXPECT_TRUE(run_ref(*model, feed).at("y").equals(run_ref(*load_quietly(dynamic), feed).at("y")));

    auto wrong_rank = run_polygraphy({"surgeon", "sanitize", dynamic, "--override-input-shapes", "x:[12]", "-o", out});
    EXPECT_EQ(wrong_rank.exit_code, 1);
    EXPECT_THAT(wrong_rank.output,
                HasSubstr("[!] Cannot override the shape of input 'x' with (12,): it has rank 2, not 1"));
    auto unknown = run_polygraphy({"surgeon", "sanitize", dynamic, "--override-inputs", "y:[1,3]", "-o", out});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.output, HasSubstr("[!] Cannot override the shape of 'y': it is not an input of the model"));
}

TEST_F(SurgeonCli, SanitizeNewerOpsetsUseRuntimeShapeInference) {
    ModelBuilder builder = sample();
    builder.ir_version(10);
    builder.proto().mutable_opset_import(0)->set_version(21);
    const std::string newer = dir_.file("opset21.onnx");
    builder.save(newer);
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{}, std::vector<std::string>{"--force-fallback-shape-inference"}}) {
        const std::string out = dir_.file("folded21.onnx");
        std::vector<std::string> args = {"surgeon", "sanitize", newer, "--fold-constants", "-o", out, "-v"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto result = run_polygraphy(args);
        ASSERT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("[V] Inferred shapes with the built-in runtime"));
        OnnxModel model = load_quietly(out);
        EXPECT_THAT(op_types(*model), ::testing::ElementsAre("Add", "Relu", "Reshape", "Mul"));
        const TensorMap feed = feed_of("x", {2, 3});
        EXPECT_TRUE(run_ref(*model, feed).at("y").equals(run_ref(*load_quietly(newer), feed).at("y")));
    }
}

TEST_F(SurgeonCli, SanitizeBadInputAndOutputPaths) {
    // A missing output folder is created, as Polygraphy does (and as the JSON outputs are).
    auto missing_folder = run_polygraphy({"surgeon", "sanitize", model_path_, "-o", dir_.file("nope/deeper/out.onnx")});
    EXPECT_EQ(missing_folder.exit_code, 0) << missing_folder.output;
    EXPECT_EQ(op_types(*load_quietly(dir_.file("nope/deeper/out.onnx"))).size(), 11u);
    // A folder that cannot be created (a file is in the way): one line, nothing written.
    std::ofstream(dir_.file("blocker")) << "a file";
    auto blocked = run_polygraphy({"surgeon", "sanitize", model_path_, "-o", dir_.file("blocker/out.onnx")});
    EXPECT_EQ(blocked.exit_code, 1);
    EXPECT_THAT(blocked.output, HasSubstr("[!] Could not write " + dir_.file("blocker/out.onnx") + ": cannot create folder"));
    EXPECT_FALSE(fs::exists(dir_.file("blocker/out.onnx")));

    const std::string corrupt = dir_.file("corrupt.onnx");
    std::ofstream(corrupt) << "this is not a model";
    auto bad_model = run_polygraphy({"surgeon", "sanitize", corrupt, "-o", dir_.file("out.onnx")});
    EXPECT_EQ(bad_model.exit_code, 1);
    EXPECT_THAT(bad_model.output, HasSubstr("is not a valid ONNX model"));
    EXPECT_FALSE(fs::exists(dir_.file("out.onnx")));
    for (const auto& entry : fs::directory_iterator(dir_.path()))
        EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp"))) << "temporary file left behind";
}

TEST_F(SurgeonCli, SanitizeWarnsAboutFoldOptionsWithoutFolding) {
    auto result = run_polygraphy({"surgeon", "sanitize", model_path_, "--num-passes", "2", "-o", dir_.file("o.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] Argument: '--num-passes' will be ignored since constant folding is not "
                                         "enabled."));
    auto bad_passes =
        run_polygraphy({"surgeon", "sanitize", model_path_, "--fold-constants", "--num-passes", "0", "-o", dir_.file("o.onnx")});
    EXPECT_EQ(bad_passes.exit_code, 1);
    EXPECT_THAT(bad_passes.output, HasSubstr("[!] Invalid value for --num-passes: '0'"));
}

TEST_F(SurgeonCli, SanitizeSavesExternalData) {
    const std::string big = dir_.file("big.onnx");
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{64, 64});
    builder.initializer("w", testing::random_tensor({64, 64}, 3));
    builder.node("MatMul", {"x", "w"}, {"y"}, "matmul");
    builder.output("y", DataType::kFloat32, Shape{64, 64});
    builder.save(big);
    const std::string out = dir_.file("ext/model.onnx");
    fs::create_directories(dir_.file("ext"));
    auto result = run_polygraphy({"surgeon", "sanitize", big, "-o", out, "--save-external-data", "weights.data",
                                  "--external-data-size-threshold", "1K"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(fs::file_size(dir_.file("ext/weights.data")), 64u * 64u * 4u);
    EXPECT_LT(fs::file_size(out), 1024u);
    const TensorMap feed = feed_of("x", {64, 64});
    EXPECT_TRUE(run_ref(*load_quietly(out), feed).at("y").equals(run_ref(*load_quietly(big), feed).at("y")));
}

// ---- insert -------------------------------------------------------------------------------------

TEST_F(SurgeonCli, InsertReplacesTheSubgraphBetweenTensors) {
    const std::string out = dir_.file("inserted.onnx");
    auto result = run_polygraphy({"surgeon", "insert", model_path_, "--inputs", "a", "--outputs", "b", "--op", "Relu",
                                  "--name", "new_relu", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
    expect_lint_passes(out);
    OnnxModel model = load_quietly(out);
    std::vector<std::string> names;
    for (const auto& node : model->graph().node()) names.push_back(node.name());
    EXPECT_THAT(names, ::testing::Contains("new_relu"));
    EXPECT_THAT(names, Not(::testing::Contains("relu")));
    EXPECT_THAT(names, Not(::testing::Contains("dead_sigmoid")));
    const TensorMap feed = feed_of("x", {2, 3});
    EXPECT_TRUE(run_ref(*model, feed).at("y").equals(run_ref(*load_quietly(model_path_), feed).at("y")));
}

TEST_F(SurgeonCli, InsertOnAGraphOutputKeepsItsName) {
    const std::string out = dir_.file("inserted.onnx");
    auto result = run_polygraphy({"surgeon", "insert", model_path_, "--inputs", "y", "--outputs", "y", "--op",
                                  "LeakyRelu", "--attrs", "alpha=0.5", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    OnnxModel model = load_quietly(out);
    const auto& last = model->graph().node(model->graph().node_size() - 1);
    EXPECT_EQ(last.op_type(), "LeakyRelu");
    EXPECT_EQ(last.input(0), "y_polygraphy_surgeon_insert_output");
    EXPECT_EQ(last.output(0), "y");
    ASSERT_EQ(last.attribute_size(), 1);
    EXPECT_EQ(last.attribute(0).type(), onnx::AttributeProto::FLOAT);
    EXPECT_FLOAT_EQ(last.attribute(0).f(), 0.5f);

    // Same as the original followed by LeakyRelu(0.5).
    const TensorMap feed = feed_of("x", {2, 3});
    const Tensor before = run_ref(*load_quietly(model_path_), feed).at("y");
    const Tensor after = run_ref(*model, feed).at("y");
    for (int64_t i = 0; i < before.numel(); ++i) {
        const float value = before.data_as<float>()[i];
        EXPECT_FLOAT_EQ(after.data_as<float>()[i], value < 0 ? 0.5f * value : value);
    }
}

TEST_F(SurgeonCli, InsertRejectsUnknownTensors) {
    auto result = run_polygraphy(
        {"surgeon", "insert", model_path_, "--inputs", "aa", "--outputs", "b", "--op", "Relu", "-o", dir_.file("o.onnx")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Tensor: aa does not exist in the model."));
    EXPECT_FALSE(fs::exists(dir_.file("o.onnx")));
}

// ---- convert ------------------------------------------------------------------------------------

TEST_F(SurgeonCli, ConvertToFp16KeepsIoTypesAndOutputs) {
    const std::string out = dir_.file("fp16.onnx");
    auto result = run_polygraphy({"convert", model_path_, "--fp-to-fp16", "-o", out});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Saving ONNX model to: " + out));
    expect_lint_passes(out);
    OnnxModel model = load_quietly(out);
    EXPECT_EQ(model->graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(model->graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
    for (const auto& initializer : model->graph().initializer())
        if (initializer.name() == "W") {
            EXPECT_EQ(initializer.data_type(), onnx::TensorProto::FLOAT16);
        }
    const TensorMap feed = feed_of("x", {2, 3});
    const Tensor expected = run_ref(*load_quietly(model_path_), feed).at("y");
    const Tensor actual = run_ref(*model, feed).at("y");
    ASSERT_EQ(actual.dtype(), DataType::kFloat32);
    for (int64_t i = 0; i < expected.numel(); ++i)
        EXPECT_NEAR(actual.data_as<float>()[i], expected.data_as<float>()[i], 1e-2);
}

TEST_F(SurgeonCli, ConvertRefusesTensorRtTargets) {
    auto engine = run_polygraphy({"convert", model_path_, "-o", dir_.file("model.engine")});
    EXPECT_EQ(engine.exit_code, 1);
    EXPECT_THAT(engine.output, HasSubstr("[!] TensorRT is not available in this build"));
    auto trt = run_polygraphy({"convert", model_path_, "--convert-to", "trt", "-o", dir_.file("model.onnx2")});
    EXPECT_EQ(trt.exit_code, 1);
    EXPECT_THAT(trt.output, HasSubstr("[!] TensorRT is not available in this build"));
    auto unknown = run_polygraphy({"convert", model_path_, "-o", dir_.file("model.xyz")});
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.output, HasSubstr("[!] Could not automatically determine model type based on output path"));
    EXPECT_FALSE(fs::exists(dir_.file("model.engine")));
}

// `convert` takes the builder options only it has in Polygraphy (engine capability, tensor formats)
// and refuses them like the others; --save-engine is `run`'s (convert writes -o).
TEST_F(SurgeonCli, ConvertRefusesItsTensorRtBuilderOptions) {
    for (const std::vector<std::string>& option : {std::vector<std::string>{"--engine-capability", "standard"},
                                                   {"--direct-io"},
                                                   {"--tensor-formats", "x:[linear]"},
                                                   {"--trt-config-script", "s.py"},
                                                   {"--hardware-compatibility-level", "ampere_plus"}}) {
        std::vector<std::string> args = {"convert", model_path_, "-o", dir_.file("out.onnx")};
        args.insert(args.end(), option.begin(), option.end());
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 1) << option[0];
        EXPECT_THAT(result.output,
                    HasSubstr("[!] TensorRT is not available in this build (option: " + option[0] + ")"));
    }
    EXPECT_FALSE(fs::exists(dir_.file("out.onnx")));
    EXPECT_THAT(run_polygraphy({"convert", model_path_, "-o", dir_.file("out.onnx"), "--save-engine", "e"}).output,
                HasSubstr("Unrecognized Options: ['--save-engine', 'e']"));
}

}  // namespace
}  // namespace polygraphy::tools
