// Einsum and Det.
#include "op_test_util.h"

namespace polygraphy::testing {
namespace {

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
    KernelHarness h("Einsum", 12);
    set_attr(h.node(), "equation", equation);
    for (const Tensor& t : inputs) h.input(t);
    return h.run()[0];
}

TEST(EinsumOp, MatmulDiagonalTransposeAndImplicitOutputs) {
    const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
    expect_close(einsum("ij,jk->ik", {a, b}), {2, 2}, {19, 22, 43, 50});
    expect_close(einsum("ii->i", {a}), {2}, {1, 4});
    // Implicit output: letters used once, alphabetically ("ji" -> "ij" is the transpose).
    expect_close(einsum("ji", {a}), {2, 2}, {1, 3, 2, 4});
    expect_close(einsum("ij,ij", {a, b}), Shape{}, {70});
    // Ellipsis broadcasts a batch of 2 against none.
    expect_close(einsum("...ij,jk->...ik", {f32({2, 1, 2}, {1, 0, 0, 1}), b}), {2, 1, 2}, {5, 6, 7, 8});
    const Tensor ints = Tensor::from_doubles(DataType::kInt64, {3}, {1, 2, 3});
    const Tensor dot = einsum("i,i->", {ints, ints});
    EXPECT_EQ(dot.dtype(), DataType::kInt64);
    EXPECT_EQ(values_of(dot), (std::vector<double>{14}));
}

TEST(EinsumOp, RejectsMalformedEquationsAndShapes) {
    KernelHarness chars("Einsum", 12);
    set_attr(chars.node(), "equation", std::string("i$,j->ij"));
    chars.input(f32({1}, {1})).input(f32({1}, {1}));
    expect_error([&] { chars.create(); }, "equation term 'i$' has an invalid character '$'");
    KernelHarness count("Einsum", 12);
    set_attr(count.node(), "equation", std::string("ij,jk->ik"));
    count.input(f32({2, 2}, {1, 2, 3, 4}));
    expect_error([&] { count.create(); }, "equation 'ij,jk->ik' has 2 operands, but the node has 1 inputs");
    KernelHarness dims("Einsum", 12);
    set_attr(dims.node(), "equation", std::string("ij,jk->ik"));
    dims.input(f32({2, 2}, {1, 2, 3, 4})).input(f32({3, 1}, {1, 2, 3}));
    expect_error([&] { dims.run(); }, "letter 'j' stands for dims 2 and 3");
    KernelHarness rank("Einsum", 12);
    set_attr(rank.node(), "equation", std::string("ij->i"));
    rank.input(f32({2}, {1, 2}));
    expect_error([&] { rank.run(); }, "operand 0 has rank 1, but the equation gives it 2 letters");
}

TEST(DetOp, BatchedDeterminantsWithPivoting) {
    KernelHarness h("Det", 11);
    // det([[1, 2], [3, 4]]) = -2; det([[0, 1], [1, 0]]) = -1 (needs a row swap); singular = 0
    h.input(f32({3, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4}));
    expect_close(h.run()[0], {3}, {-2, -1, 0});
    KernelHarness bad("Det", 11);
    bad.input(f32({2, 3}, arange(6)));
    expect_error([&] { bad.run(); }, "input must be square matrices (shape [*, M, M]), but it has shape (2, 3)");
}

}  // namespace
}  // namespace polygraphy::testing
