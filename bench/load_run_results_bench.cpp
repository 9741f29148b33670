// Times RunResults::load (and optionally save) on files such as make_run_results writes:
//     load_run_results_bench FILE.json [FILE2.json ...] [--runs 7] [--save OUT.json]
// Each run loads every file, keeping all results alive together (as `polygraphy run --load-outputs
// a.json b.json` does). Prints every run, the median, and the throughput in MB of JSON and of
// decoded data per second. Peak memory: /usr/bin/time -v load_run_results_bench FILE.json --runs 1
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"

namespace {

}  // namespace

int main(int argc, char** argv) {
    using namespace polygraphy;
    using Clock = std::chrono::steady_clock;
    std::vector<std::string> paths;
    int runs = 7;
    std::string save_path;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) {
            paths.push_back(arg);
        } else if (i + 1 < argc && arg == "--runs") {
            runs = std::max(1, std::atoi(argv[++i]));
        } else if (i + 1 < argc && arg == "--save") {
            save_path = argv[++i];
        } else {
            std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    if (paths.empty()) {
        std::fprintf(stderr, "usage: load_run_results_bench FILE.json [FILE2.json ...] [--runs 7] [--save OUT.json]\n");
        return 2;
    }
    try {
        logger().set_severity(Severity::kWarning);
        double file_mb = 0;
        std::string names;
        for (const auto& path : paths) {
            file_mb += static_cast<double>(std::filesystem::file_size(path)) / 1e6;
            names += (names.empty() ? "" : " ") + path;
        }
        std::vector<double> load_ms, save_ms;
        double decoded_mb = 0;
        for (int run = 0; run < runs; ++run) {
            const auto start = Clock::now();
            std::vector<RunResults> all;
            for (const auto& path : paths) all.push_back(RunResults::load(path));
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
            load_ms.push_back(ms);
            std::size_t bytes = 0;
            double checksum = 0;
            for (const auto& results : all)
                for (const auto& [runner, iterations] : results.lst)
                    for (const auto& iteration : iterations)
                        for (const auto& [name, tensor] : iteration.outputs) {
                            bytes += tensor.nbytes();
                            if (tensor.numel() > 0) checksum += tensor.value_as_double(tensor.numel() - 1);
                        }
            decoded_mb = static_cast<double>(bytes) / 1e6;
            std::printf("load %d: %.1f ms (checksum %.6g)\n", run, ms, checksum);
            if (!save_path.empty()) {
                const auto save_start = Clock::now();
                all.front().save(save_path);
                save_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - save_start).count());
                std::printf("save %d: %.1f ms\n", run, save_ms.back());
            }
        }
        const double m = polygraphy::bench::median(load_ms);
        std::printf("RunResults::load %s (%.1f MB JSON, %.1f MB decoded): median %.1f ms over %d runs, "
                    "%.0f MB/s of JSON, %.0f MB/s decoded\n",
                    names.c_str(), file_mb, decoded_mb, m, runs, file_mb / m * 1e3, decoded_mb / m * 1e3);
        if (!save_ms.empty())
            std::printf("RunResults::save: median %.1f ms, %.0f MB/s of JSON\n", polygraphy::bench::median(save_ms), file_mb / polygraphy::bench::median(save_ms) * 1e3);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
