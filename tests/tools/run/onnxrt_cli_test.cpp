// `polygraphy run --onnxrt` end to end: self-contained models go to ONNX-Runtime as files, models
// with external data go through the checked loader first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "model_builder.h"
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

}  // namespace
}  // namespace polygraphy
