// ONNX Runtime's transformer fusions (com.microsoft), as its optimizer writes them for BERT- and
// LLaMA-shaped models: EmbedLayerNormalization (the three embedding lookups, their sum and a
// LayerNormalization in one node) and RotaryEmbedding (rotary position embedding of queries or
// keys, interleaved or in halves). float32 and float16 (computed in float32).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

bool is_float_activation(DataType dtype) {
    return dtype == DataType::kFloat32 || dtype == DataType::kFloat16;
}

Tensor as_float32(const Tensor& tensor) {
    return tensor.dtype() == DataType::kFloat32 ? tensor : tensor.cast(DataType::kFloat32);
}

/// Input `index` as an int32 tensor, or fails naming it.
const Tensor& int32_input(const NodeInfo& node, const Tensor& tensor, const char* name) {
    if (tensor.dtype() != DataType::kInt32)
        node.fail(fmt::format("input {} must be int32, but it is {}", name, dtype_name(tensor.dtype())));
    return tensor;
}

/// A 2-D float table (rows of `width`) of `dtype`, or fails naming it.
Tensor table_input(const NodeInfo& node, const Tensor& tensor, const char* name, DataType dtype, int64_t width) {
    if (tensor.dtype() != dtype || tensor.rank() != 2 || (width >= 0 && tensor.shape()[1] != width))
        node.fail(fmt::format("input {} must be a 2-D {} table{}, but it is {} of shape {}", name, dtype_name(dtype),
                              width >= 0 ? fmt::format(" of rows of {}", width) : std::string(),
                              dtype_name(tensor.dtype()), shape_to_string(tensor.shape())));
    return as_float32(tensor);
}

/// Row `row` of `table` (rows of `width`), or fails naming the index when it is out of range.
const float* row_of(const NodeInfo& node, const Tensor& table, int64_t row, const char* name) {
    if (row < 0 || row >= table.shape()[0])
        node.fail(fmt::format("{} index {} is out of range for a table of {} rows", name, row, table.shape()[0]));
    return table.data_as<float>() + row * table.shape()[1];
}

// ---- EmbedLayerNormalization ---------------------------------------------------------------------------------
// Inputs: input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma, beta,
// mask?, position_ids?; outputs: output, mask_index?, embedding_sum?.

