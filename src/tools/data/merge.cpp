// `polygraphy data merge`: adds up the dataset summaries of a run's shards (comparator/dataset_summary.h).
#include <fmt/format.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/dataset_summary.h"
#include "polygraphy/comparator/html_report.h"
#include "tools/args/util.h"
#include "tools/data/data.h"

namespace polygraphy::tools {

std::string DataMergeTool::description() const {
    return "Merge the dataset summaries that the shards of one run saved (polygraphy run --shard I/N\n"
           "--save-summary) into the summary of the whole dataset, which equals the one an unsharded run saves.\n"
           "A shard given twice (a requeued job) counts once; parts of different runs (model, dataset,\n"
           "options) and missing shards are refused.\n";
}

std::vector<OptionSpec> DataMergeTool::tool_options() const {
    return {
        Option({"parts"})
            .positional()
            .kind(OptionKind::kValues)
            .help("The summaries to merge (JSON files written by run --save-summary, or merged ones)"),
        Option({"-o", "--output"}).required().metavar("FILE.json").help("Where to save the merged summary"),
        Option({"--report"})
            .metavar("FILE")
            .help("Also write a report of the merged comparison: a path ending in .html gives the page of run "
                  "--report, with one iteration per sample; any other path gives its JSON"),
    };
}

int DataMergeTool::run_impl(const ParsedArgs& args) {
    const std::vector<std::string> paths = args.values("parts");
    if (paths.empty()) throw UsageError("data merge: give the summaries to merge");
    const std::string output = *args.value("output");
    const auto report = args.value("report");
    args_util::check_destination(output, "--output");
    args_util::check_destination(report, "--report");

    std::vector<std::pair<std::string, DatasetSummary>> parts;
    for (const auto& path : paths) parts.emplace_back(path, load_dataset_summary(path));
    const DatasetSummary merged = merge_dataset_summaries(parts);
    save_dataset_summary(merged, output);

    const AccuracyResult accuracy = accuracy_from_summary(merged);
    for (std::size_t p = 0; p < merged.pairs.size(); ++p)
        logger().info(format_dataset_summary(accuracy.pairs[p], merged.pairs[p].outputs));
    if (report) {
        ReportContext context;
        context.title = "Merged dataset summary";
        save_comparison_report(accuracy, std::nullopt, context, *report);
        logger().info("Saving accuracy report to " + *report);
    }
    logger().info(fmt::format("Merged {} part(s): shards {} of {}, {} sample(s). Saving merged summary to {}",
                              parts.size(), merged.shards.size(), merged.shard_count, merged.samples.size(), output));
    if (merged.passed())
        logger().finish("PASSED | every sample of the merged summary passed");
    else
        logger().error("FAILED | some samples of the merged summary failed");
    return merged.passed() ? 0 : 1;
}

}  // namespace polygraphy::tools
