// The `polygraphy` command: a thin main over the library (see polygraphy/tools/cli.h).
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "polygraphy/tools/cli.h"

int main(int argc, char** argv) {
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
