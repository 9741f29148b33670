// Control flow: If, Loop, Scan (v8 with a batch axis, v9+ with per-input axes and directions) and
// SequenceMap. Their graph attributes run as nested sessions (NodeInfo::subgraph); values of the
// enclosing graphs reach them as the node's implicit inputs.
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/axis_util.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// Element type declared for output `index` of graph attribute `attr` (kUndefined when not a tensor
// or not declared): the dtype of an empty scan output.
DataType declared_output_type(const NodeInfo& node, std::string_view attr, int index) {
    const onnx::AttributeProto* attribute = node.attr(attr);
    if (!attribute || index >= attribute->g().output_size()) return DataType::kUndefined;
    const onnx::TypeProto& type = attribute->g().output(index).type();
    if (type.has_tensor_type()) return dtype_from_onnx(type.tensor_type().elem_type());
    if (type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type())
        return dtype_from_onnx(type.sequence_type().elem_type().tensor_type().elem_type());
    return DataType::kUndefined;
}

bool truth_of(const NodeInfo& node, const Value& value, std::string_view what) {
    if (!value.is_tensor()) node.fail(fmt::format("{} must be a tensor, but it is a {}", what, value.kind_name()));
    const Tensor& tensor = value.tensor();
    if (tensor.numel() != 1 || tensor.dtype() == DataType::kString)
        node.fail(fmt::format("{} must be a single bool, but it is a {} tensor of shape {}", what,
                              dtype_name(tensor.dtype()), shape_to_string(tensor.shape())));
    return tensor.value_as_double(0) != 0.0;
}

void check_outputs(const NodeInfo& node, const std::vector<Value>& outputs, std::size_t expected,
                   std::string_view graph) {
    if (outputs.size() != expected)
        node.fail(fmt::format("{} produced {} outputs, expected {}", graph, outputs.size(), expected));
}

// Stacks scan elements on a new axis; zero elements give shape (0,) of the declared type.
Tensor stack_elements(const NodeInfo& node, const std::vector<Tensor>& elements, int64_t axis, DataType fallback) {
    if (elements.empty()) {
        if (fallback == DataType::kUndefined || fallback == DataType::kString) fallback = DataType::kFloat32;
        return Tensor(fallback, {0});
    }
    const int64_t rank = elements.front().rank() + 1;
    return concat_along_axis(node, elements, normalize_axis(node, axis, rank, "output axis"), true);
}

// ---- If ----------------------------------------------------------------------------------------------

class IfKernel final : public Kernel {
public:
    explicit IfKernel(const NodeInfo& node) : then_(node.subgraph("then_branch")), else_(node.subgraph("else_branch")) {
        const auto outputs = static_cast<std::size_t>(node.proto().output_size());
        for (const Subgraph* branch : {then_.get(), else_.get()})
            if (branch->output_names().size() != outputs)
                node.fail(fmt::format("branch '{}' has {} outputs, but the node has {}",
                                      branch == then_.get() ? "then_branch" : "else_branch",
                                      branch->output_names().size(), outputs));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const bool condition = truth_of(node, context.input_value(0), "condition");
        std::vector<Value> outputs = (condition ? then_ : else_)->run({}, context);
        check_outputs(node, outputs, context.num_outputs(), condition ? "then_branch" : "else_branch");
        for (std::size_t j = 0; j < outputs.size(); ++j) context.set_output_value(j, std::move(outputs[j]));
    }

private:
    std::unique_ptr<Subgraph> then_, else_;
};

// ---- Loop --------------------------------------------------------------------------------------------

