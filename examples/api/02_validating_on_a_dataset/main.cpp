// Validates a model on a (pretend) large dataset by using a runner directly, not the Comparator
// (seed 003's "validate a single backend" script, with the built-in runtime in place of TensorRT).
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
        // Pretend that this is a very large dataset.
        const Shape shape{1, 1, 2, 2};
        const std::vector<Tensor> dataset = {
            Tensor::from_doubles(DataType::kFloat32, shape, {1, 1, 1, 1}),
            Tensor::from_doubles(DataType::kFloat32, shape, {0, 0, 0, 0}),
            Tensor::from_doubles(DataType::kFloat32, shape, {1, 2, 3, 4}),
            Tensor::from_doubles(DataType::kFloat32, shape, {-1, 0.5, 0, 8}),
        };
        // For an identity network, the golden outputs are the inputs.
        const std::vector<Tensor>& expected_outputs = dataset;

        ref::RefRunner runner(ref::SessionFromOnnx(OnnxFromPath(models + "/identity.onnx")));
        RunnerActivation active(runner);  // activate once: it is the expensive part
        std::vector<TensorMap> kept;
        for (std::size_t i = 0; i < dataset.size(); ++i) {
            // NOTE: the runner owns its output buffers and may reuse them between infer() calls, so
            // outputs kept beyond the next call are copied with clone().
            TensorMap outputs = runner.infer({{"x", dataset[i]}});
            expect(outputs.at("y").equals(expected_outputs[i]), "output matches the golden value");
            kept.push_back(clone(outputs));
        }
        expect(kept.size() == dataset.size() && kept[2].at("y").equals(dataset[2]), "kept outputs are intact");
        std::printf("Validation succeeded!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
