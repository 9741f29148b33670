// Fixture of the report tests: a layer-wise run whose saved results were changed from one node on.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "model_builder.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::testing {

/// model.onnx: x [4, 8] -> Relu (a) -> Sigmoid named "<script>" (output "<b>&amp;</b>") -> Neg (c) -> Abs (y).
/// golden.json: its outputs at every layer (`--onnx-outputs mark all`) on the built-in runtime.
/// perturbed.json: the same with c and y scaled by 1 + 0.001 * (i % 7) and 1 added to their first
/// element, so that the Neg node is the first divergence.
class PerturbedRun : public ::testing::Test {
protected:
    void SetUp() override {
        ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{4, 8});
        builder.node("Relu", {"x"}, {"a"}, "relu");
        builder.node("Sigmoid", {"a"}, {"<b>&amp;</b>"}, "<script>");
        builder.node("Neg", {"<b>&amp;</b>"}, {"c"}, "neg");
        builder.node("Abs", {"c"}, {"y"}, "abs");
        builder.output("y", DataType::kFloat32, Shape{4, 8});
        builder.save(model_);
        const auto saved =
            run_polygraphy({"run", model_, "--ref", "--onnx-outputs", "mark", "all", "--save-outputs", golden_});
        ASSERT_EQ(saved.exit_code, 0) << saved.output;
        RunResults results = RunResults::load(golden_);
        for (auto& [runner, iterations] : results.lst)
            for (auto& iteration : iterations)
                for (const char* tensor : {"c", "y"}) {
                    Tensor& values = iteration.outputs.at(tensor);
                    values = values.clone();
                    float* data = values.data_as<float>();
                    for (int64_t i = 0; i < values.numel(); ++i) data[i] *= 1.0f + 1e-3f * static_cast<float>(i % 7);
                    data[0] += 1.0f;
                }
        results.save(perturbed_);
    }

    TempDir dir_;
    std::string model_ = dir_.file("model.onnx");
    std::string golden_ = dir_.file("golden.json");
    std::string perturbed_ = dir_.file("perturbed.json");
};

}  // namespace polygraphy::testing
