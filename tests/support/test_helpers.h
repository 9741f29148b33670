// Small assertions shared by tests: exception messages, tensor contents, captured log output.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Runs `action`, which must throw E, and returns the message (a test failure otherwise).
/// Use with HasSubstr to check messages: EXPECT_THAT(error_message<FormatError>([&] { ... }), HasSubstr("..."));
template <typename E>
std::string error_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const E& error) {
        return error.what();
    } catch (const std::exception& error) {
        ADD_FAILURE() << "unexpected exception type: " << error.what();
        return "";
    }
    ADD_FAILURE() << "expected an exception";
    return "";
}

/// The elements of a tensor, read as T (which must match the element layout).
template <typename T>
std::vector<T> elements_of(const Tensor& tensor) {
    const T* data = tensor.data_as<T>();
    return std::vector<T>(data, data + tensor.numel());
}

/// What `action` printed on stdout (where the logger writes).
inline std::string captured_stdout(const std::function<void()>& action) {
    ::testing::internal::CaptureStdout();
    try {
        action();
    } catch (...) {
        ::testing::internal::GetCapturedStdout();
        throw;
    }
    return ::testing::internal::GetCapturedStdout();
}

/// How many times `part` occurs in `text` (without overlaps): log lines that must appear once.
inline std::size_t count_occurrences(const std::string& text, const std::string& part) {
    std::size_t found = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++found;
    return found;
}

}  // namespace polygraphy::testing
