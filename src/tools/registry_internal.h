// Library-internal access to the extension-module registry (for the shared-library loader).
#pragma once

#include <vector>

#include "polygraphy/tools/registry.h"

namespace polygraphy::tools::detail {

/// The registry behind extension_modules(); the loader stages a candidate here while checking it.
std::vector<ExtensionModule>& module_registry();

}  // namespace polygraphy::tools::detail
