// HTML reports: one self-contained page (data, script and styles inline; no network, no external
// fonts) that shows a comparison's per-layer error profile, a sortable table of outputs, histograms
// of both sides and of their differences, and the model's graph coloured by error; or, for saved
// data, each tensor's statistics and value histogram. Only figures and histograms are written,
// never tensors, so a report stays small (a few MB for thousands of compared outputs).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/divergence.h"

namespace polygraphy {

/// What a report says about where it came from.
struct ReportContext {
    std::string title;                        ///< shown as the page title (e.g. the model's file name)
    std::string command;                      ///< the command line that made it ("" when made through the API)
    const onnx::GraphProto* graph = nullptr;  ///< the compared model's graph: topological profile and graph view
    /// Why the comparison could not complete (e.g. no common outputs); the report then says so.
    std::string error;
    /// How each compared tensor was paired with the other graph's (`debug diff`: "name", "structure",
    /// ...), by the tensor's name: the table and the details show it. Empty for one graph.
    std::unordered_map<std::string, std::string> pairing = {};
};

/// True when `path` ends in ".html" or ".htm" (any case): `--report` then writes HTML.
bool is_html_report_path(const std::string& path);

/// Writes the comparison as an HTML page (atomically; missing folders are created). Profiles follow
/// build_error_profiles(accuracy, context.graph); histograms appear for outputs whose comparison
/// collected them (SimpleCompareOptions::collect_distributions). Names are escaped: no model or
/// tensor name can inject markup or script. Throws PolygraphyException when the file cannot be written.
void save_html_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                      const ReportContext& context, const std::string& path);

/// `--report PATH`: save_html_report() for an HTML path, else save_accuracy_report()'s JSON (which
/// records context.error, when set, as "error").
void save_comparison_report(const AccuracyResult& accuracy, const std::optional<Divergence>& divergence,
                            const ReportContext& context, const std::string& path);

/// `inspect data --report PATH`: an HTML page with each runner's (or the inputs file's) tensors per
/// iteration: dtype, shape, statistics and a histogram of the values. `context.graph` is ignored.
/// @{
void save_data_report(const RunResults& results, const ReportContext& context, const std::string& path);
void save_data_report(const InputList& inputs, const ReportContext& context, const std::string& path);
/// @}

}  // namespace polygraphy
