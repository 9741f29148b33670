// A test module that reports its ABI version but has no polygraphy_register_extension().
#include "polygraphy/extension.h"

extern "C" POLYGRAPHY_EXTENSION_EXPORT int polygraphy_extension_abi_version() {
    return POLYGRAPHY_EXTENSION_ABI_VERSION;
}
