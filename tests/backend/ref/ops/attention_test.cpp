// ONNX Runtime's fused attention operators (com.microsoft Attention, MultiHeadAttention,
// GroupQueryAttention) against its own CPU kernels, case by case, and the one-line refusals of what
// the built-in runtime does not implement.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

/// A one-node com.microsoft model: inputs fed in order ("in<i>"; an undefined tensor leaves the input
/// out), outputs "out<i>" (an empty name leaves one out), attributes set on the node.
class AttentionNode {
public:
    explicit AttentionNode(std::string op) : op_(std::move(op)) {}

    AttentionNode& in(Tensor value) {
        inputs_.push_back(std::move(value));
        return *this;
    }
    AttentionNode& none() { return in(Tensor()); }
    template <typename V>
    AttentionNode& attr(const std::string& name, V value) {
        set_attr(attrs_, name, value);
        return *this;
    }
    AttentionNode& attr(const std::string& name, int value) { return attr(name, static_cast<int64_t>(value)); }
    AttentionNode& attr(const std::string& name, double value) { return attr(name, static_cast<float>(value)); }
    /// Which outputs the node names: "1" names it, "0" leaves it out ("101": outputs 0 and 2).
    AttentionNode& outputs(std::string which) {
        outputs_ = std::move(which);
        return *this;
    }

    std::pair<ModelBuilder, TensorMap> build() const {
        ModelBuilder builder(17);
        builder.opset_import("com.microsoft", 1);
        TensorMap feed;
        std::vector<std::string> names;
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            names.push_back(inputs_[i].defined() ? "in" + std::to_string(i) : "");
            if (!inputs_[i].defined()) continue;
            builder.input(names.back(), inputs_[i].dtype(), inputs_[i].shape());
            feed.set(names.back(), inputs_[i]);
        }
        while (!names.empty() && names.back().empty()) names.pop_back();
        std::vector<std::string> outs;
        for (std::size_t i = 0; i < outputs_.size(); ++i)
            outs.push_back(outputs_[i] == '1' ? "out" + std::to_string(i) : "");
        onnx::NodeProto& node = builder.node(op_, names, outs, "attn", "com.microsoft");
        for (const auto& attribute : attrs_.attribute()) *node.add_attribute() = attribute;
        for (const auto& out : outs)
            if (!out.empty()) builder.output(out, inputs_.at(0).dtype(), Shape{}, false);
        return {std::move(builder), std::move(feed)};
    }

    void expect_matches_onnxrt(double rtol = 1e-5, double atol = 1e-5) const {
        auto [builder, feed] = build();
        testing::expect_matches_onnxrt(builder, feed, rtol, atol);
    }

    /// The built-in runtime's outputs, by name.
    TensorMap run() const {
        auto [builder, feed] = build();
        return ref::Session(*builder.build()).run(feed);
    }

    /// The message of the error the built-in runtime gives.
    std::string error() const {
        auto [builder, feed] = build();
        return error_message<PolygraphyException>([&] { ref::Session(*builder.build()).run(feed); });
    }

private:
    std::string op_;
    std::vector<Tensor> inputs_;
    onnx::NodeProto attrs_;
    std::string outputs_ = "1";
};

Tensor ints(Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(DataType::kInt32, std::move(shape), values);
}

Tensor half(const Tensor& t) {
    return t.cast(DataType::kFloat16);
}

