// The `polygraphy` command: a thin main over the library (see polygraphy/tools/cli.h).
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "polygraphy/tools/cli.h"

// LeakSanitizer builds only (unused otherwise): ONNX Runtime, a prebuilt library, keeps a few bytes
// for the life of the process, which is not ours to report.
extern "C" const char* __lsan_default_suppressions() { return "leak:libonnxruntime.so\n"; }

namespace {

// The built-in runtime's kernels use OpenMP. With its default (active) wait policy, a thread that
// finishes a parallel step spins for the others; on a machine whose cores are busy with other work
// that turns a 2-thread run into a 10-80x slower one (BENCHMARKS.md). libgomp reads the policy once,
// before main, so the tool sets it and starts itself again; an explicit OMP_WAIT_POLICY is kept.
void prefer_passive_openmp_waiting(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

}  // namespace

int main(int argc, char** argv) {
    prefer_passive_openmp_waiting(argv);
    // Past a file-size limit, a write should fail with EFBIG and be reported like a full disk,
    // not kill the process halfway through a file.
    std::signal(SIGXFSZ, SIG_IGN);
    try {
        std::vector<std::string> args(argv, argv + argc);
        const int status = polygraphy::tools::cli_main(args, std::cout, std::cerr);
        std::cout.flush();
        return status;
    } catch (const std::exception& e) {
        // cli_main reports its own errors; this only catches failures of the reporting itself.
        std::fprintf(stdout, "[!] %s\n", e.what());
    } catch (...) {
        std::fputs("[!] Unexpected error of unknown type\n", stdout);
    }
    return 1;
}
