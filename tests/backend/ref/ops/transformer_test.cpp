// ONNX Runtime's transformer fusions (com.microsoft EmbedLayerNormalization, RotaryEmbedding) against
// its own CPU kernels.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

using ::testing::HasSubstr;

/// int32 values in [0, limit) of `shape`, deterministic in `seed`.
Tensor int32_ids(const Shape& shape, int64_t limit, uint32_t seed) {
    const Tensor uniform = random_tensor(shape, seed, 0.0f, static_cast<float>(limit) - 0.01f);
    std::vector<double> values;
    for (int64_t i = 0; i < uniform.numel(); ++i) values.push_back(std::floor(uniform.value_as_double(i)));
    return Tensor::from_doubles(DataType::kInt32, shape, values);
}

struct EmbedCase {
    bool segments = true;
    bool mask = true;
    Shape position_ids = {};  ///< empty: no position_ids input
    bool all_outputs = true;  ///< false: output and mask_index (ONNX Runtime's type inference needs mask_index)
    float epsilon = 0.0f;     ///< 0: the attribute is left out
};

void expect_embed_layer_norm_matches_onnxrt(const EmbedCase& c) {
    const int64_t batch = 2, sequence = 5, hidden = 8, vocab = 30, positions = 12;
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    builder.input("ids", DataType::kInt32, Shape{batch, sequence});
    TensorMap feed;
    feed.set("ids", int32_ids({batch, sequence}, vocab, 1));
    std::vector<std::string> inputs = {
        "ids", c.segments ? "segments" : "", "word", "position", c.segments ? "segment_table" : "", "gamma", "beta"};
    if (c.segments) {
        builder.input("segments", DataType::kInt32, Shape{batch, sequence});
        feed.set("segments", int32_ids({batch, sequence}, 2, 2));
        builder.initializer("segment_table", random_tensor({2, hidden}, 3));
    }
    builder.initializer("word", random_tensor({vocab, hidden}, 4));
    builder.initializer("position", random_tensor({positions, hidden}, 5));
    builder.initializer("gamma", random_tensor({hidden}, 6, 0.5f, 1.5f));
    builder.initializer("beta", random_tensor({hidden}, 7));
    if (c.mask) {
        builder.input("mask", DataType::kInt32, Shape{batch, sequence});
        feed.set("mask", Tensor::from_doubles(DataType::kInt32, {batch, sequence}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1}));
        inputs.push_back("mask");
    }
    if (!c.position_ids.empty()) {
        inputs.resize(8);
        builder.input("position_ids", DataType::kInt32, c.position_ids);
        feed.set("position_ids", int32_ids(c.position_ids, positions, 8));
        inputs.push_back("position_ids");
    }
    std::vector<std::string> outputs = {"y", "mask_index"};
    if (c.all_outputs) outputs.push_back("embedding_sum");
    onnx::NodeProto& node = builder.node("EmbedLayerNormalization", inputs, outputs, "embed", "com.microsoft");
    if (c.epsilon != 0.0f) set_attr(node, "epsilon", c.epsilon);
    builder.output("y", DataType::kFloat32, Shape{batch, sequence, hidden});
    builder.output("mask_index", DataType::kInt32, Shape{batch});
    if (c.all_outputs) builder.output("embedding_sum", DataType::kFloat32, Shape{batch, sequence, hidden});
    expect_matches_onnxrt(builder, feed, 1e-5, 1e-5);
}

TEST(EmbedLayerNormalization, SegmentsMaskPositionIdsAndEveryOutputMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_embed_layer_norm_matches_onnxrt({});
    EmbedCase without_segments;
    without_segments.segments = false;
    without_segments.epsilon = 1e-5f;
    expect_embed_layer_norm_matches_onnxrt(without_segments);
    EmbedCase shared_positions;
    shared_positions.position_ids = {1, 5};
    expect_embed_layer_norm_matches_onnxrt(shared_positions);
    EmbedCase own_positions;
    own_positions.position_ids = {2, 5};
    own_positions.mask = false;
    expect_embed_layer_norm_matches_onnxrt(own_positions);
    EmbedCase output_only;
    output_only.all_outputs = false;
    expect_embed_layer_norm_matches_onnxrt(output_only);
}

TEST(EmbedLayerNormalization, AnIdPastTheTableIsOneLine) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    builder.input("ids", DataType::kInt32, Shape{1, 2});
    builder.initializer("word", random_tensor({4, 8}, 1));
    builder.initializer("position", random_tensor({4, 8}, 2));
    builder.initializer("gamma", random_tensor({8}, 3));
    builder.initializer("beta", random_tensor({8}, 4));
    builder.node("EmbedLayerNormalization", {"ids", "", "word", "position", "", "gamma", "beta"}, {"y"}, "embed",
                 "com.microsoft");
    builder.output("y", DataType::kFloat32, Shape{1, 2, 8});
    TensorMap feed;
    feed.set("ids", Tensor::from_doubles(DataType::kInt32, {1, 2}, {1, 9}));
    const std::string message = error_message<ModelError>([&] { ref::Session(*builder.build()).run(feed); });
    EXPECT_THAT(message, HasSubstr("input_ids index 9 is out of range for a table of 4 rows"));
    EXPECT_EQ(message.find('\n'), std::string::npos);
}