class LoopKernel final : public Kernel {
public:
    explicit LoopKernel(const NodeInfo& node) : body_(node.subgraph("body")) {
        if (node.proto().input_size() < 2)
            node.fail(fmt::format("needs at least 2 inputs (M, cond), but it has {}", node.proto().input_size()));
        carried_ = static_cast<std::size_t>(node.proto().input_size() - 2);
        if (body_->input_names().size() != carried_ + 2)
            node.fail(
                fmt::format("body must take {} inputs (iteration_num, cond and {} loop-carried values), but it "
                            "takes {}",
                            carried_ + 2, carried_, body_->input_names().size()));
        const std::size_t body_outputs = body_->output_names().size();
        if (body_outputs < carried_ + 1 || body_outputs - 1 != static_cast<std::size_t>(node.proto().output_size()))
            node.fail(fmt::format("body has {} outputs, but the node's {} outputs and {} loop-carried values need {}",
                                  body_outputs, node.proto().output_size(), carried_, node.proto().output_size() + 1));
        for (std::size_t k = carried_ + 1; k < body_outputs; ++k)
            scan_types_.push_back(declared_output_type(node, "body", static_cast<int>(k)));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        int64_t trip_limit = std::numeric_limits<int64_t>::max();
        if (const Tensor* m = context.input(0); m && m->defined()) {
            require_scalar(node, *m, "trip count M");
            trip_limit = read_ints(node, *m, "trip count M")[0];
        }
        bool condition = true;
        if (context.input(1) || context.input_value(1).defined())
            condition = truth_of(node, context.input_value(1), "cond");

        std::vector<Value> inputs(carried_ + 2);
        for (std::size_t i = 0; i < carried_; ++i) {
            inputs[i + 2] = context.input_value(i + 2);
            if (!inputs[i + 2].defined()) node.fail(fmt::format("loop-carried input {} is missing", i + 2));
        }
        std::vector<std::vector<Tensor>> scans(scan_types_.size());
        for (int64_t iteration = 0; iteration < trip_limit && condition; ++iteration) {
            Tensor counter(DataType::kInt64, {});
            *counter.data_as<int64_t>() = iteration;
            Tensor flag(DataType::kBool, {});
            *flag.data_as<bool>() = condition;
            inputs[0] = std::move(counter);
            inputs[1] = std::move(flag);
            std::vector<Value> outputs = body_->run(inputs, context);
            check_outputs(node, outputs, carried_ + 1 + scans.size(), "body");
            condition = truth_of(node, outputs[0], "body output cond");
            for (std::size_t i = 0; i < carried_; ++i) inputs[i + 2] = std::move(outputs[i + 1]);
            for (std::size_t k = 0; k < scans.size(); ++k) {
                const Value& element = outputs[carried_ + 1 + k];
                if (!element.is_tensor())
                    node.fail(fmt::format("scan output {} must be a tensor, but it is a {}", k, element.kind_name()));
                scans[k].push_back(element.tensor());
            }
        }
        for (std::size_t i = 0; i < carried_; ++i) context.set_output_value(i, std::move(inputs[i + 2]));
        for (std::size_t k = 0; k < scans.size(); ++k)
            context.set_output(carried_ + k, stack_elements(node, scans[k], 0, scan_types_[k]));
    }

private:
    std::unique_ptr<Subgraph> body_;
    std::size_t carried_ = 0;
    std::vector<DataType> scan_types_;
};

// ---- Scan --------------------------------------------------------------------------------------------

