// `polygraphy inspect data`.
#include <filesystem>
#include <variant>

#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/data_summary.h"
#include "polygraphy/comparator/html_report.h"
#include "polygraphy/job/saved_data.h"
#include "tools/args/util.h"
#include "tools/inspect/inspect.h"

namespace polygraphy::tools {
namespace {

constexpr int64_t kNoLimit = int64_t{1} << 30;  // numpy's sys.maxsize, for -1

int64_t print_option(const ParsedArgs& args, const std::string& dest, const std::string& flag, int64_t fallback) {
    const auto text = args.value(dest);
    if (!text) return fallback;
    const auto value = args_util::parse_int(*text);
    if (!value) throw UsageError("Invalid value for " + flag + ": " + python_repr(*text));
    if (*value == -1) return kNoLimit;
    if (*value < 0) throw UsageError(flag + " must be -1 (no limit) or a non-negative number, but got " + *text);
    return *value;
}

}  // namespace

std::string InspectDataTool::description() const {
    return "Display information about inference inputs and outputs saved from Polygraphy's Comparator.run()\n"
           "(for example, outputs saved by `--save-outputs` or inputs saved by `--save-inputs` from `polygraphy "
           "run`).\n";
}

std::vector<OptionSpec> InspectDataTool::tool_options() const {
    return {
        Option({"path"}).positional().help("Path to a file containing input or output data from Polygraphy"),
        Option({"-a", "--all"})
            .kind(OptionKind::kFlag)
            .help("Show information on all iterations present in the data instead of just the first"),
        Option({"-s", "--show-values"})
            .kind(OptionKind::kFlag)
            .help("Show values of the tensors instead of just metadata"),
        Option({"--histogram"}).kind(OptionKind::kFlag).help("Show a histogram of the value distribution"),
        Option({"-n", "--num-items"})
            .type(ValueType::kInt)
            .help("The number of values to show at the beginning and end of each dimension when printing arrays. Use "
                  "a value of -1 to show all elements in the array. Defaults to 3."),
        Option({"--line-width"})
            .type(ValueType::kInt)
            .help("The number of characters per line when displaying arrays. Use a value of -1 to insert line breaks "
                  "only at dimension end points. Defaults to 75."),
        Option({"--report"})
            .metavar("FILE.html")
            .help("Also write a self-contained HTML page with each tensor's statistics and a histogram of its values"),
    };
}

int InspectDataTool::run_impl(const ParsedArgs& args) {
    DataSummaryOptions options;
    options.all_iterations = args.flag("all");
    options.show_values = args.flag("show_values");
    options.histogram = args.flag("histogram");
    options.print.edge_items = print_option(args, "num_items", "--num-items", 3);
    options.print.line_width = print_option(args, "line_width", "--line-width", 75);

    const std::string path = *args.value("path");
    const auto report = args.value("report");
    if (report && !is_html_report_path(*report))
        throw UsageError("--report writes an HTML page: give a path ending in .html\nNote: given: " + *report);
    const auto data = load_saved_results_or_inputs(path);
    if (const auto* results = std::get_if<RunResults>(&data))
        logger().info(str_from_run_results(*results, options));
    else
        logger().info(str_from_inputs(std::get<InputList>(data), options));
    if (report) {
        ReportContext context;
        context.title = std::filesystem::path(path).filename().string();
        context.command = "polygraphy inspect data";
        for (const auto& token : args.argv) context.command += " " + token;
        std::visit([&](const auto& contents) { save_data_report(contents, context, *report); }, data);
        logger().info("Saving data report to " + *report);
    }
    return 0;
}

}  // namespace polygraphy::tools
