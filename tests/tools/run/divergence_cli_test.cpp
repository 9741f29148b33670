// `polygraphy run --onnx-outputs mark all` names the first node that diverged: a saved layer-wise
// run is perturbed from one intermediate tensor downstream, and a fresh run is compared against it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/run_results.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

void perturb(RunResults& results, const std::string& tensor) {
    for (auto& [runner, iterations] : results.lst)
        for (auto& iteration : iterations) {
            Tensor& values = iteration.outputs.at(tensor);
            values = values.clone();
            values.data_as<float>()[0] += 1.0f;
        }
}

// x -> Relu (a) -> Sigmoid (b) -> Neg (c) -> Abs (y), saved to `path`.
void save_chain_model(const std::string& path) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Sigmoid", {"a"}, {"b"}, "sigmoid");
    builder.node("Neg", {"b"}, {"c"}, "neg");
    builder.node("Abs", {"c"}, {"y"}, "abs");
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    builder.save(path);
}

// Saves a layer-wise run of `model` on the built-in runtime to `path`, with `tensors` perturbed.
void save_perturbed_run(TempDir& dir, const std::string& model, const std::string& path,
                        const std::vector<std::string>& tensors) {
    auto saved = run_polygraphy(
        {"run", model, "--ref", "--onnx-outputs", "mark", "all", "--save-outputs", dir.file("golden.json")});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    RunResults golden = RunResults::load(dir.file("golden.json"));
    for (const auto& tensor : tensors) perturb(golden, tensor);
    golden.save(path);
}

TEST(RunFirstDivergence, NamesTheNodeWherePerturbedResultsStart) {
    TempDir dir;
    save_chain_model(dir.file("model.onnx"));
    // The Neg node's output and everything after it.
    ASSERT_NO_FATAL_FAILURE(save_perturbed_run(dir, dir.file("model.onnx"), dir.file("perturbed.json"), {"c", "y"}));

    auto compared = run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--onnx-outputs", "mark", "all",
                                    "--load-outputs", dir.file("perturbed.json"), "--report", dir.file("report.json")});
    EXPECT_EQ(compared.exit_code, 1) << compared.output;
    EXPECT_THAT(compared.output, HasSubstr("[E] First divergence: node 'neg' (Neg), output 'c'"));
    const std::string report = read_file(dir.file("report.json"));
    EXPECT_THAT(report, HasSubstr("\"node\": \"neg\""));
    EXPECT_THAT(report, HasSubstr("\"b\": {\n"));  // upstream tensors are in the report too
}

// The runners and the divergence search share the model the run loaded: shape inference, the output
// marking and --save-onnx happen once, not once per runner and again for the search.
TEST(RunFirstDivergence, UsesTheModelTheRunLoaded) {
    TempDir dir;
    save_chain_model(dir.file("model.onnx"));
    ASSERT_NO_FATAL_FAILURE(save_perturbed_run(dir, dir.file("model.onnx"), dir.file("perturbed.json"), {"c", "y"}));
    auto compared =
        run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--ref", "--shape-inference", "--onnx-outputs", "mark",
                        "all", "--save-onnx", dir.file("saved.onnx"), "--load-outputs", dir.file("perturbed.json")});
    EXPECT_EQ(compared.exit_code, 1) << compared.output;
    EXPECT_THAT(compared.output, HasSubstr("[E] First divergence: node 'neg' (Neg), output 'c'"));
    EXPECT_EQ(testing::count_occurrences(compared.output, "[I] Loading model: "), 1u) << compared.output;
    EXPECT_EQ(testing::count_occurrences(compared.output, "[I] Saving ONNX model to: "), 1u) << compared.output;
    EXPECT_EQ(onnx_from_path(dir.file("saved.onnx"))->graph().output_size(), 4);
}

TEST(RunFirstDivergence, NothingReportedWhenRunsAgree) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.save(dir.file("model.onnx"));
    auto result = run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--ref", "--report", dir.file("r.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("First divergence")));
    EXPECT_THAT(read_file(dir.file("r.json")), HasSubstr("\"first_divergence\": null"));
}

}  // namespace
}  // namespace polygraphy
