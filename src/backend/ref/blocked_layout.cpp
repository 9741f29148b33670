#include "backend/ref/blocked_layout.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/fused_ops.h"
#include "backend/ref/graph_constants.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref {
namespace {

// Operators that compute each output element from the input elements at the same index only, so
// they run unchanged on a blocked tensor. Cast is not here: a convolution reads float32 only.
constexpr std::string_view kUnaryElementwise[] = {"Relu", "LeakyRelu", "Clip", "Sigmoid",  "HardSigmoid", "HardSwish",
                                                  "Tanh", "Elu",       "Selu", "Softplus", "Gelu",        "Mish",
                                                  "Neg",  "Abs",       "Sqrt", "Exp",      "Erf",         "Identity"};
constexpr std::string_view kBinaryElementwise[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

bool one_of(const std::string& op, const auto& list) {
    return std::find(std::begin(list), std::end(list), op) != std::end(list);
}

/// Classes of tensors that must share a layout (union-find), the classes that must stay NCHW, those
/// whose channels the wide block does not divide, and those that an operator other than a Conv
/// reads or writes.
class LayoutClasses {
public:
    explicit LayoutClasses(int64_t widest_block) : widest_block_(widest_block) {}
    void join(const std::string& a, const std::string& b) {
        const int ra = root(id(a)), rb = root(id(b));
        if (ra == rb) return;
        parent_[ra] = rb;
        pinned_[rb] = pinned_[rb] || pinned_[ra];
        narrow_[rb] = narrow_[rb] || narrow_[ra];
        shared_[rb] = shared_[rb] || shared_[ra];
        channels_[rb] = merged_channels(channels_[rb], channels_[ra]);
    }
    void pin(const std::string& name) { pinned_[root(id(name))] = true; }
    /// Another operator than a Conv reads or writes `name`.
    void share(const std::string& name) { shared_[root(id(name))] = true; }
    /// A convolution reads or writes `name` with this many channels.
    void conv_channels(const std::string& name, int64_t channels) {
        const int r = root(id(name));
        if (channels % kNarrowChannelBlock != 0) pinned_[r] = true;
        if (channels % kWideChannelBlock != 0) narrow_[r] = true;
        channels_[r] = merged_channels(channels_[r], channels);
    }
    bool blocked(const std::string& name) const { return block(name) != 0; }
    /// The channel block `name` is held in (0: as the graph declares it).
    int64_t block(const std::string& name) const {
        const auto found = ids_.find(name);
        if (found == ids_.end()) return 0;
        const int r = root(found->second);
        if (pinned_[r]) return 0;
        // Only convolutions, all of one channel count, meet a class whose last block is padded:
        // oneDNN pads it (zero weights over the padding), and no other kernel sees it.
        const bool padded_wide = !shared_[r] && channels_[r] > 0;
        return narrow_[r] && !padded_wide ? kNarrowChannelBlock : widest_block_;
    }
    const std::unordered_map<std::string, int>& members() const { return ids_; }

private:
    int id(const std::string& name) {
        const auto [found, inserted] = ids_.emplace(name, static_cast<int>(parent_.size()));
        if (inserted) {
            parent_.push_back(found->second);
            pinned_.push_back(false);
            narrow_.push_back(false);
            shared_.push_back(false);
            channels_.push_back(0);
        }
        return found->second;
    }
    int root(int i) const {
        while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
        return i;
    }
    std::unordered_map<std::string, int> ids_;
    mutable std::vector<int> parent_;  // path halving in root() keeps lookups short
    std::vector<bool> pinned_;
    std::vector<bool> narrow_;
    std::vector<bool> shared_;
    std::vector<int64_t> channels_;  // the one channel count convolutions see; 0: none yet, -1: several
    int64_t widest_block_;

    static int64_t merged_channels(int64_t a, int64_t b) { return a == 0 ? b : b == 0 || a == b ? a : -1; }
};

struct ConvChannels {
    int64_t in = 0;
    int64_t out = 0;
};

/// The convolutions it takes: Conv, the runtime's FusedConv (fused_ops.h), and ONNX Runtime's
/// FusedConv with an activation the runtime's applies as it stores the output.
bool is_convolution(const onnx::NodeProto& node) {
    if (node.op_type() == "Conv") return is_default_domain(node.domain());
    if (node.op_type() != "FusedConv") return false;
    if (node.domain() == kRuntimeDomain) return true;
    const auto* activation = find_attr(node, kActivationAttr);
    return node.domain() == kMicrosoftDomain && (!activation || activation->s() == "Relu" || activation->s() == "Clip");
}

/// The channels of a Conv the blocked kernels run: 2-D, float32 constant weight, group 1 or
/// depthwise (one input and one output channel per group), no negative pads (oneDNN refuses them).
std::optional<ConvChannels> blockable_conv(const onnx::NodeProto& node, const GraphConstants& constants) {
    if (!is_convolution(node) || node.input_size() < 2 || node.output_size() != 1 || node.input(0).empty() ||
        node.output(0).empty())
        return std::nullopt;
    const auto weight = constants.type_and_dims(node.input(1));
    if (!weight || weight->first != onnx::TensorProto::FLOAT || weight->second.size() != 4) return std::nullopt;
    if (node.input_size() >= 3 && !node.input(2).empty()) {
        const auto bias = constants.type_and_dims(node.input(2));
        if (!bias || bias->first != onnx::TensorProto::FLOAT) return std::nullopt;
    }
    if (const auto* pads = find_attr(node, "pads"))
        if (std::any_of(pads->ints().begin(), pads->ints().end(), [](int64_t v) { return v < 0; })) return std::nullopt;
    const auto* group_attr = find_attr(node, "group");
    const int64_t group = group_attr ? group_attr->i() : 1;
    const ConvChannels channels{weight->second[1] * group, weight->second[0]};
    if (group != 1 && !(weight->second[1] == 1 && group == channels.out)) return std::nullopt;
    return channels;
}

/// GlobalAveragePool, and a 2-D MaxPool without its Indices output: their kernels take a blocked
/// input and give a blocked output (GlobalAveragePool also a plain one, see below).
bool is_blockable_pool(const onnx::NodeProto& node) {
    if (node.input_size() != 1 || node.output_size() != 1) return false;
    if (node.op_type() == "GlobalAveragePool") return true;
    const auto* kernel = find_attr(node, "kernel_shape");
    return node.op_type() == "MaxPool" && kernel && kernel->ints_size() == 2;
}

}  // namespace

std::vector<std::string> choose_blocked_layouts(std::vector<onnx::NodeProto>& nodes,
                                                const std::vector<std::vector<std::string>>& node_inputs,
                                                const onnx::GraphProto& graph, int64_t widest_block) {
    if (widest_block != kNarrowChannelBlock && widest_block != kWideChannelBlock)
        throw InternalError(
            fmt::format("channel block {} is neither {} nor {}", widest_block, kNarrowChannelBlock, kWideChannelBlock));
    const GraphConstants constants(graph, nodes);
    LayoutClasses classes(widest_block);
    std::unordered_map<std::string, int> producers;  // made by a node that keeps or sets the layout
    auto produced_here = [&](const std::string& name) { ++producers[name]; };
    auto pin_all = [&](std::size_t i) {
        for (const auto& name : node_inputs[i])
            if (!name.empty()) classes.pin(name);
        for (const auto& name : nodes[i].output())
            if (!name.empty()) classes.pin(name);
    };
    // A constant operand keeps the layout question away from the other operands only when it is a
    // scalar: anything else broadcasts over the NCHW dims.
    auto is_scalar_constant = [&](const std::string& name) {
        const auto found = constants.type_and_dims(name);
        if (!found) return false;
        const auto& dims = found->second;
        return dims.size() <= 4 && std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>()) == 1;
    };

