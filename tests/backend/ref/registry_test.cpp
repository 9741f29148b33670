// OpRegistry (add/find/builtin) and the kernel.h helpers NodeInfo and KernelContext.
#include <map>
#include <set>

#include "model_builder.h"
#include "polygraphy/backend/ref/kernel.h"
#include "ops/op_test_util.h"

namespace polygraphy::ref {
namespace {

using testing::f32;
using testing::OpTester;

class NoopKernel : public Kernel {
public:
    explicit NoopKernel(const NodeInfo&) {}
    void compute(KernelContext&) const override {}
};

TEST(OpRegistryTest, RejectsOverlappingRanges) {
    OpRegistry registry;
    registry.add("", "Foo", 1, 10, make_factory<NoopKernel>());
    registry.add("", "Foo", 11, 22, make_factory<NoopKernel>());       // adjacent: fine
    registry.add("custom", "Foo", 1, 22, make_factory<NoopKernel>());  // other domain: fine
    EXPECT_THROW_MESSAGE(registry.add("", "Foo", 5, 12, make_factory<NoopKernel>()), InternalError,
                         "Foo (domain '') opsets [5, 12] overlap the registered opsets [1, 10]");
    EXPECT_THROW_MESSAGE(registry.add("", "Foo", 1, 10, make_factory<NoopKernel>()), InternalError, "overlap");
    // "ai.onnx" is the default domain.
    EXPECT_THROW_MESSAGE(registry.add("ai.onnx", "Foo", 22, 22, make_factory<NoopKernel>()), InternalError, "overlap");
    EXPECT_EQ(registry.entries().size(), 3u);
}

TEST(OpRegistryTest, RejectsInvalidEntries) {
    OpRegistry registry;
    EXPECT_THROW_MESSAGE(registry.add("", "Foo", 5, 4, make_factory<NoopKernel>()), InternalError,
                         "invalid opset range [5, 4]");
    EXPECT_THROW_MESSAGE(registry.add("", "Foo", 0, 4, make_factory<NoopKernel>()), InternalError,
                         "invalid opset range");
    EXPECT_THROW_MESSAGE(registry.add("", "Foo", 1, 4, nullptr), InternalError, "no factory");
}

TEST(OpRegistryTest, FindsByDomainOpAndOpset) {
    OpRegistry registry;
    registry.add("", "Foo", 6, 12, make_factory<NoopKernel>());
    registry.add("", "Foo", 13, 22, make_factory<NoopKernel>());
    ASSERT_NE(registry.find("", "Foo", 6), nullptr);
    EXPECT_EQ(registry.find("", "Foo", 12)->since_version, 6);
    EXPECT_EQ(registry.find("ai.onnx", "Foo", 13)->since_version, 13);
    EXPECT_EQ(registry.find("", "Foo", 5), nullptr);
    EXPECT_EQ(registry.find("", "Foo", 23), nullptr);
    EXPECT_EQ(registry.find("custom", "Foo", 13), nullptr);
    EXPECT_EQ(registry.find("", "Bar", 13), nullptr);
}

TEST(OpRegistryTest, BuiltinHasNoOverlapsAndCoversOpsUpToTheNewestOpset) {
    const OpRegistry& registry = OpRegistry::builtin();  // add() would have thrown on any overlap
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<int, int>>> ranges;
    for (const OpEntry& entry : registry.entries()) {
        EXPECT_GE(entry.since_version, 1) << entry.op_type;
        EXPECT_LE(entry.until_version, kMaxOpset) << entry.op_type;
        ranges[{entry.domain, entry.op_type}].emplace_back(entry.since_version, entry.until_version);
    }
    // Ops that ONNX removed may stop early; all others must be covered without gaps up to kMaxOpset.
    const std::set<std::string> removed = {"Scatter", "Upsample"};
    for (auto& [key, list] : ranges) {
        std::sort(list.begin(), list.end());
        for (std::size_t i = 1; i < list.size(); ++i)
            EXPECT_EQ(list[i].first, list[i - 1].second + 1) << key.second << " has a gap";
        // ai.onnx.ml has its own opset numbers: 5 is the newest that the test suites use.
        if (!removed.contains(key.second)) {
            EXPECT_EQ(list.back().second, key.first == "ai.onnx.ml" ? 5 : kMaxOpset) << key.second;
        }
    }
}

TEST(OpRegistryTest, BuiltinCoversTheElementwiseAndTensorFamilies) {
    const std::vector<std::pair<std::string, int>> ops = {{"Add", 1},
                                                          {"Sub", 1},
                                                          {"Mul", 1},
                                                          {"Div", 1},
                                                          {"Pow", 1},
                                                          {"Mod", 10},
                                                          {"Neg", 1},
                                                          {"Abs", 1},
                                                          {"Sqrt", 1},
                                                          {"Reciprocal", 1},
                                                          {"Exp", 1},
                                                          {"Log", 1},
                                                          {"Erf", 9},
                                                          {"Tanh", 1},
                                                          {"Sigmoid", 1},
                                                          {"Relu", 1},
                                                          {"LeakyRelu", 1},
                                                          {"Elu", 1},
                                                          {"Selu", 1},
                                                          {"HardSigmoid", 1},
                                                          {"HardSwish", 14},
                                                          {"Softplus", 1},
                                                          {"Softsign", 1},
                                                          {"Sin", 7},
                                                          {"Cos", 7},
                                                          {"Floor", 1},
                                                          {"Ceil", 1},
                                                          {"Round", 11},
                                                          {"Sign", 9},
                                                          {"IsNaN", 9},
                                                          {"IsInf", 10},
                                                          {"Clip", 1},
                                                          {"Where", 9},
                                                          {"Equal", 1},
                                                          {"Less", 1},
                                                          {"Greater", 1},
                                                          {"LessOrEqual", 12},
                                                          {"GreaterOrEqual", 12},
                                                          {"And", 1},
                                                          {"Or", 1},
                                                          {"Xor", 1},
                                                          {"Not", 1},
                                                          {"Max", 1},
                                                          {"Min", 1},
                                                          {"Sum", 1},
                                                          {"Mean", 1},
                                                          {"Cast", 1},
                                                          {"CastLike", 15},
                                                          {"Identity", 1},
                                                          {"Dropout", 1},
                                                          {"PRelu", 1},
                                                          {"BitShift", 11},
                                                          {"QuantizeLinear", 10},
                                                          {"DequantizeLinear", 10},
                                                          {"MeanVarianceNormalization", 9},
                                                          {"LpNormalization", 1},
                                                          {"Reshape", 1},
                                                          {"Flatten", 1},
                                                          {"Transpose", 1},
                                                          {"Concat", 1},
                                                          {"Split", 1},
                                                          {"Slice", 1},
                                                          {"Gather", 1},
                                                          {"GatherElements", 11},
                                                          {"GatherND", 11},
                                                          {"Squeeze", 1},
                                                          {"Unsqueeze", 1},
                                                          {"Shape", 1},
                                                          {"Size", 1},
                                                          {"ConstantOfShape", 9},
                                                          {"Expand", 8},
                                                          {"Tile", 1},
                                                          {"Range", 11},
                                                          {"Pad", 1},
                                                          {"Constant", 1},
                                                          {"Trilu", 14},
                                                          {"OneHot", 9},
                                                          {"NonZero", 9},
                                                          {"ScatterND", 11},
                                                          {"ScatterElements", 11},
                                                          {"DepthToSpace", 1},
                                                          {"SpaceToDepth", 1}};
    const OpRegistry& registry = OpRegistry::builtin();
    for (const auto& [op, since] : ops) {
        EXPECT_NE(registry.find("", op, since), nullptr) << op << " at opset " << since;
        EXPECT_NE(registry.find("", op, kMaxOpset), nullptr) << op << " at opset " << kMaxOpset;
        if (since > 1) {
            EXPECT_EQ(registry.find("", op, since - 1), nullptr) << op << " before it existed";
        }
    }
}

// ---- NodeInfo / KernelContext ----------------------------------------------------------------

onnx::NodeProto make_node() {
    onnx::NodeProto node;
    node.set_op_type("Foo");
    polygraphy::testing::set_attr(node, "i", int64_t{7});
    polygraphy::testing::set_attr(node, "f", 0.5f);
    polygraphy::testing::set_attr(node, "s", std::string("text"));
    polygraphy::testing::set_attr(node, "ints", std::vector<int64_t>{1, -2});
    polygraphy::testing::set_attr(node, "floats", std::vector<float>{1.5f});
    polygraphy::testing::set_attr(node, "t", f32({2}, {1, 2}));
    return node;
}

TEST(NodeInfoTest, ReadsAttributesWithFallbacks) {
    const onnx::NodeProto node = make_node();
    const NodeInfo info(node, 13, "foo");
    EXPECT_TRUE(info.has_attr("i"));
    EXPECT_FALSE(info.has_attr("missing"));
    EXPECT_EQ(info.attr_int("i", 0), 7);
    EXPECT_EQ(info.attr_int("missing", 3), 3);
    EXPECT_FLOAT_EQ(info.attr_float("f", 0), 0.5f);
    EXPECT_EQ(info.attr_string("s", ""), "text");
    EXPECT_EQ(info.attr_ints("ints"), (std::vector<int64_t>{1, -2}));
    EXPECT_EQ(info.attr_ints("missing", {4}), (std::vector<int64_t>{4}));
    EXPECT_EQ(info.attr_floats("floats"), (std::vector<float>{1.5f}));
    ASSERT_TRUE(info.attr_tensor("t").has_value());
    EXPECT_TRUE(testing::tensors_near(*info.attr_tensor("t"), f32({2}, {1, 2})));
    EXPECT_FALSE(info.attr_tensor("missing").has_value());
    EXPECT_EQ(info.opset(), 13);
    EXPECT_EQ(info.name(), "foo");
}

TEST(NodeInfoTest, TypeMismatchNamesTheAttribute) {
    const onnx::NodeProto node = make_node();
    const NodeInfo info(node, 13, "foo");
    EXPECT_THROW_MESSAGE(info.attr_int("f", 0), ModelError,
                         "Node 'foo' (Foo): attribute 'f' must be of type int, but it is of type float");
    EXPECT_THROW_MESSAGE(info.attr_float("i", 0), ModelError, "attribute 'i' must be of type float");
    EXPECT_THROW_MESSAGE(info.attr_ints("i"), ModelError, "attribute 'i' must be of type ints, but it is of type int");
    EXPECT_THROW_MESSAGE(info.attr_string("t", ""), ModelError, "attribute 't' must be of type string");
    EXPECT_THROW_MESSAGE(info.attr_tensor("s"), ModelError, "attribute 's' must be of type tensor");
}

TEST(NodeInfoTest, InfersTheTypeOfUntypedAttributes) {
    onnx::NodeProto node;
    node.set_op_type("Foo");
    auto* attribute = node.add_attribute();  // old exporters leave `type` unset
    attribute->set_name("alpha");
    attribute->set_f(0.25f);
    const NodeInfo info(node, 6, "foo");
    EXPECT_FLOAT_EQ(info.attr_float("alpha", 0), 0.25f);
    EXPECT_THROW_MESSAGE(info.attr_int("alpha", 0), ModelError, "attribute 'alpha' must be of type int");
}

TEST(KernelContextTest, InputsAndOutputs) {
    const onnx::NodeProto node = make_node();
    const NodeInfo info(node, 13, "foo");
    const Tensor a = f32({1}, {3});
    KernelContext ctx(info, {&a, nullptr}, 2, 4);
    EXPECT_EQ(ctx.num_inputs(), 2u);
    EXPECT_EQ(ctx.input(0), &a);
    EXPECT_EQ(ctx.input(1), nullptr);
    EXPECT_EQ(ctx.input(5), nullptr);
    EXPECT_EQ(&ctx.required_input(0), &a);
    EXPECT_THROW_MESSAGE(ctx.required_input(1), ModelError, "Node 'foo' (Foo): required input 1 is missing");
    Tensor& out = ctx.allocate_output(1, DataType::kInt32, {2, 3});
    EXPECT_EQ(out.shape(), (Shape{2, 3}));
    EXPECT_EQ(out.value_as_double(5), 0.0);
    ctx.set_output(0, a);
    EXPECT_EQ(ctx.output(0).data(), a.data());  // shares the buffer
    EXPECT_THROW_MESSAGE(ctx.allocate_output(2, DataType::kInt32, {1}), ModelError, "output 2 is out of range");
    EXPECT_EQ(ctx.num_threads(), 4);
}

TEST(KernelContextTest, UninitializedOutputs) {
    // For kernels that write every element: the output has the dtype and shape asked for, in its slot.
    const onnx::NodeProto node = make_node();
    const NodeInfo info(node, 13, "foo");
    KernelContext ctx(info, {}, 2, 1);
    Tensor& out = ctx.allocate_uninitialized_output(1, DataType::kFloat64, {4, 5});
    EXPECT_EQ(&out, &ctx.output(1));
    EXPECT_EQ(out.dtype(), DataType::kFloat64);
    EXPECT_EQ(out.shape(), (Shape{4, 5}));
    EXPECT_FALSE(ctx.output(0).defined());
    Tensor& strings = ctx.allocate_uninitialized_output(0, DataType::kString, {2});
    EXPECT_EQ(strings.strings(), (std::vector<std::string>{"", ""}));  // strings are still constructed
    EXPECT_THROW_MESSAGE(ctx.allocate_uninitialized_output(2, DataType::kFloat32, {1}), ModelError,
                         "Node 'foo' (Foo): output 2 is out of range: the node has 2 outputs");
}

TEST(KernelContextTest, FactoriesFailOnBadAttributesAtPreparation) {
    // LeakyRelu's alpha is a float: an int attribute is reported before anything runs.
    EXPECT_THROW_MESSAGE(OpTester("LeakyRelu").input(f32({1}, {1})).attr("alpha", int64_t{1}).run(), ModelError,
                         "Malformed node 'node' (LeakyRelu, ai.onnx opset 17): attribute 'alpha' is INT, but LeakyRelu "
                         "takes FLOAT");
}

}  // namespace
}  // namespace polygraphy::ref
