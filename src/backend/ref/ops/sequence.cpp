// Sequence and optional values: SequenceEmpty/Construct/Insert/Erase/At/Length, SplitToSequence,
// ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement. Sequences are
// immutable lists of shared tensors (Value::sequence), so inserting copies pointers, not data.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/axis_util.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

Value sequence_input(const KernelContext& context, std::size_t index) {
    Value value = context.input_value(index);
    if (!value.is_sequence())
        context.node().fail(fmt::format("input {} must be a sequence, but it is a {}", index, value.kind_name()));
    return value;
}

// Position input (scalar int32/int64) normalized against `size`; `allow_end` admits `size` itself.
std::size_t position_of(const NodeInfo& node, const Tensor& position, std::size_t size, bool allow_end) {
    require_scalar(node, position, "position");
    const int64_t raw = read_ints(node, position, "position")[0];
    const auto count = static_cast<int64_t>(size);
    const int64_t high = allow_end ? count : count - 1;
    if (raw < -count || raw > high)
        node.fail(fmt::format("position {} is out of range for a sequence of length {} (expected a value in [{}, {}])",
                              raw, size, -count, high));
    return static_cast<std::size_t>(raw < 0 ? raw + count : raw);
}

void check_element_type(const NodeInfo& node, const Value& sequence, const Tensor& tensor) {
    if (sequence.element_type() != DataType::kUndefined && tensor.dtype() != sequence.element_type())
        node.fail(fmt::format("tensor of data type {} cannot join a sequence of {}", dtype_name(tensor.dtype()),
                              dtype_name(sequence.element_type())));
}

class SequenceEmptyKernel final : public Kernel {
public:
    explicit SequenceEmptyKernel(const NodeInfo& node) {
        dtype_ = dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 1)));
        if (dtype_ == DataType::kUndefined)
            node.fail(fmt::format("attribute 'dtype' {} is not a tensor data type", node.attr_int("dtype", 1)));
    }
    void compute(KernelContext& context) const override { context.set_output_value(0, Value::sequence(dtype_, {})); }

private:
    DataType dtype_;
};

class SequenceConstructKernel final : public Kernel {
public:
    explicit SequenceConstructKernel(const NodeInfo& node) {
        if (node.proto().input_size() < 1) node.fail("needs at least one input");
    }
    void compute(KernelContext& context) const override {
        std::vector<Tensor> elements;
        for (std::size_t i = 0; i < context.num_inputs(); ++i) {
            const Tensor& tensor = context.required_input(i);
            if (tensor.dtype() != context.required_input(0).dtype())
                context.node().fail(fmt::format("inputs must share one data type, but input {} is {} and input 0 is {}",
                                                i, dtype_name(tensor.dtype()),
                                                dtype_name(context.required_input(0).dtype())));
            elements.push_back(tensor);
        }
        const DataType dtype = elements.front().dtype();
        context.set_output_value(0, Value::sequence(dtype, std::move(elements)));
    }
};

class SequenceInsertKernel final : public Kernel {
public:
    explicit SequenceInsertKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Value sequence = sequence_input(context, 0);
        const Tensor& tensor = context.required_input(1);
        check_element_type(node, sequence, tensor);
        std::vector<Tensor> elements = sequence.elements();
        const Tensor* position = context.input(2);
        const std::size_t at =
            position && position->defined() ? position_of(node, *position, elements.size(), true) : elements.size();
        elements.insert(elements.begin() + static_cast<std::ptrdiff_t>(at), tensor);
        context.set_output_value(0, Value::sequence(tensor.dtype(), std::move(elements)));
    }
};

class SequenceEraseKernel final : public Kernel {
public:
    explicit SequenceEraseKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Value sequence = sequence_input(context, 0);
        std::vector<Tensor> elements = sequence.elements();
        if (elements.empty()) node.fail("cannot erase from an empty sequence");
        const Tensor* position = context.input(1);
        const std::size_t at = position && position->defined() ? position_of(node, *position, elements.size(), false)
                                                               : elements.size() - 1;
        elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(at));
        context.set_output_value(0, Value::sequence(sequence.element_type(), std::move(elements)));
    }
};

class SequenceAtKernel final : public Kernel {
public:
    explicit SequenceAtKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const Value sequence = sequence_input(context, 0);
        const std::size_t at =
            position_of(context.node(), context.required_input(1), sequence.elements().size(), false);
        context.set_output(0, sequence.elements()[at]);
    }
};

class SequenceLengthKernel final : public Kernel {
public:
    explicit SequenceLengthKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const Value sequence = sequence_input(context, 0);
        Tensor& length = context.allocate_output(0, DataType::kInt64, {});
        *length.data_as<int64_t>() = static_cast<int64_t>(sequence.elements().size());
    }
};

