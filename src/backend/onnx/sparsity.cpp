#include "polygraphy/backend/onnx/sparsity.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/ordered_map.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace {

std::string dims_str(const onnx::TensorProto& tensor) {
    std::string out = "[";
    for (int i = 0; i < tensor.dims_size(); ++i) out += (i ? ", " : "") + std::to_string(tensor.dims(i));
    return out + "]";
}

// Walks back from the tensors that MatMul/Gemm/Conv read as weights to the initializers holding them.
class CandidateFinder {
public:
    explicit CandidateFinder(const onnx::GraphProto& graph) : graph_(graph) {
        for (const auto& initializer : graph.initializer()) initializers_.emplace(initializer.name(), &initializer);
        for (const auto& node : graph.node())
            for (const auto& output : node.output()) producers_[output] = &node;
    }

    // name -> axis, in the order each initializer was first reached.
    OrderedMap<int64_t> walk() {
        logger().verbose("Walking graph to collect weights candidates.");
        const int count = graph_.node_size();
        for (int i = 0; i < count; ++i) {
            const onnx::NodeProto& node = graph_.node(i);
            logger().super_verbose(
                fmt::format("Processing node {}/{} ({}): {}", i, count, node.op_type(), node.name()));
            const auto input = [&](int index) { return index < node.input_size() ? node.input(index) : std::string(); };
            if (node.op_type() == "MatMul") {
                track(input(0), 1);
                track(input(1), 0);
            } else if (node.op_type() == "Gemm") {
                bool trans_a = false, trans_b = false;
                for (const auto& attribute : node.attribute()) {
                    if (attribute.name() == "transA") trans_a = attribute.i() == 1;
                    if (attribute.name() == "transB") trans_b = attribute.i() == 1;
                }
                track(input(0), trans_a ? 0 : 1);
                track(input(1), trans_b ? 1 : 0);
            } else if (node.op_type() == "Conv") {
                track(input(1), 1);
            }
        }
        logger().verbose(fmt::format("Collected {} weights candidates.", found_.size()));
        return std::move(found_);
    }

    const onnx::TensorProto& initializer(const std::string& name) const { return *initializers_.at(name); }

private:
    void track(const std::string& name, int64_t axis) {
        if (name.empty()) return;
        if (initializers_.contains(name)) {
            logger().super_verbose(fmt::format("Tracking weight: ({})", name));
            found_.set(name, axis);
            return;
        }
        const auto producer = producers_.find(name);
        if (producer == producers_.end()) return;
        const onnx::NodeProto& node = *producer->second;
        const std::string& op = node.op_type();
        static const std::set<std::string> kAxisInsensitive = {
            "QuantizeLinear", "DequantizeLinear", "TRT_FP8QuantizeLinear", "TRT_FP8DequantizeLinear", "Cast"};
        static const std::set<std::string> kStop = {"LayerNormalization", "Reshape", "Concat", "Slice", "Shape",
                                                    "Unsqueeze",          "Gather",  "Mul",    "Add"};
        if (kAxisInsensitive.contains(op)) {
            logger().ultra_verbose(fmt::format("({}) is produced by {}, looking back", name, op));
            if (node.input_size() > 0) track(node.input(0), axis);
        } else if (op == "Transpose") {
            logger().ultra_verbose(fmt::format("({}) is produced by {}, checking attributes", name, op));
            for (const auto& attribute : node.attribute()) {
                if (attribute.name() != "perm") continue;
                const auto& perm = attribute.ints();
                const auto position = std::find(perm.begin(), perm.end(), axis);
                if (position == perm.end()) {
                    logger().warning(fmt::format("({}) produced by {}: axis {} is not in its <perm> attribute!", name,
                                                 node.name(), axis));
                    return;
                }
                const int64_t new_axis = position - perm.begin();
                logger().ultra_verbose(
                    fmt::format("attribute <perm> is [{}], axis {} -> {}", fmt::join(perm, ", "), axis, new_axis));
                if (node.input_size() > 0) track(node.input(0), new_axis);
                return;
            }
            logger().warning(fmt::format("{} doesn't have <perm> attribute!", op));
        } else if (kStop.contains(op)) {
            logger().ultra_verbose(
                fmt::format("({}) produced by {} type {}. Stopping backward analysis.", name, node.name(), op));
        } else {
            logger().warning(fmt::format("({}) produced by {} type: {} is unsupported!", name, node.name(), op));
        }
    }

