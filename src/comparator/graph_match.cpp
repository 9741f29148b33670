#include "polygraphy/comparator/graph_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "polygraphy/backend/onnx/proto_fields.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/name_match.h"

namespace polygraphy {
namespace {

constexpr std::string_view kTorchScopeKey = "pkg.torch.onnx.name_scopes";

// Nodes whose output is the same value as their first input, in another type or quantized on the
// way to a consumer: a pair names the tensor in front of them.
bool is_transparent(const onnx::NodeProto& node) {
    if (node.input_size() == 0 || node.input(0).empty() || node.output_size() != 1) return false;
    if (!node.domain().empty() && node.domain() != "ai.onnx" && node.domain() != "com.microsoft") return false;
    const std::string& op = node.op_type();
    return op == "Cast" || op == "Identity" || op == "QuantizeLinear" || op == "DequantizeLinear";
}

// What match_graphs() needs to know of one graph.
class GraphIndex {
public:
    explicit GraphIndex(const onnx::GraphProto& graph) : graph_(graph) {
        for (const auto& initializer : graph.initializer()) {
            constants_.insert(initializer.name());
            weight_dims_.emplace(initializer.name(),
                                 std::vector<int64_t>(initializer.dims().begin(), initializer.dims().end()));
        }
        for (const auto& input : graph.input())
            if (!constants_.contains(input.name())) inputs_.push_back(input.name());
        for (const auto& output : graph.output()) outputs_.push_back(output.name());
        consumers_.reserve(static_cast<std::size_t>(graph.node_size()));
        for (int n = 0; n < graph.node_size(); ++n) {
            const onnx::NodeProto& node = graph.node(n);
            bool constant = true;
            for (int i = 0; i < node.input_size(); ++i) {
                const std::string& input = node.input(i);
                if (input.empty()) continue;
                consumers_[input].push_back({n, i});
                constant = constant && constants_.contains(input);
            }
            for (int k = 0; k < node.output_size(); ++k) {
                const std::string& output = node.output(k);
                if (output.empty()) continue;
                producers_.emplace(output, std::pair{n, k});
                if (constant) constants_.insert(output);
            }
        }
        // Chain heads, in graph order (a transparent node's input is defined before it).
        for (const std::string& input : inputs_) head_.emplace(input, input);
        for (int n = 0; n < graph.node_size(); ++n) {
            const onnx::NodeProto& node = graph.node(n);
            const bool transparent = is_transparent(node);
            for (const std::string& output : node.output()) {
                if (output.empty()) continue;
                std::string head = output;
                if (transparent)
                    if (auto found = head_.find(node.input(0)); found != head_.end()) head = found->second;
                head_.emplace(output, head);
                if (head == output && !constants_.contains(output)) computed_.push_back(output);
            }
        }
        for (const auto& [name, head] : head_) aliases_[head].push_back(name);
        for (auto& [head, names] : aliases_) std::sort(names.begin(), names.end());
    }

    const onnx::GraphProto& graph() const { return graph_; }
    const std::vector<std::string>& inputs() const { return inputs_; }
    const std::vector<std::string>& outputs() const { return outputs_; }
    /// Chain heads a node computes (not constants), in graph order.
    const std::vector<std::string>& computed() const { return computed_; }

