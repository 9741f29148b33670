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

// libgomp reads its settings once, before main, so the tool sets them (tools::openmp_settings says
// which and why) and starts itself again; settings the environment gives are kept.
void prefer_passive_openmp_waiting(int argc, char** argv) {
    const auto settings = polygraphy::tools::openmp_settings(
        std::vector<std::string>(argv, argv + argc), [](const char* name) { return std::getenv(name); },
        polygraphy::tools::idle_cores_now);
    if (settings.empty()) return;
    for (const auto& [name, value] : settings)
        if (setenv(name.c_str(), value.c_str(), 1) != 0) return;
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

}  // namespace

int main(int argc, char** argv) {
    prefer_passive_openmp_waiting(argc, argv);
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
