#include "polygraphy/backend/onnx/pattern.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "backend/onnx/domain.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace {

// ---- pattern.json --------------------------------------------------------------------------------

class PatternReader {
public:
    PatternReader(std::string_view text, const std::string& source) : cursor_(text, source) {}

    GraphPattern read() {
        GraphPattern pattern;
        bool has_name = false, has_op = false, has_inputs = false, has_outputs = false, has_nodes = false;
        cursor_.begin_object();
        std::string scratch;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string field(*key);
            if (field == "name") {
                pattern.name = read_string("name");
                has_name = true;
            } else if (field == "op") {
                pattern.op = read_string("op");
                has_op = true;
            } else if (field == "inputs") {
                pattern.inputs = read_strings("inputs");
                has_inputs = true;
            } else if (field == "outputs") {
                pattern.outputs = read_strings("outputs");
                has_outputs = true;
            } else if (field == "nodes") {
                expect(json::Cursor::Type::kArray, "nodes");
                cursor_.begin_array();
                while (cursor_.next_element()) pattern.nodes.push_back(read_node(pattern.nodes.size()));
                has_nodes = true;
            } else if (field == "attributes") {
                expect(json::Cursor::Type::kObject, "attributes");
                cursor_.begin_object();
                std::string name_scratch;
                while (auto name = cursor_.next_key(name_scratch)) {
                    PluginAttribute attribute;
                    attribute.name = std::string(*name);
                    read_plugin_attribute(attribute);
                    pattern.attributes.push_back(std::move(attribute));
                }
            } else {
                fail("unknown field '" + field + "' (expected name, op, inputs, outputs, nodes, attributes)");
            }
        }
        cursor_.expect_end();
        if (!has_name || pattern.name.empty()) fail("no \"name\" (the plugin's name)");
        if (!has_op) pattern.op = pattern.name;
        if (!has_inputs || pattern.inputs.empty()) fail("no \"inputs\" (the pattern's input tensors)");
        if (!has_outputs || pattern.outputs.empty()) fail("no \"outputs\" (the pattern's output tensors)");
        if (!has_nodes || pattern.nodes.empty()) fail("no \"nodes\"");
        return pattern;
    }

    [[noreturn]] void fail(const std::string& problem) const { throw FormatError(cursor_.source() + ": " + problem); }

