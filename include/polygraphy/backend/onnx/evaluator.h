// The seam between ONNX graph passes and the runtimes that compute values for them.
//
// Constant folding, the shape-inference fallback, lint's test inference and capability checks need
// to run (parts of) a graph. backend/onnx depends on no runtime: it asks a GraphEvaluator, which a
// runtime implements (the built-in runtime's is ref::graph_evaluator()). A pass takes the
// evaluator in its options; when none is given it uses default_graph_evaluator(), which the
// built-in runtime registers when the library is loaded.
//
// New passes that run models (say, a search for the layers to keep in float32, which runs variants
// of a model) use the same interface; a transformation that every pass must see (such as inlining
// local functions) belongs in the loader, before any of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// An operator a runtime can run, over a range of opsets of its domain.
struct SupportedOp {
    std::string domain;         ///< "" for ai.onnx
    std::string op_type;        ///< e.g. "Conv"
    int64_t since_version = 1;  ///< first opset covered
    int64_t until_version = 1;  ///< last opset covered (inclusive)
};

/// A model prepared by a GraphEvaluator, ready to run any number of times.
class PreparedGraph {
public:
    virtual ~PreparedGraph() = default;
    /// Runs the graph on `feed` (graph inputs by name); returns the graph outputs in graph order.
    /// Throws InputError for a missing input, ModelError naming the node for a failing node, and
    /// UnsupportedError for an output that is not a tensor. Safe to call from several threads.
    virtual TensorMap run(const TensorMap& feed) const = 0;
};

/// A runtime seen from the graph passes: which operators it runs, and running a model.
/// Implementations are stateless after construction and may be shared between threads.
class GraphEvaluator {
public:
    virtual ~GraphEvaluator() = default;

    /// How messages name the runtime, as a noun phrase: "the built-in runtime".
    virtual std::string name() const = 0;
    /// Every operator the runtime has a kernel for.
    virtual const std::vector<SupportedOp>& supported_ops() const = 0;
    /// Prepares `model` to run. `constants` are values the graph reads that it does not define
    /// (neither graph inputs nor initializers): the runtime treats them as initializers, so kernels
    /// may check and pre-pack them while preparing. `num_threads`: 0 for every core. Throws what the
    /// runtime cannot run (UnsupportedError naming every unsupported node, ModelError for a bad
    /// graph or attribute). `model` and `constants` may be destroyed afterwards.
    virtual std::unique_ptr<PreparedGraph> prepare(const onnx::ModelProto& model, const TensorMap& constants,
                                                   int num_threads) const = 0;

    /// Whether supported_ops() covers `op_type` of `domain` ("" or "ai.onnx" for ONNX) at `opset`.
    bool supports(std::string_view domain, std::string_view op_type, int64_t opset) const;
    /// Whether supported_ops() covers `op_type` of `domain` at some opset.
    bool supports_some_opset(std::string_view domain, std::string_view op_type) const;
};

/// Runs one node of `model` on `inputs` (one per node input, nullptr for omitted ones) with
/// `evaluator`: a one-node model with the model's opset imports, its inputs given as constants.
/// Returns one tensor per node output (undefined for omitted outputs). An unnamed node is called
/// `display_name` in error messages. Throws what prepare() and run() throw.
std::vector<Tensor> evaluate_node(const GraphEvaluator& evaluator, const onnx::ModelProto& model,
                                  const onnx::NodeProto& node, const std::string& display_name,
                                  const std::vector<const Tensor*>& inputs);

/// The evaluator passes use when they are given none. UnsupportedError when none is registered
/// (the built-in runtime registers itself when libpolygraphy is loaded).
const GraphEvaluator& default_graph_evaluator();
/// Makes `evaluator` the default (nullptr: none). It must outlive every use; not thread-safe
/// against passes running at the same time.
void set_default_graph_evaluator(const GraphEvaluator* evaluator);

}  // namespace polygraphy
