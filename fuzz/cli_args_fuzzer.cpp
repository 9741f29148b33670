// Fuzzes whole command lines of every tool up to, not including, running it: the argparse-compatible
// parser (prefixes, `--flag=value`, nargs, `--`, choices, types) and then every argument group's
// parse(), which holds the parsers added by later tools (surgeon's `name:shape:dtype`, `--attrs`
// literals, runner and comparator options, debug options...). The input is split on newlines into
// tokens; the first selects the tool (`run`, `surgeon extract`, ... by name, else by a hash of the
// token) and the others are its argv. A malformed command line must be refused with a
// PolygraphyException that is not an InternalError: that is what `polygraphy` prints as one line.
//
// Parsing never writes files, except the logger group's --log-file, so that group is not parsed
// here (its options are still parsed by argparse). Tokens holding '/' are dropped so that a path
// can only name a file in the fuzzer's working folder, where the tools' inputs do not exist.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/tools/tool.h"
#include "tools/args/logger/logger.h"
#include "tools/args/parser.h"
#include "tools/registry.h"

namespace {

using namespace polygraphy;
using namespace polygraphy::tools;

// Every tool that runs (subtools descended), with its prog: "polygraphy surgeon extract".
struct LeafTool {
    std::string path;  // "surgeon extract"
    std::unique_ptr<Tool> owner;
    Tool* tool;
};

void collect_leaves(std::unique_ptr<Tool> tool, const std::string& prefix, std::vector<LeafTool>& leaves) {
    const std::string path = prefix.empty() ? tool->name() : prefix + " " + tool->name();
    Subtools subtools = tool->make_subtools();
    if (subtools.tools.empty()) {
        Tool* raw = tool.get();
        leaves.push_back({path, std::move(tool), raw});
        return;
    }
    for (auto& subtool : subtools.tools) collect_leaves(std::move(subtool), path, leaves);
}

std::vector<LeafTool> make_leaf_tools() {
    std::vector<LeafTool> leaves;
    for (auto& tool : make_tools()) collect_leaves(std::move(tool), "", leaves);
    return leaves;
}

std::size_t tool_count() {
    static const std::size_t count = make_leaf_tools().size();
    return count;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::vector<std::string> tokens = polygraphy::fuzz::split_lines(data, size);
    for (const auto& token : tokens)
        if (token.find('/') != std::string::npos) return -1;  // not added to the corpus

    // Fresh tools per input: groups keep what they parsed.
    std::vector<LeafTool> leaves = make_leaf_tools();
    FUZZ_CHECK(leaves.size() == tool_count());
    LeafTool* selected = nullptr;
    for (auto& leaf : leaves)
        if (leaf.path == tokens.front()) selected = &leaf;
    if (!selected) selected = &leaves[std::hash<std::string>{}(tokens.front()) % leaves.size()];

    Tool& tool = *selected->tool;
    tool.setup("polygraphy " + selected->path);
    const std::vector<std::string> argv(tokens.begin() + 1, tokens.end());
    try {
        const ParseResult parsed = tool.parser().parse_known_args(argv);
        if (parsed.help_requested) {
            FUZZ_CHECK(!tool.parser().format_help().empty());
            return 0;
        }
        for (const auto& group : tool.groups().all())
            if (!dynamic_cast<const LoggerArgs*>(group.get())) group->parse(parsed.args);
    } catch (const InternalError&) {
        throw;  // a bug: escapes and is reported as a finding
    } catch (const PolygraphyException&) {
        // the documented refusal
    }
    polygraphy::fuzz::silence_logger();
    return 0;
}
