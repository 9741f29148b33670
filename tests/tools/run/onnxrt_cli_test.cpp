// `polygraphy run --onnxrt` end to end: self-contained models go to ONNX-Runtime as files, models
// with external data go through the checked loader first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "external_weights.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/onnxrt/loader.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::run_polygraphy;
using testing::TempDir;

ModelBuilder weighted_add() {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 2});
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2, 2}, {1, 2, 3, 4}));
    builder.node("Add", {"x", "w"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2, 2});
    return builder;
}

// Moves initializer `w` to the file `location` (relative to the model's folder) and saves the model.
void save_with_external_w(ModelBuilder& builder, const std::string& model_path, const std::string& location,
                          const std::string& data_path) {
    onnx::TensorProto& w = *builder.proto().mutable_graph()->mutable_initializer(0);
    std::ofstream(data_path, std::ios::binary) << w.raw_data();
    w.clear_raw_data();
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = w.add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    builder.save(model_path);
}

class RunOnnxrtCli : public ::testing::Test {
protected:
    void SetUp() override {
        if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
    }
};

TEST_F(RunOnnxrtCli, SelfContainedModelsMatchTheBuiltInRuntime) {
    TempDir dir;
    weighted_add().save(dir.file("model.onnx"));
    auto result = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
}

TEST_F(RunOnnxrtCli, ExternalDataInsideTheFolderIsLoaded) {
    TempDir dir;
    ModelBuilder builder = weighted_add();
    save_with_external_w(builder, dir.file("model.onnx"), "w.bin", dir.file("w.bin"));
    auto result = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
}

TEST_F(RunOnnxrtCli, ExternalDataEscapingTheFolderIsRefusedBeforeOnnxRuntimeSeesIt) {
    TempDir dir;
    std::filesystem::create_directories(dir.file("model"));
    ModelBuilder builder = weighted_add();
    save_with_external_w(builder, dir.file("model/model.onnx"), "../outside.bin", dir.file("outside.bin"));
    auto result = run_polygraphy({"run", dir.file("model/model.onnx"), "--onnxrt"});
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E] "));
    EXPECT_THAT(result.output, HasSubstr("leaves the external data folder: '../outside.bin'"));
}

// ONNX-Runtime lists providers it was built with whose libraries a CPU package lacks: asking for one
// says so plainly, lists what can be enabled, and shows none of ONNX-Runtime's internal logger text.
TEST_F(RunOnnxrtCli, ProvidersThisBuildCannotEnableAreNamedPlainly) {
    const auto available = onnxrt::available_providers();
    if (std::find(available.begin(), available.end(), "CUDAExecutionProvider") == available.end())
        GTEST_SKIP() << "this ONNX-Runtime does not list CUDA (asking for it is an unknown provider)";
    TempDir dir;
    weighted_add().save(dir.file("model.onnx"));
    auto result = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--providers", "cuda"});
    if (result.exit_code == 0) GTEST_SKIP() << "the CUDA provider works here";
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, ::testing::ContainsRegex(
                                   "\\[!\\] This ONNX-Runtime build (has only the CPU execution provider: "
                                   "CUDAExecutionProvider cannot be enabled|cannot enable CUDAExecutionProvider)"));
    EXPECT_THAT(result.output, HasSubstr("Note: providers that can be enabled: ["));
    EXPECT_THAT(result.output, HasSubstr("'CPUExecutionProvider'"));
    for (const char* internal : {"onnxruntime::", "logging.h", "DefaultLogger", "provider_bridge"})
        EXPECT_THAT(result.output, ::testing::Not(HasSubstr(internal)));
}

// x -> Conv 3x3 (+ bias) -> Relu -> Conv 1x1 -> y: what ONNX Runtime's level `extended` fuses into
// com.microsoft.FusedConv.
ModelBuilder conv_relu_conv() {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
    builder.initializer("w1", testing::random_tensor({8, 4, 3, 3}, 61));
    builder.initializer("b1", testing::random_tensor({8}, 62));
    builder.initializer("w2", testing::random_tensor({8, 8, 1, 1}, 63));
    testing::set_attr(builder.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads",
                      std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"c1"}, {"r1"}, "relu1");
    builder.node("Conv", {"r1", "w2"}, {"y"}, "conv2");
    builder.output("y", DataType::kFloat32, Shape{1, 8, 8, 8});
    return builder;
}

