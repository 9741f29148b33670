// Post-processes outputs before comparing them: Top-K keeps the indices of the largest scores, so
// two classifiers agree when they rank classes alike even if their scores differ (Polygraphy's
// PostprocessFunc.top_k with Comparator.postprocess, and CompareFunc.indices).
#include <cstdio>
#include <exception>
#include <string>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/comparator/comparator.h"

using namespace polygraphy;

static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(std::string("Check failed: ") + what);
}

int main(int argc, char** argv) {
    const std::string models = argc > 1 ? argv[1] : ".";
    try {
        ref::RefRunner runner(ref::SessionFromOnnx(OnnxFromPath(models + "/example_cnn.onnx")));
        DataLoader::Options data_options;
        data_options.iterations = 2;
        RunResults results = Comparator::run({&runner}, DataLoader(data_options).as_function());

        // A second "backend" whose scores are 0.1% larger: same ranking, different values.
        std::vector<IterationResult> scaled;
        for (const IterationResult& iteration : results.lst[0].second) {
            IterationResult copy{clone(iteration.outputs), iteration.runtime, "scaled"};
            Tensor& probs = copy.outputs.at("probs");
            for (int64_t i = 0; i < probs.numel(); ++i) probs.data_as<float>()[i] *= 1.001f;
            scaled.push_back(copy);
        }
        results.add(scaled, "scaled");
        expect(!Comparator::compare_accuracy(results), "the raw scores differ beyond the default tolerances");

        // Keep the indices of the 3 largest scores of every output (per-output settings are possible:
        // postprocess_func::top_k({{"probs", TopK{3, -1}}})).
        Comparator::postprocess(results, postprocess_func::top_k(3));
        const Tensor& top3 = results.lst[0].second[0].outputs.at("probs");
        expect(top3.dtype() == DataType::kInt64 && top3.shape() == Shape({1, 3}), "probs became 3 int64 indices");

        expect(static_cast<bool>(Comparator::compare_accuracy(results, compare_func::indices())),
               "the top-3 classes are the same");
        std::printf("Top-3 classes agree: %lld %lld %lld\n", static_cast<long long>(top3.data_as<int64_t>()[0]),
                    static_cast<long long>(top3.data_as<int64_t>()[1]),
                    static_cast<long long>(top3.data_as<int64_t>()[2]));
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