    const onnx::GraphProto& graph_;
    std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
    std::unordered_map<std::string, const onnx::NodeProto*> producers_;
    OrderedMap<int64_t> found_;
};

// The flat indices of each aligned group of four values along `axis`, passed to `visit` until it
// returns false.
template <typename Visit>
bool for_each_group(const Tensor& tensor, int64_t axis, Visit&& visit) {
    if (axis < 0 || axis >= tensor.rank())
        throw PolygraphyException(
            fmt::format("Axis {} is out of range for a tensor of shape {}", axis, shape_to_string(tensor.shape())));
    const int64_t length = tensor.shape()[static_cast<std::size_t>(axis)];
    if (length % 4 != 0)
        throw PolygraphyException(fmt::format("Axis {} of shape {} has length {}, which is not a multiple of 4", axis,
                                              shape_to_string(tensor.shape()), length));
    int64_t outer = 1, stride = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= tensor.shape()[static_cast<std::size_t>(i)];
    for (int64_t i = axis + 1; i < tensor.rank(); ++i) stride *= tensor.shape()[static_cast<std::size_t>(i)];
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t inner = 0; inner < stride; ++inner)
            for (int64_t start = 0; start < length; start += 4) {
                std::array<int64_t, 4> group;
                for (int64_t k = 0; k < 4; ++k) group[k] = (o * length + start + k) * stride + inner;
                if (!visit(group)) return false;
            }
    return true;
}

// Polygraphy's ultra-verbose line before it walks a tensor's groups.
void log_layout(const onnx::TensorProto& tensor, int64_t axis) {
    if (!logger().enabled(Severity::kUltraVerbose)) return;
    int64_t outer = 1, stride = 1;
    for (int i = 0; i < axis; ++i) outer *= tensor.dims(i);
    for (int i = static_cast<int>(axis) + 1; i < tensor.dims_size(); ++i) stride *= tensor.dims(i);
    logger().ultra_verbose(
        fmt::format("axis {} of dims {} has stride {} and outer {}", axis, dims_str(tensor), stride, outer));
}

bool is_sparse_tensor(const onnx::TensorProto& proto, int64_t axis) {
    log_layout(proto, axis);
    return is_2_4_sparse(tensor_from_proto(proto), axis);
}

}  // namespace

std::vector<SparsityCandidate> find_sparsity_candidates(const onnx::ModelProto& model,
                                                        const std::set<std::string>& skip) {
    CandidateFinder finder(model.graph());
    const OrderedMap<int64_t> found = finder.walk();
    logger().verbose("Skipping tensors that are not eligible for pruning.");
    std::vector<SparsityCandidate> candidates;
    std::size_t index = 0;
    for (const auto& [name, axis] : found) {
        ++index;
        logger().super_verbose(fmt::format("Processing tensor {}/{}: PruneInfo(name={}, axis={})", index, found.size(),
                                           python_repr(name), axis));
        const onnx::TensorProto& tensor = finder.initializer(name);
        if (skip.contains(name)) {
            logger().warning(fmt::format("Skipping tensor: {} since it was marked to skip pruning", name));
            continue;
        }
        const DataType dtype = dtype_from_onnx(tensor.data_type());
        if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
            logger().warning(fmt::format("Skipping tensor: {} due to unsupported type: {}", name, dtype_name(dtype)));
            continue;
        }
        if (axis >= tensor.dims_size()) {
            logger().warning(fmt::format("Skipping tensor: {} since it has no axis {} (its dims are {})", name, axis,
                                         dims_str(tensor)));
            continue;
        }
        const int64_t dim = tensor.dims(static_cast<int>(axis));
        if (dim % 4 != 0) {
            logger().verbose(fmt::format("Skipping {} since the length of axis {} ({} in {}) is not a multiple of 4. ",
                                         name, axis, dim, dims_str(tensor)));
            continue;
        }
        candidates.push_back({name, axis});
    }
    logger().extra_verbose(fmt::format("Skipped {} of {} tensor(s) since they are not eligible for pruning. ",
                                       found.size() - candidates.size(), found.size()));
    logger().info(fmt::format("Found: {} weight tensor(s) eligible for pruning.", candidates.size()));
    return candidates;
}

