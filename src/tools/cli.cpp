#include "polygraphy/tools/cli.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/tools/args/parser.h"
#include "polygraphy/tools/args/util.h"
#include "polygraphy/tools/registry.h"

namespace polygraphy::tools {
namespace {

constexpr const char* kProg = "polygraphy";
constexpr const char* kDescription = "Polygraphy: A Deep Learning Debugging Toolkit";

std::string tool_choices(const std::vector<std::unique_ptr<Tool>>& tools) {
    std::string out = "{";
    for (std::size_t i = 0; i < tools.size(); ++i) out += (i ? "," : "") + tools[i]->name();
    return out + "}";
}

std::string top_usage(const std::vector<std::unique_ptr<Tool>>& tools) {
    return std::string("usage: ") + kProg + " [-h] [-v] " + tool_choices(tools) + " ...\n";
}

// Help of the top-level parser, laid out like argparse's (options, then the "Tools" sub-command list).
std::string top_help(const std::vector<std::unique_ptr<Tool>>& tools) {
    struct Row {
        std::size_t indent;
        std::string header;
        std::string help;
    };
    std::vector<Row> options = {{2, "-h, --help", "show this help message and exit"},
                                {2, "-v, --version", "show program's version number and exit"}};
    std::vector<Row> tool_rows = {{2, tool_choices(tools), ""}};
    for (const auto& tool : tools) tool_rows.push_back({4, tool->name(), tool->summary()});

    const int width = help_width();
    std::size_t max_length = 0;
    for (const auto* rows : {&options, &tool_rows})
        for (const auto& row : *rows) max_length = std::max(max_length, row.header.size() + row.indent);
    const std::size_t help_position = std::min<std::size_t>(max_length + 2, 24);

    auto format = [&](const Row& row) {
        std::string out(row.indent, ' ');
        out += row.header;
        if (row.help.empty()) return out + "\n";
        const std::size_t action_width = help_position > row.indent + 2 ? help_position - row.indent - 2 : 0;
        if (row.header.size() <= action_width)
            out += std::string(action_width - row.header.size() + 2, ' ');
        else {
            out += '\n';
            out.append(help_position, ' ');
        }
        // Wrap the help text at the terminal width.
        const std::size_t text_width = std::max<std::size_t>(static_cast<std::size_t>(width) - help_position, 11);
        std::string line;
        std::string wrapped;
        std::size_t start = 0;
        while (start < row.help.size()) {
            auto end = row.help.find(' ', start);
            if (end == std::string::npos) end = row.help.size();
            const std::string word = row.help.substr(start, end - start);
            if (!line.empty() && line.size() + 1 + word.size() > text_width) {
                wrapped += line + "\n" + std::string(help_position, ' ');
                line.clear();
            }
            if (!word.empty()) line += (line.empty() ? "" : " ") + word;
            start = end + 1;
        }
        return out + wrapped + line + "\n";
    };

    std::string out = top_usage(tools) + "\n" + kDescription + "\n\noptions:\n";
    for (const auto& row : options) out += format(row);
    out += "\nTools:\n";
    for (const auto& row : tool_rows) out += format(row);
    return out;
}

std::string version_text() {
    std::string text = version_info() + "\n";
    for (const auto& module : extension_modules())
        text += "Extension Module: " + module.name + " | Version: " + module.version +
                (module.path.empty() ? std::string() : " | Path: " + args_util::python_list_repr({module.path})) + "\n";
    return text;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
    return out;
}

// Logs an exception as Polygraphy's G_LOGGER.critical would: one `[!]` message, no stack trace.
void report(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const PolygraphyException& e) {
        logger().critical(e.what());
    } catch (const InternalError& e) {
        logger().critical(e.what());
    } catch (const std::bad_alloc&) {
        logger().critical("Out of memory (std::bad_alloc): the model or its data do not fit in memory");
    } catch (const std::exception& e) {
        logger().critical(std::string("Unexpected error: ") + e.what());
    } catch (...) {
        logger().critical("Unexpected error of unknown type");
    }
}

int dispatch(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
    const auto start_time = std::chrono::steady_clock::now();
    const std::string command = join(argv, " ");
    // Modules add tools and `run` options, so they are loaded before anything is parsed (failures
    // are warnings; the tool goes on without the module).
    load_extension_modules();
    auto tools = make_tools();

    std::vector<std::string> unknown;
    std::size_t index = 1;
    std::optional<std::size_t> tool_index;
    for (; index < argv.size(); ++index) {
        const std::string& token = argv[index];
        if (token == "--") {
            ++index;
            break;
        }
        if (token.size() > 1 && token[0] == '-') {
            const bool long_form = token[1] == '-';
            const std::string name = token.substr(0, token.find('='));
            const bool has_value = name.size() != token.size();
            const bool help =
                long_form ? (name.size() > 2 && std::string("--help").rfind(name, 0) == 0) : token[1] == 'h';
            const bool version =
                long_form ? (name.size() > 2 && std::string("--version").rfind(name, 0) == 0) : token[1] == 'v';
            if ((help || version) && has_value && long_form) {
                err << top_usage(tools) << kProg << ": error: argument " << (help ? "-h/--help" : "-v/--version")
                    << ": ignored explicit argument " << args_util::python_repr(token.substr(name.size() + 1)) << "\n";
                return 2;
            }
            if (help) {
                out << top_help(tools);
                return 0;
            }
            if (version) {
                out << version_text();
                return 0;
            }
            unknown.push_back(token);
            continue;
        }
        break;
    }
    if (index < argv.size()) {
        for (std::size_t t = 0; t < tools.size(); ++t)
            if (tools[t]->name() == argv[index]) tool_index = t;
        if (!tool_index) {
            std::vector<std::string> names;
            for (const auto& tool : tools) names.push_back(args_util::python_repr(tool->name()));
            err << top_usage(tools) << kProg
                << ": error: argument tools: invalid choice: " << args_util::python_repr(argv[index])
                << " (choose from " << join(names, ", ") << ")\n";
            return 2;
        }
    } else {
        err << top_usage(tools) << kProg << ": error: the following arguments are required: tools\n";
        return 2;
    }

    Tool& tool = *tools[*tool_index];
    tool.setup(std::string(kProg) + " " + tool.name());
    const std::vector<std::string> tool_args(argv.begin() + static_cast<std::ptrdiff_t>(index) + 1, argv.end());
    ParseResult parsed;
    try {
        parsed = tool.parser().parse_known_args(tool_args);
    } catch (const ArgumentError& e) {
        err << tool.parser().format_error(e.what());
        return 2;
    }
    if (parsed.help_requested) {
        out << tool.parser().format_help();
        return 0;
    }
    unknown.insert(unknown.end(), parsed.unknown.begin(), parsed.unknown.end());
    if (!unknown.empty()) {
        logger().error("Unrecognized Options: " + args_util::python_list_repr(unknown));
        return 1;
    }

    bool show_start_end = false;
    int status = 1;
    try {
        tool.parse(parsed.args);
        show_start_end = tool.show_start_end_logging(parsed.args);
        if (show_start_end) logger().start("RUNNING | Command: " + command);
        status = tool.run(parsed.args);
    } catch (...) {
        report(std::current_exception());
        status = 1;
    }

    if (show_start_end) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
        char runtime[64];
        std::snprintf(runtime, sizeof(runtime), "%.3f", seconds);
        const std::string line =
            std::string(status == 0 ? "PASSED" : "FAILED") + " | Runtime: " + runtime + "s | Command: " + command;
        if (status == 0)
            logger().finish(line);
        else
            logger().error(line);
    }
    return status;
}

}  // namespace

int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
    try {
        return dispatch(argv, out, err);
    } catch (...) {
        // Set-up failures (duplicate flags, unmet group dependencies) and anything else that
        // escaped the tool: one line, status 1.
        report(std::current_exception());
        return 1;
    }
}

}  // namespace polygraphy::tools
