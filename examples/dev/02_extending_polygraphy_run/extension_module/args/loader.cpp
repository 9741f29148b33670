#include "args/loader.h"

namespace polygraphy_reshape_destroyer {

using namespace polygraphy::tools;

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

}  // namespace polygraphy_reshape_destroyer
