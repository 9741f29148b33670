// The `ReplaceReshapes` loader: replaces no-op Reshape nodes of an ONNX model with Identity nodes.
//
// Like Polygraphy's own loaders (polygraphy/backend/onnx/loader.h), it is a callable that takes
// another loader, so it composes with them:
//     auto load = ReplaceReshapes(OnnxFromPath("model.onnx"), /*rename_nodes=*/true);
//     OnnxModel model = load();  // nothing is read before this call
#pragma once

#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy_reshape_destroyer {

/// A Reshape is a no-op when its new shape is a constant (an initializer or a Constant node) equal,
/// dimension by dimension, to the statically known shape of its data input (all dimensions fixed,
/// from the graph inputs, value_info, or an earlier Reshape). Such nodes become Identity nodes
/// (attributes and the shape input dropped; a shape constant nothing else uses is removed).
/// With `rename_nodes`, a replaced node named "N" is renamed "N_destroyed".
class ReplaceReshapes {
public:
    explicit ReplaceReshapes(polygraphy::OnnxLoader model, bool rename_nodes = false)
        : model_(std::move(model)), rename_nodes_(rename_nodes) {}

    /// Loads the model through the inner loader and returns it with no-op Reshapes replaced.
    polygraphy::OnnxModel operator()() const;

private:
    polygraphy::OnnxLoader model_;
    bool rename_nodes_;
};

/// The immediately evaluated twin of ReplaceReshapes (modifies and returns `model`).
polygraphy::OnnxModel replace_reshapes(polygraphy::OnnxModel model, bool rename_nodes = false);

}  // namespace polygraphy_reshape_destroyer
