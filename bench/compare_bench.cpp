// Benchmarks of the comparator's hot paths on 4,000,000-element float32 outputs:
//   BM_Stats            compute_stats (mean/std/var/median/min/max/p90/p95/p99) of one array
//   BM_Histogram        the `---- Histogram ----` block of one array (printed for failing outputs)
//   BM_CompareOutputs   CompareFunc::simple on two iterations of 4 such outputs (the `run --load-outputs a b`
//                       workload without file loading), report logged at INFO into /dev/null;
//                       /0: outputs within tolerance (1e-6 relative noise, atol = rtol = 1e-3),
//                       /1: outputs out of tolerance (atol = rtol = 1e-9), so the report adds 4 histograms each
// Run: build/bench/compare_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/stats.h"

namespace {

using namespace polygraphy;

constexpr int64_t kElements = 4'000'000;

// Deterministic, roughly normal values (sum of uniforms) with a spread of magnitudes, like activations.
Tensor make_output(uint64_t seed, double perturbation) {
    Tensor tensor(DataType::kFloat32, {kElements});
    float* data = tensor.data_as<float>();
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(state >> 11) * (1.0 / 9007199254740992.0);
    };
    for (int64_t i = 0; i < kElements; ++i) {
        const double normal = next() + next() + next() - 1.5;
        const double value = normal * 4.0;
        data[i] = static_cast<float>(value * (1.0 + perturbation * (next() - 0.5)));
    }
    return tensor;
}

// Sends the logger's stdout to /dev/null while alive (the benchmark's own report goes to stdout too).
class QuietStdout {
public:
    QuietStdout() {
        std::fflush(stdout);
        saved_ = dup(STDOUT_FILENO);
        const int null_fd = open("/dev/null", O_WRONLY);
        dup2(null_fd, STDOUT_FILENO);
        close(null_fd);
    }
    ~QuietStdout() {
        std::fflush(stdout);
        dup2(saved_, STDOUT_FILENO);
        close(saved_);
    }

private:
    int saved_;
};

void BM_Stats(benchmark::State& state) {
    const Tensor tensor = make_output(1, 0.0);
    for (auto _ : state) benchmark::DoNotOptimize(stats::compute_stats(tensor));
    state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_Stats)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Histogram(benchmark::State& state) {
    const Tensor tensor = make_output(1, 0.0);
    for (auto _ : state) benchmark::DoNotOptimize(stats::histogram_string(tensor, std::make_pair(-6.0, 6.0)));
    state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_Histogram)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CompareOutputs(benchmark::State& state) {
    const bool failing = state.range(0) != 0;
    const double perturbation = 1e-6;
    IterationResult first, second;
    for (int k = 0; k < 4; ++k) {
        first.outputs.set("output" + std::to_string(k), make_output(10 + k, 0.0));
        second.outputs.set("output" + std::to_string(k), make_output(10 + k, perturbation));
    }
    first.runner_name = "a";
    second.runner_name = "b";
    SimpleCompareOptions options;
    options.atol.set("", failing ? 1e-9 : 1e-3);
    options.rtol.set("", failing ? 1e-9 : 1e-3);
    const CompareFunc compare = compare_func::simple(options);
    logger().reset();
    bool passed = true;
    {
        QuietStdout quiet;
        for (auto _ : state) {
            const IterationCompareResult result = compare(first, second);
            for (const auto& entry : result) passed = passed && entry.second.passed;
        }
    }
    if (passed == failing) state.SkipWithError("comparison gave the wrong verdict");
    state.SetItemsProcessed(state.iterations() * 4 * kElements);
}
BENCHMARK(BM_CompareOutputs)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
