#include "polygraphy/tools/cli.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <thread>

#include "backend/ref/thread_budget.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/logger/logger.h"
#include "tools/args/parser.h"
#include "tools/args/util.h"
#include "tools/registry.h"

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

// Help laid out like argparse's: usage, description, options, then a sub-command section.
std::string list_help(const std::string& usage, const std::string& description, std::vector<HelpRow> options,
                      const std::string& section_title, const std::vector<std::unique_ptr<Tool>>& tools) {
    std::vector<HelpRow> tool_rows = {{2, tool_choices(tools), ""}};
    for (const auto& tool : tools) tool_rows.push_back({4, tool->name(), tool->summary()});
    const int width = help_width();
    std::vector<HelpRow> all_rows = options;
    all_rows.insert(all_rows.end(), tool_rows.begin(), tool_rows.end());
    const std::size_t position = help_position(all_rows, width);

    std::string text = description;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::string out = usage + "\n" + text + "\n\noptions:\n";
    for (const auto& row : options) out += format_help_row(row, position, width);
    out += "\n" + section_title + ":\n";
    for (const auto& row : tool_rows) out += format_help_row(row, position, width);
    return out;
}

// Help of the top-level parser (options, then the "Tools" sub-command list).
std::string top_help(const std::vector<std::unique_ptr<Tool>>& tools) {
    return list_help(top_usage(tools), kDescription,
                     {{2, "-h, --help", "show this help message and exit"},
                      {2, "-v, --version", "show program's version number and exit"}},
                     "Tools", tools);
}

std::string subtool_usage(const std::string& prog, const std::vector<std::unique_ptr<Tool>>& tools) {
    return "usage: " + prog + " [-h] " + tool_choices(tools) + " ...\n";
}

std::string version_text() {
    std::string text = version_info() + "\n";
    for (const auto& module : extension_modules())
        text += "Extension Module: " + module.name + " | Version: " + module.version +
                (module.path.empty() ? std::string() : " | Path: " + python_list_repr({module.path})) + "\n";
    return text;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
    return out;
}

// How many tokens from argv[index] make one logging option (`-v`, `-qq`, `--log-file F`,
// `--verbosity=info`, `--verbosity info backend:VERBOSE`), or 0 when argv[index] is not one. Tools with
// subtools take the logging options before the subtool too, as Polygraphy's parsers (which give
// every tool LoggerArgs) do; long options may be abbreviated, as argparse allows.
std::size_t logging_option_length(const std::vector<std::string>& argv, std::size_t index) {
    const std::string& token = argv[index];
    if (token.size() < 2 || token[0] != '-') return 0;
    const std::string name = token.substr(0, token.find('='));
    const bool has_value = name.size() != token.size();
    std::vector<OptionSpec> matches;
    for (const auto& spec : LoggerArgs().options())
        for (const auto& flag : spec.flags) {
            const bool short_count = token[1] != '-' && spec.kind == OptionKind::kCount && flag == token.substr(0, 2) &&
                                     token.find_first_not_of(token[1], 1) == std::string::npos;  // -vv
            if (flag == name || short_count || (token[1] == '-' && flag.rfind(name, 0) == 0 && name.size() > 2)) {
                matches.push_back(spec);
                break;
            }
        }
    if (matches.size() != 1) return 0;  // unknown or ambiguous: left to the parsers' own errors
    switch (matches.front().kind) {
        case OptionKind::kValue:
            return has_value ? 1 : std::min<std::size_t>(2, argv.size() - index);
        case OptionKind::kValues: {
            if (has_value) return 1;
            // nargs='+' takes every following non-option, as argparse (a subtool name included).
            std::size_t length = 1;
            while (index + length < argv.size() && argv[index + length].rfind('-', 0) != 0) ++length;
            return length;
        }
        default:
            return 1;
    }
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
                    << ": ignored explicit argument " << python_repr(token.substr(name.size() + 1)) << "\n";
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
            for (const auto& tool : tools) names.push_back(python_repr(tool->name()));
            err << top_usage(tools) << kProg << ": error: argument tools: invalid choice: " << python_repr(argv[index])
                << " (choose from " << join(names, ", ") << ")\n";
            return 2;
        }
    } else {
        err << top_usage(tools) << kProg << ": error: the following arguments are required: tools\n";
        return 2;
    }

    // Descend through subtools (`polygraphy inspect model ...`), as argparse's required subparsers.
    Tool* selected = tools[*tool_index].get();
    std::string prog = std::string(kProg) + " " + selected->name();
    std::vector<std::unique_ptr<Tool>> holders;
    ++index;
    std::vector<std::string> leading_logging_options;
    for (Subtools subtools = selected->make_subtools(); !subtools.tools.empty(); subtools = selected->make_subtools()) {
        const std::string usage = subtool_usage(prog, subtools.tools);
        while (index < argv.size())
            if (const std::size_t length = logging_option_length(argv, index)) {
                leading_logging_options.insert(leading_logging_options.end(),
                                               argv.begin() + static_cast<std::ptrdiff_t>(index),
                                               argv.begin() + static_cast<std::ptrdiff_t>(index + length));
                index += length;
            } else {
                break;
            }
        if (index >= argv.size()) {
            err << usage << prog << ": error: the following arguments are required: subtool\n";
            return 2;
        }
        const std::string& token = argv[index];
        if (token == "-h" || (token.size() > 2 && std::string("--help").rfind(token, 0) == 0)) {
            out << list_help(usage, selected->description(), {{2, "-h, --help", "show this help message and exit"}},
                             subtools.title, subtools.tools);
            return 0;
        }
        std::optional<std::size_t> found;
        for (std::size_t t = 0; t < subtools.tools.size(); ++t)
            if (subtools.tools[t]->name() == token) found = t;
        if (!found) {
            std::vector<std::string> names;
            for (const auto& tool : subtools.tools) names.push_back(python_repr(tool->name()));
            if (token.size() > 1 && token[0] == '-')
                err << usage << prog << ": error: the following arguments are required: subtool\n";
            else
                err << usage << prog << ": error: argument subtool: invalid choice: " << python_repr(token)
                    << " (choose from " << join(names, ", ") << ")\n";
            return 2;
        }
        holders.push_back(std::move(subtools.tools[*found]));
        selected = holders.back().get();
        prog += " " + selected->name();
        ++index;
    }

    Tool& tool = *selected;
    tool.setup(prog);
    // Logging options given before a subtool apply as if given after it (first, so the subtool's own win).
    std::vector<std::string> tool_args = leading_logging_options;
    tool_args.insert(tool_args.end(), argv.begin() + static_cast<std::ptrdiff_t>(index), argv.end());
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
        logger().error("Unrecognized Options: " + python_list_repr(unknown));
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

