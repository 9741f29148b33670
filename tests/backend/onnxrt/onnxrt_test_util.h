// Helpers shared by the ONNX-Runtime backend tests.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "polygraphy/backend/onnxrt/loader.h"

namespace polygraphy::onnxrt::testing {

/// Skips the current test when ONNX-Runtime cannot be loaded (not built in, or library not installed).
#define POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME()                                                  \
    do {                                                                                      \
        std::string skip_reason;                                                              \
        if (!::polygraphy::onnxrt::is_available(&skip_reason))                                \
            GTEST_SKIP() << "ONNX-Runtime is not available: " << skip_reason;                 \
    } while (0)

/// Sets (or unsets, with nullopt) an environment variable for the guard's lifetime.
class ScopedEnv {
public:
    ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
        if (const char* old = std::getenv(name_.c_str())) old_ = old;
        if (value) setenv(name_.c_str(), value->c_str(), 1);
        else unsetenv(name_.c_str());
    }
    ~ScopedEnv() {
        if (old_) setenv(name_.c_str(), old_->c_str(), 1);
        else unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

}  // namespace polygraphy::onnxrt::testing
