// The runner of the test modules: copies each input to the output of the same position (enough for
// one-input, one-output models), after a hook where a module logs or misbehaves.
#pragma once

#include <string>
#include <utility>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnx/loader.h"

namespace polygraphy::testing {

class PassThroughRunner : public BaseRunner {
public:
    PassThroughRunner(OnnxLoader loader, const std::string& name_prefix)
        : BaseRunner(name_prefix), loader_(std::move(loader)) {}

protected:
    /// Called at the start of every inference.
    virtual void before_infer() {}

    void activate_impl() override { model_ = loader_(); }
    void deactivate_impl() override { model_.reset(); }
    TensorMetadata get_input_metadata_impl() override { return get_onnx_input_metadata(model_->graph()); }
    TensorMap infer_impl(const TensorMap& feed) override {
        before_infer();
        TensorMap outputs;
        const auto& graph = model_->graph();
        for (int i = 0; i < graph.output_size() && i < static_cast<int>(feed.size()); ++i)
            outputs.set(graph.output(i).name(), feed[static_cast<std::size_t>(i)].second.clone());
        return outputs;
    }

private:
    OnnxLoader loader_;
    OnnxModel model_;
};

}  // namespace polygraphy::testing