bool is_2_4_sparse(const Tensor& tensor, int64_t axis) {
    return for_each_group(tensor, axis, [&](const std::array<int64_t, 4>& group) {
        int zeros = 0;
        for (int64_t index : group) zeros += tensor.value_as_double(index) == 0.0;
        return zeros >= 2;
    });
}

void prune_2_4(Tensor& tensor, int64_t axis) {
    if (!dtype_is_floating(tensor.dtype()))
        throw PolygraphyException(fmt::format(
            "Cannot prune a tensor of type {}: only floating-point weights are pruned", dtype_name(tensor.dtype())));
    const std::size_t element_size = dtype_size(tensor.dtype());
    auto* bytes = static_cast<unsigned char*>(tensor.data());
    for_each_group(tensor, axis, [&](const std::array<int64_t, 4>& group) {
        // NaN counts as the largest magnitude; ties go to the first value, as Polygraphy picks them.
        std::array<double, 4> magnitude;
        for (int k = 0; k < 4; ++k) {
            const double value = std::fabs(tensor.value_as_double(group[k]));
            magnitude[k] = std::isnan(value) ? std::numeric_limits<double>::infinity() : value;
        }
        std::array<bool, 4> zeroed{};
        for (int pass = 0; pass < 2; ++pass) {
            int smallest = -1;
            for (int k = 0; k < 4; ++k)
                if (!zeroed[k] && (smallest < 0 || magnitude[k] < magnitude[smallest])) smallest = k;
            zeroed[smallest] = true;
            std::memset(bytes + group[smallest] * element_size, 0, element_size);  // +0.0 in every float type
        }
        return true;
    });
}

std::set<std::string> check_sparsity(const onnx::ModelProto& model) {
    const std::vector<SparsityCandidate> candidates = find_sparsity_candidates(model);
    std::unordered_map<std::string, const onnx::TensorProto*> initializers;
    for (const auto& initializer : model.graph().initializer()) initializers.emplace(initializer.name(), &initializer);
    logger().start(fmt::format("Checking the sparsity pattern of {} tensors.", candidates.size()));
    std::set<std::string> sparse;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const SparsityCandidate& candidate = candidates[i];
        logger().extra_verbose(fmt::format("Checking tensor {}/{}: {}", i + 1, candidates.size(), candidate.name));
        if (is_sparse_tensor(*initializers.at(candidate.name), candidate.axis)) {
            logger().info("Found sparse tensor: " + candidate.name);
            sparse.insert(candidate.name);
        } else {
            logger().warning("Found non-sparse tensor: " + candidate.name);
        }
    }
    logger().finish(fmt::format("Finished checking {} tensors. ", candidates.size()));
    return sparse;
}

std::size_t prune_model_2_4(onnx::ModelProto& model, const std::set<std::string>& skip) {
    const std::vector<SparsityCandidate> candidates = find_sparsity_candidates(model, skip);
    std::unordered_map<std::string, onnx::TensorProto*> initializers;
    for (auto& initializer : *model.mutable_graph()->mutable_initializer())
        initializers.emplace(initializer.name(), &initializer);
    logger().start(fmt::format("Pruning {} tensors.", candidates.size()));
    // Every tensor is pruned before any is replaced, so a failure leaves the model unchanged.
    std::vector<onnx::TensorProto> pruned;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const SparsityCandidate& candidate = candidates[i];
        logger().extra_verbose(fmt::format("Pruning tensor {}/{}: {}", i + 1, candidates.size(), candidate.name));
        log_layout(*initializers.at(candidate.name), candidate.axis);
        Tensor values = tensor_from_proto(*initializers.at(candidate.name)).clone();
        prune_2_4(values, candidate.axis);
        pruned.push_back(tensor_to_proto(values, candidate.name));
    }
    logger().finish(fmt::format("Finished pruning {} tensors. ", candidates.size()));
    if (pruned.empty()) {
        logger().verbose("No need to build new model object");
        return 0;
    }
    logger().info("Replacing weights to build new model object...");
    for (auto& proto : pruned) *initializers.at(proto.name()) = std::move(proto);
    model.set_producer_name("polygraphy surgeon prune");
    model.clear_producer_version();
    return candidates.size();
}

}  // namespace polygraphy
