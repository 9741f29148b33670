// Works with saved inputs and run results by hand (Polygraphy's
// examples/api/08_working_with_run_results_and_saved_inputs_manually).
#include <cstdio>
#include <exception>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/comparator.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        // Step 1 (what `polygraphy run identity.onnx --ref --save-inputs inputs.json
        // --save-outputs outputs.json` does): run, saving the inputs and the results.
        ref::RefRunner runner(ref::SessionFromOnnx(OnnxFromPath(models + "/identity.onnx")));
        DataLoader::Options data_options;
        data_options.iterations = 3;
        Comparator::RunOptions run_options;
        run_options.save_inputs_path = "inputs.json";
        Comparator::run({&runner}, DataLoader(data_options).as_function(), run_options).save("outputs.json");

        // Step 2: load both files and check them by hand. Inputs are a list of feed dicts, results
        // a list of (runner name, iterations) entries.
        const InputList inputs = load_inputs("inputs.json");
        const RunResults results = RunResults::load("outputs.json");
        expect(inputs.size() == 3, "three feeds were saved");
        for (const auto& [runner_name, iterations] : results) {
            expect(iterations.size() == inputs.size(), "one iteration per feed");
            for (std::size_t i = 0; i < iterations.size(); ++i) {
                // For an identity model, each output equals its input.
                expect(iterations[i].outputs.at("y").equals(inputs[i].at("x")), "output equals input");
                expect(iterations[i].runtime.has_value(), "the inference time was saved");
            }
            std::printf("Checked %zu iterations of %s\n", iterations.size(), runner_name.c_str());
        }
        expect(results.find(runner.name()) != nullptr, "results are found by runner name");

        // Results can also be made by hand (golden values) and compared like any others.
        RunResults golden;
        std::vector<IterationResult> expected;
        for (const TensorMap& feed : inputs)
            expected.push_back(IterationResult{{{"y", feed.at("x")}}, std::nullopt, ""});
        golden.add(expected, "golden");
        golden.save("golden.json");
        RunResults both = results;
        both.extend(RunResults::load("golden.json"));
        expect(static_cast<bool>(Comparator::compare_accuracy(both)), "the outputs match the golden values");
        std::printf("Saved inputs and results checked!\n");
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
