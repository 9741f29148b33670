#include "args/loader.h"

#include "backend/loader.h"
#include "polygraphy/tools/args/backend/onnx/loader.h"

namespace polygraphy_reshape_destroyer {

using namespace polygraphy::tools;

std::vector<std::type_index> ReplaceReshapeArgs::depends_on() const {
    return {std::type_index(typeid(OnnxLoadArgs))};
}

std::vector<OptionSpec> ReplaceReshapeArgs::options() const {
    return {
        Option({"--res-des-rename-nodes"})
            .kind(OptionKind::kFlag)
            .help("Whether to rename nodes if they are replaced (a replaced node N becomes N_destroyed)"),
    };
}

void ReplaceReshapeArgs::parse(const ParsedArgs& args) {
    // Keys are the flags without leading dashes, '-' turned into '_' (argparse's rule).
    rename_nodes_ = args.flag("res_des_rename_nodes");
}

polygraphy::OnnxLoader ReplaceReshapeArgs::loader() const {
    // required_group<>() finds a sibling group of `polygraphy run` by type.
    return ReplaceReshapes(required_group<OnnxLoadArgs>().onnx_loader(), rename_nodes_);
}

}  // namespace polygraphy_reshape_destroyer