    std::vector<std::optional<ConvChannels>> convs(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const onnx::NodeProto& node = nodes[i];
        const std::string& op = node.op_type();
        const bool declared_only = node_inputs[i].size() == static_cast<std::size_t>(node.input_size());
        // An ai.onnx node with a data input and one output, and no subgraph reading anything.
        const bool simple_node = is_default_domain(node.domain()) && declared_only && node.output_size() == 1 &&
                                 !node.output(0).empty() && node.input_size() >= 1 && !node.input(0).empty();
        if ((convs[i] = blockable_conv(node, constants)) && declared_only) {
            const std::string& y = node.output(0);
            classes.conv_channels(node.input(0), convs[i]->in);
            classes.conv_channels(y, convs[i]->out);
            produced_here(y);
            if (node.input_size() == 4 && !node.input(3).empty()) classes.join(node.input(3), y);  // a residual
            continue;
        }
        convs[i].reset();
        const bool unary = simple_node && one_of(op, kUnaryElementwise);
        const bool binary = simple_node && one_of(op, kBinaryElementwise) && node.input_size() == 2;
        const bool pool = simple_node && is_blockable_pool(node);
        // Concat along the channels of block multiples: whole blocks, in order.
        const auto* axis = find_attr(node, "axis");
        const bool concat = simple_node && op == "Concat" && axis && axis->i() == 1;
        if (!unary && !binary && !pool && !concat) {
            pin_all(i);
            continue;
        }
        const std::string& y = node.output(0);
        classes.share(y);
        produced_here(y);
        // GlobalAveragePool's [N, C, 1, 1] output has the bytes of its blocked forms [N, C/B, 1, 1, B],
        // so its input can stay blocked when the output's readers (Flatten, Gemm) want NCHW; only a
        // plain input makes the output plain (below).
        if (op == "GlobalAveragePool") {
            classes.share(node.input(0));
            continue;
        }
        for (int k = 0; k < node.input_size(); ++k) {
            const std::string& operand = node.input(k);
            if (operand.empty() || ((k > 0 || binary) && is_scalar_constant(operand))) continue;
            if (k == 0 || binary || concat)
                classes.join(operand, y);
            else
                classes.pin(y);  // a bound of Clip that is computed: leave the node as written
        }
    }
    // Whatever the nodes above do not make (graph inputs, initializers, outer values, a name made
    // twice) and the graph outputs keep the layout the graph declares.
    for (const auto& [name, id] : classes.members()) {
        const auto found = producers.find(name);
        if (found == producers.end() || found->second != 1) classes.pin(name);
    }
    for (const auto& output : graph.output()) classes.pin(output.name());
    // A plain input gives GlobalAveragePool a plain output. Pinning an output class can make another
    // pool's input plain, so repeat until nothing changes.
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            const onnx::NodeProto& node = nodes[i];
            if (convs[i] || !is_default_domain(node.domain()) || node.op_type() != "GlobalAveragePool" ||
                !classes.members().contains(node.output(0)))
                continue;
            if (!classes.blocked(node.input(0)) && classes.blocked(node.output(0))) {
                classes.pin(node.output(0));
                changed = true;
            }
        }
    }
    std::vector<std::string> blocked;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        onnx::NodeProto& node = nodes[i];
        const bool pool = !convs[i] && is_default_domain(node.domain()) && is_blockable_pool(node);
        if (convs[i] || pool) {
            // MaxPool's output has its input's block; GlobalAveragePool's is blocked only after a
            // blocked input (the loop above).
            const int64_t in = classes.block(node.input(0)), out = classes.block(node.output(0));
            const bool output_blocked = out != 0 && (convs[i] || node.op_type() == "GlobalAveragePool");
            if (in != 0 || output_blocked) {
                // The runtime's own operator of that layout (a pool's input is blocked when its output is).
                set_operator(node, kRuntimeDomain, convs[i] ? "FusedConv" : "Blocked" + node.op_type());
                if (in != 0) set_int_attr(node, kBlockedInputAttr, in);
                if (output_blocked) set_int_attr(node, kBlockedOutputAttr, out);
            }
        }
        for (const auto& output : node.output())
            if (!output.empty() && classes.blocked(output)) blocked.push_back(output);
    }
    return blocked;
}

}  // namespace polygraphy::ref