class ScanKernel final : public Kernel {
public:
    explicit ScanKernel(const NodeInfo& node) : body_(node.subgraph("body")), batched_(node.opset() < 9) {
        num_scan_inputs_ = node.attr_int("num_scan_inputs", -1);
        const int64_t inputs = node.proto().input_size() - (batched_ ? 1 : 0);
        if (num_scan_inputs_ < 1 || num_scan_inputs_ > inputs)
            node.fail(
                fmt::format("attribute 'num_scan_inputs' must be in [1, {}], but it is {}", inputs, num_scan_inputs_));
        num_states_ = inputs - num_scan_inputs_;
        if (static_cast<int64_t>(body_->input_names().size()) != inputs)
            node.fail(fmt::format("body must take {} inputs, but it takes {}", inputs, body_->input_names().size()));
        if (body_->output_names().size() != static_cast<std::size_t>(node.proto().output_size()))
            node.fail(fmt::format("body has {} outputs, but the node has {}", body_->output_names().size(),
                                  node.proto().output_size()));
        num_scan_outputs_ = node.proto().output_size() - num_states_;
        if (num_scan_outputs_ < 0)
            node.fail(fmt::format("the node has {} outputs, fewer than its {} state variables",
                                  node.proto().output_size(), num_states_));
        auto directions = [&](std::string_view name, int64_t count) {
            std::vector<int64_t> values = node.attr_ints(name, std::vector<int64_t>(count, 0));
            if (static_cast<int64_t>(values.size()) != count)
                node.fail(fmt::format("attribute '{}' must have {} values, but it has {}", name, count, values.size()));
            for (int64_t value : values)
                if (value != 0 && value != 1)
                    node.fail(fmt::format("attribute '{}' values must be 0 (forward) or 1 (reverse), but one is {}",
                                          name, value));
            return values;
        };
        auto axes = [&](std::string_view name, int64_t count) {
            std::vector<int64_t> values = node.attr_ints(name, std::vector<int64_t>(count, 0));
            if (static_cast<int64_t>(values.size()) != count)
                node.fail(fmt::format("attribute '{}' must have {} values, but it has {}", name, count, values.size()));
            return values;
        };
        if (batched_) {
            input_directions_ = directions("directions", num_scan_inputs_);
            input_axes_.assign(num_scan_inputs_, 0);
            output_directions_.assign(num_scan_outputs_, 0);
            output_axes_.assign(num_scan_outputs_, 0);
        } else {
            input_directions_ = directions("scan_input_directions", num_scan_inputs_);
            output_directions_ = directions("scan_output_directions", num_scan_outputs_);
            input_axes_ = axes("scan_input_axes", num_scan_inputs_);
            output_axes_ = axes("scan_output_axes", num_scan_outputs_);
        }
        for (int64_t k = 0; k < num_scan_outputs_; ++k)
            output_types_.push_back(declared_output_type(node, "body", static_cast<int>(num_states_ + k)));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const std::size_t first = batched_ ? 1 : 0;
        std::vector<Value> states;
        std::vector<Tensor> scans;
        for (int64_t i = 0; i < num_states_; ++i) {
            Value state = context.input_value(first + i);
            if (!state.defined()) node.fail(fmt::format("state input {} is missing", first + i));
            states.push_back(std::move(state));
        }
        for (int64_t j = 0; j < num_scan_inputs_; ++j) scans.push_back(context.required_input(first + num_states_ + j));

        std::vector<Value> results;
        if (!batched_) {
            results = scan(context, states, scans);
        } else {
            // Opset 8: axis 0 of every input is the batch; each batch row is scanned on its own.
            int64_t batch = -1;
            auto check_batch = [&](const Tensor& tensor, std::string_view what) {
                if (tensor.rank() < 1) node.fail(fmt::format("{} must have a batch axis, but it is a scalar", what));
                if (batch >= 0 && tensor.shape()[0] != batch)
                    node.fail(
                        fmt::format("{} has batch size {}, but another input has {}", what, tensor.shape()[0], batch));
                batch = tensor.shape()[0];
            };
            for (const Value& state : states) {
                if (!state.is_tensor()) node.fail("state inputs must be tensors");
                check_batch(state.tensor(), "state input");
            }
            for (const Tensor& input : scans) check_batch(input, "scan input");
            if (const Tensor* lengths = context.input(0); lengths && lengths->defined()) {
                const std::vector<int64_t> values = read_ints(node, *lengths, "sequence_lens");
                for (int64_t length : values)
                    if (length != scans.front().shape().at(1))
                        throw UnsupportedError(fmt::format(
                            "Node '{}' (Scan): sequence_lens shorter than the scanned axis ({} < {}) are not supported",
                            node.name(), length, scans.front().shape().at(1)));
            }
            std::vector<std::vector<Tensor>> per_output(static_cast<std::size_t>(context.num_outputs()));
            for (int64_t b = 0; b < batch; ++b) {
                std::vector<Value> row_states;
                std::vector<Tensor> row_scans;
                for (const Value& state : states) row_states.push_back(take_along_axis(state.tensor(), 0, b));
                for (const Tensor& input : scans) row_scans.push_back(take_along_axis(input, 0, b));
                std::vector<Value> row = scan(context, row_states, row_scans);
                for (std::size_t k = 0; k < row.size(); ++k) per_output[k].push_back(row[k].tensor());
            }
            for (std::size_t k = 0; k < per_output.size(); ++k)
                results.push_back(stack_elements(
                    node, per_output[k], 0,
                    k < static_cast<std::size_t>(num_states_) ? DataType::kFloat32 : output_types_[k - num_states_]));
        }
        for (std::size_t k = 0; k < results.size(); ++k) context.set_output_value(k, std::move(results[k]));
    }

private:
    // One scan over unbatched inputs: returns the final states, then the scan outputs.
    std::vector<Value> scan(const KernelContext& context, std::vector<Value> states,
                            const std::vector<Tensor>& inputs) const {
        const NodeInfo& node = context.node();
        std::vector<int64_t> axes;
        int64_t length = -1;
        for (std::size_t j = 0; j < inputs.size(); ++j) {
            const int64_t axis = normalize_axis(node, input_axes_[j], inputs[j].rank(), "scan input axis");
            const int64_t size = inputs[j].shape()[axis];
            if (length >= 0 && size != length)
                node.fail(fmt::format("scan inputs have different sequence lengths ({} and {})", length, size));
            length = size;
            axes.push_back(axis);
        }
        std::vector<std::vector<Tensor>> outputs(static_cast<std::size_t>(num_scan_outputs_));
        std::vector<Value> body_inputs(states.size() + inputs.size());
        for (int64_t t = 0; t < length; ++t) {
            for (std::size_t i = 0; i < states.size(); ++i) body_inputs[i] = states[i];
            for (std::size_t j = 0; j < inputs.size(); ++j)
                body_inputs[states.size() + j] =
                    take_along_axis(inputs[j], axes[j], input_directions_[j] ? length - 1 - t : t);
            std::vector<Value> results = body_->run(body_inputs, context);
            check_outputs(node, results, states.size() + outputs.size(), "body");
            for (std::size_t i = 0; i < states.size(); ++i) states[i] = std::move(results[i]);
            for (std::size_t k = 0; k < outputs.size(); ++k) {
                const Value& element = results[states.size() + k];
                if (!element.is_tensor())
                    node.fail(fmt::format("scan output {} must be a tensor, but it is a {}", k, element.kind_name()));
                outputs[k].push_back(element.tensor());
            }
        }
        std::vector<Value> results = std::move(states);
        for (std::size_t k = 0; k < outputs.size(); ++k) {
            if (output_directions_[k]) std::reverse(outputs[k].begin(), outputs[k].end());
            results.push_back(stack_elements(node, outputs[k], output_axes_[k], output_types_[k]));
        }
        return results;
    }