private:
    void expect(json::Cursor::Type type, const std::string& what) {
        const json::Cursor::Type found = cursor_.peek();
        if (found != type)
            fail("\"" + what + "\" must be " + json::Cursor::type_name(type) + ", not " +
                 json::Cursor::type_name(found));
    }
    std::string read_string(const std::string& what) {
        expect(json::Cursor::Type::kString, what);
        return cursor_.read_string();
    }
    std::vector<std::string> read_strings(const std::string& what) {
        expect(json::Cursor::Type::kArray, what);
        std::vector<std::string> values;
        cursor_.begin_array();
        while (cursor_.next_element()) values.push_back(read_string(what + " (each)"));
        return values;
    }

    // A number: an integer when written without a fraction or exponent, else a float.
    std::variant<int64_t, double> read_number(const std::string& what) {
        expect(json::Cursor::Type::kNumber, what);
        const std::size_t start = cursor_.offset();
        const double value = cursor_.read_number();
        const std::string_view text = cursor_.text().substr(start, cursor_.offset() - start);
        if (text.find_first_of(".eE") == std::string_view::npos && std::abs(value) < 9.2e18)
            return static_cast<int64_t>(value);
        return value;
    }

    PatternValue read_value(const std::string& what) {
        switch (cursor_.peek()) {
            case json::Cursor::Type::kString:
                return cursor_.read_string();
            case json::Cursor::Type::kNumber: {
                const auto number = read_number(what);
                if (const auto* integer = std::get_if<int64_t>(&number)) return *integer;
                return std::get<double>(number);
            }
            case json::Cursor::Type::kBool:
                return static_cast<int64_t>(cursor_.read_bool());
            case json::Cursor::Type::kArray: {
                cursor_.begin_array();
                std::vector<int64_t> ints;
                std::vector<double> floats;
                std::vector<std::string> strings;
                bool any_float = false;
                while (cursor_.next_element()) {
                    if (cursor_.peek() == json::Cursor::Type::kString) {
                        if (!ints.empty()) fail("\"" + what + "\" mixes numbers and strings");
                        strings.push_back(cursor_.read_string());
                        continue;
                    }
                    if (!strings.empty()) fail("\"" + what + "\" mixes numbers and strings");
                    const auto number = read_number(what + " (each)");
                    if (const auto* integer = std::get_if<int64_t>(&number)) {
                        ints.push_back(*integer);
                        floats.push_back(static_cast<double>(*integer));
                    } else {
                        ints.push_back(0);
                        floats.push_back(std::get<double>(number));
                        any_float = true;
                    }
                }
                if (!strings.empty()) return strings;
                if (any_float) return floats;
                return ints;
            }
            default:
                fail("\"" + what + "\" must be a number, a string or a list of them, not " +
                     json::Cursor::type_name(cursor_.peek()));
        }
    }

    PatternNode read_node(std::size_t index) {
        PatternNode node;
        node.name = "node" + std::to_string(index);
        expect(json::Cursor::Type::kObject, "nodes (each)");
        cursor_.begin_object();
        std::string scratch;
        bool has_op = false;
        while (auto key = cursor_.next_key(scratch)) {
            const std::string field(*key);
            if (field == "name")
                node.name = read_string("name");
            else if (field == "op") {
                node.op = read_string("op");
                has_op = true;
            } else if (field == "domain")
                node.domain = read_string("domain");
            else if (field == "inputs")
                node.inputs = read_strings("inputs");
            else if (field == "outputs")
                node.outputs = read_strings("outputs");
            else if (field == "attributes") {
                expect(json::Cursor::Type::kObject, "attributes");
                cursor_.begin_object();
                std::string name_scratch;
                while (auto name = cursor_.next_key(name_scratch)) {
                    AttributeCondition condition;
                    condition.attribute = std::string(*name);
                    read_condition(condition);
                    node.conditions.push_back(std::move(condition));
                }
            } else
                fail("unknown field '" + field + "' in node '" + node.name +
                     "' (expected name, op, domain, inputs, outputs, attributes)");
        }
        if (!has_op || node.op.empty()) fail("node '" + node.name + "' has no \"op\"");
        node.domain = std::string(canonical_domain(node.domain));
        return node;
    }

    void read_condition(AttributeCondition& condition) {
        const std::string what = "attribute '" + condition.attribute + "'";
        if (cursor_.peek() != json::Cursor::Type::kObject) {
            condition.value = read_value(what);
            return;
        }
        static const std::map<std::string, AttributeCondition::Kind> kinds = {
            {"equals", AttributeCondition::Kind::kEquals},
            {"less", AttributeCondition::Kind::kLess},
            {"less_equal", AttributeCondition::Kind::kLessEqual},
            {"greater", AttributeCondition::Kind::kGreater},
            {"greater_equal", AttributeCondition::Kind::kGreaterEqual}};
        cursor_.begin_object();
        std::string scratch;
        std::size_t count = 0;
        while (auto key = cursor_.next_key(scratch)) {
            const auto kind = kinds.find(std::string(*key));
            if (kind == kinds.end())
                fail("unknown condition '" + std::string(*key) + "' on " + what +
                     " (expected equals, less, less_equal, greater, greater_equal)");
            condition.kind = kind->second;
            condition.value = read_value(what);
            if (condition.kind != AttributeCondition::Kind::kEquals &&
                !std::holds_alternative<int64_t>(condition.value) && !std::holds_alternative<double>(condition.value))
                fail("'" + std::string(*key) + "' on " + what + " needs a number");
            ++count;
        }
        if (count != 1) fail(what + " needs exactly one condition, not " + std::to_string(count));
    }

    void read_plugin_attribute(PluginAttribute& attribute) {
        if (cursor_.peek() != json::Cursor::Type::kObject) {
            attribute.value = read_value("attribute '" + attribute.name + "'");
            return;
        }
        cursor_.begin_object();
        std::string scratch;
        std::string from;
        while (auto key = cursor_.next_key(scratch)) {
            if (*key != "from")
                fail("unknown field '" + std::string(*key) + "' in attribute '" + attribute.name + "' (expected from)");
            from = read_string("from");
        }
        const std::size_t dot = from.rfind('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == from.size())
            fail("attribute '" + attribute.name + "' copies " + python_repr(from) +
                 ": expected \"<pattern node>.<attribute>\"");
        attribute.from_node = from.substr(0, dot);
        attribute.from_attribute = from.substr(dot + 1);
    }

    json::Cursor cursor_;
};

