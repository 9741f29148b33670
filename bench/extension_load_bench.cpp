// What loading extension modules adds to `polygraphy run -h` (issue 6: under 5 ms).
//
//     build/bench/extension_load_bench MODULE_FOLDER[:MODULE_FOLDER...] [RUNS] [POLYGRAPHY]
//
// Alternates runs without POLYGRAPHY_PLUGIN_PATH and with it set to MODULE_FOLDER (e.g. the folder
// holding libpolygraphy_reshape_destroyer.so) and prints the medians of
//   - the whole process: spawning `polygraphy run -h` (POLYGRAPHY defaults to ../bin/polygraphy next to
//     this program) until it exits, output discarded;
//   - in process: cli_main({"polygraphy", "run", "-h"}) in a fresh child of this program (so module
//     discovery and loading happen once, as in the tool), timed around the call.
// `extension_load_bench --per-module FILE.so...` times load_extension_module() for each file in turn.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/tools/cli.h"
#include "tools/registry.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
    double wall_ms;
    double cpu_ms;  ///< user + system CPU time: what the machine's other load does not inflate
};

double cpu_ms_now() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// Runs `argv` with stdout to `out_fd` (or /dev/null when -1), stderr to /dev/null; returns its times.
Timing spawn(const std::vector<std::string>& args, int out_fd = -1) {
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const auto start = Clock::now();
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
        std::perror(argv[0]);
        std::exit(1);
    }
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    auto to_ms = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3;
    };
    posix_spawn_file_actions_destroy(&actions);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "%s exited with status %d\n", argv[0], status);
        std::exit(1);
    }
    return {ms, to_ms(usage.ru_utime) + to_ms(usage.ru_stime)};
}

// The child's own measurement (it prints wall and CPU milliseconds on stdout).
Timing spawn_inner(const std::string& self) {
    int fds[2];
    if (pipe(fds) != 0) std::exit(1);
    spawn({self, "--inner"}, fds[1]);
    close(fds[1]);
    char buffer[64] = {};
    const ssize_t n = read(fds[0], buffer, sizeof(buffer) - 1);
    close(fds[0]);
    Timing timing{-1, -1};
    if (n > 0) std::sscanf(buffer, "%lf %lf", &timing.wall_ms, &timing.cpu_ms);
    return timing;
}

// Per-file cost of load_extension_module(), for finding a slow module.
int per_module(const std::vector<std::string>& files) {
    polygraphy::logger().set_severity(polygraphy::Severity::kError);
    for (const auto& file : files) {
        const auto start = Clock::now();
        const bool loaded = polygraphy::tools::load_extension_module(file);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        std::printf("%8.3f ms  %s  %s\n", ms, loaded ? "loaded " : "refused", file.c_str());
    }
    return 0;
}

int inner() {
    polygraphy::logger().set_severity(polygraphy::Severity::kError);  // a warning would be an error here
    std::ostringstream out;
    std::ostringstream err;
    const auto start = Clock::now();
    const double cpu_start = cpu_ms_now();
    const int status = polygraphy::tools::cli_main({"polygraphy", "run", "-h"}, out, err);
    const double cpu = cpu_ms_now() - cpu_start;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (status != 0) return status;
    std::printf("%.4f %.4f\n", ms, cpu);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--inner") return inner();
    if (argc > 2 && std::string(argv[1]) == "--per-module") return per_module({argv + 2, argv + argc});
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: %s MODULE_FOLDER [RUNS] [POLYGRAPHY]\n", argv[0]);
        return 2;
    }
    const std::string folder = argv[1];  // a folder, or several separated by colons (absolute paths)
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 31;
    const std::string self = std::filesystem::canonical("/proc/self/exe").string();
    const std::string cli =
        argc > 3 ? std::string(argv[3])
                 : (std::filesystem::path(self).parent_path().parent_path() / "bin" / "polygraphy").string();

    // Check that the folder really holds a module that loads (else we would time nothing).
    setenv("POLYGRAPHY_PLUGIN_PATH", folder.c_str(), 1);
    polygraphy::logger().set_severity(polygraphy::Severity::kError);
    polygraphy::tools::load_extension_modules();
    if (polygraphy::tools::extension_modules().empty()) {
        std::fprintf(stderr, "no extension module loads from %s\n", folder.c_str());
        return 1;
    }
    std::string names;
    for (const auto& module : polygraphy::tools::extension_modules()) names += " " + module.name;

    std::vector<Timing> process[2], in_process[2];
    spawn({cli, "run", "-h"});  // warm the page cache
    for (int i = 0; i < runs; ++i)
        for (int with = 0; with < 2; ++with) {
            if (with)
                setenv("POLYGRAPHY_PLUGIN_PATH", folder.c_str(), 1);
            else
                unsetenv("POLYGRAPHY_PLUGIN_PATH");
            process[with].push_back(spawn({cli, "run", "-h"}));
            in_process[with].push_back(spawn_inner(self));
        }

    auto column = [](const std::vector<Timing>& timings, bool cpu) {
        std::vector<double> values;
        for (const auto& timing : timings) values.push_back(cpu ? timing.cpu_ms : timing.wall_ms);
        return polygraphy::bench::median(values);
    };
    std::printf("modules:%s (from %s), %d runs each, medians\n", names.c_str(), folder.c_str(), runs);
    std::printf("%-44s %10s %10s %10s\n", "", "without", "with", "added");
    auto row = [&](const char* label, const std::vector<Timing>* timings, bool cpu) {
        const double without = column(timings[0], cpu), with = column(timings[1], cpu);
        std::printf("%-44s %7.2f ms %7.2f ms %7.2f ms\n", label, without, with, with - without);
    };
    row("process `polygraphy run -h`, wall", process, false);
    row("process `polygraphy run -h`, CPU", process, true);
    row("in process cli_main(run -h), wall", in_process, false);
    row("in process cli_main(run -h), CPU", in_process, true);
    return 0;
}
