#include "polygraphy/tools/debug/debug.h"
namespace polygraphy::tools {
std::string ReduceTool::description() const { return "stub\n"; }
std::vector<std::unique_ptr<ArgGroup>> ReduceTool::subscriptions() { return {}; }
std::vector<OptionSpec> ReduceTool::tool_options() const { return {}; }
int ReduceTool::run_impl(const ParsedArgs&) { return 1; }
}