    bool is_constant(const std::string& name) const { return constants_.contains(name); }
    bool is_input(const std::string& name) const {
        return std::find(inputs_.begin(), inputs_.end(), name) != inputs_.end();
    }
    bool has_tensor(const std::string& name) const { return head_.contains(name) || constants_.contains(name); }
    /// The chain head of a tensor that is not a constant (itself when no transparent node made it).
    std::optional<std::string> head(const std::string& name) const {
        auto found = head_.find(name);
        return found == head_.end() ? std::nullopt : std::optional(found->second);
    }
    const std::vector<std::string>& aliases(const std::string& head) const {
        static const std::vector<std::string> kNone;
        auto found = aliases_.find(head);
        return found == aliases_.end() ? kNone : found->second;
    }
    const std::pair<int, int>* producer(const std::string& name) const {
        auto found = producers_.find(name);
        return found == producers_.end() ? nullptr : &found->second;
    }
    const std::vector<std::pair<int, int>>& consumers(const std::string& name) const {
        static const std::vector<std::pair<int, int>> kNone;
        auto found = consumers_.find(name);
        return found == consumers_.end() ? kNone : found->second;
    }
    /// The dims of an initializer (nullptr for other tensors).
    const std::vector<int64_t>* weight_dims(const std::string& name) const {
        auto found = weight_dims_.find(name);
        return found == weight_dims_.end() ? nullptr : &found->second;
    }
    std::vector<std::string> tensor_names() const {
        std::vector<std::string> names;
        for (const auto& [name, head] : head_) names.push_back(name);
        std::sort(names.begin(), names.end());
        return names;
    }

private:
    const onnx::GraphProto& graph_;
    std::vector<std::string> inputs_, outputs_, computed_;
    std::unordered_set<std::string> constants_;
    std::unordered_map<std::string, std::vector<int64_t>> weight_dims_;
    std::unordered_map<std::string, std::pair<int, int>> producers_;               // tensor -> (node, output index)
    std::unordered_map<std::string, std::vector<std::pair<int, int>>> consumers_;  // -> (node, input index)
    std::unordered_map<std::string, std::string> head_;
    std::unordered_map<std::string, std::vector<std::string>> aliases_;
};

uint64_t mix(uint64_t seed, uint64_t value) {
    // splitmix64 of the combination: well spread, deterministic across runs and machines.
    uint64_t z = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t text_hash(std::string_view text) {
    uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a
    for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
    return hash;
}

class Matcher {
public:
    Matcher(const onnx::GraphProto& a, const onnx::GraphProto& b) : a_(a), b_(b) {}

    GraphMatching run(const GraphMatchOptions& options) {
        pair_inputs(options.input_map);
        pair_user(options.user);
        pair_by_name();
        pair_by_convention();
        pair_by_provenance();
        pair_by_structure();
        pair_leftover_outputs();
        return finish();
    }

private:
    bool paired_a(const std::string& head) const { return pair_of_a_.contains(head); }
    bool paired_b(const std::string& head) const { return pair_of_b_.contains(head); }

    // A graph input, or a chain head a node computes from something other than weights alone.
    static bool pairable(const GraphIndex& graph, const std::string& name) {
        if (graph.is_input(name)) return true;
        return graph.producer(name) && graph.head(name) == name && !graph.is_constant(name);
    }

    // Pairs two chain heads when neither is paired yet (and both can be: never a weight).
    bool add(const std::string& a, const std::string& b, MatchKind how, double confidence, std::string detail) {
        if (paired_a(a) || paired_b(b) || !pairable(a_, a) || !pairable(b_, b)) return false;
        const std::size_t index = found_.size();
        found_.push_back(TensorPair{a, b, how, confidence, std::move(detail)});
        pair_of_a_.emplace(a, index);
        pair_of_b_.emplace(b, index);
        return true;
    }

    // A computed head of each graph for two tensor names, when both are such.
    bool add_names(const std::string& a_name, const std::string& b_name, MatchKind how, double confidence,
                   const std::string& detail) {
        const auto a = a_.head(a_name);
        const auto b = b_.head(b_name);
        if (!a || !b || a_.is_input(*a) != b_.is_input(*b)) return false;
        return add(*a, *b, how, confidence, detail);
    }

    void pair_inputs(const std::vector<std::pair<std::string, std::string>>& input_map) {
        for (const auto& [a_name, b_name] : input_map) {
            if (!a_.is_input(a_name)) throw_unknown("--input-map", a_name, "graph input of A", a_.inputs());
            if (!b_.is_input(b_name)) throw_unknown("--input-map", b_name, "graph input of B", b_.inputs());
        }
        for (const std::string& b_name : b_.inputs()) {
            std::string a_name = b_name;
            bool mapped = false;
            for (const auto& [from, to] : input_map)
                if (to == b_name) {
                    a_name = from;
                    mapped = true;
                }
            if (!a_.is_input(a_name)) {
                const auto hint = closest_match(b_name, a_.inputs());
                throw UsageError(fmt::format(
                    "Graph input '{}' of B has no counterpart among the graph inputs of A{}: pair them with "
                    "--input-map A_NAME:{}",
                    b_name, hint ? fmt::format(" (did you mean '{}'?)", *hint) : "", b_name));
            }
            add(a_name, b_name, mapped ? MatchKind::kUser : MatchKind::kName, 1.0, mapped ? "--input-map" : "");
        }
    }

    [[noreturn]] static void throw_unknown(const std::string& where, const std::string& name, const std::string& what,
                                           const std::vector<std::string>& candidates) {
        const auto hint = closest_match(name, candidates);
        throw UsageError(fmt::format("{}: '{}' is not a {}{}", where, name, what,
                                     hint ? fmt::format(" (did you mean '{}'?)", *hint) : ""));
    }

    void pair_user(const std::vector<UserMatch>& user) {
        for (const UserMatch& match : user) {
            if (!a_.head(match.a))
                throw_unknown("--match-file", match.a, "tensor a node of A computes", a_.tensor_names());
            if (!b_.head(match.b))
                throw_unknown("--match-file", match.b, "tensor a node of B computes", b_.tensor_names());
            const std::string a = *a_.head(match.a), b = *b_.head(match.b);
            if (paired_a(a) && found_[pair_of_a_.at(a)].how == MatchKind::kUser)
                throw UsageError(fmt::format("--match-file: tensor '{}' of A is in two pairs", match.a));
            if (paired_b(b) && found_[pair_of_b_.at(b)].how == MatchKind::kUser)
                throw UsageError(fmt::format("--match-file: tensor '{}' of B is in two pairs", match.b));
            if (paired_a(a) || paired_b(b)) continue;  // a graph input the file pairs as the names do
            add(a, b, MatchKind::kUser, 1.0, "--match-file");
        }
    }

    void pair_by_name() {
        for (const std::string& a : a_.computed()) {
            if (paired_a(a)) continue;
            for (const std::string& name : a_.aliases(a))
                if (add_names(a, name, MatchKind::kName, 1.0, name == a ? "" : "alias '" + name + "'")) break;
        }
    }

    void pair_by_convention() {
        static const std::vector<std::pair<std::string_view, std::string_view>> kSuffixes = {
            {"_QuantizeLinear_Input", "QDQ"}, {"_QuantizeLinear_Output", "QDQ"}, {"_DequantizeLinear_Output", "QDQ"},
            {"_DequantizeLinear", "QDQ"},     {"_output_cast0", "fp16 Cast"},    {"_input_cast0", "fp16 Cast"},
            {"_cast", "fp16 Cast"},
        };
        // In both directions: either graph may be the quantized or converted one.
        auto pair_side = [&](const GraphIndex& named, const GraphIndex& other, bool named_is_b) {
            for (const std::string& name : named.tensor_names())
                for (const auto& [suffix, kind] : kSuffixes) {
                    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
                    const std::string base = name.substr(0, name.size() - suffix.size());
                    if (!other.head(base)) continue;
                    const std::string detail = fmt::format("{} name '{}'", kind, name);
                    if (named_is_b)
                        add_names(base, name, MatchKind::kConvention, 0.95, detail);
                    else
                        add_names(name, base, MatchKind::kConvention, 0.95, detail);
                }
        };
        pair_side(b_, a_, true);
        pair_side(a_, b_, false);
    }

    // Pairs the outputs of two nodes of one operator type, output by output.
    void pair_node_outputs(int a_node, int b_node, double confidence, const std::string& detail) {
        const auto& na = a_.graph().node(a_node);
        const auto& nb = b_.graph().node(b_node);
        if (na.op_type() != nb.op_type()) return;
        for (int k = 0; k < std::min(na.output_size(), nb.output_size()); ++k) {
            if (na.output(k).empty() || nb.output(k).empty()) continue;
            const auto a = a_.head(na.output(k));
            const auto b = b_.head(nb.output(k));
            if (!a || !b || *a != na.output(k) || *b != nb.output(k)) continue;  // transparent nodes: not theirs
            if (a_.is_constant(*a) || b_.is_constant(*b)) continue;
            add(*a, *b, MatchKind::kProvenance, confidence, detail);
        }
    }

    // Nodes keyed by `key_a` in A and `key_b` in B (empty: no key), paired where a key names one
    // node on each side.
    template <typename KeyA, typename KeyB>
    void pair_by_keys(KeyA key_a, KeyB key_b, double confidence, const std::string& what) {
        std::map<std::string, std::vector<int>> in_a, in_b;
        for (int n = 0; n < a_.graph().node_size(); ++n)
            if (std::string k = key_a(a_.graph().node(n)); !k.empty()) in_a[k].push_back(n);
        for (int n = 0; n < b_.graph().node_size(); ++n)
            if (std::string k = key_b(b_.graph().node(n)); !k.empty()) in_b[k].push_back(n);
        for (const auto& [k, nodes] : in_b) {
            auto found = in_a.find(k);
            if (nodes.size() != 1 || found == in_a.end() || found->second.size() != 1) continue;
            pair_node_outputs(found->second.front(), nodes.front(), confidence,
                              fmt::format("{} '{}'", what, k.substr(k.find('\n') + 1)));
        }
    }

    template <typename Key>
    void pair_by_key(Key key, double confidence, const std::string& what) {
        pair_by_keys(key, key, confidence, what);
    }

    void pair_by_provenance() {
        // The origin tags of polygraphy's own passes (kNodeOriginKey) name A's node, also after a
        // later tool renamed B's nodes and tensors; A may carry tags of its own.
        const auto origin = [](const onnx::NodeProto& node) -> std::string {
            const std::optional<std::string> tag = node_metadata_prop(node, kNodeOriginKey);
            return tag && !tag->empty() ? node.op_type() + "\n" + *tag : "";
        };
        pair_by_keys(
            [&](const onnx::NodeProto& node) {
                std::string key = origin(node);
                return !key.empty() || node.name().empty() ? key : node.op_type() + "\n" + node.name();
            },
            origin, 0.95, "origin tag");
        pair_by_key(
            [](const onnx::NodeProto& node) { return node.name().empty() ? "" : node.op_type() + "\n" + node.name(); },
            0.9, "node");
        pair_by_key(
            [](const onnx::NodeProto& node) -> std::string {
                for (const auto& [key, value] : node_metadata_props(node))
                    if (key == kTorchScopeKey && !value.empty()) return node.op_type() + "\n" + value;
                return "";
            },
            0.85, "PyTorch scope");
        pair_by_key(
            [](const onnx::NodeProto& node) -> std::string {
                const std::size_t slash = node.name().rfind('/');
                if (slash == std::string::npos || slash == 0) return "";
                return node.op_type() + "\n" + node.name().substr(0, slash);
            },
            0.7, "scope");
    }

    // Colour refinement: each unpaired computed head gets a colour from its producer's operator and
    // the colours of the producer's inputs (a forward pass in graph order), then from its consumers
    // (a backward pass). Paired tensors keep one colour per pair on both sides, so every pair found
    // anchors the next round. A colour held by exactly one unpaired tensor on each side pairs them.
    void pair_by_structure() {
        const bool left_in_a =
            std::any_of(a_.computed().begin(), a_.computed().end(), [&](const std::string& t) { return !paired_a(t); });
        const bool left_in_b =
            std::any_of(b_.computed().begin(), b_.computed().end(), [&](const std::string& t) { return !paired_b(t); });
        if (!left_in_a || !left_in_b) return;
        std::unordered_map<std::string, uint64_t> colour_a, colour_b;
        std::size_t previous_colours = 0;
        for (int round = 0; round < 16; ++round) {
            refine(a_, colour_a, true);
            refine(b_, colour_b, false);
            std::unordered_map<uint64_t, std::pair<std::vector<std::string>, std::vector<std::string>>> by_colour;
            for (const std::string& t : a_.computed())
                if (!paired_a(t)) by_colour[colour_a.at(t)].first.push_back(t);
            for (const std::string& t : b_.computed())
                if (!paired_b(t)) by_colour[colour_b.at(t)].second.push_back(t);
            bool added = false;
            // In B's order, so that the result does not depend on the hash map's.
            for (const std::string& t : b_.computed()) {
                if (paired_b(t)) continue;
                const auto& [in_a, in_b] = by_colour.at(colour_b.at(t));
                if (in_a.size() == 1 && in_b.size() == 1)
                    added = add(in_a.front(), t, MatchKind::kStructure, 0.8, "") || added;
            }
            if (!added && by_colour.size() == previous_colours) break;
            previous_colours = by_colour.size();
        }
    }

    uint64_t anchor(bool side_a, const std::string& head) const {
        const auto& pairs = side_a ? pair_of_a_ : pair_of_b_;
        auto found = pairs.find(head);
        return found == pairs.end() ? 0 : mix(0x5041495200000000ULL, found->second);
    }

    // The colour of a node input: its pair, its chain head's colour, or the shape of a weight.
    uint64_t input_colour(const GraphIndex& graph, const std::unordered_map<std::string, uint64_t>& colour, bool side_a,
                          const std::string& name) const {
        if (name.empty()) return 1;
        if (graph.is_constant(name)) return constant_colour(graph, name);
        const auto head = graph.head(name);
        if (!head) return 2;
        if (uint64_t paired = anchor(side_a, *head)) return paired;
        auto found = colour.find(*head);
        return found == colour.end() ? 3 : found->second;
    }

    // Weights count by their dims only: fp16 and quantized copies keep them, planted faults change values.
    static uint64_t constant_colour(const GraphIndex& graph, const std::string& name) {
        std::string head = name;
        // At most one step per node: a node that writes a weight's own name (or a loop of such nodes)
        // would otherwise lead back to where the walk started, forever.
        int steps = 0;
        while (const auto* producer = graph.producer(head)) {
            const auto& node = graph.graph().node(producer->first);
            if (!is_transparent(node)) return mix(text_hash("constant node"), text_hash(node.op_type()));
            if (++steps > graph.graph().node_size()) return text_hash("constant loop");
            head = node.input(0);
        }
        uint64_t colour = text_hash("weight");
        if (const auto* dims = graph.weight_dims(head))
            for (int64_t dim : *dims) colour = mix(colour, static_cast<uint64_t>(dim));
        return colour;
    }

    void refine(const GraphIndex& graph, std::unordered_map<std::string, uint64_t>& colour, bool side_a) {
        const auto& nodes = graph.graph().node();
        std::unordered_map<std::string, uint64_t> forward;
        for (const std::string& input : graph.inputs()) forward[input] = anchor(side_a, input);
        for (int n = 0; n < nodes.size(); ++n) {
            const onnx::NodeProto& node = nodes[n];
            if (is_transparent(node)) continue;
            uint64_t token = text_hash(node.op_type());
            for (const std::string& input : node.input())
                token = mix(token, input_colour(graph, forward, side_a, input));
            for (int k = 0; k < node.output_size(); ++k) {
                const std::string& output = node.output(k);
                if (output.empty() || graph.is_constant(output)) continue;
                const uint64_t paired = anchor(side_a, output);
                auto previous = colour.find(output);
                forward[output] =
                    paired ? paired
                           : mix(mix(token, static_cast<uint64_t>(k)), previous == colour.end() ? 0 : previous->second);
            }
        }
        // Backward: consumers in reverse graph order, through the aliases of each head.
        std::unordered_map<std::string, uint64_t> backward;
        for (auto it = graph.computed().rbegin(); it != graph.computed().rend(); ++it) {
            const std::string& head = *it;
            if (uint64_t paired = anchor(side_a, head)) {
                backward[head] = paired;
                continue;
            }
            std::vector<uint64_t> uses;
            for (const std::string& alias : graph.aliases(head))
                for (const auto& [n, index] : graph.consumers(alias)) {
                    const onnx::NodeProto& node = nodes[n];
                    if (is_transparent(node)) continue;  // its output is this head again
                    uint64_t use = mix(text_hash(node.op_type()), static_cast<uint64_t>(index));
                    for (const std::string& output : node.output()) {
                        auto found = backward.find(output);
                        use = mix(use, found != backward.end() ? found->second
                                       : forward.count(output) ? forward[output]
                                                               : 0);
                    }
                    uses.push_back(use);
                }
            for (const std::string& output : graph.outputs())
                if (graph.head(output) == head) uses.push_back(text_hash("graph output"));
            std::sort(uses.begin(), uses.end());
            // A head without a forward colour: a transparent node reading a tensor nothing defines.
            auto own = forward.find(head);
            uint64_t value = own == forward.end() ? 0 : own->second;
            for (uint64_t use : uses) value = mix(value, use);
            backward[head] = value;
        }
        colour = std::move(backward);
    }

    void pair_leftover_outputs() {
        const std::size_t count = std::min(a_.outputs().size(), b_.outputs().size());
        for (std::size_t i = 0; i < count; ++i)
            add_names(a_.outputs()[i], b_.outputs()[i], MatchKind::kStructure, 0.5, fmt::format("graph output {}", i));
    }

    // The nodes that compute `head` from paired tensors, graph inputs and weights, and the paired
    // tensors they read.
    static void find_group(const GraphIndex& graph, const std::unordered_map<std::string, std::size_t>& paired,
                           const std::string& head, std::vector<int>& nodes, std::vector<std::string>* inputs) {
        std::unordered_set<int> seen;
        std::unordered_set<std::string> boundary;
        std::vector<int> stack;
        if (const auto* producer = graph.producer(head)) stack.push_back(producer->first);
        while (!stack.empty()) {
            const int n = stack.back();
            stack.pop_back();
            if (!seen.insert(n).second) continue;
            for (const std::string& input : graph.graph().node(n).input()) {
                if (input.empty()) continue;
                const bool is_head = graph.head(input) == input;
                if (is_head && (paired.contains(input) || graph.is_input(input))) {
                    if (boundary.insert(input).second && inputs) inputs->push_back(input);
                    continue;
                }
                if (const auto* producer = graph.producer(input)) stack.push_back(producer->first);
            }
        }
        nodes.clear();
        for (int n : seen) {
            // A's group is for reading: the nodes that only compute weights (PyTorch's Identity of a
            // shared weight) are left out. B's keeps them: its group runs alone.
            const auto& outputs = graph.graph().node(n).output();
            const bool weights_only = std::all_of(outputs.begin(), outputs.end(),
                                                  [&](const std::string& output) { return graph.is_constant(output); });
            if (inputs || !weights_only) nodes.push_back(n);
        }
        std::sort(nodes.begin(), nodes.end());
        if (inputs) std::sort(inputs->begin(), inputs->end());
    }

    GraphMatching finish() {
        GraphMatching matching;
        std::unordered_set<std::string> b_outputs;
        for (const std::string& output : b_.outputs())
            if (const auto head = b_.head(output)) b_outputs.insert(*head);
        for (TensorPair& pair : found_) {
            pair.b_graph_output = b_outputs.contains(pair.b);
            if (b_.is_input(pair.b)) {
                matching.inputs.push_back(std::move(pair));
                continue;
            }
            find_group(a_, pair_of_a_, pair.a, pair.a_nodes, nullptr);
            find_group(b_, pair_of_b_, pair.b, pair.b_nodes, &pair.b_inputs);
            matching.pairs.push_back(std::move(pair));
        }
        std::unordered_map<std::string, std::size_t> b_order;
        for (const std::string& t : b_.computed()) b_order.emplace(t, b_order.size());
        std::sort(matching.pairs.begin(), matching.pairs.end(),
                  [&](const TensorPair& x, const TensorPair& y) { return b_order.at(x.b) < b_order.at(y.b); });
        for (const std::string& t : a_.computed())
            if (!paired_a(t)) matching.unmatched_a.push_back(t);
        for (const std::string& t : b_.computed())
            if (!paired_b(t)) matching.unmatched_b.push_back(t);
        return matching;
    }

    GraphIndex a_, b_;
    std::vector<TensorPair> found_;
    std::unordered_map<std::string, std::size_t> pair_of_a_, pair_of_b_;
};

}  // namespace

std::string_view match_kind_name(MatchKind kind) {
    switch (kind) {
        case MatchKind::kName:
            return "name";
        case MatchKind::kConvention:
            return "convention";
        case MatchKind::kProvenance:
            return "provenance";
        case MatchKind::kStructure:
            return "structure";
        case MatchKind::kUser:
            return "user";
    }
    return "?";
}

std::string node_display_name(const onnx::GraphProto& graph, int index) {
    const onnx::NodeProto& node = graph.node(index);
    return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

GraphMatching match_graphs(const onnx::GraphProto& a, const onnx::GraphProto& b, const GraphMatchOptions& options) {
    return Matcher(a, b).run(options);
}

std::vector<UserMatch> read_match_file(const std::string& path) {
    const std::string text = read_file(path);
    json::Cursor cursor(text, path);
    std::vector<UserMatch> matches;
    std::string scratch;
    auto read_pairs = [&] {
        cursor.begin_array();
        while (cursor.next_element()) {
            const std::size_t offset = cursor.offset();
            cursor.begin_object();
            UserMatch match;
            while (auto key = cursor.next_key(scratch)) {
                if (*key == "a")
                    match.a = cursor.read_string();
                else if (*key == "b")
                    match.b = cursor.read_string();
                else
                    cursor.skip_value();
            }
            if (match.a.empty() || match.b.empty())
                cursor.fail_at(offset, "a pair needs the tensor names \"a\" and \"b\"");
            matches.push_back(std::move(match));
        }
    };
    if (cursor.peek() == json::Cursor::Type::kArray) {
        read_pairs();
    } else {
        cursor.begin_object();
        bool found = false;
        while (auto key = cursor.next_key(scratch)) {
            if (*key == "pairs") {
                read_pairs();
                found = true;
            } else {
                cursor.skip_value();
            }
        }
        if (!found) cursor.fail("a match file needs a \"pairs\" list");
    }
    cursor.expect_end();
    return matches;
}

void save_match_file(const GraphMatching& matching, const onnx::GraphProto& a, const onnx::GraphProto& b,
                     const std::string& path) {
    std::string text;
    json::Writer writer(&text);
    auto write_nodes = [&](const onnx::GraphProto& graph, const std::vector<int>& nodes) {
        writer.begin_array();
        for (int n : nodes) writer.value(node_display_name(graph, n));
        writer.end_array();
    };
    writer.begin_object().key("pairs").begin_array();
    for (const auto* list : {&matching.inputs, &matching.pairs})
        for (const TensorPair& pair : *list) {
            writer.begin_object();
            writer.key("a").value(pair.a).key("b").value(pair.b);
            writer.key("how").value(match_kind_name(pair.how));
            writer.key("confidence").value(pair.confidence);
            writer.key("detail").value(pair.detail);
            writer.key("a_nodes");
            write_nodes(a, pair.a_nodes);
            writer.key("b_nodes");
            write_nodes(b, pair.b_nodes);
            writer.end_object();
        }
    writer.end_array().end_object();
    writer.finish();
    text += "\n";
    write_file_atomically(path, text);
}

}  // namespace polygraphy
