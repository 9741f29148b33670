// OnnxrtRunner: BaseRunner over an ONNX-Runtime Session.
#include "polygraphy/backend/onnxrt/runner.h"

#include "polygraphy/common/exception.h"

namespace polygraphy::onnxrt {

OnnxrtRunner::OnnxrtRunner(Loader<std::shared_ptr<Session>> session, std::optional<std::string> name)
    : BaseRunner("onnxrt-runner", std::move(name)), session_loader_(std::move(session)) {
    if (!session_loader_) throw InternalError("OnnxrtRunner needs a session loader");
}

OnnxrtRunner::OnnxrtRunner(const SessionFromOnnx& session, std::optional<std::string> name)
    : OnnxrtRunner(Loader<std::shared_ptr<Session>>(session), std::move(name)) {}

void OnnxrtRunner::activate_impl() {
    session_ = session_loader_();
    if (!session_) throw InternalError("OnnxrtRunner: the session loader returned no session");
}

void OnnxrtRunner::deactivate_impl() { session_.reset(); }

TensorMetadata OnnxrtRunner::get_input_metadata_impl() { return session_->input_metadata(); }

TensorMap OnnxrtRunner::infer_impl(const TensorMap& feed) {
    double run_seconds = 0.0;
    TensorMap outputs = session_->run(feed, &run_seconds);
    set_inference_time(run_seconds);
    return outputs;
}

}  // namespace polygraphy::onnxrt
