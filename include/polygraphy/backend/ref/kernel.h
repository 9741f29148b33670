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

/// A value flowing through a graph: a tensor, a sequence of tensors, or an empty optional. An
/// optional that holds an element is represented by the element itself (ONNX optionals only matter
/// to OptionalHasElement/OptionalGetElement, which treat any other value as present). Copies are
/// shallow, like Tensor's.
class Value {
public:
    /// What the value holds.
    enum class Kind : uint8_t { kUndefined, kTensor, kSequence, kEmptyOptional };

    Value() = default;
    /// A tensor value (undefined when the tensor is).
    Value(Tensor tensor)  // NOLINT: implicit on purpose, a tensor is a value
        : kind_(tensor.defined() ? Kind::kTensor : Kind::kUndefined), tensor_(std::move(tensor)) {}
    /// A sequence; `element_type` is kept so that empty sequences still know their type.
    static Value sequence(DataType element_type, std::vector<Tensor> elements);
    /// An optional without an element.
    static Value empty_optional();

    /// What the value holds.
    Kind kind() const { return kind_; }
    /// False only for a default-constructed value.
    bool defined() const { return kind_ != Kind::kUndefined; }
    /// Whether it holds a tensor.
    bool is_tensor() const { return kind_ == Kind::kTensor; }
    /// Whether it holds a sequence.
    bool is_sequence() const { return kind_ == Kind::kSequence; }
    /// Whether it is an optional without an element.
    bool is_empty_optional() const { return kind_ == Kind::kEmptyOptional; }
    /// The tensor (an undefined Tensor when the value is not a tensor).
    const Tensor& tensor() const { return tensor_; }
    /// Elements of a sequence; throws InternalError for other kinds.
    const std::vector<Tensor>& elements() const;
    /// A sequence's element type (kUndefined for other kinds).
    DataType element_type() const { return element_type_; }
    /// "tensor", "sequence", "empty optional" or "undefined" (for messages).
    const char* kind_name() const;

private:
    Kind kind_ = Kind::kUndefined;
    Tensor tensor_;
    std::shared_ptr<const std::vector<Tensor>> elements_;
    DataType element_type_ = DataType::kUndefined;
};

class KernelContext;

/// A graph attribute (If branches, Loop/Scan bodies, SequenceMap body) prepared by the session as a
/// nested session. Names it does not define resolve to the enclosing graphs' values, which the
/// session passes to the node as implicit inputs (KernelContext::outer_value).
class Subgraph {
public:
    virtual ~Subgraph() = default;
    /// The subgraph's formal inputs, in order.
    virtual const std::vector<std::string>& input_names() const = 0;
    /// The subgraph's outputs, in order.
    virtual const std::vector<std::string>& output_names() const = 0;
    /// Runs with `inputs` bound to the subgraph inputs in order; returns the outputs in order.
    /// Throws ModelError on a wrong input count or a missing outer-scope value.
    virtual std::vector<Value> run(const std::vector<Value>& inputs, const KernelContext& context) const = 0;
};

/// Prepares a subgraph (the session supplies one; see NodeInfo::subgraph).
using SubgraphBuilder = std::function<std::unique_ptr<Subgraph>(const onnx::GraphProto&)>;

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

    /// Prepares graph attribute `name` as a nested session. Fails naming the node when the
    /// attribute is absent, not a graph, or when no session supplied a builder.
    std::unique_ptr<Subgraph> subgraph(std::string_view name) const;
    /// Set by the session that owns the node, so that kernels can prepare their subgraphs.
    void set_subgraph_builder(SubgraphBuilder builder) { subgraph_builder_ = std::move(builder); }

private:
    const onnx::NodeProto& node_;
    int64_t opset_;
    std::string display_name_;
    std::vector<const Tensor*> constant_inputs_;
    SubgraphBuilder subgraph_builder_;
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
    /// Allocates (zero-filled) and returns output `index`: the offered_output() when it has this dtype
    /// and shape.
    Tensor& allocate_output(std::size_t index, DataType dtype, Shape shape);
    /// Like allocate_output but the numeric buffer is left uninitialized (Tensor::uninitialized): for
    /// kernels that write every element, saving a pass over the output's memory.
    Tensor& allocate_uninitialized_output(std::size_t index, DataType dtype, Shape shape);
    /// A buffer for output `index` that the kernel fills before set_output(): the offered_output()
    /// when it has this dtype and shape, else a new uninitialized tensor.
    Tensor output_buffer(std::size_t index, DataType dtype, const Shape& shape) const;
    /// Where the session would like output `index` written (a slice of a Concat's output, or that
    /// output itself, see Session), or nullptr. Kernels may ignore it; it aliases none of the inputs.
    const Tensor* offered_output(std::size_t index) const {
        return index < offered_.size() && offered_[index].defined() ? &offered_[index] : nullptr;
    }
    /// Sets output `index` to `tensor` (may share an input's buffer: kernels never write to inputs,
    /// except one donated_input() returned).
    void set_output(std::size_t index, Tensor tensor);
    /// Input `index` when the kernel may write its output into that input's buffer: the session reads
    /// it for the last time here and nothing else holds the buffer. nullptr otherwise.
    const Tensor* donated_input(std::size_t index) const {
        return donatable_ && index < donatable_->size() && (*donatable_)[index] && inputs_[index] &&
                       inputs_[index]->buffer_unshared()
                   ? inputs_[index]
                   : nullptr;
    }
    /// Output `index` (undefined until set or allocated).
    Tensor& output(std::size_t index) { return outputs_.at(index); }
    /// Every output, in node order.
    std::vector<Tensor>& outputs() { return outputs_; }

    /// Threads the kernel may use (the runner's --ref-threads).
    int num_threads() const { return num_threads_; }

    /// Input `index` as a Value (sequences and empty optionals included); undefined when omitted.
    Value input_value(std::size_t index) const;
    /// Sets output `index` to any value (tensors go to output(index)).
    void set_output_value(std::size_t index, Value value);
    /// Output `index` as a Value: what set_output_value stored, else the tensor output.
    Value take_output_value(std::size_t index);

    /// Session use: the full values of the inputs (same order as the tensor inputs, then the
    /// implicit outer-scope inputs named by `outer_names`).
    void attach_values(const std::vector<const Value*>* values, const std::vector<std::string>* outer_names) {
        values_ = values;
        outer_names_ = outer_names;
    }
    /// Session use: per input, whether this node is its last reader in the graph (donated_input()).
    void attach_donatable(const std::vector<bool>* donatable) { donatable_ = donatable; }
    /// Session use: offers `buffer` for output `index` (offered_output()).
    void offer_output(std::size_t index, Tensor buffer);
    /// Value of an enclosing graph's `name` that the node's subgraphs read; nullptr when unknown.
    const Value* outer_value(const std::string& name) const;

private:
    const NodeInfo& node_;
    std::vector<const Tensor*> inputs_;
    std::vector<Tensor> outputs_;
    int num_threads_;
    const std::vector<const Value*>* values_ = nullptr;
    const std::vector<bool>* donatable_ = nullptr;
    const std::vector<std::string>* outer_names_ = nullptr;
    std::vector<Value> value_outputs_;  // non-tensor outputs, sized on first use
    std::vector<Tensor> offered_;       // by output, sized on first offer
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
