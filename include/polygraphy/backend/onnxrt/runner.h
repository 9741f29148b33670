// OnnxrtRunner: runs ONNX models with ONNX-Runtime (`polygraphy run --onnxrt`).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnxrt/loader.h"

namespace polygraphy::onnxrt {

/// Runner over an ONNX-Runtime Session (name prefix "onnxrt-runner"). The session loader is called in
/// activate() (which is where a missing library or a refused model is reported) and the session
/// released in deactivate(). The inference time is the time spent in ONNX-Runtime's Run call.
/// Outputs are new tensors on every infer() (no buffer reuse), in the session's output order.
class OnnxrtRunner : public BaseRunner {
public:
    /// Runner over any session loader; `name` as in BaseRunner.
    explicit OnnxrtRunner(Loader<std::shared_ptr<Session>> session, std::optional<std::string> name = std::nullopt);
    /// Convenience: a runner over a loader like SessionFromOnnx(OnnxFromPath("m.onnx")).
    explicit OnnxrtRunner(const SessionFromOnnx& session, std::optional<std::string> name = std::nullopt);

protected:
    void activate_impl() override;
    void deactivate_impl() override;
    TensorMetadata get_input_metadata_impl() override;
    TensorMap infer_impl(const TensorMap& feed) override;

private:
    Loader<std::shared_ptr<Session>> session_loader_;
    std::shared_ptr<Session> session_;
};

}  // namespace polygraphy::onnxrt
