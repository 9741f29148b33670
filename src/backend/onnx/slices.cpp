// Consecutive slices of a graph, each run as a model of its own (see slices.h).
#include "polygraphy/backend/onnx/slices.h"

#include <algorithm>
#include <unordered_set>

#include "backend/onnx/graph_internal.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

constexpr std::size_t kNotRead = static_cast<std::size_t>(-1);

// Where each node output is produced and last read, by position in the topological order.
struct TensorSpan {
    std::size_t produced = 0;
    std::size_t last_read = kNotRead;
    std::size_t bytes = 0;
    bool marked = false;
    bool read_after(std::size_t position) const { return last_read != kNotRead && last_read > position; }
};

}  // namespace

std::vector<GraphSlice> plan_graph_slices(const onnx::GraphProto& graph, const std::vector<std::string>& marked,
                                          const std::unordered_map<std::string, std::size_t>& tensor_bytes,
                                          std::size_t max_bytes,
                                          const std::unordered_map<std::string, std::size_t>& weight_bytes,
                                          std::size_t max_weight_bytes) {
    const std::vector<std::size_t> order = topological_order(graph);
    std::size_t largest = 0;
    for (const auto& [name, bytes] : tensor_bytes) largest = std::max(largest, bytes);
    const std::unordered_set<std::string> marked_set(marked.begin(), marked.end());

    std::unordered_map<std::string, TensorSpan> spans;
    std::vector<std::vector<std::string>> reads(order.size());
    for (std::size_t position = 0; position < order.size(); ++position) {
        const onnx::NodeProto& node = graph.node(static_cast<int>(order[position]));
        reads[position] = node_reads(node);
        for (const auto& output : node.output()) {
            if (output.empty()) continue;
            const auto found = tensor_bytes.find(output);
            spans[output] = TensorSpan{position, kNotRead, found != tensor_bytes.end() ? found->second : largest,
                                       marked_set.contains(output)};
        }
    }
    for (std::size_t position = 0; position < order.size(); ++position)
        for (const auto& name : reads[position])
            if (auto found = spans.find(name); found != spans.end()) found->second.last_read = position;

    // Bytes of the cut tensors kept from before position p: produced before p, read at p or later.
    std::vector<std::size_t> kept_before(order.size() + 1, 0);
    {
        std::vector<long long> change(order.size() + 2, 0);
        for (const auto& [name, span] : spans) {
            if (span.last_read == kNotRead || span.last_read <= span.produced) continue;
            change[span.produced + 1] += static_cast<long long>(span.bytes);
            change[span.last_read + 1] -= static_cast<long long>(span.bytes);
        }
        long long running = 0;
        for (std::size_t p = 0; p <= order.size(); ++p) {
            running += change[p];
            kept_before[p] = static_cast<std::size_t>(running);
        }
    }
    // What slice [first, last] holds while it runs.
    const auto slice_bytes = [&](std::size_t first, std::size_t last) {
        std::size_t bytes = kept_before[first];
        for (std::size_t position = first; position <= last; ++position)
            for (const auto& output : graph.node(static_cast<int>(order[position])).output()) {
                if (output.empty()) continue;
                const TensorSpan& span = spans.at(output);
                if (span.marked || span.read_after(last)) bytes += span.bytes;
            }
        return bytes;
    };

    std::unordered_set<std::string> graph_inputs, initializers;
    for (const auto& input : graph.input()) graph_inputs.insert(input.name());
    for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());

    std::vector<GraphSlice> slices;
    std::size_t first = 0;
    while (first < order.size() || (slices.empty() && !marked.empty())) {
        std::size_t last = first;
        if (first < order.size()) {
            // The weights the slice reads so far, each once.
            std::unordered_set<std::string> weights_read;
            std::size_t weights = 0;
            auto weights_of = [&](std::size_t position, bool add) {
                std::size_t more = 0;
                for (const auto& name : reads[position]) {
                    const auto found = weight_bytes.find(name);
                    if (found == weight_bytes.end() || weights_read.contains(name)) continue;
                    more += found->second;
                    if (add) weights_read.insert(name);
                }
                return more;
            };
            weights += weights_of(first, true);
            while (last + 1 < order.size() && slice_bytes(first, last + 1) <= max_bytes &&
                   weights + weights_of(last + 1, false) <= max_weight_bytes) {
                ++last;
                weights += weights_of(last, true);
            }
        }
        const bool has_nodes = first < order.size();
        GraphSlice slice;
        slice.bytes = has_nodes ? slice_bytes(first, last) : 0;
        std::unordered_set<std::string> produced, read;
        for (std::size_t position = first; has_nodes && position <= last; ++position) {
            slice.nodes.push_back(order[position]);
            for (const auto& output : graph.node(static_cast<int>(order[position])).output())
                if (!output.empty()) produced.insert(output);
        }
        for (std::size_t position = first; has_nodes && position <= last; ++position)
            for (const auto& name : reads[position]) {
                if (produced.contains(name) || !read.insert(name).second) continue;
                if (spans.contains(name)) slice.cut_inputs.push_back(name);
            }
        // Marked tensors no node produces are yielded by the first slice, which must then read them.
        if (slices.empty())
            for (const auto& name : marked)
                if (!spans.contains(name)) read.insert(name);
        for (const auto& input : graph.input())
            if (read.contains(input.name())) slice.graph_inputs.push_back(input.name());
        for (const auto& initializer : graph.initializer())
            if (read.contains(initializer.name()) && !graph_inputs.contains(initializer.name()))
                slice.initializers.push_back(initializer.name());
        for (const auto& initializer : graph.initializer())  // initializers listed as inputs too (IR < 4)
            if (read.contains(initializer.name()) && graph_inputs.contains(initializer.name()))
                slice.initializers.push_back(initializer.name());
        for (const auto& name : marked) {
            const auto found = spans.find(name);
            if (found == spans.end() ? slices.empty() : produced.contains(name)) slice.marked.push_back(name);
        }
        for (std::size_t position = first; has_nodes && position <= last; ++position)
            for (const auto& output : graph.node(static_cast<int>(order[position])).output())
                if (!output.empty() && !spans.at(output).marked && spans.at(output).read_after(last))
                    slice.cut_outputs.push_back(output);
        for (const auto& [name, span] : spans)
            if (has_nodes && span.produced <= last && span.read_after(last)) slice.kept.push_back(name);
        std::sort(slice.kept.begin(), slice.kept.end());
        slices.push_back(std::move(slice));
        first = has_nodes ? last + 1 : first;
        if (!has_nodes) break;
    }
    return slices;
}

