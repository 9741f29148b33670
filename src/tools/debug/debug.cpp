#include "tools/debug/debug.h"

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {

std::unique_ptr<Tool> make_debug_tool() {
    return std::make_unique<DispatchingTool>(
        "debug",
        "[EXPERIMENTAL] Debug a wide variety of model issues.\n"
        "\n"
        "The `debug` subtools work on the same general principles:\n"
        "\n"
        "1. Iteratively perform some task that generates some output\n"
        "2. Evaluate the generated output to determine if it should be considered `good` or `bad`\n"
        "3. Sort any tracked artifacts into `good` and `bad` directories based on (2)\n"
        "4. Make changes if required and then repeat the process\n"
        "\n"
        "The \"some output\" referred to in (1) is usually a model file and is written to the current\n"
        "directory by default during each iteration.\n"
        "\n"
        "In order to distinguish between `good` and `bad`, the subtool uses one of two methods:\n"
        "    a. The `--check` command, if one is provided. It can be virtually any command.\n"
        "    b. Prompting you. If no `--check` command is provided, the subtool will prompt you\n"
        "       to report whether the iteration passed or failed.\n"
        "\n"
        "By default, if the status code of the `--check` command is non-zero (a crash or a\n"
        "--check-timeout included), the iteration is considered a failure. `--fail-regex` and\n"
        "`--fail-returncode` / `--ignore-fail-returncode` refine what counts as a failure.\n"
        "\n"
        "The general usage of most `debug` subtools is:\n"
        "\n"
        "    polygraphy debug <subtool> <model> [--artifacts files_to_sort_each_iteration...] \\\n"
        "        [--check <checker_command>]\n",
        "Debug Subtools",
        std::vector<DispatchingTool::SubtoolFactory>{make_subtool<DiffTool>, make_subtool<PrecisionTool>,
                                                     make_subtool<ReduceTool>, make_subtool<RepeatTool>});
}

}  // namespace polygraphy::tools
