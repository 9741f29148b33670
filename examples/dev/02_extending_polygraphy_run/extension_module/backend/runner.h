// The `IdentityOnlyRunner` runner: runs ONNX models made only of Identity nodes.
//
// Runners implement polygraphy::BaseRunner (polygraphy/backend/base/runner.h): the public methods
// (activate, get_input_metadata, infer, deactivate) do the checks shared by every backend and call
// the *_impl methods below.
#pragma once

#include <optional>
#include <string>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy_reshape_destroyer {

/// How fast inference runs: `slow` and `medium` sleep 1 s and 0.5 s per inference, `fast` not at all.
enum class Speed { kSlow, kMedium, kFast };
/// "slow" | "medium" | "fast"; polygraphy::UsageError listing the valid speeds otherwise.
Speed speed_from_name(const std::string& name);

class IdentityOnlyRunner : public polygraphy::BaseRunner {
public:
    /// `model`: a loader (e.g. ReplaceReshapes) or polygraphy::loader_from_value(model). Runner names
    /// look like `identity-only-runner-N0-11/21/26-09:30:00` unless `name` is given.
    explicit IdentityOnlyRunner(polygraphy::OnnxLoader model, Speed speed = Speed::kFast,
                                std::optional<std::string> name = std::nullopt);

protected:
    /// Loads the model and refuses it when a node is not an Identity (naming the node and its op).
    void activate_impl() override;
    void deactivate_impl() override;
    polygraphy::TensorMetadata get_input_metadata_impl() override;
    polygraphy::TensorMap infer_impl(const polygraphy::TensorMap& feed) override;

private:
    polygraphy::OnnxLoader loader_;
    Speed speed_;
    polygraphy::OnnxModel model_;
};

}  // namespace polygraphy_reshape_destroyer
