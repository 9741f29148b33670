// Loading and saving the model of a `surgeon` subtool, with Polygraphy's "Original Model:" and
// "New Model:" summaries (its BaseSurgeonSubtool.load_model/save_model).
#pragma once

#include <cstdint>
#include <optional>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/ordered_map.h"
#include "tools/args/backend/onnx/loader.h"

namespace polygraphy::tools {

/// Loads the command line's model and logs its summary. With `upper_bounds`
/// (`--set-unbounded-dds-upper-bound`, a step of Polygraphy's loader), unbounded data-dependent
/// shapes are bounded first (set_unbounded_dds_upper_bounds), logging `Set tensor upper bounds: {...}`.
OnnxModel load_and_log(const OnnxLoadArgs& load, const std::optional<OrderedMap<int64_t>>& upper_bounds = std::nullopt);
/// Saves `model` where the command line says and logs its summary.
void save_and_log(const OnnxSaveArgs& save, const onnx::ModelProto& model);

}  // namespace polygraphy::tools
