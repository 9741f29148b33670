// NonMaxSuppression and RoiAlign.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

TEST(NonMaxSuppressionOp, KeepsTheBestBoxOfEachOverlappingGroup) {
    // Boxes 0 and 1 overlap with IoU 0.9 / 1.1; box 2 is apart. Box 1 scores highest.
    const Tensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3});
    const Tensor scores = f32({1, 1, 3}, {0.9, 0.95, 0.5});
    KernelHarness h("NonMaxSuppression", 11);
    h.input(boxes).input(scores).input(i64({1}, {3})).input(f32({1}, {0.5}));
    EXPECT_EQ(values_of(h.run()[0]), (std::vector<double>{0, 0, 1, 0, 0, 2}));
    KernelHarness t("NonMaxSuppression", 11);
    t.input(boxes).input(scores).input(i64({1}, {3})).input(f32({1}, {0.5})).input(f32({1}, {0.6}));
    const Tensor selected = t.run()[0];
    EXPECT_EQ(selected.shape(), (Shape{1, 3}));
    EXPECT_EQ(values_of(selected), (std::vector<double>{0, 0, 1}));
}

TEST(NonMaxSuppressionOp, CenterPointBoxesAndZeroLimit) {
    // Same boxes as (x_center, y_center, width, height).
    const Tensor boxes = f32({1, 3, 4}, {0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 2.5, 0.5, 1, 1});
    KernelHarness h("NonMaxSuppression", 11);
    set_attr(h.node(), "center_point_box", int64_t{1});
    h.input(boxes).input(f32({1, 1, 3}, {0.9, 0.95, 0.5})).input(i64({1}, {2})).input(f32({1}, {0.5}));
    EXPECT_EQ(values_of(h.run()[0]), (std::vector<double>{0, 0, 1, 0, 0, 2}));
    KernelHarness none("NonMaxSuppression", 11);
    none.input(boxes).input(f32({1, 1, 3}, {0.9, 0.95, 0.5}));
    EXPECT_EQ(none.run()[0].shape(), (Shape{0, 3}));
}

TEST(NonMaxSuppressionOp, RejectsBadShapesAndAttributes) {
    KernelHarness attr("NonMaxSuppression", 11);
    set_attr(attr.node(), "center_point_box", int64_t{2});
    expect_error([&] { attr.create(); }, "attribute 'center_point_box' must be 0 or 1, but it is 2");
    KernelHarness shape("NonMaxSuppression", 11);
    shape.input(f32({1, 3, 3}, arange(9))).input(f32({1, 1, 3}, {1, 2, 3}));
    expect_error([&] { shape.run(); }, "boxes must have shape (batches, boxes, 4), but it has shape (1, 3, 3)");
    KernelHarness scores("NonMaxSuppression", 11);
    scores.input(f32({1, 2, 4}, arange(8))).input(f32({1, 1, 3}, {1, 2, 3}));
    expect_error([&] { scores.run(); }, "scores must have shape (1, classes, 2), but it has shape (1, 1, 3)");
}

TEST(RoiAlignOp, AverageOfBilinearSamples) {
    // 4x4 ramp; roi (0, 0)-(3, 3); one sample per bin at its center.
    for (const char* mode : {"half_pixel", "output_half_pixel"}) {
        KernelHarness h("RoiAlign", 16);
        set_attr(h.node(), "coordinate_transformation_mode", std::string(mode));
        set_attr(h.node(), "sampling_ratio", int64_t{1});
        h.input(f32({1, 1, 4, 4}, arange(16))).input(f32({1, 4}, {0, 0, 3, 3})).input(i64({1}, {0}));
        // half_pixel: the roi shifts by -0.5, its center is pixel (1, 1) = 5; otherwise (1.5, 1.5) = 7.5.
        expect_close(h.run()[0], {1, 1, 1, 1}, {std::string(mode) == "half_pixel" ? 5.0 : 7.5});
    }
}

TEST(RoiAlignOp, RejectsBadModesAndBatchIndices) {
    KernelHarness mode("RoiAlign", 16);
    set_attr(mode.node(), "mode", std::string("median"));
    expect_error([&] { mode.create(); }, "attribute 'mode' must be avg or max, but it is 'median'");
    KernelHarness index("RoiAlign", 16);
    index.input(f32({1, 1, 2, 2}, arange(4))).input(f32({1, 4}, {0, 0, 1, 1})).input(i64({1}, {3}));
    expect_error([&] { index.run(); }, "batch_indices value 3 is out of range for a batch of 1");
    KernelHarness nan("RoiAlign", 16);
    nan.input(f32({1, 1, 2, 2}, arange(4))).input(f32({1, 4}, {0, std::nan(""), 1, 1})).input(i64({1}, {0}));
    expect_error([&] { nan.run(); }, "rois[0] holds a non-finite coordinate");
    KernelHarness rank("RoiAlign", 16);
    rank.input(f32({2, 2}, arange(4))).input(f32({1, 4}, {0, 0, 1, 1})).input(i64({1}, {0}));
    expect_error([&] { rank.run(); }, "X must have rank 4, but it has shape (2, 2)");
}

}  // namespace
}  // namespace polygraphy::testing
