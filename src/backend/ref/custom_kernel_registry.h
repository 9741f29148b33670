// Where the runtime looks kernels up: the built-in registry, then the custom kernels that programs and
// extension modules registered (polygraphy/backend/ref/custom_kernel.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polygraphy/backend/ref/custom_kernel.h"
#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

/// The kernel entry of (domain, op_type) at `opset`: built-in first, then custom; nullptr when none.
/// Entries stay valid for the life of the process.
const OpEntry* find_kernel(std::string_view domain, std::string_view op_type, int64_t opset);

/// Why register_custom_kernel() would refuse `kernel`, or nullopt (a check before registering several).
std::optional<std::string> custom_kernel_problem(const CustomKernel& kernel);

/// The custom kernels' entries (copies), in registration order.
std::vector<OpEntry> custom_entries();

}  // namespace polygraphy::ref
