// Stand-ins used when polygraphy was configured without the ONNX-Runtime C API header: every entry
// point reports how to enable the backend. Everything else in polygraphy works as usual.
#if !POLYGRAPHY_HAVE_ONNXRUNTIME

#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::onnxrt {
namespace {

[[noreturn]] void not_built() {
    throw UnsupportedError(
        "This polygraphy was built without ONNX-Runtime support. Run scripts/setup_onnxruntime.sh, then re-run "
        "cmake and rebuild");
}

}  // namespace

struct Session::Impl {};

bool built_with_onnxruntime() { return false; }
const LibraryInfo& load_library() { not_built(); }
LibraryInfo probe_library() { not_built(); }
std::vector<std::string> library_search_paths() { return {}; }
bool is_available(std::string* reason) {
    try {
        not_built();
    } catch (const std::exception& error) {
        if (reason) *reason = error.what();
    }
    return false;
}
std::vector<std::string> available_providers() { not_built(); }

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
const TensorMetadata& Session::input_metadata() const { not_built(); }
const TensorMetadata& Session::output_metadata() const { not_built(); }
const std::vector<std::string>& Session::providers() const { not_built(); }
TensorMap Session::run(const TensorMap&, double*) const { not_built(); }

std::shared_ptr<Session> SessionFromOnnx::operator()() const { not_built(); }
std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto&, const SessionOptions&) { not_built(); }
std::shared_ptr<Session> session_from_path(const std::string&, const SessionOptions&) { not_built(); }

}  // namespace polygraphy::onnxrt

#endif  // !POLYGRAPHY_HAVE_ONNXRUNTIME