    std::unique_ptr<Subgraph> body_;
    bool batched_;
    int64_t num_scan_inputs_ = 0, num_states_ = 0, num_scan_outputs_ = 0;
    std::vector<int64_t> input_directions_, output_directions_, input_axes_, output_axes_;
    std::vector<DataType> output_types_;
};

// ---- SequenceMap -------------------------------------------------------------------------------------

class SequenceMapKernel final : public Kernel {
public:
    explicit SequenceMapKernel(const NodeInfo& node) : body_(node.subgraph("body")) {
        if (body_->input_names().size() != static_cast<std::size_t>(node.proto().input_size()))
            node.fail(fmt::format("body must take {} inputs (one per node input), but it takes {}",
                                  node.proto().input_size(), body_->input_names().size()));
        if (body_->output_names().size() != static_cast<std::size_t>(node.proto().output_size()))
            node.fail(fmt::format("body has {} outputs, but the node has {}", body_->output_names().size(),
                                  node.proto().output_size()));
        for (int k = 0; k < node.proto().output_size(); ++k)
            output_types_.push_back(declared_output_type(node, "body", k));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        std::vector<Value> inputs;
        for (std::size_t j = 0; j < static_cast<std::size_t>(node.proto().input_size()); ++j)
            inputs.push_back(context.input_value(j));
        if (!inputs[0].is_sequence())
            node.fail(fmt::format("input 0 must be a sequence, but it is a {}", inputs[0].kind_name()));
        const std::size_t length = inputs[0].elements().size();
        for (std::size_t j = 1; j < inputs.size(); ++j) {
            if (inputs[j].is_sequence() && inputs[j].elements().size() != length)
                node.fail(fmt::format("input {} is a sequence of length {}, but input 0 has length {}", j,
                                      inputs[j].elements().size(), length));
            if (!inputs[j].is_sequence() && !inputs[j].is_tensor())
                node.fail(
                    fmt::format("input {} must be a sequence or a tensor, but it is a {}", j, inputs[j].kind_name()));
        }
        std::vector<std::vector<Tensor>> outputs(context.num_outputs());
        std::vector<Value> body_inputs(inputs.size());
        for (std::size_t i = 0; i < length; ++i) {
            for (std::size_t j = 0; j < inputs.size(); ++j)
                body_inputs[j] = inputs[j].is_sequence() ? Value(inputs[j].elements()[i]) : inputs[j];
            std::vector<Value> results = body_->run(body_inputs, context);
            check_outputs(node, results, outputs.size(), "body");
            for (std::size_t k = 0; k < outputs.size(); ++k) {
                if (!results[k].is_tensor())
                    node.fail(
                        fmt::format("body output {} must be a tensor, but it is a {}", k, results[k].kind_name()));
                outputs[k].push_back(results[k].tensor());
            }
        }
        for (std::size_t k = 0; k < outputs.size(); ++k) {
            DataType type = outputs[k].empty() ? output_types_[k] : outputs[k].front().dtype();
            if (type == DataType::kUndefined) type = DataType::kFloat32;
            context.set_output_value(k, Value::sequence(type, std::move(outputs[k])));
        }
    }

private:
    std::unique_ptr<Subgraph> body_;
    std::vector<DataType> output_types_;
};

}  // namespace

void register_control_flow_ops(OpRegistry& registry) {
    registry.add("", "If", 1, kMaxOpset, make_factory<IfKernel>());
    registry.add("", "Loop", 1, kMaxOpset, make_factory<LoopKernel>());
    registry.add("", "Scan", 8, kMaxOpset, make_factory<ScanKernel>());
    registry.add("", "SequenceMap", 17, kMaxOpset, make_factory<SequenceMapKernel>());
}

}  // namespace polygraphy::ref
