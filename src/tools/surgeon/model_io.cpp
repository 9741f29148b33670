#include "tools/surgeon/model_io.h"

#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::tools {

// One blank line after each summary, as Polygraphy's logger prints them.
OnnxModel load_and_log(const OnnxLoadArgs& load) {
    OnnxModel model = load.onnx_loader()();
    logger().info("Original Model:\n" + str_from_onnx(*model) + "\n");
    return model;
}

void save_and_log(const OnnxSaveArgs& save, const onnx::ModelProto& model) {
    save.save(model);
    logger().info("New Model:\n" + str_from_onnx(model) + "\n");
}

}  // namespace polygraphy::tools
