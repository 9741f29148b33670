// Writes a Polygraphy-format RunResults file with one runner and one iteration of float32 outputs,
// for benchmarks of loading and comparing results:
//     make_run_results OUT.json [--outputs 4] [--elements 4000000] [--seed N] [--perturb 1e-6] [--runner NAME]
// Values are drawn from --seed; --perturb scales each value by (1 + perturb * u), u uniform in
// [-1, 1) from an independent stream, so two files with the same seed and different perturbations
// compare like the outputs of two backends.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"

namespace {

// splitmix64: fast, good enough for benchmark data, identical on every platform.
struct Rng {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }  // [-1, 1)
};

int usage(const char* message) {
    std::fprintf(stderr, "%s\nusage: make_run_results OUT.json [--outputs 4] [--elements 4000000] [--seed N] "
                         "[--perturb 1e-6] [--runner NAME]\n", message);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace polygraphy;
    if (argc < 2) return usage("missing OUT.json");
    std::string out = argv[1];
    long outputs = 4, elements = 4000000;
    unsigned long long seed = 0;
    double perturb = 0;
    std::string runner;
    for (int i = 2; i < argc; ++i) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) return usage(("missing value for " + flag).c_str());
        const char* value = argv[++i];
        if (flag == "--runner") {
            runner = value;
            continue;
        }
        char* end = nullptr;
        if (flag == "--outputs") outputs = std::strtol(value, &end, 10);
        else if (flag == "--elements") elements = std::strtol(value, &end, 10);
        else if (flag == "--seed") seed = std::strtoull(value, &end, 10);
        else if (flag == "--perturb") perturb = std::strtod(value, &end);
        else return usage(("unknown option " + flag).c_str());
        if (!end || *end != '\0') return usage(("bad value for " + flag + ": " + value).c_str());
    }
    if (outputs < 0 || elements < 0) return usage("--outputs and --elements must be >= 0");
    if (runner.empty()) runner = "runner-seed" + std::to_string(seed) + (perturb != 0 ? "-perturbed" : "");

    try {
        logger().set_severity(Severity::kWarning);
        Rng values{seed * 2 + 1};
        Rng noise{seed * 2 + 2};
        IterationResult iteration;
        for (long o = 0; o < outputs; ++o) {
            Tensor tensor(DataType::kFloat32, {1, elements});
            float* data = tensor.data_as<float>();
            for (long i = 0; i < elements; ++i) {
                const float value = 4.0f * values.uniform();
                data[i] = perturb != 0 ? static_cast<float>(value * (1.0 + perturb * noise.uniform())) : value;
            }
            iteration.outputs.set("output" + std::to_string(o), tensor);
        }
        iteration.runtime = 0.0125;
        iteration.runner_name = runner;
        RunResults results;
        results.add({iteration}, runner);
        results.save(out);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
