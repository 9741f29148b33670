// RNN, GRU and LSTM: one-unit layers whose values are worked out by hand (python math), directions,
// layouts, sequence lengths, and the attribute/shape errors.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(RnnOp, ForwardAndReverseOverTwoSteps) {
    // h1 = tanh(0.5 * 1), h2 = tanh(0.5 * 2 + 0.25 * h1)
    KernelHarness h("RNN", 14, 2);
    set_attr(h.node(), "hidden_size", int64_t{1});
    h.input(f32({2, 1, 1}, {1, 2})).input(f32({1, 1, 1}, {0.5})).input(f32({1, 1, 1}, {0.25}));
    auto out = h.run();
    expect_close(out[0], {2, 1, 1, 1}, {0.46211715726000974, 0.8060082340490717});
    expect_close(out[1], {1, 1, 1}, {0.8060082340490717});

    KernelHarness b("RNN", 14, 2);
    set_attr(b.node(), "hidden_size", int64_t{1});
    set_attr(b.node(), "direction", std::string("bidirectional"));
    b.input(f32({2, 1, 1}, {1, 2})).input(f32({2, 1, 1}, {0.5, 0.5})).input(f32({2, 1, 1}, {0.25, 0.25}));
    out = b.run();
    // Y[t, d]: forward then reverse; the reverse pass starts at t = 1.
    expect_close(out[0], {2, 2, 1, 1},
                 {0.46211715726000974, 0.5982379679151746, 0.8060082340490717, 0.7615941559557649});
    expect_close(out[1], {2, 1, 1}, {0.8060082340490717, 0.5982379679151746});
}

TEST(RnnOp, SequenceLengthsAndBatchFirstLayout) {
    // Batch 2 (layout 1: X is [batch, seq, input]); the second row stops after one step.
    KernelHarness h("RNN", 14, 2);
    set_attr(h.node(), "hidden_size", int64_t{1});
    set_attr(h.node(), "layout", int64_t{1});
    h.input(f32({2, 2, 1}, {1, 2, 1, 2}))
        .input(f32({1, 1, 1}, {0.5}))
        .input(f32({1, 1, 1}, {0.25}))
        .omitted_input()
        .input(Tensor::from_doubles(DataType::kInt32, {2}, {2, 1}));
    auto out = h.run();
    expect_close(out[0], {2, 2, 1, 1}, {0.46211715726000974, 0.8060082340490717, 0.46211715726000974, 0});
    expect_close(out[1], {2, 1, 1}, {0.8060082340490717, 0.46211715726000974});
}

TEST(GruOp, LinearBeforeResetChangesWhereTheRecurrentBiasGoes) {
    // z = sigmoid(0.1 + 0.4 * 0.5), r = sigmoid(0.2 + 0.5 * 0.5); Rbh = 0.2
    // lbr=1: h~ = tanh(0.3 + r * (0.6 * 0.5 + 0.2)); lbr=0: h~ = tanh(0.3 + (r * 0.5) * 0.6 + 0.2)
    for (int64_t lbr : {1, 0}) {
        KernelHarness h("GRU", 14, 2);
        set_attr(h.node(), "hidden_size", int64_t{1});
        set_attr(h.node(), "linear_before_reset", lbr);
        h.input(f32({1, 1, 1}, {1}))
            .input(f32({1, 3, 1}, {0.1, 0.2, 0.3}))
            .input(f32({1, 3, 1}, {0.4, 0.5, 0.6}))
            .input(f32({1, 6}, {0, 0, 0, 0, 0, 0.2}))
            .omitted_input()
            .input(f32({1, 1, 1}, {0.5}));
        expect_close(h.run()[1], {1, 1, 1}, {lbr ? 0.51737298812992 : 0.5398281220413759});
    }
}

TEST(LstmOp, OneStepWithInitialCellState) {
    // i = s(0.1), o = s(0.2), f = s(0.3), c~ = tanh(0.4); C = f * 0.5 + i * c~; H = o * tanh(C)
    KernelHarness h("LSTM", 14, 3);
    set_attr(h.node(), "hidden_size", int64_t{1});
    h.input(f32({1, 1, 1}, {1}))
        .input(f32({1, 4, 1}, {0.1, 0.2, 0.3, 0.4}))
        .input(f32({1, 4, 1}, {0, 0, 0, 0}))
        .omitted_input()
        .omitted_input()
        .omitted_input()
        .input(f32({1, 1, 1}, {0.5}));
    auto out = h.run();
    expect_close(out[1], {1, 1, 1}, {0.24829548777288213});
    expect_close(out[2], {1, 1, 1}, {0.48668655589404397});
}

TEST(RecurrentOps, RejectBadAttributesAndShapes) {
    KernelHarness missing("LSTM", 14);
    expect_error([&] { missing.create(); }, "attribute 'hidden_size' must be a positive integer, but it is missing");
    KernelHarness direction("GRU", 14);
    set_attr(direction.node(), "hidden_size", int64_t{2});
    set_attr(direction.node(), "direction", std::string("sideways"));
    expect_error([&] { direction.create(); }, "attribute 'direction' must be forward, reverse or bidirectional");
    KernelHarness activations("RNN", 14);
    set_attr(activations.node(), "hidden_size", int64_t{2});
    set_strings(activations.node(), "activations", {"Tanh", "Relu"});
    expect_error([&] { activations.create(); },
                 "attribute 'activations' must name 1 functions (1 per direction), but it names 2");
    KernelHarness unknown("RNN", 14);
    set_attr(unknown.node(), "hidden_size", int64_t{2});
    set_strings(unknown.node(), "activations", {"Swish"});
    expect_error([&] { unknown.create(); }, "unsupported activation 'Swish'");
    KernelHarness shape("RNN", 14);
    set_attr(shape.node(), "hidden_size", int64_t{2});
    shape.input(f32({1, 1, 3}, {1, 2, 3})).input(f32({1, 2, 2}, {1, 2, 3, 4})).input(f32({1, 2, 2}, {1, 2, 3, 4}));
    expect_error([&] { shape.run(); }, "input W must have shape (1, 2, 3), but it has shape (1, 2, 2)");
    KernelHarness rank("RNN", 14);
    set_attr(rank.node(), "hidden_size", int64_t{2});
    rank.input(f32({3}, {1, 2, 3})).input(f32({1, 2, 3}, arange(6))).input(f32({1, 2, 2}, arange(4)));
    expect_error([&] { rank.run(); }, "input X must have rank 3, but it has shape (3,)");
}

}  // namespace
}  // namespace polygraphy::testing
