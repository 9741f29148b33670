// Loading ONNX-Runtime at run time: search order and the errors for missing or wrong libraries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnxrt_test_util.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"

// ONNX-Runtime 1.30 itself leaks 14 bytes when an environment is created (even when it is released;
// reproduced with the bare C API). Sanitizer builds of the test binary ignore leaks from inside it.
extern "C" const char* __lsan_default_suppressions() { return "leak:libonnxruntime.so\n"; }

namespace polygraphy::onnxrt {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScopedEnv;

constexpr const char* kEnvVar = "POLYGRAPHY_ONNXRUNTIME_LIB";

// Runs probe_library() and returns the PolygraphyException's message ("" when it did not throw).
std::string probe_error() {
    try {
        probe_library();
    } catch (const UnsupportedError&) {
        throw;  // not expected in builds with the backend
    } catch (const PolygraphyException& error) {
        return error.what();
    }
    return "";
}

TEST(OnnxrtLibrary, SearchPathsEnvironmentFirstAndAlone) {
    if (!built_with_onnxruntime()) GTEST_SKIP() << "built without ONNX-Runtime";
    {
        ScopedEnv env(kEnvVar, std::nullopt);
        const auto paths = library_search_paths();
        ASSERT_EQ(paths.size(), 2u);
        EXPECT_THAT(paths[0], EndsWith(".deps/onnxruntime/lib/libonnxruntime.so.1"));
        EXPECT_EQ(paths[1], "libonnxruntime.so.1");
    }
    ScopedEnv env(kEnvVar, "/opt/ort/libonnxruntime.so.1");
    EXPECT_EQ(library_search_paths(), std::vector<std::string>{"/opt/ort/libonnxruntime.so.1"});
}

TEST(OnnxrtLibrary, MissingLibraryIsOneLineListingPathAndInstallCommand) {
    if (!built_with_onnxruntime()) GTEST_SKIP() << "built without ONNX-Runtime";
    ScopedEnv env(kEnvVar, "/nonexistent");
    const std::string message = probe_error();
    EXPECT_THAT(message, HasSubstr("Could not load the ONNX-Runtime library"));
    EXPECT_THAT(message, HasSubstr("/nonexistent: cannot open shared object file"));
    EXPECT_THAT(message, HasSubstr("(from POLYGRAPHY_ONNXRUNTIME_LIB)"));
    EXPECT_THAT(message, HasSubstr("scripts/setup_onnxruntime.sh"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(OnnxrtLibrary, LibraryWithoutOrtGetApiBaseIsRejected) {
    if (!built_with_onnxruntime()) GTEST_SKIP() << "built without ONNX-Runtime";
    ScopedEnv env(kEnvVar, "libc.so.6");
    const std::string message = probe_error();
    EXPECT_THAT(message, HasSubstr("libc.so.6: not an ONNX-Runtime library (no OrtGetApiBase symbol)"));
    EXPECT_THAT(message, HasSubstr("scripts/setup_onnxruntime.sh"));
    EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(OnnxrtLibrary, IsAvailableReportsTheReasonWithoutThrowing) {
    std::string reason;
    const bool available = is_available(&reason);
    if (available) {
        EXPECT_TRUE(reason.empty());
        EXPECT_TRUE(built_with_onnxruntime());
    } else {
        EXPECT_THAT(reason, HasSubstr("setup_onnxruntime.sh"));
    }
}

TEST(OnnxrtLibrary, LoadsAndReportsVersion) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const LibraryInfo& info = load_library();
    EXPECT_THAT(info.version, ::testing::MatchesRegex("1\\.[0-9]+\\.[0-9]+.*"));
    EXPECT_FALSE(info.path.empty());
    // Loading is done once: the same object comes back.
    EXPECT_EQ(&load_library(), &info);
    EXPECT_THAT(available_providers(), ::testing::Contains("CPUExecutionProvider"));
}

TEST(OnnxrtLibrary, NotBuiltMeansUnsupportedErrorWithInstallHint) {
    if (built_with_onnxruntime()) GTEST_SKIP() << "built with ONNX-Runtime";
    try {
        load_library();
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& error) {
        EXPECT_THAT(error.what(), HasSubstr("scripts/setup_onnxruntime.sh"));
    }
}

}  // namespace
}  // namespace polygraphy::onnxrt