class EmbedLayerNormalizationKernel final : public Kernel {
public:
    explicit EmbedLayerNormalizationKernel(const NodeInfo& node) : epsilon_(node.attr_float("epsilon", 1e-12f)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& ids = int32_input(node, context.required_input(0), "input_ids");
        if (ids.rank() != 2)
            node.fail(fmt::format("input input_ids must be 2-D (batch, sequence), but it has shape {}",
                                  shape_to_string(ids.shape())));
        const int64_t batch = ids.shape()[0], sequence = ids.shape()[1];
        const Tensor& word0 = context.required_input(2);
        const DataType dtype = word0.dtype();
        if (!is_float_activation(dtype))
            node.fail(fmt::format("word_embedding must be float32 or float16, but it is {}", dtype_name(dtype)));
        const int64_t hidden = word0.rank() == 2 ? word0.shape()[1] : -1;
        const Tensor word = table_input(node, word0, "word_embedding", dtype, -1);
        const Tensor position = table_input(node, context.required_input(3), "position_embedding", dtype, hidden);
        const Tensor* segment_ids = context.input(1);
        const Tensor* segment_table = context.input(4);
        if ((segment_ids != nullptr && segment_ids->defined()) !=
            (segment_table != nullptr && segment_table->defined()))
            node.fail("segment_ids and segment_embedding must be given together");
        Tensor segment;
        if (segment_table != nullptr && segment_table->defined()) {
            segment = table_input(node, *segment_table, "segment_embedding", dtype, hidden);
            if (int32_input(node, *segment_ids, "segment_ids").shape() != ids.shape())
                node.fail(fmt::format("input segment_ids of shape {} must have input_ids' shape {}",
                                      shape_to_string(segment_ids->shape()), shape_to_string(ids.shape())));
        }
        const Tensor gamma = vector_input(node, context.required_input(5), "gamma", dtype, hidden);
        const Tensor beta = vector_input(node, context.required_input(6), "beta", dtype, hidden);
        const Tensor* mask = context.input(7);
        if (mask != nullptr && mask->defined() && int32_input(node, *mask, "mask").shape() != ids.shape())
            node.fail(fmt::format("input mask of shape {} must have input_ids' shape {}",
                                  shape_to_string(mask->shape()), shape_to_string(ids.shape())));
        const Tensor* position_ids = context.input(8);
        if (position_ids != nullptr && position_ids->defined()) {
            const Shape& shape = int32_input(node, *position_ids, "position_ids").shape();
            if (shape.size() != 2 || (shape[0] != batch && shape[0] != 1) || shape[1] != sequence)
                node.fail(fmt::format("input position_ids must have shape ({}, {}) or (1, {}), but it has shape {}",
                                      batch, sequence, sequence, shape_to_string(shape)));
        } else {
            position_ids = nullptr;
        }

        Tensor out(DataType::kFloat32, {batch, sequence, hidden});
        Tensor sum(DataType::kFloat32, {batch, sequence, hidden});
        const int32_t* id = ids.data_as<int32_t>();
        for (int64_t b = 0; b < batch; ++b) {
            for (int64_t s = 0; s < sequence; ++s) {
                const int64_t at = b * sequence + s;
                const int64_t position_row =
                    position_ids == nullptr
                        ? s
                        : position_ids->data_as<int32_t>()[(position_ids->shape()[0] == 1 ? 0 : b) * sequence + s];
                const float* w = row_of(node, word, id[at], "input_ids");
                const float* p = row_of(node, position, position_row, "position_ids");
                const float* g = segment.defined()
                                     ? row_of(node, segment, segment_ids->data_as<int32_t>()[at], "segment_ids")
                                     : nullptr;
                float* y = sum.data_as<float>() + at * hidden;
                double total = 0.0;
                for (int64_t h = 0; h < hidden; ++h) {
                    y[h] = w[h] + p[h] + (g != nullptr ? g[h] : 0.0f);
                    total += y[h];
                }
                const double mean = total / static_cast<double>(hidden);
                double squares = 0.0;
                for (int64_t h = 0; h < hidden; ++h) squares += (y[h] - mean) * (y[h] - mean);
                const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + epsilon_);
                float* o = out.data_as<float>() + at * hidden;
                for (int64_t h = 0; h < hidden; ++h)
                    o[h] = static_cast<float>((y[h] - mean) * inverse) * gamma.data_as<float>()[h] +
                           beta.data_as<float>()[h];
            }
        }
        context.set_output(0, out.cast(dtype));
        if (context.num_outputs() > 1) {
            // The number of ones of each row of the mask (0 without a mask), as ONNX Runtime counts it.
            Tensor mask_index(DataType::kInt32, {batch});
            for (int64_t b = 0; b < batch && mask != nullptr && mask->defined(); ++b) {
                int32_t count = 0;
                for (int64_t s = 0; s < sequence; ++s) count += mask->data_as<int32_t>()[b * sequence + s] != 0 ? 1 : 0;
                mask_index.data_as<int32_t>()[b] = count;
            }
            context.set_output(1, std::move(mask_index));
        }
        if (context.num_outputs() > 2) context.set_output(2, sum.cast(dtype));
    }

private:
    static Tensor vector_input(const NodeInfo& node, const Tensor& tensor, const char* name, DataType dtype,
                               int64_t size) {
        if (tensor.dtype() != dtype || tensor.rank() != 1 || tensor.numel() != size)
            node.fail(fmt::format("input {} must be a 1-D {} of {} values, but it is {} of shape {}", name,
                                  dtype_name(dtype), size, dtype_name(tensor.dtype()),
                                  shape_to_string(tensor.shape())));
        return as_float32(tensor);
    }

    float epsilon_;
};

// ---- RotaryEmbedding ---------------------------------------------------------------------------------------
// Inputs: input (batch, sequence, heads * head_size) or (batch, heads, sequence, head_size); position_ids
// (batch, sequence), or one value: the position of the first token; cos_cache and sin_cache
// (max_position, rotary_embedding_dim / 2).

