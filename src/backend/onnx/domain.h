// Operator-set domains: "" and "ai.onnx" both name ONNX's default domain (internal to the library).
#pragma once

#include <string>
#include <string_view>

namespace polygraphy {

/// The domain as opset imports are keyed: "ai.onnx" becomes "".
inline std::string canonical_domain(const std::string& domain) {
    return domain == "ai.onnx" ? std::string{} : domain;
}

/// Whether `domain` is ONNX's default domain ("" or "ai.onnx").
inline bool is_default_domain(std::string_view domain) {
    return domain.empty() || domain == "ai.onnx";
}

}  // namespace polygraphy