struct SliceView::Parts {
    std::vector<std::unique_ptr<onnx::NodeProto>> nodes;
    std::vector<std::unique_ptr<onnx::TensorProto>> initializers;
    std::unordered_map<std::string, std::size_t> initializer_index;
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs, outputs, value_info;
    std::unordered_map<std::string, const onnx::ValueInfoProto*> declared;  // outputs, then value_info
    std::vector<std::size_t> shown_nodes, shown_initializers;
};

namespace {

template <class Message>
std::vector<std::unique_ptr<Message>> take_all(google::protobuf::RepeatedPtrField<Message>& field) {
    std::vector<Message*> released(static_cast<std::size_t>(field.size()));
    field.ExtractSubrange(0, field.size(), released.data());
    std::vector<std::unique_ptr<Message>> owned;
    for (Message* message : released) owned.emplace_back(message);
    return owned;
}

// Moves the messages of `field` back to the slots `indices` of `owned`, which they came from.
template <class Message>
void return_to(google::protobuf::RepeatedPtrField<Message>& field, std::vector<std::unique_ptr<Message>>& owned,
               std::vector<std::size_t>& indices) {
    std::vector<std::unique_ptr<Message>> taken = take_all(field);
    if (taken.size() != indices.size())
        throw InternalError("SliceView: the shown graph was changed while it was shown (" +
                            std::to_string(taken.size()) + " entries instead of " + std::to_string(indices.size()) +
                            ")");
    for (std::size_t i = 0; i < taken.size(); ++i) owned[indices[i]] = std::move(taken[i]);
    indices.clear();
}

}  // namespace

