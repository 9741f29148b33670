// Helpers shared by the libFuzzer targets in fuzz/.
//
// Every target feeds the input to a library entry point and treats the library's typed exceptions
// as the expected way to reject bad input. Anything else is a finding: a sanitizer report, a crash,
// an exception of another type escaping (libFuzzer reports it as a deadly signal), or a broken
// property checked with FUZZ_CHECK (a round trip that does not round-trip, two decoders that
// disagree).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <stdlib.h>

#include "polygraphy/common/logger.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::fuzz {

/// Reports a broken property and aborts, so that libFuzzer saves the input as a crash.
[[noreturn]] inline void check_failed(const char* condition, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n", file, line, condition);
    std::abort();
}

/// The library logs through the global logger; fuzzing must not print per input.
inline void silence_logger() {
    logger().set_severity(Severity::kSilent);
}

/// The input as command-line words: one per line, at most `max_words` (never empty: "" gives {""}).
inline std::vector<std::string> split_lines(const uint8_t* data, std::size_t size, std::size_t max_words = 64) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> words;
    for (std::size_t start = 0; start <= input.size() && words.size() < max_words;) {
        const std::size_t end = std::min(input.find('\n', start), input.size());
        words.emplace_back(input.substr(start, end - start));
        start = end + 1;
    }
    return words;
}

/// A private folder for the files that targets write to exercise path-based entry points, on
/// tmpfs when there is one (a file per input must cost microseconds), removed at exit.
inline const std::string& scratch_dir() {
    // Never destroyed: the atexit handler below runs after static destructors registered later.
    static const std::string& dir = *[] {
        const char* tmpdir = std::getenv("TMPDIR");
        std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : (tmpdir ? tmpdir : "/tmp");
        std::string pattern = base + "/polygraphy_fuzz_XXXXXX";
        if (!mkdtemp(pattern.data())) {
            std::perror("mkdtemp");
            std::abort();
        }
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(scratch_dir(), ignored);
        });
        return new std::string(pattern);
    }();
    return dir;
}

}  // namespace polygraphy::fuzz

#define FUZZ_CHECK(condition)                                                              \
    do {                                                                                   \
        if (!(condition)) ::polygraphy::fuzz::check_failed(#condition, __FILE__, __LINE__); \
    } while (0)

namespace polygraphy::fuzz {

/// Reads every byte of a tensor (or counts its strings), so that the sanitizers see a buffer, or a
/// view of a file mapping, that is too small.
inline void touch(const Tensor& tensor) {
    if (tensor.dtype() == DataType::kString) {
        FUZZ_CHECK(tensor.strings().size() == static_cast<std::size_t>(tensor.numel()));
        return;
    }
    volatile uint8_t sink = 0;
    const auto* bytes = static_cast<const uint8_t*>(tensor.data());
    for (std::size_t i = 0; i < tensor.nbytes(); ++i) sink = sink ^ bytes[i];
}

}  // namespace polygraphy::fuzz
