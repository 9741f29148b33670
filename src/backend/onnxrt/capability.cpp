// ONNX-Runtime's capability checker (see include/polygraphy/backend/onnxrt/capability.h).
#include "polygraphy/backend/onnxrt/capability.h"

#include "backend/onnx/messages.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

// ONNX-Runtime's messages name the node and its types; keep the reason only, so that nodes failing
// alike share a row of the summary (as Polygraphy's lint prunes them).
std::string prune_onnxrt_message(std::string message) {
    for (const char* noise : {"ONNX-Runtime could not create a session for the model: ", "This is an invalid model. "})
        if (const auto at = message.find(noise); at != std::string::npos) message.erase(at, std::string(noise).size());
    if (message.rfind("In Node, ", 0) == 0)
        if (const auto at = message.find(", Error "); at != std::string::npos) message = message.substr(at + 8);
    return message;
}

// Raises the logger to warnings while per-node sessions are built (unless the user asked for
// verbose output), so that a session per node does not log a line per node.
class QuietInfo {
public:
    QuietInfo() : previous_(logger().severity()) {
        if (previous_ == Severity::kInfo) logger().set_severity(Severity::kWarning);
    }
    ~QuietInfo() { logger().set_severity(previous_); }
    QuietInfo(const QuietInfo&) = delete;
    QuietInfo& operator=(const QuietInfo&) = delete;

private:
    Severity previous_;
};

}  // namespace

NodeChecker onnxrt_node_checker(std::vector<std::string> custom_op_libraries) {
    onnxrt::load_library();  // fails here, once, when ONNX-Runtime is not available
    onnxrt::SessionOptions options;
    options.custom_op_libraries = std::move(custom_op_libraries);
    // A library that cannot be loaded is one error for the command, not a verdict on every node.
    for (const std::string& library : options.custom_op_libraries) {
        onnxrt::SessionOptions one;
        one.custom_op_libraries = {library};
        onnx::ModelProto probe;
        probe.set_ir_version(8);
        probe.add_opset_import()->set_version(17);
        probe.mutable_graph()->set_name("probe");
        try {
            QuietInfo quiet;
            onnxrt::session_from_onnx(probe, one);
        } catch (const std::exception& error) {
            if (std::string(error.what()).find(library) != std::string::npos) throw;
        }
    }
    return [options](const onnx::ModelProto& model, const onnx::NodeProto& /*node*/) -> NodeVerdict {
        for (const auto& input : model.graph().input())
            if (!input.has_type())
                return {false, "Cannot be checked: the type of input '" + input.name() +
                                   "' is unknown (the model has no value_info for it; run shape inference first)"};
        try {
            QuietInfo quiet;
            onnxrt::session_from_onnx(model, options);
        } catch (const std::exception& error) {
            return {false, prune_onnxrt_message(failure_reason(error.what()))};
        }
        return {};
    };
}

}  // namespace polygraphy
