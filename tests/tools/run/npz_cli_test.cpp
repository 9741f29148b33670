// `--save-outputs/--save-inputs x.npz` end to end, and every tool that reads saved data reading it.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npz.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

class NpzCli : public ::testing::Test {
protected:
    void SetUp() override {
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 3});
        builder.node("Relu", {"x"}, {"a"}, "relu");
        builder.node("Sigmoid", {"a"}, {"b"}, "sigmoid");
        builder.output("b", DataType::kFloat32, Shape{2, 3});
        builder.save(dir_.file("model.onnx"));
    }
    void TearDown() override { logger().reset(); }

    RunResults load_results(const std::string& path) {
        logger().set_severity(Severity::kWarning);
        return std::get<RunResults>(npz::load(path));
    }

    TempDir dir_;
};

TEST_F(NpzCli, SavedResultsAndInputsAreReadByEveryTool) {
    const std::string model = dir_.file("model.onnx");
    auto saved = run_polygraphy({"run", model, "--ref", "--iterations", "2", "--onnx-outputs", "mark", "all",
                                 "--save-outputs", dir_.file("r.npz"), "--save-inputs", dir_.file("in.npz")});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    EXPECT_THAT(saved.output, HasSubstr("Saving inference results to " + dir_.file("r.npz")));
    auto json = run_polygraphy({"run", model, "--ref", "--iterations", "2", "--onnx-outputs", "mark", "all",
                                "--save-outputs", dir_.file("r.json")});
    ASSERT_EQ(json.exit_code, 0) << json.output;

    // The same results as the JSON file, tensor for tensor (the runner's name carries a timestamp).
    const RunResults from_npz = load_results(dir_.file("r.npz"));
    const RunResults from_json = RunResults::load(dir_.file("r.json"));
    ASSERT_EQ(from_npz.size(), 1u);
    ASSERT_EQ(from_npz.lst[0].second.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const IterationResult& got = from_npz.lst[0].second[i];
        const IterationResult& expected = from_json.lst[0].second[i];
        EXPECT_EQ(got.outputs.keys(), (std::vector<std::string>{"a", "b"}));
        for (const auto& [name, tensor] : expected.outputs) EXPECT_TRUE(got.outputs.at(name).equals(tensor)) << name;
        EXPECT_EQ(got.runner_name, from_npz.lst[0].first);
        EXPECT_TRUE(got.runtime.has_value());
    }

    // --load-inputs and --load-outputs: the same inputs reproduce the saved results.
    auto compared = run_polygraphy({"run", model, "--ref", "--onnx-outputs", "mark", "all", "--load-inputs",
                                    dir_.file("in.npz"), "--load-outputs", dir_.file("r.npz")});
    EXPECT_EQ(compared.exit_code, 0) << compared.output;
    EXPECT_THAT(compared.output, HasSubstr("PASSED"));

    auto inspected = run_polygraphy({"inspect", "data", dir_.file("r.npz"), "--show-values"});
    EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
    EXPECT_THAT(inspected.output, HasSubstr(from_npz.lst[0].first));
    inspected = run_polygraphy({"inspect", "data", dir_.file("in.npz")});
    EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
    EXPECT_THAT(inspected.output, HasSubstr("x [dtype=float32, shape=(2, 3)]"));

    auto merged =
        run_polygraphy({"data", "to-input", dir_.file("in.npz"), dir_.file("r.npz"), "-o", dir_.file("merged.npz")});
    ASSERT_EQ(merged.exit_code, 0) << merged.output;
    logger().set_severity(Severity::kWarning);
    const InputList inputs = std::get<InputList>(npz::load(dir_.file("merged.npz")));
    ASSERT_EQ(inputs.size(), 2u);
    EXPECT_EQ(inputs[1].keys(), (std::vector<std::string>{"x", "a", "b"}));

    auto converted = run_polygraphy(
        {"data", "convert", "--load-outputs", dir_.file("r.npz"), "--save-outputs", dir_.file("converted.json")});
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
    const RunResults back = RunResults::load(dir_.file("converted.json"));
    EXPECT_TRUE(back.lst[0].second[1].outputs.at("b").equals(from_npz.lst[0].second[1].outputs.at("b")));
}

TEST_F(NpzCli, BadFilesAreOneLineErrors) {
    const std::string model = dir_.file("model.onnx");
    write_file_atomically(dir_.file("bad.npz"), "[{\"x\": 1}]");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"inspect", "data", dir_.file("bad.npz")},
             {"run", model, "--ref", "--load-inputs", dir_.file("bad.npz")},
             {"run", model, "--ref", "--load-outputs", dir_.file("bad.npz")},
             {"data", "to-input", dir_.file("bad.npz"), "-o", dir_.file("out.npz")}}) {
        auto result = run_polygraphy(args);
        EXPECT_NE(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("[!] " + dir_.file("bad.npz") + ": not a zip file")) << args[0];
        EXPECT_THAT(result.output, Not(HasSubstr("terminate"))) << args[0];
    }
    EXPECT_FALSE(fs::exists(dir_.file("out.npz")));

    // Results where inputs are expected, and the other way round.
    auto saved = run_polygraphy(
        {"run", model, "--ref", "--save-outputs", dir_.file("r.npz"), "--save-inputs", dir_.file("in.npz")});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    auto result = run_polygraphy({"run", model, "--ref", "--load-inputs", dir_.file("r.npz")});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[!] " + dir_.file("r.npz") + ": holds inference results"));
    result = run_polygraphy({"run", model, "--ref", "--load-outputs", dir_.file("in.npz")});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[!] " + dir_.file("in.npz") + ": holds inputs, not inference results"));

    // A folder that cannot be created: the run stops before inference and leaves nothing.
    write_file_atomically(dir_.file("file"), "not a folder");
    const auto before = std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator());
    result = run_polygraphy({"run", model, "--ref", "--save-outputs", dir_.file("file/r.npz")});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[!] Could not write " + dir_.file("file/r.npz")));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator()), before);
}

}  // namespace
}  // namespace polygraphy
