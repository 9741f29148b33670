// DFT, STFT, MelWeightMatrix and the windows (HannWindow, HammingWindow, BlackmanWindow).
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(DftOp, ForwardOnesidedAndInverse) {
    // DFT of [0, 1, 0, 0] = [1, -i, -1, i]
    KernelHarness h("DFT", 17);
    h.input(f32({1, 4, 1}, {0, 1, 0, 0}));
    expect_close(h.run()[0], {1, 4, 2}, {1, 0, 0, -1, -1, 0, 0, 1}, 1e-6, 1e-6);
    KernelHarness one("DFT", 17);
    set_attr(one.node(), "onesided", int64_t{1});
    one.input(f32({1, 4, 1}, {0, 1, 0, 0}));
    expect_close(one.run()[0], {1, 3, 2}, {1, 0, 0, -1, -1, 0}, 1e-6, 1e-6);
    KernelHarness inverse("DFT", 20);
    set_attr(inverse.node(), "inverse", int64_t{1});
    inverse.input(f32({1, 4, 2}, {1, 0, 1, 0, 1, 0, 1, 0}));
    expect_close(inverse.run()[0], {1, 4, 2}, {1, 0, 0, 0, 0, 0, 0, 0}, 1e-6, 1e-6);
}

TEST(DftOp, DftLengthPadsAndAxisInputSelects) {
    // Zero-padded to 2 along axis 1 of a [1, 1, 2, 1] input, on opset 20's axis input.
    KernelHarness h("DFT", 20);
    h.input(f32({1, 1, 2, 1}, {1, 2})).input(i64({}, {2})).input(i64({}, {2}));
    expect_close(h.run()[0], {1, 1, 2, 2}, {3, 0, -1, 0}, 1e-6, 1e-6);
    KernelHarness bad("DFT", 20);
    bad.input(f32({1, 4, 1}, {0, 1, 0, 0})).omitted_input().input(i64({}, {2}));
    expect_error([&] { bad.run(); }, "axis must name a signal dimension in [1, 1] (or [-2, -2]), but it is 2");
    KernelHarness both("DFT", 17);
    set_attr(both.node(), "inverse", int64_t{1});
    set_attr(both.node(), "onesided", int64_t{1});
    expect_error([&] { both.create(); }, "attributes 'inverse' and 'onesided' cannot both be 1");
}

TEST(StftOp, FramesWithAWindow) {
    // Frames [1, 2] and [3, 4], window [1, 0.5]: DFTs of [1, 1] and [3, 2].
    KernelHarness h("STFT", 17);
    h.input(f32({1, 4, 1}, {1, 2, 3, 4})).input(i64({}, {2})).input(f32({2}, {1, 0.5}));
    expect_close(h.run()[0], {1, 2, 2, 2}, {2, 0, 0, 0, 5, 0, 1, 0}, 1e-6, 1e-6);
    KernelHarness bad("STFT", 17);
    bad.input(f32({1, 4, 1}, {1, 2, 3, 4})).input(i64({}, {0})).input(f32({2}, {1, 1}));
    expect_error([&] { bad.run(); }, "frame_step must be positive, but it is 0");
}

TEST(MelWeightMatrixOp, TriangularFilters) {
    // python (the ONNX reference formula): bins at spectrogram rows [0, 0, 1, 4].
    KernelHarness h("MelWeightMatrix", 17);
    h.input(i64({}, {2})).input(i64({}, {16})).input(i64({}, {16000})).input(f32({}, {0})).input(f32({}, {8000}));
    expect_close(h.run()[0], {9, 2}, {1, 0, 0, 1, 0, 2.0 / 3, 0, 1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    KernelHarness bad("MelWeightMatrix", 17);
    bad.input(i64({}, {2})).input(i64({}, {16})).input(i64({}, {16000})).input(f32({}, {100})).input(f32({}, {50}));
    expect_error([&] { bad.run(); }, "edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz");
}

TEST(WindowOps, HannAndHamming) {
    // periodic Hann: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(4) / 4)
    EXPECT_TRUE(tensors_near(OpTester("HannWindow", 17).input(i64({}, {4})).run(), f32({4}, {0, 0.5, 1, 0.5})));
    // symmetric Hamming: 25/46 - 21/46 * np.cos(2 * np.pi * np.arange(3) / 2)
    EXPECT_TRUE(tensors_near(OpTester("HammingWindow", 17).input(i64({}, {3})).attr("periodic", 0).run(),
                             f32({3}, {4.0 / 46, 1, 4.0 / 46})));
}

}  // namespace
}  // namespace polygraphy::testing
