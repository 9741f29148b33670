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
}
