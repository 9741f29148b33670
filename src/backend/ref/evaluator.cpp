// The built-in runtime as the graph passes' evaluator (see include/polygraphy/backend/ref/evaluator.h).
#include "polygraphy/backend/ref/evaluator.h"

#include <mutex>

#include "backend/ref/custom_kernel_registry.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy {
namespace ref {
namespace {

class PreparedSession final : public PreparedGraph {
public:
    PreparedSession(const onnx::ModelProto& model, const TensorMap& constants, int num_threads)
        : session_(model, SessionOptions{num_threads}, constants) {}
    TensorMap run(const TensorMap& feed) const override { return session_.run(feed); }

private:
    Session session_;
};

class RefGraphEvaluator final : public GraphEvaluator {
public:
    std::string name() const override { return "the built-in runtime"; }
    const std::vector<SupportedOp>& supported_ops() const override {
        // Built once with the kernels registered so far, and again when custom kernels were added since.
        static std::mutex mutex;
        static std::vector<SupportedOp> ops;
        static std::size_t custom_count = static_cast<std::size_t>(-1);
        std::lock_guard<std::mutex> lock(mutex);
        const std::vector<OpEntry> custom = custom_entries();
        if (custom.size() != custom_count) {
            ops.clear();
            for (const OpEntry& entry : OpRegistry::builtin().entries())
                ops.push_back({entry.domain, entry.op_type, entry.since_version, entry.until_version});
            for (const OpEntry& entry : custom)
                ops.push_back({entry.domain, entry.op_type, entry.since_version, entry.until_version});
            custom_count = custom.size();
        }
        return ops;
    }
    std::unique_ptr<PreparedGraph> prepare(const onnx::ModelProto& model, const TensorMap& constants,
                                           int num_threads) const override {
        return std::make_unique<PreparedSession>(model, constants, num_threads);
    }
};

constinit const RefGraphEvaluator kEvaluator{};

// Every pass that is given no evaluator runs on the built-in runtime (registered at load time;
// kEvaluator has no state to construct, so it is ready before any static initializer runs).
[[maybe_unused]] const bool kRegisteredAsDefault = (set_default_graph_evaluator(&kEvaluator), true);

}  // namespace

const GraphEvaluator& graph_evaluator() {
    return kEvaluator;
}

}  // namespace ref

NodeChecker ref_node_checker() {
    return evaluator_node_checker(ref::graph_evaluator());
}

}  // namespace polygraphy