// The pattern's shape: every tensor produced once, inputs produced by nobody, outputs produced, one
// connected subgraph.
void check_pattern(const GraphPattern& pattern, const PatternReader& reader) {
    std::set<std::string> node_names;
    std::map<std::string, std::string> producer;
    for (const PatternNode& node : pattern.nodes) {
        if (!node_names.insert(node.name).second) reader.fail("two nodes are named '" + node.name + "'");
        if (node.outputs.empty()) reader.fail("node '" + node.name + "' has no outputs");
        for (const std::string& output : node.outputs) {
            if (!producer.emplace(output, node.name).second)
                reader.fail("tensor '" + output + "' is produced by nodes '" + producer[output] + "' and '" +
                            node.name + "'");
        }
    }
    const std::set<std::string> inputs(pattern.inputs.begin(), pattern.inputs.end());
    if (inputs.size() != pattern.inputs.size()) reader.fail("an input is listed twice");
    for (const std::string& input : pattern.inputs)
        if (producer.count(input))
            reader.fail("input '" + input + "' is produced by node '" + producer[input] + "': inputs are variables");
    for (const std::string& output : pattern.outputs)
        if (!producer.count(output)) reader.fail("output '" + output + "' is produced by no node");
    for (const PatternNode& node : pattern.nodes)
        for (const std::string& input : node.inputs)
            if (!input.empty() && !inputs.count(input) && !producer.count(input))
                reader.fail("node '" + node.name + "' reads '" + input +
                            "', which is neither a pattern input nor produced by a node");
    for (const PluginAttribute& attribute : pattern.attributes)
        if (!attribute.from_node.empty() && !node_names.count(attribute.from_node))
            reader.fail("attribute '" + attribute.name + "' copies from node '" + attribute.from_node +
                        "', which the pattern does not have");

    // Connected: nodes joined through the tensors they share (inputs included).
    std::map<std::string, std::vector<std::size_t>> users;
    for (std::size_t i = 0; i < pattern.nodes.size(); ++i) {
        for (const std::string& tensor : pattern.nodes[i].inputs) users[tensor].push_back(i);
        for (const std::string& tensor : pattern.nodes[i].outputs) users[tensor].push_back(i);
    }
    std::vector<bool> reached(pattern.nodes.size(), false);
    std::vector<std::size_t> stack = {0};
    reached[0] = true;
    while (!stack.empty()) {
        const PatternNode& node = pattern.nodes[stack.back()];
        stack.pop_back();
        std::vector<std::string> tensors = node.inputs;
        tensors.insert(tensors.end(), node.outputs.begin(), node.outputs.end());
        for (const std::string& tensor : tensors)
            for (std::size_t other : users[tensor])
                if (!reached[other]) {
                    reached[other] = true;
                    stack.push_back(other);
                }
    }
    for (std::size_t i = 0; i < reached.size(); ++i)
        if (!reached[i])
            reader.fail("node '" + pattern.nodes[i].name + "' is not connected to node '" + pattern.nodes[0].name +
                        "': a pattern is one subgraph");
}

// ---- matching ------------------------------------------------------------------------------------

std::optional<double> as_number(const PatternValue& value) {
    if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<double>(*integer);
    if (const auto* real = std::get_if<double>(&value)) return *real;
    return std::nullopt;
}

bool values_equal(const PatternValue& a, const PatternValue& b) {
    if (auto x = as_number(a))
        if (auto y = as_number(b)) return *x == *y;
    auto as_doubles = [](const PatternValue& value) -> std::optional<std::vector<double>> {
        if (const auto* ints = std::get_if<std::vector<int64_t>>(&value))
            return std::vector<double>(ints->begin(), ints->end());
        if (const auto* floats = std::get_if<std::vector<double>>(&value)) return *floats;
        return std::nullopt;
    };
    if (auto x = as_doubles(a))
        if (auto y = as_doubles(b)) return *x == *y;
    return a == b;
}

