// The registry of custom kernels (include/polygraphy/backend/ref/custom_kernel.h) and their adapter to
// the runtime's Kernel interface.
#include "polygraphy/backend/ref/custom_kernel.h"

#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/custom_kernel_registry.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref {
namespace {

/// A CustomNode over the NodeInfo of the node being computed.
class NodeView final : public CustomNode {
public:
    explicit NodeView(const NodeInfo& node) : node_(node) {}

    const std::string& name() const override { return node_.name(); }
    const std::string& op_type() const override { return node_.op_type(); }
    int64_t opset() const override { return node_.opset(); }
    bool has_attr(const std::string& name) const override { return node_.has_attr(name); }
    int64_t attr_int(const std::string& name, int64_t fallback) const override {
        return node_.attr_int(name, fallback);
    }
    float attr_float(const std::string& name, float fallback) const override {
        return node_.attr_float(name, fallback);
    }
    std::string attr_string(const std::string& name, const std::string& fallback) const override {
        return node_.attr_string(name, fallback);
    }
    std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const override {
        return node_.attr_ints(name, std::move(fallback));
    }
    std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback) const override {
        return node_.attr_floats(name, std::move(fallback));
    }
    [[noreturn]] void fail(const std::string& message) const override { node_.fail(message); }

private:
    const NodeInfo& node_;
};

class CustomKernelAdapter final : public Kernel {
public:
    explicit CustomKernelAdapter(CustomKernelFn compute) : compute_(std::move(compute)) {}

    void compute(KernelContext& context) const override {
        std::vector<const Tensor*> inputs;
        for (std::size_t i = 0; i < context.num_inputs(); ++i) {
            const Tensor* input = context.input(i);
            inputs.push_back(input != nullptr && input->defined() ? input : nullptr);
        }
        const NodeView node(context.node());
        std::vector<Tensor> outputs = compute_(node, inputs);
        if (outputs.size() != context.num_outputs())
            node.fail(fmt::format("its custom kernel returned {} outputs, but the node has {}", outputs.size(),
                                  context.num_outputs()));
        for (std::size_t i = 0; i < outputs.size(); ++i) context.set_output(i, std::move(outputs[i]));
    }

private:
    CustomKernelFn compute_;
};

struct Registry {
    std::mutex mutex;
    std::vector<CustomKernel> kernels;
    std::deque<OpEntry> entries;  // a deque: find_kernel's pointers stay valid as kernels are added
};

Registry& registry() {
    static Registry instance;
    return instance;
}

}  // namespace

std::optional<std::string> custom_kernel_problem(const CustomKernel& kernel) {
    const std::string what = fmt::format("custom kernel {} (domain '{}')", kernel.op_type, kernel.domain);
    if (!kernel.compute) return what + " has no compute function";
    if (kernel.op_type.empty())
        return fmt::format("a custom kernel of domain '{}' has no operator type", kernel.domain);
    if (kernel.since_version < 1) return fmt::format("{} starts at opset {}", what, kernel.since_version);
    if (kernel.min_inputs < 0 || kernel.max_inputs < kernel.min_inputs || kernel.min_outputs < 1 ||
        kernel.max_outputs < kernel.min_outputs)
        return fmt::format("{} declares {} to {} inputs and {} to {} outputs", what, kernel.min_inputs,
                           kernel.max_inputs, kernel.min_outputs, kernel.max_outputs);
    const std::string domain(canonical_domain(kernel.domain));
    std::set<std::string> builtin_domains = {"", "ai.onnx.ml", "ai.onnx.preview.training"};
    for (const OpEntry& entry : OpRegistry::builtin().entries()) builtin_domains.insert(entry.domain);
    if (builtin_domains.count(domain) != 0)
        return fmt::format("{}: '{}' is a domain of the built-in runtime; custom kernels take a domain of their own",
                           what, display_domain(domain));
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    for (const CustomKernel& existing : state.kernels)
        if (canonical_domain(existing.domain) == domain && existing.op_type == kernel.op_type)
            return what + " is already registered";
    return std::nullopt;
}

void register_custom_kernel(CustomKernel kernel) {
    if (auto problem = custom_kernel_problem(kernel)) throw UsageError(*problem);
    const std::string domain(canonical_domain(kernel.domain));
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    declare_operator_signature(
        domain, kernel.op_type, kernel.since_version,
        OperatorSignature{kernel.min_inputs, kernel.max_inputs, kernel.min_outputs, kernel.max_outputs, {}, {}});
    state.entries.push_back(OpEntry{domain, kernel.op_type, kernel.since_version, std::numeric_limits<int>::max(),
                                    [compute = kernel.compute](const NodeInfo&) -> std::unique_ptr<Kernel> {
                                        return std::make_unique<CustomKernelAdapter>(compute);
                                    }});
    state.kernels.push_back(std::move(kernel));
}

std::vector<CustomKernel> custom_kernels() {
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    return state.kernels;
}

const OpEntry* find_kernel(std::string_view domain, std::string_view op_type, int64_t opset) {
    if (const OpEntry* builtin = OpRegistry::builtin().find(domain, op_type, opset)) return builtin;
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    domain = canonical_domain(domain);
    for (const OpEntry& entry : state.entries)
        if (entry.domain == domain && entry.op_type == op_type && entry.since_version <= opset &&
            opset <= entry.until_version)
            return &entry;
    return nullptr;
}

std::vector<OpEntry> custom_entries() {
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    return {state.entries.begin(), state.entries.end()};
}

}  // namespace polygraphy::ref