class SplitToSequenceKernel final : public Kernel {
public:
    explicit SplitToSequenceKernel(const NodeInfo& node)
        : axis_(node.attr_int("axis", 0)), keepdims_(node.attr_int("keepdims", 1)) {
        if (keepdims_ != 0 && keepdims_ != 1)
            node.fail(fmt::format("attribute 'keepdims' must be 0 or 1, but it is {}", keepdims_));
    }
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& input = context.required_input(0);
        if (input.rank() < 1) node.fail("input must have rank 1 or more, but it is a scalar");
        const int64_t axis = normalize_axis(node, axis_, input.rank());
        const int64_t dim = input.shape()[axis];
        std::vector<int64_t> sizes;
        const Tensor* split = context.input(1);
        const bool squeeze = !(split && split->defined()) && keepdims_ == 0;
        if (!(split && split->defined())) {
            sizes.assign(static_cast<std::size_t>(dim), 1);
        } else if (split->rank() == 0) {
            const int64_t chunk = read_ints(node, *split, "split")[0];
            if (chunk <= 0) node.fail(fmt::format("split size must be positive, but it is {}", chunk));
            for (int64_t start = 0; start < dim; start += chunk) sizes.push_back(std::min(chunk, dim - start));
        } else {
            require_1d(node, *split, "split");
            sizes = read_ints(node, *split, "split");
            int64_t total = 0;
            for (int64_t size : sizes) {
                if (size < 0) node.fail(fmt::format("split sizes must not be negative, but one is {}", size));
                total = checked_add(node, total, size);
            }
            if (total != dim)
                node.fail(fmt::format("split sizes add up to {}, but axis {} has size {}", total, axis, dim));
        }
        std::vector<Tensor> elements;
        int64_t start = 0;
        for (int64_t size : sizes) {
            if (squeeze) {
                elements.push_back(take_along_axis(input, axis, start));
            } else {
                std::vector<Tensor> rows;
                Shape shape = input.shape();
                shape[axis] = size;
                for (int64_t i = 0; i < size; ++i) rows.push_back(take_along_axis(input, axis, start + i));
                elements.push_back(rows.empty() ? Tensor(input.dtype(), shape)
                                                : concat_along_axis(node, rows, axis, true));
            }
            start += size;
        }
        context.set_output_value(0, Value::sequence(input.dtype(), std::move(elements)));
    }

private:
    int64_t axis_, keepdims_;
};

class ConcatFromSequenceKernel final : public Kernel {
public:
    explicit ConcatFromSequenceKernel(const NodeInfo& node) : new_axis_(node.attr_int("new_axis", 0)) {
        if (!node.has_attr("axis")) node.fail("attribute 'axis' is required");
        axis_ = node.attr_int("axis", 0);
        if (new_axis_ != 0 && new_axis_ != 1)
            node.fail(fmt::format("attribute 'new_axis' must be 0 or 1, but it is {}", new_axis_));
    }
    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Value sequence = sequence_input(context, 0);
        const std::vector<Tensor>& elements = sequence.elements();
        if (elements.empty()) node.fail("cannot concatenate an empty sequence");
        const int64_t rank = elements.front().rank() + new_axis_;
        const int64_t axis = normalize_axis(node, axis_, rank);
        context.set_output(0, concat_along_axis(node, elements, axis, new_axis_ == 1));
    }

private:
    int64_t axis_ = 0, new_axis_;
};

// ---- Optional ----------------------------------------------------------------------------------------

class OptionalKernel final : public Kernel {
public:
    explicit OptionalKernel(const NodeInfo& node) {
        if (node.proto().input_size() == 0 || node.proto().input(0).empty()) {
            if (!node.has_attr("type")) node.fail("attribute 'type' is required when the input is omitted");
        }
    }
    void compute(KernelContext& context) const override {
        Value value = context.input_value(0);
        context.set_output_value(0, value.defined() ? std::move(value) : Value::empty_optional());
    }
};

class OptionalHasElementKernel final : public Kernel {
public:
    explicit OptionalHasElementKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        const Value value = context.input_value(0);
        Tensor& result = context.allocate_output(0, DataType::kBool, {});
        *result.data_as<bool>() = value.defined() && !value.is_empty_optional();
    }
};

class OptionalGetElementKernel final : public Kernel {
public:
    explicit OptionalGetElementKernel(const NodeInfo&) {}
    void compute(KernelContext& context) const override {
        Value value = context.input_value(0);
        if (!value.defined() || value.is_empty_optional()) context.node().fail("the optional input holds no element");
        context.set_output_value(0, std::move(value));
    }
};

}  // namespace

void register_sequence_ops(OpRegistry& registry) {
    registry.add("", "SequenceEmpty", 11, kMaxOpset, make_factory<SequenceEmptyKernel>());
    registry.add("", "SequenceConstruct", 11, kMaxOpset, make_factory<SequenceConstructKernel>());
    registry.add("", "SequenceInsert", 11, kMaxOpset, make_factory<SequenceInsertKernel>());
    registry.add("", "SequenceErase", 11, kMaxOpset, make_factory<SequenceEraseKernel>());
    registry.add("", "SequenceAt", 11, kMaxOpset, make_factory<SequenceAtKernel>());
    registry.add("", "SequenceLength", 11, kMaxOpset, make_factory<SequenceLengthKernel>());
    registry.add("", "SplitToSequence", 11, kMaxOpset, make_factory<SplitToSequenceKernel>());
    registry.add("", "ConcatFromSequence", 11, kMaxOpset, make_factory<ConcatFromSequenceKernel>());
    registry.add("", "Optional", 15, kMaxOpset, make_factory<OptionalKernel>());
    registry.add("", "OptionalHasElement", 15, kMaxOpset, make_factory<OptionalHasElementKernel>());
    registry.add("", "OptionalGetElement", 15, kMaxOpset, make_factory<OptionalGetElementKernel>());
}

}  // namespace polygraphy::ref
