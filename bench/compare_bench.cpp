// Benchmarks of the comparator's hot paths on 4,000,000-element float32 outputs:
//   BM_Stats            compute_stats (mean/std/var/median/min/max/p90/p95/p99) of one array
//   BM_Histogram        the `---- Histogram ----` block of one array (printed for failing outputs)
//   BM_LoadAndCompare   RunResults::load of two 85 MB files + compare_accuracy (run --load-outputs a b)
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
#include <filesystem>
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

// `polygraphy run --load-outputs a.json b.json --atol 1e-3 --rtol 1e-3` minus the CLI: load both RunResults
// files (written by RunResults::save, 85 MB each) and compare them, report at INFO into /dev/null.
void BM_LoadAndCompare(benchmark::State& state) {
    const std::string dir = std::filesystem::temp_directory_path().string();
    const std::string a_path = dir + "/compare_bench_a_" + std::to_string(getpid()) + ".json";
    const std::string b_path = dir + "/compare_bench_b_" + std::to_string(getpid()) + ".json";
    for (int side = 0; side < 2; ++side) {
        IterationResult iteration;
        for (int k = 0; k < 4; ++k)
            iteration.outputs.set("output" + std::to_string(k), make_output(10 + k, side ? 1e-6 : 0.0));
        iteration.runner_name = side ? "b" : "a";
        iteration.runtime = 0.001;
        RunResults results;
        results.add({iteration}, iteration.runner_name);
        QuietStdout quiet;
        results.save(side ? b_path : a_path);
    }
    SimpleCompareOptions options;
    options.atol.set("", 1e-3);
    options.rtol.set("", 1e-3);
    logger().reset();
    bool passed = true;
    {
        QuietStdout quiet;
        for (auto _ : state) {
            RunResults results = RunResults::load(a_path);
            results.extend(RunResults::load(b_path));
            passed = static_cast<bool>(Comparator::compare_accuracy(results, compare_func::simple(options))) && passed;
        }
    }
    std::filesystem::remove(a_path);
    std::filesystem::remove(b_path);
    if (!passed) state.SkipWithError("comparison unexpectedly failed");
}
BENCHMARK(BM_LoadAndCompare)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
