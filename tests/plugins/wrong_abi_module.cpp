// A test module built "for another Polygraphy": it reports a different ABI version. Its registration
// must never run (it would throw).
#include <stdexcept>

#include "polygraphy/extension.h"

extern "C" POLYGRAPHY_EXTENSION_EXPORT int polygraphy_extension_abi_version() {
    return POLYGRAPHY_EXTENSION_ABI_VERSION + 41;
}

extern "C" POLYGRAPHY_EXTENSION_EXPORT void polygraphy_register_extension(polygraphy::ExtensionRegistrar&) {
    throw std::logic_error("registration of a module with the wrong ABI version was called");
}
