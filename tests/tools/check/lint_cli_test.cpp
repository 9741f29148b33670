// `polygraphy check lint` end to end.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "build_paths.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ModelBuilder;
using testing::run_polygraphy;
using testing::TempDir;

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

class CheckLint : public ::testing::Test {
protected:
    void SetUp() override {
        ModelBuilder good(17, "good");
        good.input("x", DataType::kFloat32, Shape{2, 3});
        good.node("Relu", {"x"}, {"y"}, "relu");
        good.output("y", DataType::kFloat32, Shape{2, 3});
        good_ = dir_.file("good.onnx");
        good.save(good_);

        ModelBuilder bad(17, "bad");
        bad.input("A", DataType::kFloat32, Shape{2, 3});
        bad.input("B", DataType::kFloat32, Shape{4, 5});
        bad.node("MatMul", {"A", "B"}, {"m"}, "MatMul_0");
        bad.node("Add", {"A", "B"}, {"a"}, "Add_0");
        bad.node("Relu", {"A"}, {"r"}, "Relu_0");
        bad.output("m", DataType::kFloat32, Shape{2, 5});
        bad.output("a", DataType::kFloat32, Shape{2, 3});
        bad.output("r", DataType::kFloat32, Shape{2, 3});
        bad_ = dir_.file("bad.onnx");
        bad.save(bad_);
    }
    TempDir dir_;
    std::string good_, bad_;
};

TEST_F(CheckLint, ValidModel) {
    auto result = run_polygraphy({"check", "lint", good_, "-o", dir_.file("report.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("[I] RUNNING | Command: "));
    EXPECT_THAT(result.output, HasSubstr("[I] Saving linting report to " + dir_.file("report.json")));
    EXPECT_THAT(result.output, HasSubstr("[I] PASSED | Runtime: "));
    EXPECT_THAT(read_text(dir_.file("report.json")), HasSubstr("\"passing\": [\n            \"relu\"\n        ]"));
}

TEST_F(CheckLint, ProvidersAreAcceptedAndIgnored) {
    auto result = run_polygraphy({"check", "lint", good_, "--providers", "cpu"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[W] --providers is ignored"));
}

TEST_F(CheckLint, EveryFailingNodeIsReported) {
    auto result = run_polygraphy({"check", "lint", bad_, "-o", dir_.file("report.json")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E] LINT | Name: MatMul_0, Op: MatMul | "));
    EXPECT_THAT(result.output, HasSubstr("[E] LINT | Name: Add_0, Op: Add | "));
    EXPECT_THAT(result.output, HasSubstr("[E] FAILED | Runtime: "));
    const std::string report = read_text(dir_.file("report.json"));
    EXPECT_THAT(report, HasSubstr("\"failing\": [\n            \"MatMul_0\",\n            \"Add_0\"\n        ]"));
    EXPECT_THAT(report, HasSubstr("\"passing\": [\n            \"Relu_0\"\n        ]"));
    EXPECT_THAT(report, HasSubstr("\"source\": \"ref_runtime\""));
}

TEST_F(CheckLint, InputsCanBeLoaded) {
    // With B of a compatible shape the same model is fine.
    ModelBuilder builder(17, "dyn");
    builder.input("A", DataType::kFloat32, DynShape{Dim::fixed(2), Dim::named("k")});
    builder.input("B", DataType::kFloat32, DynShape{Dim::named("k"), Dim::fixed(1)});
    builder.node("MatMul", {"A", "B"}, {"m"}, "mm");
    builder.output("m", DataType::kFloat32, Shape{2, 1});
    builder.save(dir_.file("dyn.onnx"));
    auto result = run_polygraphy({"check", "lint", dir_.file("dyn.onnx"), "--inputs", "A:[2,3]", "B:[4,1]"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    result = run_polygraphy({"check", "lint", dir_.file("dyn.onnx"), "--inputs", "A:[2,3]", "B:[3,1]"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST_F(CheckLint, UnparsableModelIsALoaderEntry) {
    std::ofstream(dir_.file("corrupt.onnx")) << "not a model \xff\xff";
    auto result = run_polygraphy({"check", "lint", dir_.file("corrupt.onnx"), "-o", dir_.file("report.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[E] Invalid ONNX model given: "));
    const std::string report = read_text(dir_.file("report.json"));
    EXPECT_THAT(report, HasSubstr("\"source\": \"onnx_loader\""));
    EXPECT_THAT(report, HasSubstr("\"level\": \"exception\""));
}

TEST_F(CheckLint, BadInput) {
    auto result = run_polygraphy({"check", "lint", dir_.file("missing.onnx")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Model file does not exist"));

    std::ofstream(dir_.file("file")) << "x";
    result = run_polygraphy({"check", "lint", good_, "-o", dir_.file("file") + "/report.json"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));

    result = run_polygraphy({"check", "lint"});
    EXPECT_EQ(result.exit_code, 2);
    result = run_polygraphy({"check"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy check: error: the following arguments are required: subtool"));
}

TEST_F(CheckLint, PolygraphyBadGraphsIfPresent) {
    const std::string shared =
        std::string(std::getenv("POLYGRAPHY_SHARED_DIR") ? std::getenv("POLYGRAPHY_SHARED_DIR") : POLYGRAPHY_SHARED_DIR) +
        "/models/polygraphy-tests";
    if (!fs::exists(shared)) GTEST_SKIP() << "no shared models";
    int found = 0;
    for (const auto& entry : fs::directory_iterator(shared)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("bad_graph", 0) != 0) continue;
        ++found;
        auto result = run_polygraphy({"check", "lint", entry.path().string(), "-o", dir_.file(name + ".json")});
        EXPECT_EQ(result.exit_code, name == "bad_graph_conditionally_invalid.onnx" ? result.exit_code : 1)
            << name << "\n" << result.output;
        EXPECT_THAT(result.output, Not(HasSubstr("Unexpected error"))) << name;
        EXPECT_TRUE(fs::exists(dir_.file(name + ".json"))) << name;
    }
    EXPECT_GT(found, 0);
}

}  // namespace
}  // namespace polygraphy::tools