bool condition_holds(const AttributeCondition& condition, const onnx::NodeProto& node) {
    const onnx::AttributeProto* found = nullptr;
    for (const auto& attribute : node.attribute())
        if (attribute.name() == condition.attribute) found = &attribute;
    if (!found) return false;
    PatternValue value;
    try {
        value = pattern_value_of(*found);
    } catch (const UnsupportedError&) {
        return false;
    }
    if (condition.kind == AttributeCondition::Kind::kEquals) return values_equal(value, condition.value);
    const auto actual = as_number(value);
    const auto bound = as_number(condition.value);
    if (!actual || !bound) return false;
    switch (condition.kind) {
        case AttributeCondition::Kind::kLess:
            return *actual < *bound;
        case AttributeCondition::Kind::kLessEqual:
            return *actual <= *bound;
        case AttributeCondition::Kind::kGreater:
            return *actual > *bound;
        case AttributeCondition::Kind::kGreaterEqual:
            return *actual >= *bound;
        case AttributeCondition::Kind::kEquals:
            break;
    }
    return false;
}

// How a pattern node is reached from the nodes matched before it: through `tensor`, which it
// produces at output `index` (its graph candidate is that tensor's producer) or reads at input
// `index` (its candidates are the tensor's readers at that position).
struct Step {
    std::size_t node = 0;
    std::string tensor;
    bool produces = false;
    std::size_t index = 0;
};

class Matcher {
public:
    Matcher(const onnx::GraphProto& graph, const GraphPattern& pattern) : graph_(graph), pattern_(pattern) {
        for (int i = 0; i < graph.node_size(); ++i) {
            const onnx::NodeProto& node = graph.node(i);
            for (int j = 0; j < node.output_size(); ++j)
                if (!node.output(j).empty()) producer_[node.output(j)] = {static_cast<std::size_t>(i), j};
            for (int j = 0; j < node.input_size(); ++j)
                if (!node.input(j).empty()) readers_[node.input(j)].push_back({static_cast<std::size_t>(i), j});
        }
        for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
        plan_steps();
    }

    std::vector<PatternMatch> find_all() {
        std::vector<PatternMatch> matches;
        const PatternNode& anchor = pattern_.nodes[steps_.front().node];
        for (int i = 0; i < graph_.node_size(); ++i) {
            if (used_.count(static_cast<std::size_t>(i)) || !fits(anchor, graph_.node(i))) continue;
            node_of_.assign(pattern_.nodes.size(), kUnmatched);
            tensor_of_.clear();
            if (!try_node(0, static_cast<std::size_t>(i))) continue;
            matches.push_back(make_match());
            for (std::size_t node : node_of_) used_.insert(node);
        }
        return matches;
    }

private:
    static constexpr std::size_t kUnmatched = std::numeric_limits<std::size_t>::max();

    // Breadth-first from the producer of the first output, through shared tensors.
    void plan_steps() {
        std::map<std::string, std::size_t> produced_by;
        std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> read_by;
        for (std::size_t n = 0; n < pattern_.nodes.size(); ++n) {
            const PatternNode& node = pattern_.nodes[n];
            for (std::size_t j = 0; j < node.outputs.size(); ++j) produced_by[node.outputs[j]] = n;
            for (std::size_t j = 0; j < node.inputs.size(); ++j) read_by[node.inputs[j]].push_back({n, j});
        }
        std::vector<bool> planned(pattern_.nodes.size(), false);
        const std::size_t anchor = produced_by.at(pattern_.outputs.front());
        steps_.push_back({anchor, "", false, 0});
        planned[anchor] = true;
        for (std::size_t k = 0; k < steps_.size(); ++k) {
            const PatternNode& node = pattern_.nodes[steps_[k].node];
            // A producer is one candidate; readers may be many (a variable's most of all): producers first.
            auto reach_producer = [&](const std::string& tensor) {
                const auto producer = produced_by.find(tensor);
                if (tensor.empty() || producer == produced_by.end() || planned[producer->second]) return;
                const PatternNode& next = pattern_.nodes[producer->second];
                const auto at = std::find(next.outputs.begin(), next.outputs.end(), tensor) - next.outputs.begin();
                steps_.push_back({producer->second, tensor, true, static_cast<std::size_t>(at)});
                planned[producer->second] = true;
            };
            auto reach_readers = [&](const std::string& tensor) {
                if (tensor.empty()) return;
                for (const auto& [reader, position] : read_by[tensor])
                    if (!planned[reader]) {
                        steps_.push_back({reader, tensor, false, position});
                        planned[reader] = true;
                    }
            };
            for (const std::string& tensor : node.inputs) reach_producer(tensor);
            for (const std::string& tensor : node.outputs) reach_readers(tensor);
            for (const std::string& tensor : node.inputs) reach_readers(tensor);
        }
    }

