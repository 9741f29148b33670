#include "tools/surgeon/model_io.h"

#include "polygraphy/backend/onnx/dds.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::tools {

// One blank line after each summary, as Polygraphy's logger prints them.
OnnxModel load_and_log(const OnnxLoadArgs& load, const std::optional<OrderedMap<int64_t>>& upper_bounds) {
    OnnxModel model = load.onnx_loader()();
    if (upper_bounds) {
        std::string applied;
        for (const auto& [name, bound] : set_unbounded_dds_upper_bounds(*model, *upper_bounds))
            applied += (applied.empty() ? "" : ", ") + python_repr(name) + ": " + std::to_string(bound);
        logger().info("Set tensor upper bounds: {" + applied + "}");
    }
    logger().info("Original Model:\n" + str_from_onnx(*model) + "\n");
    return model;
}

void save_and_log(const OnnxSaveArgs& save, const onnx::ModelProto& model) {
    save.save(model);
    logger().info("New Model:\n" + str_from_onnx(model) + "\n");
}

}  // namespace polygraphy::tools
