// Runs a model with the built-in runtime and with ONNX-Runtime on the same bounded random inputs,
// checks that the outputs match and saves the results (seed 003's "compare multiple backends"
// script and seed 002's "Putting it all together", without TensorRT/TensorFlow).
#include <cstdio>
#include <exception>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/comparator/comparator.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    std::string reason;
    if (!onnxrt::is_available(&reason)) {
        std::printf("[W] Skipping: ONNX-Runtime is not available: %s\n", reason.c_str());
        return 77;
    }
    try {
        // One model loader shared by both backends' session loaders; ONNX-Runtime gets the model
        // serialized (seed 002: SessionFromOnnxBytes(BytesFromOnnx(...))).
        OnnxLoader load_model = OnnxFromPath(models + "/example_cnn.onnx");
        ref::RefRunner ref_runner{ref::SessionFromOnnx(load_model)};
        onnxrt::OnnxrtRunner onnxrt_runner{onnxrt::SessionFromOnnx::from_bytes(BytesFromOnnx(load_model))};

        // Inputs bounded to [0, 2] (the seeds' DataLoader(int_range=(0, 2), float_range=(0.0, 2.0))),
        // two iterations. A data loader can also be any list or generator of feed dicts: see
        // examples/api/07_custom_data_loader.
        DataLoader::Options data_options;
        data_options.int_range = ValRange{0, 2};
        data_options.float_range = ValRange{0.0, 2.0};
        data_options.iterations = 2;
        RunResults run_results = Comparator::run({&ref_runner, &onnxrt_runner}, DataLoader(data_options).as_function());
        expect(run_results.size() == 2, "one entry per runner");

        // CompareFunc.simple(atol=...): the tolerances are per output, "" being the default.
        SimpleCompareOptions options;
        options.atol.set("", 1e-5);
        options.rtol.set("", 1e-4);
        AccuracyResult accuracy = Comparator::compare_accuracy(run_results, compare_func::simple(options));
        expect(static_cast<bool>(accuracy), "the built-in runtime and ONNX-Runtime agree");
        expect(accuracy.pairs.size() == 1 && accuracy.pairs[0].iterations.size() == 2, "one pair, two iterations");
        expect(accuracy.percentage() == 1.0, "every iteration passed");

        // Results go to Polygraphy's JSON format (`polygraphy inspect data inference_results.json`).
        run_results.save("inference_results.json");
        RunResults loaded = RunResults::load("inference_results.json");
        expect(loaded.size() == 2 &&
                   loaded.lst[1].second[1].outputs.at("probs").equals(run_results.lst[1].second[1].outputs.at("probs")),
               "saved results load back unchanged");
        std::printf("The built-in runtime and ONNX-Runtime agree; results saved to inference_results.json\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