/// Expects one line equal to `expected`.
void expect_one_line(const std::string& message, const std::string& expected) {
    EXPECT_EQ(message, expected);
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// ---- Attention ----------------------------------------------------------------------------------------------

constexpr int64_t kBatch = 2, kSeq = 4, kInputHidden = 12, kHeads = 3;

/// Attention over input (2, S, 12) with weights (12, 3 * 12) and bias, num_heads 3 (head size 4).
AttentionNode bert_attention(int64_t seq = kSeq, uint32_t seed = 1) {
    AttentionNode node("Attention");
    node.in(random_tensor({kBatch, seq, kInputHidden}, seed))
        .in(random_tensor({kInputHidden, 3 * kInputHidden}, seed + 1, -0.6f, 0.6f))
        .in(random_tensor({3 * kInputHidden}, seed + 2, -0.3f, 0.3f))
        .attr("num_heads", kHeads);
    return node;
}

TEST(Attention, WithoutAMaskMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    bert_attention().expect_matches_onnxrt();
    bert_attention(1).expect_matches_onnxrt();
    bert_attention().attr("scale", 0.3).expect_matches_onnxrt();
}

TEST(Attention, EveryMaskFormatMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const Tensor raw2d = ints({kBatch, kSeq}, {1, 1, 0, 1, 1, 1, 1, 0});
    const Tensor raw3d = ints({kBatch, kSeq, kSeq}, {1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0,  //
                                                     1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1});
    const Tensor lengths = ints({kBatch}, {3, 2});
    const Tensor ends_and_starts = ints({2 * kBatch}, {4, 3, 1, 0});
    const Tensor dummy = ints({kBatch, 1}, {1, 1});
    for (const Tensor* mask : {&raw2d, &raw3d, &lengths, &ends_and_starts, &dummy}) {
        SCOPED_TRACE(shape_to_string(mask->shape()));
        bert_attention().in(*mask).expect_matches_onnxrt();
        bert_attention().in(*mask).attr("unidirectional", 1).expect_matches_onnxrt();
        bert_attention().in(*mask).attr("mask_filter_value", -500.0).expect_matches_onnxrt();
    }
}

// A row with every key masked: ONNX Runtime adds mask_filter_value to each score, so the softmax sees
// the scores shifted alike. A key both padded and after the query takes mask_filter_value once.
TEST(Attention, RowsWithEveryKeyMaskedMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const Tensor mask = ints({kBatch, kSeq}, {0, 1, 0, 1, 0, 0, 0, 0});
    // Scores near -10000 keep about 3 decimal digits in float32.
    bert_attention().in(mask).attr("unidirectional", 1).expect_matches_onnxrt(2e-3, 2e-3);
    bert_attention().in(mask).expect_matches_onnxrt(2e-3, 2e-3);
    bert_attention().in(mask).attr("mask_filter_value", -5.0).attr("unidirectional", 1).expect_matches_onnxrt();
}

TEST(Attention, PastAndPresentMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const int64_t past = 3;
    const Tensor past_kv = random_tensor({2, kBatch, kHeads, past, kInputHidden / kHeads}, 9);
    for (int64_t seq : {kSeq, int64_t{1}}) {
        SCOPED_TRACE(seq);
        bert_attention(seq).none().in(past_kv).outputs("11").attr("unidirectional", 1).expect_matches_onnxrt();
        bert_attention(seq).none().in(past_kv).outputs("11").expect_matches_onnxrt();
        const Tensor mask = ints({kBatch, past + seq}, std::vector<double>(2 * (past + seq), 1.0));
        Tensor holes = mask.clone();
        holes.data_as<int32_t>()[1] = 0;
        holes.data_as<int32_t>()[past + seq + 2] = 0;
        bert_attention(seq).in(holes).in(past_kv).outputs("11").attr("unidirectional", 1).expect_matches_onnxrt();
        bert_attention(seq).in(ints({kBatch}, {5, 2})).in(past_kv).outputs("11").expect_matches_onnxrt();
    }
    // Without a past, present holds this step's K and V.
    bert_attention().outputs("11").expect_matches_onnxrt();
}

TEST(Attention, AttentionBiasMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (const Shape& shape : {Shape{kBatch, kHeads, kSeq, kSeq}, Shape{1, kHeads, kSeq, kSeq},
                               Shape{kBatch, 1, kSeq, kSeq}, Shape{1, 1, kSeq, kSeq}}) {
        SCOPED_TRACE(shape_to_string(shape));
        const Tensor bias = random_tensor(shape, 11, -2.0f, 2.0f);
        bert_attention().none().none().in(bias).expect_matches_onnxrt();
        bert_attention().in(ints({kBatch}, {3, 4})).none().in(bias).attr("unidirectional", 1).expect_matches_onnxrt();
    }
}

TEST(Attention, QkvHiddenSizesWithASmallerVMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    // Q and K of 6 (3 heads of 2), V of 9 (3 heads of 3), from an input hidden size of 12 (pruned).
    AttentionNode node("Attention");
    node.in(random_tensor({kBatch, kSeq, kInputHidden}, 21))
        .in(random_tensor({kInputHidden, 6 + 6 + 9}, 22, -0.6f, 0.6f))
        .in(random_tensor({6 + 6 + 9}, 23))
        .in(ints({kBatch, kSeq}, {1, 1, 1, 0, 1, 0, 1, 1}))
        .attr("num_heads", kHeads)
        .attr("qkv_hidden_sizes", std::vector<int64_t>{6, 6, 9})
        .attr("unidirectional", 1);
    node.expect_matches_onnxrt();
}

TEST(Attention, Float16MatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const auto half_attention = [] {
        AttentionNode attention("Attention");
        attention.in(half(random_tensor({kBatch, kSeq, kInputHidden}, 1)))
            .in(half(random_tensor({kInputHidden, 3 * kInputHidden}, 2, -0.6f, 0.6f)))
            .in(half(random_tensor({3 * kInputHidden}, 3)))
            .attr("num_heads", kHeads);
        return attention;
    };
    half_attention().expect_matches_onnxrt(2e-3, 2e-3);
    half_attention().in(ints({kBatch}, {4, 3})).attr("unidirectional", 1).expect_matches_onnxrt(2e-3, 2e-3);
    half_attention()
        .none()
        .in(half(random_tensor({2, kBatch, kHeads, 3, kInputHidden / kHeads}, 9)))
        .outputs("11")
        .expect_matches_onnxrt(2e-3, 2e-3);
}

// ---- MultiHeadAttention --------------------------------------------------------------------------------------

constexpr int64_t kHidden = 16, kMhaHeads = 2;  // head size 8

/// MultiHeadAttention of query (2, S, 16) over key (2, L, 16) and value (2, L, v_hidden), with a bias
/// when asked.
AttentionNode mha(int64_t seq, int64_t kv_len, bool bias = true, int64_t v_hidden = kHidden,
                  DataType dtype = DataType::kFloat32) {
    const auto cast = [&](const Tensor& t) { return dtype == DataType::kFloat32 ? t : t.cast(dtype); };
    AttentionNode node("MultiHeadAttention");
    node.in(cast(random_tensor({kBatch, seq, kHidden}, 31)))
        .in(cast(random_tensor({kBatch, kv_len, kHidden}, 32)))
        .in(cast(random_tensor({kBatch, kv_len, v_hidden}, 33)));
    if (bias)
        node.in(cast(random_tensor({2 * kHidden + v_hidden}, 34, -0.5f, 0.5f)));
    else
        node.none();
    node.attr("num_heads", kMhaHeads);
    return node;
}

TEST(MultiHeadAttention, SelfAndCrossAttentionMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    mha(5, 5).expect_matches_onnxrt();
    mha(5, 5, false).expect_matches_onnxrt();  // ONNX Runtime's flash attention path
    mha(3, 7, true, 10).expect_matches_onnxrt();
    mha(1, 6).attr("scale", 0.2).expect_matches_onnxrt();
    mha(5, 5).attr("unidirectional", 1).expect_matches_onnxrt();
}

// With more keys than queries, ONNX Runtime's causal mask hides the keys after each query's position
// from every query row but the last, which sees all keys; fewer keys than queries are hidden alike.
TEST(MultiHeadAttention, UnidirectionalCrossAttentionMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    mha(3, 5).attr("unidirectional", 1).expect_matches_onnxrt();
    mha(5, 3).attr("unidirectional", 1).expect_matches_onnxrt();
    mha(3, 5).in(ints({kBatch}, {4, 2})).attr("unidirectional", 1).expect_matches_onnxrt();
}

TEST(MultiHeadAttention, KeyPaddingMasksMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    mha(3, 5).in(ints({kBatch}, {2, 5})).expect_matches_onnxrt();
    mha(3, 5).in(ints({kBatch, 5}, {1, 0, 1, 1, 0, 1, 1, 1, 0, 1})).expect_matches_onnxrt();
    const Tensor mask3d = ints({kBatch, 4, 4}, {1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0,  //
                                                1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1});
    mha(4, 4).in(mask3d).expect_matches_onnxrt();
    mha(4, 4).in(mask3d).attr("unidirectional", 1).attr("mask_filter_value", -30.0).expect_matches_onnxrt();
    // Every key of a row masked.
    mha(4, 4).in(ints({kBatch}, {0, 3})).expect_matches_onnxrt(2e-3, 2e-3);
}

TEST(MultiHeadAttention, AttentionBiasMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (const Shape& shape :
         {Shape{kBatch, kMhaHeads, 3, 6}, Shape{1, kMhaHeads, 3, 6}, Shape{kBatch, 1, 3, 6}, Shape{1, 1, 3, 6}}) {
        SCOPED_TRACE(shape_to_string(shape));
        mha(3, 6).none().in(random_tensor(shape, 35, -2.0f, 2.0f)).expect_matches_onnxrt();
        mha(3, 6).in(ints({kBatch}, {4, 6})).in(random_tensor(shape, 36)).expect_matches_onnxrt();
    }
}

TEST(MultiHeadAttention, PastAndPresentMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const int64_t past = 4, head = kHidden / kMhaHeads;
    const Tensor past_key = random_tensor({kBatch, kMhaHeads, past, head}, 37);
    const Tensor past_value = random_tensor({kBatch, kMhaHeads, past, head}, 38);
    // Query and key/value of `seq` rows after the past, with a key_padding_mask and an attention_bias
    // when they are defined.
    const auto expect_with_past = [&](int64_t seq, const Tensor& mask, const Tensor& bias, bool causal) {
        AttentionNode node = mha(seq, seq);
        node.in(mask).in(bias).in(past_key).in(past_value).outputs("111").attr("unidirectional", causal ? 1 : 0);
        node.expect_matches_onnxrt();
    };
    for (int64_t seq : {int64_t{1}, int64_t{3}}) {
        SCOPED_TRACE(seq);
        const double total = static_cast<double>(past + seq);
        expect_with_past(seq, Tensor(), Tensor(), false);
        expect_with_past(seq, Tensor(), Tensor(), true);
        expect_with_past(seq, ints({kBatch}, {total - 1, 2}), Tensor(), true);
        std::vector<double> ones(static_cast<std::size_t>(kBatch * (past + seq)), 1.0);
        ones[1] = ones[past + seq + 3] = 0.0;
        expect_with_past(seq, ints({kBatch, past + seq}, ones), random_tensor({kBatch, kMhaHeads, seq, past + seq}, 39),
                         false);
    }
    // A 3-D mask over the past and the new keys.
    std::vector<double> mask3d(static_cast<std::size_t>(kBatch * 3 * (past + 3)), 1.0);
    for (std::size_t i = 0; i < mask3d.size(); i += 4) mask3d[i] = 0.0;
    expect_with_past(3, ints({kBatch, 3, past + 3}, mask3d), Tensor(), true);
    // Without a past, present_key and present_value hold this step's projected K and V.
    mha(3, 5).outputs("111").expect_matches_onnxrt();
}

// Cross attention reusing the projected keys and values of an earlier step: key and value (B, N, L, H).
TEST(MultiHeadAttention, KeyAndValueGivenPerHeadMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    const int64_t head = kHidden / kMhaHeads;
    AttentionNode node("MultiHeadAttention");
    node.in(random_tensor({kBatch, 3, kHidden}, 41))
        .in(random_tensor({kBatch, kMhaHeads, 6, head}, 42))
        .in(random_tensor({kBatch, kMhaHeads, 6, head}, 43))
        .none()
        .in(ints({kBatch}, {6, 4}))
        .attr("num_heads", kMhaHeads)
        .outputs("111");
    node.expect_matches_onnxrt();
    AttentionNode causal("MultiHeadAttention");
    causal.in(random_tensor({kBatch, 3, kHidden}, 41))
        .in(random_tensor({kBatch, kMhaHeads, 6, head}, 42))
        .in(random_tensor({kBatch, kMhaHeads, 6, head}, 43))
        .none()
        .none()
        .in(random_tensor({1, kMhaHeads, 3, 6}, 44))
        .attr("num_heads", kMhaHeads)
        .attr("unidirectional", 1)
        .outputs("111");
    causal.expect_matches_onnxrt();
}

TEST(MultiHeadAttention, Float16MatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    mha(4, 5, true, kHidden, DataType::kFloat16).expect_matches_onnxrt(2e-3, 2e-3);
    mha(4, 5, true, kHidden, DataType::kFloat16).in(ints({kBatch}, {3, 5})).expect_matches_onnxrt(2e-3, 2e-3);
}

// ---- GroupQueryAttention ------------------------------------------------------------------------------------

constexpr int64_t kGqaHeads = 4, kKvHeads = 2, kHeadSize = 16;

struct GqaCase {
    int64_t batch = 2, seq = 5;
    int64_t past = 0;  ///< rows of the past buffer (0: no past inputs)
    std::vector<double> seqlens_k;
    int64_t total = 5;
    bool rotary = false;
    bool interleaved = false;
    int64_t rotary_half = kHeadSize / 2;  ///< cos_cache's second dimension
    bool packed = false;
    DataType dtype = DataType::kFloat32;
};

AttentionNode gqa(const GqaCase& c) {
    const auto cast = [&](const Tensor& t) { return c.dtype == DataType::kFloat32 ? t : t.cast(c.dtype); };
    AttentionNode node("GroupQueryAttention");
    const int64_t q_hidden = kGqaHeads * kHeadSize, kv_hidden = kKvHeads * kHeadSize;
    if (c.packed) {
        node.in(cast(random_tensor({c.batch, c.seq, q_hidden + 2 * kv_hidden}, 51))).none().none();
    } else {
        node.in(cast(random_tensor({c.batch, c.seq, q_hidden}, 51)))
            .in(cast(random_tensor({c.batch, c.seq, kv_hidden}, 52)))
            .in(cast(random_tensor({c.batch, c.seq, kv_hidden}, 53)));
    }
    if (c.past > 0) {
        node.in(cast(random_tensor({c.batch, kKvHeads, c.past, kHeadSize}, 54)))
            .in(cast(random_tensor({c.batch, kKvHeads, c.past, kHeadSize}, 55)));
    } else {
        node.none().none();
    }
    node.in(ints({c.batch}, c.seqlens_k)).in(ints({}, {static_cast<double>(c.total)}));
    if (c.rotary) {
        // Angles of position p: p / 10000^(2i / rotary_dim), as models build their caches.
        const int64_t positions = c.total + 3;
        std::vector<double> cos, sin;
        for (int64_t p = 0; p < positions; ++p)
            for (int64_t i = 0; i < c.rotary_half; ++i) {
                const double angle = p / std::pow(10000.0, static_cast<double>(i) / c.rotary_half);
                cos.push_back(std::cos(angle));
                sin.push_back(std::sin(angle));
            }
        node.in(cast(Tensor::from_doubles(DataType::kFloat32, {positions, c.rotary_half}, cos)))
            .in(cast(Tensor::from_doubles(DataType::kFloat32, {positions, c.rotary_half}, sin)))
            .attr("do_rotary", 1)
            .attr("rotary_interleaved", c.interleaved ? 1 : 0);
    }
    node.attr("num_heads", kGqaHeads).attr("kv_num_heads", kKvHeads).outputs("111");
    return node;
}

GqaCase prompt() {
    GqaCase c;
    c.seqlens_k = {4, 4};
    return c;
}

/// One token after a past buffer of 8 rows holding 3 and 6 valid ones.
GqaCase decode() {
    GqaCase c;
    c.seq = 1;
    c.past = 8;
    c.seqlens_k = {3, 6};
    c.total = 7;
    return c;
}

TEST(GroupQueryAttention, PromptAndDecodeStepMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    gqa(prompt()).expect_matches_onnxrt();
    gqa(decode()).expect_matches_onnxrt();
    // A past buffer holding exactly the past: present grows to total_sequence_length.
    GqaCase exact = decode();
    exact.past = 6;
    exact.seqlens_k = {6, 4};
    gqa(exact).expect_matches_onnxrt();
    GqaCase packed = decode();
    packed.packed = true;
    gqa(packed).expect_matches_onnxrt();
    gqa(prompt()).attr("scale", 0.1).expect_matches_onnxrt();
}

TEST(GroupQueryAttention, RotaryEmbeddingMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (bool interleaved : {false, true}) {
        for (GqaCase c : {prompt(), decode()}) {
            SCOPED_TRACE(::testing::Message() << "interleaved " << interleaved << " seq " << c.seq);
            c.rotary = true;
            c.interleaved = interleaved;
            gqa(c).expect_matches_onnxrt();
            c.packed = true;
            gqa(c).expect_matches_onnxrt();
        }
    }
}

// A later chunk of a prompt (batch 1): the new rows attend to the cached past and causally to each other.
TEST(GroupQueryAttention, ALaterChunkOfAPromptMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    GqaCase c;
    c.batch = 1;
    c.seq = 3;
    c.past = 6;
    c.seqlens_k = {7};
    c.total = 8;
    gqa(c).expect_matches_onnxrt();
    c.rotary = true;
    gqa(c).expect_matches_onnxrt();
}

// local_window_size counts the query's own position: query p attends to keys p - W + 1 to p.
TEST(GroupQueryAttention, LocalWindowSoftcapAndSinksMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (GqaCase c : {prompt(), decode()}) {
        SCOPED_TRACE(c.seq);
        gqa(c).attr("local_window_size", 2).expect_matches_onnxrt();
        gqa(c).attr("local_window_size", 3).attr("softcap", 2.0).attr("smooth_softmax", 1).expect_matches_onnxrt();
        c.rotary = true;
        gqa(c).attr("local_window_size", 4).expect_matches_onnxrt();
        c.rotary = false;
        gqa(c).attr("softcap", 0.5).expect_matches_onnxrt();
        gqa(c).attr("smooth_softmax", 1).expect_matches_onnxrt();
        AttentionNode sinks = gqa(c);
        sinks.none().none().none().none().in(random_tensor({kGqaHeads}, 56, -1.0f, 1.0f));
        sinks.expect_matches_onnxrt();
        AttentionNode bias = gqa(c);
        bias.none().none().none().in(random_tensor({1, kGqaHeads, c.seq, c.total}, 57, -1.0f, 1.0f));
        bias.expect_matches_onnxrt();
    }
}

TEST(GroupQueryAttention, Float16MatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    for (GqaCase c : {prompt(), decode()}) {
        c.dtype = DataType::kFloat16;
        gqa(c).expect_matches_onnxrt(2e-3, 2e-3);
        c.rotary = true;
        gqa(c).expect_matches_onnxrt(2e-3, 2e-3);
    }
}

// A batch of prompts of different lengths, right-padded: ONNX Runtime's padding rows attend to their
// sequence's keys up to its length (from the window's start: none when the window lies past it, which
// gives zeros), and rotate at their own positions.
TEST(GroupQueryAttention, PaddedPromptsMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    GqaCase c = prompt();
    c.seqlens_k = {4, 2};
    gqa(c).expect_matches_onnxrt();
    c.rotary = true;
    gqa(c).expect_matches_onnxrt();
    gqa(c).attr("local_window_size", 2).expect_matches_onnxrt();
}

// ---- threads --------------------------------------------------------------------------------------------------

// Sizes large enough for the work to be split between threads.
TEST(Attention, ResultsDoNotDependOnTheThreadCount) {
    GqaCase c;
    c.seq = c.total = 40;
    c.seqlens_k = {39, 20};
    c.rotary = true;
    for (const AttentionNode& node : {bert_attention(60).in(ints({kBatch}, {50, 60})).attr("unidirectional", 1),
                                      mha(64, 80).in(ints({kBatch}, {70, 80})), gqa(c)}) {
        auto [builder, feed] = node.build();
        const OnnxModel model = builder.build();
        ref::SessionOptions one, three;
        one.num_threads = 1;
        three.num_threads = 3;
        const TensorMap a = ref::Session(*model, one).run(feed), b = ref::Session(*model, three).run(feed);
        for (const auto& [name, tensor] : a) EXPECT_TRUE(tensor.equals(b.at(name))) << name;
    }
}

// ---- refusals: one line each --------------------------------------------------------------------------------

TEST(Attention, WhatIsNotImplementedIsRefusedInOneLine) {
    expect_one_line(bert_attention().attr("do_rotary", 1).error(),
                    "Node 'attn' (Attention): do_rotary is not supported: ONNX Runtime's CPU kernel refuses it too "
                    "(use MultiHeadAttention after RotaryEmbedding)");
    expect_one_line(bert_attention().attr("past_present_share_buffer", 1).error(),
                    "Node 'attn' (Attention): past_present_share_buffer is not supported: past and present are "
                    "separate tensors here");
    expect_one_line(bert_attention().in(ints({kBatch, 1, kSeq, kSeq}, std::vector<double>(32, 1.0))).error(),
                    "Node 'attn' (Attention): a 4-D mask_index (Megatron's (batch_size, 1, max_sequence_length, "
                    "max_sequence_length)) is not supported: ONNX Runtime's CPU kernel refuses it too");
    expect_one_line(bert_attention().in(ints({kBatch, 3}, std::vector<double>(6, 1.0))).error(),
                    "Node 'attn' (Attention): input mask_index must have shape (2,), (4,), (2, 4) or (2, 4, 4) "
                    "(batch_size, 2 * batch_size, (batch_size, total_sequence_length), (batch_size, "
                    "sequence_length, total_sequence_length)), but it has shape (2, 3)");
    expect_one_line(bert_attention()
                        .none()
                        .in(random_tensor({2, kBatch, kHeads, 3, kInputHidden / kHeads}, 9))
                        .in(random_tensor({kBatch, kHeads, kSeq, kSeq + 3}, 11))
                        .error(),
                    "Node 'attn' (Attention): inputs past and attention_bias cannot be given together (ONNX Runtime "
                    "refuses them too)");
    expect_one_line(bert_attention().attr("qkv_hidden_sizes", std::vector<int64_t>{6, 3, 9}).error(),
                    "Node 'attn' (Attention): attribute qkv_hidden_sizes must give Q and K the same size, but it "
                    "gives 6 and 3");
}

TEST(Attention, InputsOfTheWrongShapeOrTypeAreOneLine) {
    AttentionNode short_bias("Attention");
    short_bias.in(random_tensor({kBatch, kSeq, kInputHidden}, 1))
        .in(random_tensor({kInputHidden, 3 * kInputHidden}, 2))
        .in(random_tensor({kInputHidden}, 3))
        .attr("num_heads", kHeads);
    expect_one_line(short_bias.error(),
                    "Node 'attn' (Attention): input bias must have shape (36,) (Q + K + V hidden sizes), but it has "
                    "shape (12,)");
    expect_one_line(bert_attention().in(Tensor::from_doubles(DataType::kInt64, {kBatch}, {1, 2})).error(),
                    "Node 'attn' (Attention): input mask_index must be int32, but it is int64");
    expect_one_line(mha(3, 5).none().in(random_tensor({kBatch, kMhaHeads, 3, 4}, 4)).error(),
                    "Node 'attn' (MultiHeadAttention): input attention_bias must have shape (batch_size or 1, "
                    "num_heads or 1, sequence_length, total_sequence_length) = (2 or 1, 2 or 1, 3, 5), but it has "
                    "shape (2, 2, 3, 4)");
    GqaCase c = prompt();
    AttentionNode gqa_bad("GroupQueryAttention");
    gqa_bad.in(random_tensor({c.batch, c.seq, kGqaHeads * kHeadSize}, 1))
        .in(random_tensor({c.batch, c.seq, kGqaHeads * kHeadSize}, 2))
        .in(random_tensor({c.batch, c.seq, kGqaHeads * kHeadSize}, 3))
        .none()
        .none()
        .in(ints({c.batch}, c.seqlens_k))
        .in(ints({}, {5}))
        .attr("num_heads", kGqaHeads)
        .attr("kv_num_heads", kKvHeads);
    expect_one_line(gqa_bad.error(),
                    "Node 'attn' (GroupQueryAttention): input key must have shape (2, 5, 32) (batch_size, "
                    "sequence_length, kv_hidden_size), but it has shape (2, 5, 64)");
}

TEST(MultiHeadAttention, WhatIsNotImplementedIsRefusedInOneLine) {
    const int64_t head = kHidden / kMhaHeads;
    AttentionNode packed_qkv("MultiHeadAttention");
    packed_qkv.in(random_tensor({kBatch, 3, kMhaHeads, 3, head}, 1)).attr("num_heads", kMhaHeads);
    expect_one_line(packed_qkv.error(),
                    "Node 'attn' (MultiHeadAttention): packed QKV (query of shape (batch_size, sequence_length, "
                    "num_heads, 3, head_size)) is not supported: give query, key and value");
    AttentionNode packed_kv("MultiHeadAttention");
    packed_kv.in(random_tensor({kBatch, 3, kHidden}, 1))
        .in(random_tensor({kBatch, 3, kMhaHeads, 2, head}, 2))
        .attr("num_heads", kMhaHeads);
    expect_one_line(packed_kv.error(),
                    "Node 'attn' (MultiHeadAttention): packed KV (key of shape (batch_size, kv_sequence_length, "
                    "num_heads, 2, head_size)) is not supported: give key and value");
    expect_one_line(mha(3, 3).outputs("1001").error(),
                    "Node 'attn' (MultiHeadAttention): output 3 (qk) is not supported");
    expect_one_line(mha(3, 3).in(ints({3 * kBatch + 2}, std::vector<double>(8, 1.0))).error(),
                    "Node 'attn' (MultiHeadAttention): a key_padding_mask of shape (3 * batch_size + 2) is not "
                    "supported: ONNX Runtime's CPU kernel takes no such mask either");
    expect_one_line(mha(3, 3)
                        .in(ints({kBatch, 3}, std::vector<double>(6, 1.0)))
                        .none()
                        .in(random_tensor({kBatch, kMhaHeads, 2, head}, 3))
                        .in(random_tensor({kBatch, kMhaHeads, 2, head}, 4))
                        .error(),
                    "Node 'attn' (MultiHeadAttention): a key_padding_mask of shape (batch_size, "
                    "kv_sequence_length) = (2, 3) is not supported with a past: give (batch_size, "
                    "total_sequence_length) = (2, 5)");
}

TEST(GroupQueryAttention, WhatIsNotImplementedIsRefusedInOneLine) {
    expect_one_line(gqa(prompt()).attr("sliding_window_cache", 1).error(),
                    "Node 'attn' (GroupQueryAttention): sliding_window_cache = 1 (a window-sized KV cache) is not "
                    "supported");
    expect_one_line(gqa(prompt()).attr("causal", 0).error(),
                    "Node 'attn' (GroupQueryAttention): causal = 0 (bidirectional attention) is not supported");
    expect_one_line(gqa(prompt()).attr("qk_output", 1).error(),
                    "Node 'attn' (GroupQueryAttention): attribute qk_output (output 3) is not supported");
    expect_one_line(gqa(prompt()).attr("k_quant_type", std::string("PER_TENSOR")).error(),
                    "Node 'attn' (GroupQueryAttention): attribute k_quant_type = PER_TENSOR is not supported: only "
                    "an unquantized KV cache is");
    AttentionNode positions = gqa(prompt());
    positions.none().none().in(Tensor::from_doubles(DataType::kInt64, {kBatch, 5}, std::vector<double>(10, 0.0)));
    expect_one_line(positions.error(), "Node 'attn' (GroupQueryAttention): input 9 (position_ids) is not supported");
    GqaCase bad = decode();
    bad.seqlens_k = {3, 9};
    expect_one_line(gqa(bad).error(),
                    "Node 'attn' (GroupQueryAttention): seqlens_k[1] = 9 is out of range: with sequence_length 1, "
                    "total_sequence_length 7 and a past of 8, it must be 0 to 6");
    GqaCase short_total = prompt();
    short_total.total = 4;
    short_total.batch = 1;
    short_total.seqlens_k = {3};
    expect_one_line(gqa(short_total).error(),
                    "Node 'attn' (GroupQueryAttention): total_sequence_length (4) must not be less than "
                    "sequence_length (5)");
    GqaCase batched_chunk = decode();
    batched_chunk.seq = 3;
    expect_one_line(gqa(batched_chunk).error(),
                    "Node 'attn' (GroupQueryAttention): batch_size must be 1 when sequence_length (3) > 1 differs "
                    "from total_sequence_length (7)");
    expect_one_line(gqa(prompt()).attr("do_rotary", 1).error(),
                    "Node 'attn' (GroupQueryAttention): do_rotary = 1 needs the inputs cos_cache and sin_cache");
}

}  // namespace
}  // namespace polygraphy::testing