    bool fits(const PatternNode& pattern_node, const onnx::NodeProto& node) const {
        if (node.op_type() != pattern_node.op ||
            canonical_domain(node.domain()) != canonical_domain(pattern_node.domain))
            return false;
        if (node.input_size() != static_cast<int>(pattern_node.inputs.size()) ||
            node.output_size() != static_cast<int>(pattern_node.outputs.size()))
            return false;
        return std::all_of(pattern_node.conditions.begin(), pattern_node.conditions.end(),
                           [&](const AttributeCondition& condition) { return condition_holds(condition, node); });
    }

    // Binds the pattern node of step `k` to graph node `candidate` and goes on with the next step.
    bool try_node(std::size_t k, std::size_t candidate) {
        const std::size_t pattern_index = steps_[k].node;
        const PatternNode& pattern_node = pattern_.nodes[pattern_index];
        const onnx::NodeProto& node = graph_.node(static_cast<int>(candidate));
        if (used_.count(candidate) || !fits(pattern_node, node)) return false;
        if (std::find(node_of_.begin(), node_of_.end(), candidate) != node_of_.end()) return false;
        std::vector<std::string> bound;  // tensors bound here, to undo
        auto bind = [&](const std::string& pattern_tensor, const std::string& graph_tensor) {
            if (pattern_tensor.empty() || graph_tensor.empty()) return pattern_tensor.empty() && graph_tensor.empty();
            auto [it, inserted] = tensor_of_.emplace(pattern_tensor, graph_tensor);
            if (inserted) bound.push_back(pattern_tensor);
            return it->second == graph_tensor;
        };
        bool consistent = true;
        for (std::size_t j = 0; consistent && j < pattern_node.inputs.size(); ++j)
            consistent = bind(pattern_node.inputs[j], node.input(static_cast<int>(j)));
        for (std::size_t j = 0; consistent && j < pattern_node.outputs.size(); ++j)
            consistent = bind(pattern_node.outputs[j], node.output(static_cast<int>(j)));
        if (consistent) {
            node_of_[pattern_index] = candidate;
            if (next_step(k + 1)) return true;
            node_of_[pattern_index] = kUnmatched;
        }
        for (const std::string& tensor : bound) tensor_of_.erase(tensor);
        return false;
    }

    bool next_step(std::size_t k) {
        if (k == steps_.size()) return boundary_holds();
        const Step& step = steps_[k];
        const std::string& graph_tensor = tensor_of_.at(step.tensor);
        if (step.produces) {
            const auto producer = producer_.find(graph_tensor);
            if (producer == producer_.end() || producer->second.second != static_cast<int>(step.index)) return false;
            return try_node(k, producer->second.first);
        }
        const auto readers = readers_.find(graph_tensor);
        if (readers == readers_.end()) return false;
        for (const auto& [reader, position] : readers->second)
            if (position == static_cast<int>(step.index) && try_node(k, reader)) return true;
        return false;
    }

    // The occurrence can be cut out: its inner tensors stay inside, its inputs come from outside.
    bool boundary_holds() const {
        const std::set<std::size_t> inside(node_of_.begin(), node_of_.end());
        const std::set<std::string> outputs(pattern_.outputs.begin(), pattern_.outputs.end());
        for (const PatternNode& node : pattern_.nodes)
            for (const std::string& tensor : node.outputs) {
                if (outputs.count(tensor)) continue;
                const std::string& graph_tensor = tensor_of_.at(tensor);
                if (graph_outputs_.count(graph_tensor)) return false;
                if (auto readers = readers_.find(graph_tensor); readers != readers_.end())
                    for (const auto& reader : readers->second)
                        if (!inside.count(reader.first)) return false;
            }
        for (const std::string& input : pattern_.inputs) {
            const auto bound = tensor_of_.find(input);
            if (bound == tensor_of_.end()) continue;
            if (auto producer = producer_.find(bound->second); producer != producer_.end())
                if (inside.count(producer->second.first)) return false;
        }
        return true;
    }