namespace {

// Whether the command can run the built-in runtime: not help or the version, not the model and data
// inspectors or lint (whose test inference of a model is small), which then start once, not twice.
bool may_run_builtin_runtime(const std::vector<std::string>& argv) {
    if (argv.size() < 2 || argv[1].empty() || argv[1][0] == '-') return false;
    for (std::size_t i = 1; i < argv.size(); ++i)
        if (argv[i] == "-h" || argv[i] == "--help") return false;
    const std::string& tool = argv[1];
    const std::string subtool = argv.size() > 2 ? argv[2] : "";
    if (tool == "inspect") return subtool == "capability";
    return tool != "check";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> openmp_settings(const std::vector<std::string>& argv,
                                                                 const std::function<const char*(const char*)>& getenv,
                                                                 const std::function<int()>& idle_cores) {
    if (getenv("OMP_WAIT_POLICY") != nullptr || !may_run_builtin_runtime(argv)) return {};
    std::vector<std::pair<std::string, std::string>> settings = {{"OMP_WAIT_POLICY", "passive"}};
    const std::string flag = "--ref-threads";
    std::string threads = "0";
    for (std::size_t i = 1; i < argv.size(); ++i) {
        if (argv[i] == flag && i + 1 < argv.size()) threads = argv[i + 1];
        if (argv[i].rfind(flag + "=", 0) == 0) threads = argv[i].substr(flag.size() + 1);
    }
    // A value that is not a count fails the argument parser later; no spin for it. The load is read
    // only for a count that may not fit (every command starts here).
    const bool count = !threads.empty() && threads.size() < 9 &&
                       std::all_of(threads.begin(), threads.end(), [](char c) { return c >= '0' && c <= '9'; });
    const bool fits = count && (std::stoi(threads) <= 1 || std::stoi(threads) <= idle_cores());
    if (getenv("GOMP_SPINCOUNT") == nullptr && fits) settings.emplace_back("GOMP_SPINCOUNT", "300000");
    return settings;
}

int idle_cores_now() {
    return ref::threads_for_current_load(std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}

int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
    logger().set_severity(Severity::kInfo);  // the library is silent by default; the tools are not
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
