// An extension module that gives the built-in runtime the custom operator test.custom AddOffset
// (Y = X + offset) whose ONNX Runtime kernel is ort_add_offset.cpp, through the custom-kernel interface.
#include "polygraphy/extension.h"

#if POLYGRAPHY_CUSTOM_KERNEL_API_VERSION != 1
#error "written for version 1 of the custom-kernel interface"
#endif

using namespace polygraphy;

POLYGRAPHY_EXTENSION(registrar) {
    registrar.set_module_info("polygraphy_test_add_offset", "1.0");
    ref::CustomKernel kernel;
    kernel.domain = "test.custom";
    kernel.op_type = "AddOffset";
    kernel.compute = [](const ref::CustomNode& node, const std::vector<const Tensor*>& inputs) {
        const Tensor& x = *inputs.at(0);
        if (x.dtype() != DataType::kFloat32) node.fail("X must be float32");
        const float offset = node.attr_float("offset", 1.0f);
        Tensor y(DataType::kFloat32, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i) y.data_as<float>()[i] = x.data_as<float>()[i] + offset;
        return std::vector<Tensor>{std::move(y)};
    };
    registrar.add_ref_kernel(std::move(kernel));
}
