// The built-in runtime against ONNX Runtime on the same models (issue 3): session load time,
// median inference latency and peak memory, measured in one run, side by side.
//
// usage: ref_vs_onnxrt_bench [--threads T] [--iterations N] [--rounds R] MODEL.onnx ...
//
// Latency: both sessions live in one process; after 3 warm-up runs each (the first run of either
// builds its kernels: oneDNN primitives, ORT's prepacked weights), R rounds alternate N runs of
// each, and the median of all runs is reported. Both use T intra-op threads (default 1).
// Load time: from the model file to a ready session (our parse + preparation; ORT's CreateSession
// from the file), median of R in fresh child processes.
// Memory: peak RSS of a fresh child process that loads the model, creates one runtime's session and
// runs it N times (VmHWM: ru_maxrss would carry the parent's high-water mark across exec), minus the
// peak RSS of a child that only starts up.
// Targets: latency <= 1.5x ORT's, memory <= 1.25x ORT's.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/logger.h"

namespace {

using namespace polygraphy;
using Clock = std::chrono::steady_clock;
using bench::make_feed;
using bench::median;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Runtimes {
    std::shared_ptr<ref::Session> ref;
    std::shared_ptr<onnxrt::Session> ort;
};

std::shared_ptr<ref::Session> make_ref(const std::string& path, int threads) {
    ref::SessionOptions options;
    options.num_threads = threads;
    return std::make_shared<ref::Session>(*onnx_from_path(path), options);
}

std::shared_ptr<onnxrt::Session> make_ort(const std::string& path, int threads) {
    onnxrt::SessionOptions options;
    options.intra_op_num_threads = threads;
    return onnxrt::session_from_path(path, options);
}

// ---- child modes -------------------------------------------------------------------------------

// This process's peak resident set size in KiB (VmHWM of /proc/self/status).
long peak_rss_kib() {
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    long kib = 0;
    while (std::fgets(line, sizeof line, status))
        if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    std::fclose(status);
    return kib;
}

// Prints "<load seconds> <peak RSS KiB>" for one runtime: load, then `iterations` runs.
int child(const std::string& runtime, const std::string& path, int threads, int iterations) {
    if (runtime == "none") {
        std::printf("0 %ld\n", peak_rss_kib());
        return 0;
    }
    // Inputs come from the session's metadata, so nothing but the runtime touches the model.
    const auto start = Clock::now();
    double load = 0;
    if (runtime == "ref") {
        auto session = make_ref(path, threads);
        load = seconds_since(start);
        const TensorMap feed = make_feed(session->input_metadata());
        for (int i = 0; i < iterations; ++i) session->run(feed);
    } else {
        auto session = make_ort(path, threads);
        load = seconds_since(start);
        const TensorMap feed = make_feed(session->input_metadata());
        for (int i = 0; i < iterations; ++i) session->run(feed);
    }
    std::printf("%.6f %ld\n", load, peak_rss_kib());
    return 0;
}

struct ChildFigures {
    double load_seconds;
    double peak_mb;
};

ChildFigures child_figures(const std::string& runtime, const std::string& path, int threads, int iterations,
                           int rounds) {
    std::vector<double> loads, peaks;
    for (int round = 0; round < rounds; ++round) {
        std::string output;
        bench::run_child({"/proc/self/exe", "--child", runtime, path, std::to_string(threads),
                          std::to_string(iterations)},
                         &output);
        double load = 0;
        long peak = 0;
        if (std::sscanf(output.c_str(), "%lf %ld", &load, &peak) != 2)
            throw PolygraphyException("unexpected child output: " + output);
        loads.push_back(load);
        peaks.push_back(static_cast<double>(peak) / 1024.0);
    }
    return {median(loads), median(peaks)};
}

// ---- the comparison -----------------------------------------------------------------------------

void compare(const std::string& path, int threads, int iterations, int rounds) {
    const TensorMap feed = make_feed(get_onnx_input_metadata(onnx_from_path(path)->graph()));
    auto ref_session = make_ref(path, threads);
    auto ort_session = make_ort(path, threads);
    for (int i = 0; i < 3; ++i) {
        ref_session->run(feed);
        ort_session->run(feed);
    }
    std::vector<double> ref_times, ort_times;
    for (int round = 0; round < rounds; ++round) {
        for (int i = 0; i < iterations; ++i) {
            const auto start = Clock::now();
            ref_session->run(feed);
            ref_times.push_back(seconds_since(start));
        }
        for (int i = 0; i < iterations; ++i) {
            const auto start = Clock::now();
            ort_session->run(feed);
            ort_times.push_back(seconds_since(start));
        }
    }
    ref_session.reset();
    ort_session.reset();
    const double ref_ms = median(ref_times) * 1e3, ort_ms = median(ort_times) * 1e3;

    const int child_rounds = std::max(3, std::min(rounds, 5));
    const ChildFigures baseline = child_figures("none", path, threads, 0, child_rounds);
    const ChildFigures ref_child = child_figures("ref", path, threads, 2, child_rounds);
    const ChildFigures ort_child = child_figures("onnxrt", path, threads, 2, child_rounds);
    const double ref_mb = ref_child.peak_mb - baseline.peak_mb, ort_mb = ort_child.peak_mb - baseline.peak_mb;

    std::string name = path.substr(path.find_last_of('/') + 1);
    std::printf("| %s | %.2f ms | %.2f ms | %.2fx %s | %.0f ms | %.0f ms | %.0f MB | %.0f MB | %.2fx %s |\n",
                name.c_str(), ref_ms, ort_ms, ref_ms / ort_ms, ref_ms / ort_ms <= 1.5 ? "" : "(over)",
                ref_child.load_seconds * 1e3, ort_child.load_seconds * 1e3, ref_mb, ort_mb, ref_mb / ort_mb,
                ref_mb / ort_mb <= 1.25 ? "" : "(over)");
    std::fflush(stdout);
}

int parse_positive(const char* flag, const char* text) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (!text[0] || *end || value <= 0 || value > 100000) {
        std::fprintf(stderr, "ref_vs_onnxrt_bench: %s needs a positive integer, got '%s'\n", flag, text);
        std::exit(2);
    }
    return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
    logger().set_severity(Severity::kWarning);
    try {
        if (argc == 6 && std::string(argv[1]) == "--child")
            return child(argv[2], argv[3], parse_positive("threads", argv[4]), std::atoi(argv[5]));
        int threads = 1, iterations = 10, rounds = 5;
        std::vector<std::string> models;
        for (int i = 1; i < argc; ++i) {
            const std::string arg = argv[i];
            if ((arg == "--threads" || arg == "--iterations" || arg == "--rounds") && i + 1 < argc) {
                const int value = parse_positive(argv[i], argv[i + 1]);
                (arg == "--threads" ? threads : arg == "--iterations" ? iterations : rounds) = value;
                ++i;
            } else if (arg == "-h" || arg == "--help") {
                std::printf("usage: ref_vs_onnxrt_bench [--threads T] [--iterations N] [--rounds R] MODEL.onnx ...\n");
                return 0;
            } else {
                models.push_back(arg);
            }
        }
        if (models.empty()) {
            std::fprintf(stderr, "ref_vs_onnxrt_bench: give at least one model\n");
            return 2;
        }
        std::printf("%d intra-op thread(s), %d rounds x %d runs per runtime\n\n", threads, rounds, iterations);
        std::printf("| model | ref latency | ORT latency | ratio | ref load | ORT load | ref peak | ORT peak | ratio |\n");
        std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for (const auto& model : models) compare(model, threads, iterations, rounds);
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
