// Operator-set domains and the opset a model imports for each (internal to the library).
//
// "" and "ai.onnx" both name ONNX's default domain. A domain the model does not import has no
// opset (imported_opset() gives nullopt: lint reports it, as the ONNX checker does); where an opset
// is needed anyway to pick or check a kernel, it is kOpsetOfUnimportedDomain, the first version of
// every operator. The runtime, constant folding, capability and lint all use these helpers, so they
// agree on which kernel a node gets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// ONNX Runtime's contrib operators' domain.
inline constexpr const char* kMicrosoftDomain = "com.microsoft";

/// Opset used for a node whose domain the model does not import.
inline constexpr int64_t kOpsetOfUnimportedDomain = 1;

/// The domain as opset imports and registries are keyed: "ai.onnx" becomes "".
inline std::string_view canonical_domain(std::string_view domain) {
    return domain == "ai.onnx" ? std::string_view{} : domain;
}

/// Whether `domain` is ONNX's default domain ("" or "ai.onnx").
inline bool is_default_domain(std::string_view domain) {
    return canonical_domain(domain).empty();
}

/// Whether ONNX defines the domain's operators (the default domain, ai.onnx.ml, the training
/// domains); other domains hold custom operators.
inline bool is_onnx_domain(std::string_view domain) {
    return is_default_domain(domain) || domain == "ai.onnx.ml" || domain == "ai.onnx.training" ||
           domain == "ai.onnx.preview.training";
}

/// The domain as messages name it: "ai.onnx" for the default domain.
inline std::string display_domain(std::string_view domain) {
    return is_default_domain(domain) ? std::string("ai.onnx") : std::string(domain);
}

/// The opset `model` imports for `domain`; nullopt when it imports none. A domain imported twice
/// ("" and "ai.onnx", say) counts at its last import, as everywhere the imports become a map
/// (the node check, the runtime, lint, function inlining).
inline std::optional<int64_t> imported_opset(const onnx::ModelProto& model, std::string_view domain) {
    const std::string_view wanted = canonical_domain(domain);
    std::optional<int64_t> found;
    for (const auto& import : model.opset_import())
        if (canonical_domain(import.domain()) == wanted) found = import.version();
    return found;
}

/// The opset nodes of `domain` are run and checked at: the imported one, else kOpsetOfUnimportedDomain.
inline int64_t opset_of_domain(const onnx::ModelProto& model, std::string_view domain) {
    return imported_opset(model, domain).value_or(kOpsetOfUnimportedDomain);
}

}  // namespace polygraphy
