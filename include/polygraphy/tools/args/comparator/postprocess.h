// Output post-processing options (Polygraphy's ComparatorPostprocessArgs).
#pragma once

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--postprocess/--postprocess-func [out:]top-K[,axis=A]...`: not available in this build yet
/// (refused while parsing, so no comparison silently skips it).
class ComparatorPostprocessArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Postprocessing"; }
    std::string description() const override { return "Options related to applying postprocessing to outputs."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;
};

}  // namespace polygraphy::tools