class RotaryEmbeddingKernel final : public Kernel {
public:
    explicit RotaryEmbeddingKernel(const NodeInfo& node)
        : interleaved_(node.attr_int("interleaved", 0) != 0),
          num_heads_(node.attr_int("num_heads", 0)),
          rotary_dim_(node.attr_int("rotary_embedding_dim", 0)) {
        if (node.attr_int("is_packed_batching", 0) != 0)
            node.fail("is_packed_batching is not supported (ONNX Runtime's CPU kernel does not run it either)");
        if (num_heads_ < 0 || rotary_dim_ < 0)
            node.fail(fmt::format("attributes num_heads ({}) and rotary_embedding_dim ({}) must not be negative",
                                  num_heads_, rotary_dim_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& input = context.required_input(0);
        const DataType dtype = input.dtype();
        if (!is_float_activation(dtype))
            node.fail(fmt::format("input must be float32 or float16, but it is {}", dtype_name(dtype)));
        const Tensor& positions = context.required_input(1);
        if (positions.dtype() != DataType::kInt64)
            node.fail(fmt::format("input position_ids must be int64, but it is {}", dtype_name(positions.dtype())));
        const Tensor cos = table_input(node, context.required_input(2), "cos_cache", dtype, -1);
        const Tensor sin = table_input(node, context.required_input(3), "sin_cache", dtype, cos.shape()[1]);
        if (sin.shape() != cos.shape())
            node.fail(fmt::format("cos_cache {} and sin_cache {} must have one shape", shape_to_string(cos.shape()),
                                  shape_to_string(sin.shape())));
        if (input.rank() != 3 && input.rank() != 4)
            node.fail(
                fmt::format("input must be 3-D (batch, sequence, hidden) or 4-D (batch, heads, sequence, "
                            "head_size), but it has shape {}",
                            shape_to_string(input.shape())));
        const bool heads_first = input.rank() == 4;
        const int64_t batch = input.shape()[0], sequence = input.shape()[heads_first ? 2 : 1];
        const int64_t half = cos.shape()[1];
        const int64_t rotary = rotary_dim_ > 0 ? rotary_dim_ : 2 * half;
        int64_t heads = 0, head_size = 0;
        if (heads_first) {
            heads = input.shape()[1];
            head_size = input.shape()[3];
        } else {
            const int64_t hidden = input.shape()[2];
            head_size = num_heads_ > 0 ? hidden / num_heads_ : rotary;
            heads = head_size > 0 ? hidden / head_size : 0;
            if (head_size <= 0 || heads * head_size != hidden)
                node.fail(fmt::format("hidden size {} is not a whole number of heads of {} (num_heads {})", hidden,
                                      head_size, num_heads_));
        }
        if (rotary != 2 * half || rotary > head_size)
            node.fail(
                fmt::format("rotary_embedding_dim {} must be twice cos_cache's width ({}) and at most the head "
                            "size {}",
                            rotary, half, head_size));
        if (positions.numel() != 1 && positions.shape() != Shape{batch, sequence})
            node.fail(fmt::format("input position_ids must have shape ({}, {}) or hold one value, but it has shape {}",
                                  batch, sequence, shape_to_string(positions.shape())));

        const Tensor x = as_float32(input);
        Tensor y = Tensor::uninitialized(DataType::kFloat32, x.shape());
        const float* in = x.data_as<float>();
        float* out = y.data_as<float>();
        const int64_t* position = positions.data_as<int64_t>();
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t s = 0; s < sequence; ++s) {
                const int64_t pos = positions.numel() == 1 ? position[0] + s : position[b * sequence + s];
                const float* c = row_of(node, cos, pos, "position_ids");
                const float* n = row_of(node, sin, pos, "position_ids");
                for (int64_t h = 0; h < heads; ++h) {
                    const int64_t offset = heads_first ? ((b * heads + h) * sequence + s) * head_size
                                                       : ((b * sequence + s) * heads + h) * head_size;
                    rotate(in + offset, out + offset, c, n, half, head_size);
                }
            }
        context.set_output(0, dtype == DataType::kFloat32 ? std::move(y) : y.cast(dtype));
    }

private:
    // One head: pairs (i, i + half) or, interleaved, (2i, 2i + 1) rotated by the position's angles;
    // the dimensions past the rotary ones are copied.
    void rotate(const float* x, float* y, const float* cos, const float* sin, int64_t half, int64_t head_size) const {
        for (int64_t i = 0; i < half; ++i) {
            const int64_t first = interleaved_ ? 2 * i : i, second = interleaved_ ? 2 * i + 1 : i + half;
            const float a = x[first], b = x[second];
            y[first] = a * cos[i] - b * sin[i];
            y[second] = b * cos[i] + a * sin[i];
        }
        for (int64_t i = 2 * half; i < head_size; ++i) y[i] = x[i];
    }

    bool interleaved_;
    int64_t num_heads_, rotary_dim_;
};

}  // namespace

void register_transformer_ops(OpRegistry& registry) {
    registry.add(kMicrosoftDomain, "EmbedLayerNormalization", 1, kMaxOpset,
                 make_factory<EmbedLayerNormalizationKernel>());
    registry.add(kMicrosoftDomain, "RotaryEmbedding", 1, kMaxOpset, make_factory<RotaryEmbeddingKernel>());
}

}  // namespace polygraphy::ref
