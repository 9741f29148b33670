// A custom operator on both backends (issue 35, item 4): test.custom AddOffset runs on ONNX Runtime
// through its custom-op library (--onnxrt-custom-op-libs, tests/plugins/ort_add_offset.cpp) and on the
// built-in runtime through an extension module's kernel (tests/plugins/add_offset_kernel_module.cpp,
// --ref or --pluginref), and the two are compared.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../../backend/onnxrt/onnxrt_test_util.h"
#include "../plugin_test_util.h"
#include "build_paths.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/backend/ref/custom_kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kModuleDir = std::string(POLYGRAPHY_TEST_PLUGIN_DIR) + "/add_offset";
const std::string kOrtLibrary = std::string(POLYGRAPHY_TEST_PLUGIN_DIR) + "/ort_custom_ops/libort_add_offset.so";

// y = AddOffset(Relu(x), offset 2.5): a custom node between standard ones.
ModelBuilder add_offset_model() {
    ModelBuilder builder(17);
    builder.opset_import("test.custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.node("Relu", {"x"}, {"r"}, "relu");
    onnx::NodeProto& node = builder.node("AddOffset", {"r"}, {"y"}, "add_offset", "test.custom");
    set_attr(node, "offset", 2.5f);
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    return builder;
}

class CustomOpCli : public ::testing::Test {
protected:
    void SetUp() override {
        if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
        model_ = dir_.file("add_offset.onnx");
        add_offset_model().save(model_);
    }
    TempDir dir_;
    std::string model_;
};

TEST_F(CustomOpCli, TheBuiltInRuntimeWithTheModulesKernelMatchesOnnxRuntimeWithTheLibrary) {
    for (const char* runner : {"--ref", "--pluginref"}) {
        SCOPED_TRACE(runner);
        const CommandResult result =
            run_with_plugins(kModuleDir, {"run", model_, runner, "--onnxrt", "--onnxrt-custom-op-libs", kOrtLibrary,
                                          "--atol", "0", "--rtol", "0", "--val-range", "x:[-1,1]"});
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
    }
}

TEST_F(CustomOpCli, WithoutTheModuleOrTheLibraryEachBackendNamesTheCustomOperator) {
    const CommandResult no_module = run_with_plugins(std::nullopt, {"run", model_, "--ref"});
    EXPECT_EQ(no_module.exit_code, 1);
    EXPECT_THAT(no_module.output,
                HasSubstr("Unsupported operators: node 'add_offset' (AddOffset, domain 'test.custom'"));
    const CommandResult no_library = run_with_plugins(kModuleDir, {"run", model_, "--onnxrt"});
    EXPECT_EQ(no_library.exit_code, 1);
    EXPECT_THAT(no_library.output, HasSubstr("AddOffset"));
}

TEST_F(CustomOpCli, AMissingLibraryOrOneWithoutRegisterCustomOpsIsOneLine) {
    const std::string missing = dir_.file("no_such_library.so");
    const CommandResult absent =
        run_with_plugins(kModuleDir, {"run", model_, "--onnxrt", "--onnxrt-custom-op-libs", missing});
    EXPECT_EQ(absent.exit_code, 1);
    EXPECT_THAT(absent.output, HasSubstr("[!] ONNX-Runtime custom-op library '" + missing + "' does not exist"));
    // A shared library, but a Polygraphy extension module: it exports no RegisterCustomOps.
    const std::string module = kModuleDir + "/libadd_offset_kernel_module.so";
    const CommandResult wrong =
        run_with_plugins(kModuleDir, {"run", model_, "--onnxrt", "--onnxrt-custom-op-libs", module});
    EXPECT_EQ(wrong.exit_code, 1);
    EXPECT_THAT(wrong.output, HasSubstr("[!] ONNX-Runtime could not load the custom-op library '" + module + "'"));
    for (const CommandResult* result : {&absent, &wrong}) {
        int bang_lines = 0;
        for (std::size_t at = result->output.find("[!]"); at != std::string::npos;
             at = result->output.find("[!]", at + 1))
            ++bang_lines;
        EXPECT_EQ(bang_lines, 1) << result->output;
    }
    const CommandResult empty =
        run_with_plugins(kModuleDir, {"run", model_, "--onnxrt", "--onnxrt-custom-op-libs", ""});
    EXPECT_NE(empty.exit_code, 0);
    EXPECT_THAT(empty.output, HasSubstr("--onnxrt-custom-op-libs: a library path cannot be empty"));
}

TEST_F(CustomOpCli, InspectCapabilityCountsTheLibrarysOperatorsAsSupported) {
    const CommandResult without = run_with_plugins(
        kModuleDir, {"inspect", "capability", model_, "--backend", "onnxrt", "-o", dir_.file("without")});
    EXPECT_EQ(without.exit_code, 0) << without.output;
    EXPECT_THAT(without.output, Not(HasSubstr("fully supported")));
    const CommandResult with = run_with_plugins(
        kModuleDir, {"inspect", "capability", model_, "--backend", "onnxrt", "--onnxrt-custom-op-libs", kOrtLibrary});
    EXPECT_EQ(with.exit_code, 0) << with.output;
    EXPECT_THAT(with.output, HasSubstr("Graph is fully supported by ONNX-Runtime"));
    const CommandResult ref = run_with_plugins(kModuleDir, {"inspect", "capability", model_});
    EXPECT_THAT(ref.output, HasSubstr("Graph is fully supported by the built-in runtime"));
}

// The library API: a custom kernel registered in-process, and ONNX Runtime's session options.
TEST(CustomKernel, RegisteredInProcessItRunsAndBadRegistrationsAreRefused) {
    ref::CustomKernel kernel;
    kernel.domain = "test.inprocess";
    kernel.op_type = "Twice";
    kernel.compute = [](const ref::CustomNode& node, const std::vector<const Tensor*>& inputs) {
        if (inputs.at(0)->dtype() != DataType::kFloat32) node.fail("X must be float32");
        Tensor y(DataType::kFloat32, inputs[0]->shape());
        for (int64_t i = 0; i < y.numel(); ++i) y.data_as<float>()[i] = 2.0f * inputs[0]->data_as<float>()[i];
        return std::vector<Tensor>{std::move(y)};
    };
    ref::register_custom_kernel(kernel);
    EXPECT_THAT(error_message<UsageError>([&] { ref::register_custom_kernel(kernel); }),
                HasSubstr("custom kernel Twice (domain 'test.inprocess') is already registered"));
    ref::CustomKernel builtin_domain = kernel;
    builtin_domain.domain = "com.microsoft";
    EXPECT_THAT(error_message<UsageError>([&] { ref::register_custom_kernel(builtin_domain); }),
                HasSubstr("'com.microsoft' is a domain of the built-in runtime"));

    ModelBuilder builder(17);
    builder.opset_import("test.inprocess", 1);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.node("Twice", {"x"}, {"y"}, "twice", "test.inprocess");
    builder.output("y", DataType::kFloat32, Shape{3});
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {3}, {1, -2, 3}));
    const Tensor y = ref::Session(*builder.build()).run(feed).at("y");
    EXPECT_EQ(y.value_as_double(1), -4.0);
    // The node check knows its arity now: a second input is one line at load.
    builder.proto().mutable_graph()->mutable_node(0)->add_input("x");
    EXPECT_THAT(error_message<PolygraphyException>([&] { check_nodes(*builder.build()); }),
                HasSubstr("Twice takes exactly 1"));
}

}  // namespace
}  // namespace polygraphy::testing