    PatternMatch make_match() const {
        PatternMatch match;
        auto add_once = [](std::vector<std::string>& list, const std::string& name) {
            if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
        };
        for (const std::string& input : pattern_.inputs)
            if (auto bound = tensor_of_.find(input); bound != tensor_of_.end()) add_once(match.inputs, bound->second);
        for (const std::string& output : pattern_.outputs) add_once(match.outputs, tensor_of_.at(output));
        match.nodes = node_of_;
        std::sort(match.nodes.begin(), match.nodes.end());
        for (const PluginAttribute& attribute : pattern_.attributes) {
            if (attribute.from_node.empty()) {
                match.attributes.emplace_back(attribute.name, attribute.value);
                continue;
            }
            const std::size_t pattern_index =
                std::find_if(pattern_.nodes.begin(), pattern_.nodes.end(),
                             [&](const PatternNode& node) { return node.name == attribute.from_node; }) -
                pattern_.nodes.begin();
            const onnx::NodeProto& node = graph_.node(static_cast<int>(node_of_[pattern_index]));
            const onnx::AttributeProto* found = nullptr;
            for (const auto& candidate : node.attribute())
                if (candidate.name() == attribute.from_attribute) found = &candidate;
            if (!found)
                throw PolygraphyException("Plugin '" + pattern_.name + "': attribute '" + attribute.name +
                                          "' copies attribute '" + attribute.from_attribute + "' of node '" +
                                          node.name() + "' (pattern node '" + attribute.from_node +
                                          "'), which that node does not have");
            match.attributes.emplace_back(attribute.name, pattern_value_of(*found));
        }
        return match;
    }

    const onnx::GraphProto& graph_;
    const GraphPattern& pattern_;
    std::unordered_map<std::string, std::pair<std::size_t, int>> producer_;
    std::unordered_map<std::string, std::vector<std::pair<std::size_t, int>>> readers_;
    std::set<std::string> graph_outputs_;
    std::vector<Step> steps_;
    std::vector<std::size_t> node_of_;
    std::map<std::string, std::string> tensor_of_;
    std::set<std::size_t> used_;
};

}  // namespace

GraphPattern graph_pattern_from_json(std::string_view text, const std::string& source) {
    PatternReader reader(text, source);
    GraphPattern pattern = reader.read();
    check_pattern(pattern, reader);
    return pattern;
}

std::vector<PatternMatch> find_pattern_matches(const onnx::ModelProto& model, const GraphPattern& pattern) {
    if (pattern.nodes.empty() || pattern.outputs.empty()) return {};
    return Matcher(model.graph(), pattern).find_all();
}

PatternValue pattern_value_of(const onnx::AttributeProto& attribute) {
    switch (attribute.type()) {
        case onnx::AttributeProto::INT:
            return static_cast<int64_t>(attribute.i());
        case onnx::AttributeProto::FLOAT:
            return static_cast<double>(attribute.f());
        case onnx::AttributeProto::STRING:
            return attribute.s();
        case onnx::AttributeProto::INTS:
            return std::vector<int64_t>(attribute.ints().begin(), attribute.ints().end());
        case onnx::AttributeProto::FLOATS:
            return std::vector<double>(attribute.floats().begin(), attribute.floats().end());
        case onnx::AttributeProto::STRINGS:
            return std::vector<std::string>(attribute.strings().begin(), attribute.strings().end());
        default:
            throw UnsupportedError(
                "attribute '" + attribute.name() + "' is of type " +
                onnx::AttributeProto::AttributeType_Name(attribute.type()) +
                ", which a plugin configuration cannot hold (INT, FLOAT, STRING and their lists can)");
    }
}

onnx::AttributeProto attribute_from_pattern_value(const std::string& name, const PatternValue& value) {
    onnx::AttributeProto attribute;
    attribute.set_name(name);
    std::visit(
        [&](const auto& held) {
            using T = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                attribute.set_type(onnx::AttributeProto::INT);
                attribute.set_i(held);
            } else if constexpr (std::is_same_v<T, double>) {
                attribute.set_type(onnx::AttributeProto::FLOAT);
                attribute.set_f(static_cast<float>(held));
            } else if constexpr (std::is_same_v<T, std::string>) {
                attribute.set_type(onnx::AttributeProto::STRING);
                attribute.set_s(held);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                attribute.set_type(onnx::AttributeProto::INTS);
                for (int64_t v : held) attribute.add_ints(v);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                attribute.set_type(onnx::AttributeProto::FLOATS);
                for (double v : held) attribute.add_floats(static_cast<float>(v));
            } else {
                attribute.set_type(onnx::AttributeProto::STRINGS);
                for (const std::string& v : held) attribute.add_strings(v);
            }
        },
        value);
    return attribute;
}

}  // namespace polygraphy
