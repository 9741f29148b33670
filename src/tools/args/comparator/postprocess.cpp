#include "polygraphy/tools/args/comparator/postprocess.h"
#include "polygraphy/tools/script.h"

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {

std::vector<OptionSpec> ComparatorPostprocessArgs::options() const {
    return {
        Option({"--postprocess", "--postprocess-func"})
            .dest("postprocess")
            .kind(OptionKind::kValues)
            .help("Functions to apply to outputs prior to comparison. Format: `--postprocess [<out_name>:]<func>`. "
                  "Not available in this build yet"),
    };
}

void ComparatorPostprocessArgs::parse(const ParsedArgs& args) {
    if (args.has("postprocess"))
        throw UnsupportedError(args.occurrences("postprocess").front().flag + " is not available in this build yet");
}

bool ComparatorPostprocessArgs::add_to_script(Script& /*script*/) const {
    return true;  // --postprocess is refused while parsing
}

}  // namespace polygraphy::tools
