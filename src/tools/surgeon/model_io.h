// Loading and saving the model of a `surgeon` subtool, with Polygraphy's "Original Model:" and
// "New Model:" summaries (its BaseSurgeonSubtool.load_model/save_model).
#pragma once

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/tools/args/backend/onnx/loader.h"

namespace polygraphy::tools {

/// Loads the command line's model and logs its summary.
OnnxModel load_and_log(const OnnxLoadArgs& load);
/// Saves `model` where the command line says and logs its summary.
void save_and_log(const OnnxSaveArgs& save, const onnx::ModelProto& model);

}  // namespace polygraphy::tools
