// ai.onnx.ml: LabelEncoder, Binarizer, ArrayFeatureExtractor, TreeEnsemble.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

KernelHarness ml(const std::string& op, int64_t opset) {
    KernelHarness h(op, opset);
    h.node().set_domain("ai.onnx.ml");
    return h;
}

TEST(LabelEncoderOp, MapsStringsToIntsWithADefault) {
    KernelHarness h = ml("LabelEncoder", 2);
    set_strings(h.node(), "keys_strings", {"a", "b"});
    set_attr(h.node(), "values_int64s", std::vector<int64_t>{7, 8});
    set_attr(h.node(), "default_int64", int64_t{-5});
    h.input(strings({3}, {"b", "z", "a"}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt64);
    EXPECT_EQ(values_of(y), (std::vector<double>{8, -5, 7}));
    KernelHarness f = ml("LabelEncoder", 4);
    set_attr(f.node(), "keys_floats", std::vector<float>{1.5f, std::nanf("")});
    set_strings(f.node(), "values_strings", {"x", "nan"});
    f.input(f32({3}, {std::nan(""), 1.5, 2}));
    EXPECT_EQ(f.run()[0].strings(), (std::vector<std::string>{"nan", "x", "_Unused"}));
}

TEST(LabelEncoderOp, RejectsKeysAndValuesOfDifferentLengths) {
    KernelHarness h = ml("LabelEncoder", 2);
    set_strings(h.node(), "keys_strings", {"a", "b"});
    set_attr(h.node(), "values_int64s", std::vector<int64_t>{7});
    expect_error([&] { h.create(); }, "keys (2) and values (1) must have the same length");
}

TEST(BinarizerAndArrayFeatureExtractorOps, ThresholdAndGather) {
    KernelHarness b = ml("Binarizer", 1);
    set_attr(b.node(), "threshold", 0.5f);
    b.input(f32({3}, {0.2, 0.5, 0.7}));
    expect_close(b.run()[0], {3}, {0, 0, 1});
    KernelHarness a = ml("ArrayFeatureExtractor", 1);
    a.input(f32({2, 3}, {1, 2, 3, 4, 5, 6})).input(Tensor::from_doubles(DataType::kInt64, {2}, {2, 0}));
    expect_close(a.run()[0], {2, 2}, {3, 1, 6, 4});
    KernelHarness bad = ml("ArrayFeatureExtractor", 1);
    bad.input(f32({3}, {1, 2, 3})).input(Tensor::from_doubles(DataType::kInt64, {1}, {3}));
    expect_error([&] { bad.run(); }, "index 3 is out of range for a last dimension of 3");
}

TEST(TreeEnsembleOp, SumsLeavesOfEachTree) {
    // One tree: node 0 tests x0 <= 1.5; true -> leaf 0 (weight 10, target 0), false -> node 1:
    // x1 in {2, 3} -> leaf 1 (weight 20, target 1), else leaf 2 (weight 30, target 1).
    KernelHarness h = ml("TreeEnsemble", 5);
    set_attr(h.node(), "nodes_featureids", std::vector<int64_t>{0, 1});
    set_attr(h.node(), "nodes_splits", f32({2}, {1.5, 0}));
    set_attr(h.node(), "nodes_modes", Tensor::from_doubles(DataType::kUInt8, {2}, {0, 6}));
    set_attr(h.node(), "nodes_truenodeids", std::vector<int64_t>{0, 1});
    set_attr(h.node(), "nodes_trueleafs", std::vector<int64_t>{1, 1});
    set_attr(h.node(), "nodes_falsenodeids", std::vector<int64_t>{1, 2});
    set_attr(h.node(), "nodes_falseleafs", std::vector<int64_t>{0, 1});
    set_attr(h.node(), "membership_values", f32({3}, {2, 3, std::nan("")}));
    set_attr(h.node(), "tree_roots", std::vector<int64_t>{0});
    set_attr(h.node(), "leaf_targetids", std::vector<int64_t>{0, 1, 1});
    set_attr(h.node(), "leaf_weights", f32({3}, {10, 20, 30}));
    set_attr(h.node(), "n_targets", int64_t{2});
    h.input(f32({3, 2}, {1, 0, 2, 3, 2, 5}));
    expect_close(h.run()[0], {3, 2}, {10, 0, 0, 20, 0, 30});
}

TEST(TreeEnsembleOp, RejectsInconsistentNodeAttributes) {
    KernelHarness h = ml("TreeEnsemble", 5);
    set_attr(h.node(), "nodes_featureids", std::vector<int64_t>{0, 1});
    set_attr(h.node(), "nodes_splits", f32({1}, {1.5}));
    set_attr(h.node(), "n_targets", int64_t{1});
    expect_error([&] { h.create(); }, "the nodes_* attributes must all have one value per node (2)");
}

}  // namespace
}  // namespace polygraphy::testing
