// The immediately evaluated functional API: every lazy loader class has a function twin that does
// the work at once and returns the object (Polygraphy's examples/api/06_immediate_eval_api).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        // onnx_from_path = OnnxFromPath(...)(): we get the model itself and can use ONNX's API on it.
        OnnxModel model = onnx_from_path(models + "/example_cnn.onnx");
        const int original_outputs = model->graph().output_size();

        // Mark every intermediate tensor as an output, then save the result.
        model = modify_outputs(model, kMarkAll);
        std::printf("Model now has %d outputs\n", model->graph().output_size());
        save_onnx(*model, "example_cnn_all_outputs.onnx");

        // Round-trip through bytes, then build a session right away.
        OnnxModel reloaded = onnx_from_bytes(bytes_from_path("example_cnn_all_outputs.onnx"));
        expect(bytes_from_onnx(*reloaded) == bytes_from_onnx(*model), "the saved model reads back identically");
        std::shared_ptr<ref::Session> session = ref::session_from_onnx(*reloaded);

        // Runners take loaders; an object built already becomes one with loader_from_value().
        ref::RefRunner runner(loader_from_value(session));
        RunnerActivation active(runner);
        const TensorMetadata inputs = runner.get_input_metadata();
        std::printf("Inputs: %s\n", inputs.to_string().c_str());
        Tensor image = Tensor::from_doubles(DataType::kFloat32, {1, 3, 32, 32}, std::vector<double>(3 * 32 * 32, 0.5));
        TensorMap outputs = runner.infer({{"image", image}});
        expect(original_outputs == 1, "the model had one output");
        expect(static_cast<int>(outputs.size()) == model->graph().output_size() && outputs.size() > 5,
               "every marked tensor is an output");
        expect(outputs.contains("relu1") && outputs.contains("probs"), "intermediate and final outputs are there");
        std::printf("Inference succeeded with %zu outputs!\n", outputs.size());
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