TEST_F(RunOnnxrtCli, TheOptimizedGraphOnnxRuntimeSavesRunsOnTheBuiltInRuntimeAndAgrees) {
    TempDir dir;
    conv_relu_conv().save(dir.file("model.onnx"));
    const std::string optimized = dir.file("saved/optimized.onnx");  // the folder is created
    auto saved = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--onnxrt-graph-optimization-level",
                                 "extended", "--onnxrt-save-optimized-model", optimized});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    ASSERT_TRUE(std::filesystem::exists(optimized)) << saved.output;

    auto layers = run_polygraphy({"inspect", "model", optimized, "--show", "layers"});
    ASSERT_EQ(layers.exit_code, 0) << layers.output;
    EXPECT_THAT(layers.output, HasSubstr("FusedConv"));

    auto compared = run_polygraphy({"run", optimized, "--ref", "--onnxrt", "--onnxrt-graph-optimization-level",
                                    "disable", "--atol", "1e-4", "--rtol", "1e-4"});
    EXPECT_EQ(compared.exit_code, 0) << compared.output;
    EXPECT_THAT(compared.output, HasSubstr("PASSED | All outputs matched"));
}

// A source model with external data: the saved graph gets a data file of its own beside it
// (<file>.data), so it loads from another folder.
TEST_F(RunOnnxrtCli, TheOptimizedGraphOfAModelWithExternalDataLoadsFromWhereItIsSaved) {
    TempDir dir;
    testing::WeightWriter::Layout layout;
    layout.size_threshold = 64;
    testing::write_generated_model(
        dir.file("source/model.onnx"), true,
        [](testing::WeightWriter& weights) {
            onnx::ModelProto model = conv_relu_conv().proto();
            for (auto& initializer : *model.mutable_graph()->mutable_initializer())
                initializer = weights.write(initializer.name(), tensor_from_proto(initializer));
            return model;
        },
        0, layout);
    ASSERT_TRUE(std::filesystem::exists(dir.file("source/model.onnx.data")));
    const std::string optimized = dir.file("elsewhere/optimized.onnx");
    auto saved = run_polygraphy({"run", dir.file("source/model.onnx"), "--onnxrt", "--onnxrt-graph-optimization-level",
                                 "extended", "--onnxrt-save-optimized-model", optimized});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    EXPECT_TRUE(std::filesystem::exists(optimized + ".data"));
    auto compared = run_polygraphy({"run", optimized, "--ref", "--onnxrt", "--onnxrt-graph-optimization-level",
                                    "disable", "--atol", "1e-4", "--rtol", "1e-4"});
    EXPECT_EQ(compared.exit_code, 0) << compared.output;
    EXPECT_THAT(compared.output, HasSubstr("PASSED | All outputs matched"));
}

TEST_F(RunOnnxrtCli, SavingTheOptimizedGraphIsPrintedByGenScript) {
    TempDir dir;
    conv_relu_conv().save(dir.file("model.onnx"));
    auto script = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--onnxrt-save-optimized-model",
                                  "opt.onnx", "--gen-script", dir.file("gen.cpp")});
    ASSERT_EQ(script.exit_code, 0) << script.output;
    std::ifstream file(dir.file("gen.cpp"));
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr(".optimized_model_path = \"opt.onnx\""));
    EXPECT_FALSE(std::filesystem::exists(dir.file("opt.onnx")));  // nothing ran
}

TEST_F(RunOnnxrtCli, AnOptimizedModelPathThatCannotBeWrittenIsOneLine) {
    TempDir dir;
    conv_relu_conv().save(dir.file("model.onnx"));
    std::ofstream(dir.file("file")) << "x";  // a file where the folder would have to be
    auto result = run_polygraphy(
        {"run", dir.file("model.onnx"), "--onnxrt", "--onnxrt-save-optimized-model", dir.file("file/opt.onnx")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] Could not create the folder of '" + dir.file("file/opt.onnx") + "'"));
    EXPECT_FALSE(std::filesystem::exists(dir.file("file/opt.onnx")));

    auto empty = run_polygraphy({"run", dir.file("model.onnx"), "--onnxrt", "--onnxrt-save-optimized-model", ""});
    EXPECT_NE(empty.exit_code, 0);
    EXPECT_THAT(empty.output, HasSubstr("--onnxrt-save-optimized-model needs a file path"));
}

}  // namespace
}  // namespace polygraphy
