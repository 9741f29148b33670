// Loss operators (src/backend/ref/ops/loss.cpp). numpy, with
//   x = np.array([[[0.1, -0.5], [1.0, 2.0], [-1.5, 0.3]], [[0.7, 0.2], [-0.4, 1.1], [0.9, -2.0]]])  # (2, 3, 2)
//   t = np.array([[2, 0], [1, 1]]); w = np.array([0.5, 2.0, 1.5])
//   g = -np.take_along_axis(x, t[:, None, :], 1)[:, 0, :]
//   lp = x - np.log(np.exp(x).sum(1, keepdims=True)); gl = -np.take_along_axis(lp, t[:, None, :], 1)[:, 0, :]
#include "op_test_util.h"

namespace polygraphy::ref {
namespace {

using testing::f32;
using testing::f64;
using testing::i64;
using testing::OpTester;
using testing::tensors_near;

Tensor scores() { return f32({2, 3, 2}, {0.1, -0.5, 1.0, 2.0, -1.5, 0.3, 0.7, 0.2, -0.4, 1.1, 0.9, -2.0}); }
Tensor labels() { return i64({2, 2}, {2, 0, 1, 1}); }
Tensor class_weights() { return f32({3}, {0.5, 2.0, 1.5}); }

TEST(LossOps, NllLossReductions) {
    // g
    EXPECT_TRUE(tensors_near(
        OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(labels()).attr("reduction", "none").run(),
        f32({2, 2}, {1.5, 0.5, 0.4, -1.1})));
    // g.sum()
    EXPECT_TRUE(tensors_near(
        OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(labels()).attr("reduction", "sum").run(),
        f32({}, {1.3})));
    // (g * w[t]).sum() / w[t].sum()
    EXPECT_TRUE(tensors_near(
        OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(labels()).input(class_weights()).run(),
        f32({}, {0.183333333})));
    // m = t != 1; (g * m).sum() / m.sum()
    EXPECT_TRUE(tensors_near(
        OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(labels()).attr("ignore_index", 1).run(),
        f32({}, {1.0})));
    // float64 stays float64
    EXPECT_TRUE(tensors_near(OpTester("NegativeLogLikelihoodLoss", 13)
                                 .input(scores().cast(DataType::kFloat64))
                                 .input(labels())
                                 .attr("reduction", "sum")
                                 .run(),
                             f64({}, {1.3})));
}

TEST(LossOps, SoftmaxCrossEntropyLossWithLogProb) {
    auto outputs = OpTester("SoftmaxCrossEntropyLoss", 13).input(scores()).input(labels()).outputs(2).run_all();
    EXPECT_TRUE(tensors_near(outputs[0], f32({}, {2.01080232})));  // gl.mean()
    EXPECT_TRUE(tensors_near(outputs[1],                              // lp
                             f32({2, 3, 2}, {-1.297872798, -2.734889119, -0.397872798, -0.234889119, -2.897872798,
                                             -1.934889119, -0.937767973, -1.27267939, -2.037767973, -0.37267939,
                                             -0.737767973, -3.47267939}),
                             1e-5));
    // (gl * w[t] * (t != 0)).sum()
    EXPECT_TRUE(tensors_near(OpTester("SoftmaxCrossEntropyLoss", 13)
                                 .input(scores())
                                 .input(labels())
                                 .input(class_weights())
                                 .attr("reduction", "sum")
                                 .attr("ignore_index", 0)
                                 .run(),
                             f32({}, {9.16770392}), 1e-5));
}

TEST(LossOps, RejectsBadReductionAndLabels) {
    EXPECT_THROW_MESSAGE(
        OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(labels()).attr("reduction", "max").run(),
        ModelError, "attribute 'reduction' must be 'none', 'sum' or 'mean', but it is 'max'");
    EXPECT_THROW_MESSAGE(
        OpTester("SoftmaxCrossEntropyLoss", 13).input(scores()).input(i64({2, 2}, {3, 0, 1, 1})).run(), ModelError,
        "target value 3 is out of range for 3 classes");
    EXPECT_THROW_MESSAGE(OpTester("NegativeLogLikelihoodLoss", 13).input(scores()).input(i64({2}, {0, 1})).run(),
                         ModelError, "target must have shape (2, 2), but it has shape (2,)");
}

}  // namespace
}  // namespace polygraphy::ref
