// Kernels that programs and extension modules add to the built-in runtime for operators of their own
// domains, so that a custom operator runs on `--ref` as well as on ONNX Runtime (with its custom-op
// library) and the two can be compared. The interface is narrow on purpose and versioned on its own:
// a compute function from tensors to tensors that reads its node's attributes; the runtime's
// internal kernel classes stay private.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "polygraphy/common/tensor.h"

/// Version of this interface (CustomNode, CustomKernel, register_custom_kernel).
#define POLYGRAPHY_CUSTOM_KERNEL_API_VERSION 1

namespace polygraphy::ref {

/// The node a custom kernel computes, as the kernel may read it.
class CustomNode {
public:
    virtual ~CustomNode() = default;
    /// The node's name ("<op_type>_<index>" when it has none).
    virtual const std::string& name() const = 0;
    /// The node's operator type.
    virtual const std::string& op_type() const = 0;
    /// The opset of the node's domain that the model imports.
    virtual int64_t opset() const = 0;
    /// Whether the node sets attribute `name`.
    virtual bool has_attr(const std::string& name) const = 0;
    /// Attribute `name`, or `fallback` when absent; ModelError naming the node for another type.
    /// @{
    virtual int64_t attr_int(const std::string& name, int64_t fallback) const = 0;
    virtual float attr_float(const std::string& name, float fallback) const = 0;
    virtual std::string attr_string(const std::string& name, const std::string& fallback) const = 0;
    virtual std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const = 0;
    virtual std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback) const = 0;
    /// @}
    /// Throws the ModelError that `polygraphy` prints as one line: "Node '<name>' (<op_type>): <message>".
    [[noreturn]] virtual void fail(const std::string& message) const = 0;
};

/// Computes a node's outputs from its inputs (nullptr for an omitted optional input), one tensor per
/// output the node declares. Called concurrently when sessions run in parallel, so it must be
/// thread-safe; it may throw (ModelError through CustomNode::fail for bad inputs).
using CustomKernelFn =
    std::function<std::vector<Tensor>(const CustomNode& node, const std::vector<const Tensor*>& inputs)>;

/// One operator of a custom domain.
struct CustomKernel {
    std::string domain;      ///< a domain of the extension's own ("my.ops"); not the ONNX or built-in ones
    std::string op_type;     ///< the operator type
    int since_version = 1;   ///< the first opset of `domain` the kernel covers (it covers every later one)
    int min_inputs = 1;      ///< inputs a node must have (checked when a model is loaded)
    int max_inputs = 1;      ///< inputs a node may have
    int min_outputs = 1;     ///< outputs a node must have
    int max_outputs = 1;     ///< outputs a node may have
    CustomKernelFn compute;  ///< the computation
};

/// Adds `kernel` to the built-in runtime for every session created afterwards, and declares its
/// inputs and outputs to the node check. Throws UsageError for an empty compute function, an
/// impossible arity, the default or a built-in domain, or an operator already registered. Thread-safe.
void register_custom_kernel(CustomKernel kernel);

/// The custom kernels registered so far, in registration order.
std::vector<CustomKernel> custom_kernels();

}  // namespace polygraphy::ref
