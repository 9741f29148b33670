#include "polygraphy/tools/tool.h"

#include <filesystem>
#include <typeindex>

#include "common/install_layout.h"
#include "polygraphy/common/logger.h"
#include "tools/args/logger/logger.h"
#include "tools/args/parser.h"
#include "tools/args/util.h"

#ifndef POLYGRAPHY_VERSION
#define POLYGRAPHY_VERSION "unknown"
#endif

namespace polygraphy::tools {

Tool::Tool(std::string name) : name_(std::move(name)) {}

Tool::~Tool() = default;

std::string Tool::summary() const {
    // First paragraph of the description, as Polygraphy's tool list shows it.
    const std::string text = description();
    std::string summary;
    std::size_t start = text.find_first_not_of('\n');
    while (start != std::string::npos && start < text.size()) {
        const auto end = text.find('\n', start);
        std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (line.find_first_not_of(" \t") == std::string::npos) break;
        if (!summary.empty()) summary += ' ';
        summary += line.substr(line.find_first_not_of(" \t"));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return summary;
}

void Tool::setup(const std::string& prog) {
    if (parser_) return;
    groups_.add(std::make_unique<LoggerArgs>());
    for (auto& group : subscriptions()) groups_.add(std::move(group));

    for (const auto& group : groups_.all()) {
        for (const auto& dependency : group->depends_on()) {
            bool found = false;
            for (const auto& other : groups_.all()) {
                const auto& other_group = *other;  // typeid of a plain reference: no side effects to warn about
                if (std::type_index(typeid(other_group)) == dependency) found = true;
            }
            if (!found)
                throw InternalError("argument group '" + group->title() + "' of tool '" + name_ +
                                    "' depends on a group the tool does not subscribe to (" + dependency.name() + ")");
        }
    }

    ArgumentParser parser(prog, description());
    bool allow_abbrev = true;
    for (const auto& group : groups_.all()) allow_abbrev = allow_abbrev && group->allows_abbreviation();
    parser.set_allow_abbrev(allow_abbrev);
    parser.add_group("", "", tool_options());
    for (const auto& group : groups_.all()) parser.add_group(group->title(), group->description(), group->options());
    parser_ = std::make_unique<ArgumentParser>(std::move(parser));
}

const ArgumentParser& Tool::parser() const {
    if (!parser_) throw InternalError("tool '" + name_ + "' was used before setup()");
    return *parser_;
}

void Tool::parse(const ParsedArgs& args) {
    for (const auto& group : groups_.all()) group->parse(args);
}

int Tool::run(const ParsedArgs& args) {
    logger().verbose("Loaded Module: polygraphy | Version: " POLYGRAPHY_VERSION " | Path: " +
                     version_info().substr(version_info().find("Path: ") + 6));
    return run_impl(args);
}

std::string version_info() {
    const std::filesystem::path library_folder = install_layout::library_folder();
    const std::string folder = library_folder.empty() ? "<unknown>" : library_folder.string();
    return std::string("Polygraphy | Version: ") + POLYGRAPHY_VERSION + " | Path: " + python_list_repr({folder});
}

DispatchingTool::DispatchingTool(std::string name, std::string description, std::string subtools_title,
                                 std::vector<SubtoolFactory> subtools)
    : Tool(std::move(name)),
      description_(std::move(description)),
      subtools_title_(std::move(subtools_title)),
      subtools_(std::move(subtools)) {}

Subtools DispatchingTool::make_subtools() const {
    Subtools made{subtools_title_, {}};
    for (const SubtoolFactory make : subtools_) made.tools.push_back(make());
    return made;
}

int DispatchingTool::run_impl(const ParsedArgs& /*args*/) {
    throw InternalError("'" + name() + "' only dispatches to its subtools");
}

}  // namespace polygraphy::tools
