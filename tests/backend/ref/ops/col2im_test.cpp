// Col2Im (src/backend/ref/ops/col2im.cpp).
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(Col2ImOp, SumsOverlappingBlocks) {
    // Image 1x3, block 1x2, stride 1: two blocks; column k of block l lands on pixel l + k.
    KernelHarness h("Col2Im", 18);
    h.input(f32({1, 2, 2}, {1, 2, 10, 20})).input(i64({2}, {1, 3})).input(i64({2}, {1, 2}));
    expect_close(h.run()[0], {1, 1, 1, 3}, {1, 2 + 10, 20});
    KernelHarness padded("Col2Im", 18);
    set_attr(padded.node(), "pads", std::vector<int64_t>{0, 1, 0, 1});
    set_attr(padded.node(), "strides", std::vector<int64_t>{1, 2});
    // Padded width 4, blocks at columns -1 and 1 of the image: taps at -1 (dropped), 0, 1, 2.
    padded.input(f32({1, 2, 2}, {1, 2, 10, 20})).input(i64({2}, {1, 2})).input(i64({2}, {1, 2}));
    expect_close(padded.run()[0], {1, 1, 1, 2}, {10, 2});
}

TEST(Col2ImOp, RejectsInconsistentShapes) {
    KernelHarness h("Col2Im", 18);
    h.input(f32({1, 3, 2}, arange(6))).input(i64({2}, {1, 3})).input(i64({2}, {1, 2}));
    expect_error([&] { h.run(); }, "input of shape (1, 3, 2) does not match 2 kernel points per channel and 2 blocks");
    KernelHarness pads("Col2Im", 18);
    set_attr(pads.node(), "pads", std::vector<int64_t>{0, -1, 0, 0});
    pads.input(f32({1, 2, 2}, arange(4))).input(i64({2}, {1, 3})).input(i64({2}, {1, 2}));
    expect_error([&] { pads.run(); }, "attribute 'pads' values must be non-negative, but one is -1");
}

}  // namespace
}  // namespace polygraphy::testing
