// The built-in runtime as the graph passes' evaluator (see include/polygraphy/backend/ref/evaluator.h).
#include "polygraphy/backend/ref/evaluator.h"

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
        static const std::vector<SupportedOp> ops = [] {
            std::vector<SupportedOp> list;
            for (const OpEntry& entry : OpRegistry::builtin().entries())
                list.push_back({entry.domain, entry.op_type, entry.since_version, entry.until_version});
            return list;
        }();
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
