// Internal: the text of Polygraphy's comparison log (comparison_log.cpp), shared by the compare
// function and the comparator. The `--report` file is html_report.cpp's.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats::detail {

/// Polygraphy's util.indent_block: four spaces before every line.
std::string indent_block(const std::string& block);

/// histogram_string() with the data's min and max already known (`extremes`, used when `range` is absent).
std::string histogram_text(const Tensor& tensor, std::optional<std::pair<double, double>> range,
                           std::optional<std::pair<double, double>> extremes);

/// comparator/util.py log_output_stats: `<label> | Stats: ...` at INFO, then (indented) the values of
/// outputs of at most 100 elements and the histogram, at INFO when `failed` and VERBOSE otherwise.
void log_output_stats(const Tensor& tensor, const ArrayStats& stats, bool failed, const std::string& label,
                      std::optional<std::pair<double, double>> hist_range);

}  // namespace polygraphy::stats::detail