// ---- RotaryEmbedding -----------------------------------------------------------------------------------------

struct RotaryCase {
    Shape input;             ///< (batch, sequence, hidden) or (batch, heads, sequence, head_size)
    int64_t num_heads = 0;   ///< the attribute (0: left out)
    int64_t rotary_dim = 0;  ///< the attribute (0: left out; the head size)
    int64_t half = 0;        ///< width of the caches
    bool interleaved = false;
    bool position_offset = false;  ///< one position (the first token's) instead of (batch, sequence)
    DataType dtype = DataType::kFloat32;
};

void expect_rotary_matches_onnxrt(const RotaryCase& c) {
    SCOPED_TRACE(::testing::Message() << "input " << shape_to_string(c.input) << " heads " << c.num_heads << " rotary "
                                      << c.rotary_dim << (c.interleaved ? " interleaved" : "")
                                      << (c.position_offset ? " offset" : "") << " " << dtype_name(c.dtype));
    const int64_t batch = c.input[0], sequence = c.input[c.input.size() == 4 ? 2 : 1], max_positions = 16;
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    builder.input("x", c.dtype, c.input);
    const Shape positions_shape = c.position_offset ? Shape{1} : Shape{batch, sequence};
    builder.input("positions", DataType::kInt64, positions_shape);
    std::vector<double> cos, sin;
    for (int64_t p = 0; p < max_positions; ++p)
        for (int64_t i = 0; i < c.half; ++i) {
            const double angle =
                static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / (2.0 * c.half));
            cos.push_back(std::cos(angle));
            sin.push_back(std::sin(angle));
        }
    builder.initializer("cos", Tensor::from_doubles(DataType::kFloat32, {max_positions, c.half}, cos).cast(c.dtype));
    builder.initializer("sin", Tensor::from_doubles(DataType::kFloat32, {max_positions, c.half}, sin).cast(c.dtype));
    onnx::NodeProto& node =
        builder.node("RotaryEmbedding", {"x", "positions", "cos", "sin"}, {"y"}, "rotary", "com.microsoft");
    if (c.num_heads != 0) set_attr(node, "num_heads", c.num_heads);
    if (c.rotary_dim != 0) set_attr(node, "rotary_embedding_dim", c.rotary_dim);
    if (c.interleaved) set_attr(node, "interleaved", int64_t{1});
    builder.output("y", c.dtype, c.input);
    TensorMap feed;
    feed.set("x", random_tensor(c.input, 9).cast(c.dtype));
    std::vector<double> positions;
    if (c.position_offset) {
        positions.push_back(3);
    } else {
        for (int64_t i = 0; i < batch * sequence; ++i)
            positions.push_back(static_cast<double>((i * 7) % max_positions));
    }
    feed.set("positions", Tensor::from_doubles(DataType::kInt64, positions_shape, positions));
    const double tolerance = c.dtype == DataType::kFloat16 ? 2e-3 : 1e-6;
    expect_matches_onnxrt(builder, feed, tolerance, tolerance);
}

TEST(RotaryEmbedding, HalvesAndInterleavedPairsInBothLayoutsMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (bool interleaved : {false, true}) {
        RotaryCase flat;  // (batch, sequence, heads * head_size)
        flat.input = {2, 3, 32};
        flat.num_heads = 4;
        flat.half = 4;
        flat.interleaved = interleaved;
        expect_rotary_matches_onnxrt(flat);
        RotaryCase heads_first = flat;  // (batch, heads, sequence, head_size)
        heads_first.input = {2, 4, 3, 8};
        heads_first.num_heads = 0;
        heads_first.position_offset = true;
        expect_rotary_matches_onnxrt(heads_first);
    }
}

TEST(RotaryEmbedding, PartialRotaryDimensionsAndFloat16MatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    RotaryCase partial;  // only the first 8 of 16 dimensions of each head rotate
    partial.input = {1, 5, 32};
    partial.num_heads = 2;
    partial.rotary_dim = 8;
    partial.half = 4;
    expect_rotary_matches_onnxrt(partial);
    RotaryCase half = partial;
    half.dtype = DataType::kFloat16;
    expect_rotary_matches_onnxrt(half);
}

TEST(RotaryEmbedding, APositionPastTheCacheIsOneLine) {
    const std::string message = error_message<ModelError>([] {
        OpTester("RotaryEmbedding", 17, "com.microsoft")
            .input(random_tensor({1, 2, 8}, 1))
            .input(Tensor::from_doubles(DataType::kInt64, {1}, {3}))
            .input(random_tensor({4, 4}, 2))
            .input(random_tensor({4, 4}, 3))
            .run();
    });
    EXPECT_THAT(message, HasSubstr("position_ids index 4 is out of range for a table of 4 rows"));
}

}  // namespace
}  // namespace polygraphy::testing
