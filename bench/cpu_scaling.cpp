// What a second thread adds on this machine (issue 16): one thread, then two threads at once, each
// running a register-only AVX2 FMA loop (12 independent accumulators: the multiply-add throughput a
// convolution kernel approaches), alternating; each sample prints both rates and the gain. On this
// VM the gain moved between 1.04x and 2.2x within minutes, as if its two vCPUs at times shared one
// physical core's FMA units. A benchmark of the runtimes at two threads inherits that regime, so run
// this next to one to know which it ran in.
//
//   build/bench/cpu_scaling [--samples S] [--pause-ms P]   (default: 10 samples, 4000 ms apart)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace {

constexpr long kIterations = 5000000;  // per thread and run: 12 x 8 multiply-adds each
constexpr double kFlopsPerIteration = 12.0 * 8.0 * 2.0;

/// kIterations rounds of 12 independent multiply-add chains; returns a value that depends on all.
__attribute__((target("avx2,fma"), noinline)) float multiply_adds(float seed) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(seed + 0.1f * static_cast<float>(i));  // distinct: no CSE
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    for (long k = 0; k < kIterations; ++k) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
    }
    float sum = 0;
    for (int i = 0; i < 12; ++i) sum += _mm256_cvtss_f32(acc[i]);
    return sum;
}

/// Milliseconds for `threads` threads to run multiply_adds() once each, at the same time.
double run_ms(int threads, float& sink) {
    std::vector<float> results(static_cast<std::size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back([&, t] { results[t] = multiply_adds(1.0f + t); });
    results[0] = multiply_adds(1.0f);
    for (auto& worker : workers) worker.join();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (float r : results) sink += r;
    return ms;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int samples = 10;
    int pause_ms = 4000;
    for (int i = 1; i < argc; ++i) {
        const bool has_value = i + 1 < argc;
        if (std::strcmp(argv[i], "--samples") == 0 && has_value) {
            samples = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "--pause-ms") == 0 && has_value) {
            pause_ms = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: cpu_scaling [--samples S] [--pause-ms P]\n");
            return 2;
        }
    }
    if (samples < 1 || pause_ms < 0) {
        std::fprintf(stderr, "cpu_scaling: --samples must be at least 1 and --pause-ms at least 0\n");
        return 2;
    }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        std::fprintf(stderr, "cpu_scaling: this CPU has no AVX2 and FMA\n");
        return 1;
    }
    float sink = 0;
    for (int s = 0; s < samples; ++s) {
        if (s > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        std::vector<double> one, two;
        for (int r = 0; r < 7; ++r) {  // alternating, so that both see the same minute
            one.push_back(run_ms(1, sink));
            two.push_back(run_ms(2, sink));
        }
        const double gflops_one = kFlopsPerIteration * kIterations / median(one) / 1e6;
        const double gflops_two = 2 * kFlopsPerIteration * kIterations / median(two) / 1e6;
        std::printf("sample %d: 1 thread %.1f GFLOP/s, 2 threads %.1f GFLOP/s, gain %.2fx\n", s + 1, gflops_one,
                    gflops_two, gflops_two / gflops_one);
        std::fflush(stdout);
    }
    return sink == 12345.0f ? 3 : 0;  // keeps the results observable
}
