// The kernel interface of the built-in CPU runtime (`--ref`) and its operator registry.
//
// Adding an operator: write a Kernel subclass in the family file src/backend/ref/ops/<family>.cpp,
// add one `registry.add(...)` line to that file's register_<family>_ops(), and a test case in
// tests/backend/ref/ops/<family>_test.cpp. Kernels validate attributes in their constructor (the
// factory), so a bad model fails when the session is prepared, not halfway through inference.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::ref {

/// What a kernel factory knows about its node: the proto, the opset of its domain, a display name.
class NodeInfo {
public:
    /// `node` must outlive this object; `constant_inputs` as constant_input() returns them.
    NodeInfo(const onnx::NodeProto& node, int64_t opset, std::string display_name,
             std::vector<const Tensor*> constant_inputs = {})
        : node_(node),
          opset_(opset),
          display_name_(std::move(display_name)),
          constant_inputs_(std::move(constant_inputs)) {}

    /// The node itself.
    const onnx::NodeProto& proto() const { return node_; }
    /// The node's operator type ("Conv").
    const std::string& op_type() const { return node_.op_type(); }
    /// Opset version of the node's domain imported by the model.
    int64_t opset() const { return opset_; }
    /// The node's name, or "<op_type>_<index>" when it has none.
    const std::string& name() const { return display_name_; }

    /// Whether the node sets attribute `name`.
    bool has_attr(std::string_view name) const;
    /// Attribute `name` of the given type, or `fallback` when absent; ModelError for another type.
    /// @{
    int64_t attr_int(std::string_view name, int64_t fallback) const;
    float attr_float(std::string_view name, float fallback) const;
    std::string attr_string(std::string_view name, const std::string& fallback) const;
    std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
    std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
    /// @}
    /// Tensor attribute (e.g. Constant's value) converted to a Tensor; nullopt when absent.
    std::optional<Tensor> attr_tensor(std::string_view name) const;
    /// The attribute `name`, or nullptr.
    const onnx::AttributeProto* attr(std::string_view name) const;

    /// Value of input `index` when it is known before inference (an initializer or a Constant
    /// node's output), else nullptr. Lets kernels validate or pre-pack weights at creation.
    const Tensor* constant_input(std::size_t index) const {
        return index < constant_inputs_.size() ? constant_inputs_[index] : nullptr;
    }

    /// Throws ModelError: "Node '<name>' (<op_type>): <message>".
    [[noreturn]] void fail(const std::string& message) const;

private:
    const onnx::NodeProto& node_;
    int64_t opset_;
    std::string display_name_;
    std::vector<const Tensor*> constant_inputs_;
};

/// Inputs and outputs of one kernel invocation.
class KernelContext {
public:
    /// `inputs` in node order (nullptr for omitted ones); outputs start undefined.
    KernelContext(const NodeInfo& node, std::vector<const Tensor*> inputs, std::size_t num_outputs, int num_threads)
        : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), num_threads_(num_threads) {}

    /// The node being computed.
    const NodeInfo& node() const { return node_; }
    /// Number of inputs of the node, omitted ones included.
    std::size_t num_inputs() const { return inputs_.size(); }
    /// nullptr when the input is omitted ("" in the node) or beyond the node's input count.
    const Tensor* input(std::size_t index) const { return index < inputs_.size() ? inputs_[index] : nullptr; }
    /// Throws ModelError naming the node when the input is missing.
    const Tensor& required_input(std::size_t index) const;

    /// Number of outputs the node declares.
    std::size_t num_outputs() const { return outputs_.size(); }
    /// Allocates (zero-filled) and returns output `index`.
    Tensor& allocate_output(std::size_t index, DataType dtype, Shape shape);
    /// Sets output `index` to `tensor` (may share an input's buffer: kernels never write to inputs).
    void set_output(std::size_t index, Tensor tensor);
    /// Output `index` (undefined until set or allocated).
    Tensor& output(std::size_t index) { return outputs_.at(index); }
    /// Every output, in node order.
    std::vector<Tensor>& outputs() { return outputs_; }

    /// Threads the kernel may use (the runner's --ref-threads).
    int num_threads() const { return num_threads_; }

private:
    const NodeInfo& node_;
    std::vector<const Tensor*> inputs_;
    std::vector<Tensor> outputs_;
    int num_threads_;
};

/// A prepared operator. compute() is const: all per-node state is fixed at construction.
class Kernel {
public:
    virtual ~Kernel() = default;
    /// Computes the outputs of `context` from its inputs; ModelError (through NodeInfo::fail) for bad inputs.
    virtual void compute(KernelContext& context) const = 0;
};

/// Creates the prepared kernel of a node.
using KernelFactory = std::function<std::unique_ptr<Kernel>(const NodeInfo&)>;

/// One operator implementation of the registry, for a range of opsets.
struct OpEntry {
    std::string domain;     ///< "" for ai.onnx
    /// Operator type, e.g. "Conv".
    std::string op_type;
    int since_version;      ///< first opset this entry covers
    int until_version;      ///< last opset this entry covers (inclusive)
    /// Creates the kernel of one node (may validate attributes and pre-pack weights).
    KernelFactory factory;
};

/// The single table of operators the runtime can run.
class OpRegistry {
public:
    /// Throws InternalError on a duplicate or overlapping (domain, op_type, opset range).
    void add(std::string domain, std::string op_type, int since_version, int until_version, KernelFactory factory);
    /// Entry covering `opset`, or nullptr. "ai.onnx" is treated as "".
    const OpEntry* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
    /// Every entry, in registration order.
    const std::vector<OpEntry>& entries() const { return entries_; }

    /// Registry with every built-in family (see src/backend/ref/ops/families.h).
    static const OpRegistry& builtin();

private:
    std::vector<OpEntry> entries_;
};

/// Newest opset the registry is meant to cover.
constexpr int kMaxOpset = 22;

/// Helper for the common case: a factory that constructs `K(node)`.
template <typename K>
KernelFactory make_factory() {
    return [](const NodeInfo& node) -> std::unique_ptr<Kernel> { return std::make_unique<K>(node); };
}

}  // namespace polygraphy::ref
