// The entry point: what makes this shared library a Polygraphy extension module (the counterpart
// of the `polygraphy.run.plugins` entry point of Polygraphy's setup.py).
//
// `polygraphy` looks for `*.so` files in the folders of POLYGRAPHY_PLUGIN_PATH, then in
// <prefix>/lib/polygraphy/plugins, and for each calls the two functions below. The first tells which
// version of the extension interface the module was built against (a mismatch: the module is
// refused with a warning); the second registers what the module adds. Registration is all or
// nothing: if it throws, or one of our flags is already taken, Polygraphy warns and goes on without us.
#include "args/loader.h"
#include "args/runner.h"
#include "polygraphy/extension.h"

#include <string>
#include <vector>

#ifndef POLYGRAPHY_RESHAPE_DESTROYER_VERSION
#define POLYGRAPHY_RESHAPE_DESTROYER_VERSION "0.0.1"
#endif

extern "C" POLYGRAPHY_EXTENSION_EXPORT int polygraphy_extension_abi_version() {
    return POLYGRAPHY_EXTENSION_ABI_VERSION;
}

extern "C" POLYGRAPHY_EXTENSION_EXPORT void polygraphy_register_extension(polygraphy::ExtensionRegistrar& registrar) {
    using namespace polygraphy_reshape_destroyer;
    // As a matter of convention, extension module names are prefixed with `polygraphy_`.
    // `polygraphy --version` lists the module with this name and version.
    registrar.set_module_info("polygraphy_reshape_destroyer", POLYGRAPHY_RESHAPE_DESTROYER_VERSION);
    // Groups are listed in `polygraphy run -h` (and parsed) in this order. The runner group depends
    // on the loader group, so both are added.
    registrar.add_run_arg_group<ReplaceReshapeArgs>();
    registrar.add_run_arg_group<IdentityOnlyRunnerArgs>();

    // A custom operator of the module's own domain, polygraphy.reshape_destroyer.DestroyedReshape (a
    // Reshape the module implements itself: data and a shape in, the data with that shape out), added
    // to the built-in runtime: `polygraphy run MODEL --pluginref` runs models that use it. Beside an ONNX
    // Runtime custom-op library of the same operator (--onnxrt-custom-op-libs), the two can be compared.
    polygraphy::ref::CustomKernel kernel;
    kernel.domain = "polygraphy.reshape_destroyer";
    kernel.op_type = "DestroyedReshape";
    kernel.min_inputs = kernel.max_inputs = 2;
    kernel.compute = [](const polygraphy::ref::CustomNode& node, const std::vector<const polygraphy::Tensor*>& inputs) {
        const polygraphy::Tensor& data = *inputs.at(0);
        const polygraphy::Tensor& shape = *inputs.at(1);
        if (shape.dtype() != polygraphy::DataType::kInt64 || shape.rank() != 1)
            node.fail("the shape must be a 1-D int64 tensor");
        polygraphy::Shape dims(shape.data_as<int64_t>(), shape.data_as<int64_t>() + shape.numel());
        if (polygraphy::shape_volume(dims) != data.numel())
            node.fail("the shape " + polygraphy::shape_to_string(dims) + " does not hold the " +
                      std::to_string(data.numel()) + " elements of the data");
        return std::vector<polygraphy::Tensor>{data.reshaped(dims)};
    };
    registrar.add_ref_kernel(std::move(kernel));
}