SliceView::SliceView(onnx::ModelProto& model) : graph_(*model.mutable_graph()), parts_(std::make_unique<Parts>()) {
    parts_->nodes = take_all(*graph_.mutable_node());
    parts_->initializers = take_all(*graph_.mutable_initializer());
    for (std::size_t i = 0; i < parts_->initializers.size(); ++i)
        parts_->initializer_index.emplace(parts_->initializers[i]->name(), i);
    parts_->inputs.Swap(graph_.mutable_input());
    parts_->outputs.Swap(graph_.mutable_output());
    parts_->value_info.Swap(graph_.mutable_value_info());
    for (const auto& info : parts_->value_info) parts_->declared.emplace(info.name(), &info);
    for (const auto& info : parts_->outputs) parts_->declared.insert_or_assign(info.name(), &info);
}

SliceView::~SliceView() {
    try {
        take_back();
    } catch (const InternalError&) {
        // Someone changed the shown graph: what it holds now is dropped, the rest goes back.
        graph_.clear_node();
        graph_.clear_initializer();
    }
    for (auto& node : parts_->nodes)
        if (node) graph_.mutable_node()->AddAllocated(node.release());
    for (auto& initializer : parts_->initializers)
        if (initializer) graph_.mutable_initializer()->AddAllocated(initializer.release());
    graph_.mutable_input()->Swap(&parts_->inputs);
    graph_.mutable_output()->Swap(&parts_->outputs);
    graph_.mutable_value_info()->Swap(&parts_->value_info);
}

void SliceView::take_back() {
    return_to(*graph_.mutable_node(), parts_->nodes, parts_->shown_nodes);
    return_to(*graph_.mutable_initializer(), parts_->initializers, parts_->shown_initializers);
    graph_.clear_input();
    graph_.clear_output();
    graph_.clear_value_info();
}

void SliceView::show(const GraphSlice& slice,
                     const std::unordered_map<std::string, onnx::ValueInfoProto>& cut_input_types) {
    take_back();
    std::unordered_set<std::string> produced;
    for (std::size_t index : slice.nodes) {
        for (const auto& output : parts_->nodes.at(index)->output()) produced.insert(output);
        graph_.mutable_node()->AddAllocated(parts_->nodes[index].release());
        parts_->shown_nodes.push_back(index);
    }
    for (const auto& name : slice.initializers) {
        const std::size_t index = parts_->initializer_index.at(name);
        graph_.mutable_initializer()->AddAllocated(parts_->initializers[index].release());
        parts_->shown_initializers.push_back(index);
    }
    const std::unordered_set<std::string> graph_inputs(slice.graph_inputs.begin(), slice.graph_inputs.end());
    for (const auto& input : parts_->inputs)
        if (graph_inputs.contains(input.name())) *graph_.add_input() = input;
    for (const auto& name : slice.cut_inputs) {
        const auto found = cut_input_types.find(name);
        onnx::ValueInfoProto& input = *graph_.add_input();
        if (found != cut_input_types.end()) input = found->second;
        input.set_name(name);
    }
    for (const auto* names : {&slice.marked, &slice.cut_outputs})
        for (const auto& name : *names) {
            const auto found = parts_->declared.find(name);
            onnx::ValueInfoProto& output = *graph_.add_output();
            if (found != parts_->declared.end()) output = *found->second;
            output.set_name(name);
        }
    for (const auto& info : parts_->value_info)
        if (produced.contains(info.name())) *graph_.add_value_info() = info;
}

}  // namespace polygraphy
