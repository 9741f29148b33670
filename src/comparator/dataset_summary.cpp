// Per-output figures over the samples of a comparison (polygraphy/comparator/dataset_summary.h).
#include "polygraphy/comparator/dataset_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "common/text_util.h"
#include "polygraphy/common/ordered_map.h"

namespace polygraphy {
namespace {

using text::figure;

SampleQuantiles quantiles_of(std::vector<double> values) {
    SampleQuantiles result;
    if (values.empty()) return result;
    std::sort(values.begin(), values.end(), [](double a, double b) {
        return std::isnan(b) ? !std::isnan(a) : (!std::isnan(a) && a < b);  // NaN last, as the largest
    });
    auto at = [&](double q) {
        const double position = q * static_cast<double>(values.size() - 1);
        const auto below = static_cast<std::size_t>(std::floor(position));
        const std::size_t above = std::min(below + 1, values.size() - 1);
        const double low = values[below], high = values[above];
        if (std::isinf(low) || std::isinf(high) || std::isnan(low) || std::isnan(high))
            return position - static_cast<double>(below) < 0.5 ? low : high;
        return low + (high - low) * (position - static_cast<double>(below));
    };
    result.min = values.front();
    result.median = at(0.5);
    result.p90 = at(0.9);
    result.max = values.back();
    return result;
}

}  // namespace

void complete_output_summary(OutputDatasetSummary& summary) {
    std::sort(summary.per_sample.begin(), summary.per_sample.end(),
              [](const SampleOutcome& a, const SampleOutcome& b) { return a.sample < b.sample; });
    summary.samples = summary.per_sample.size();
    summary.passed = summary.failed = 0;
    summary.sum_max_abs = summary.sum_max_rel = summary.sum_mean_abs = summary.sum_mean_rel = 0;
    summary.worst_sample = summary.per_sample.empty() ? 0 : summary.per_sample.front().sample;
    std::vector<double> abs_values, rel_values;
    std::pair<bool, double> worst{false, -1.0};  // (failed, largest difference), NaN as the largest
    for (const SampleOutcome& outcome : summary.per_sample) {
        if (outcome.passed)
            ++summary.passed;
        else
            ++summary.failed;
        const double abs_diff = outcome.compared ? outcome.max_abs : std::nan("");
        abs_values.push_back(abs_diff);
        rel_values.push_back(outcome.compared ? outcome.max_rel : std::nan(""));
        if (outcome.compared) {
            summary.sum_max_abs += outcome.max_abs;
            summary.sum_max_rel += outcome.max_rel;
            summary.sum_mean_abs += outcome.mean_abs;
            summary.sum_mean_rel += outcome.mean_rel;
        }
        // A failing sample outranks any passing one; among equals, the larger difference.
        const std::pair<bool, double> rank{!outcome.passed,
                                           std::isnan(abs_diff) ? std::numeric_limits<double>::infinity() : abs_diff};
        if (rank > worst) {
            worst = rank;
            summary.worst_sample = outcome.sample;
        }
    }
    summary.max_abs = quantiles_of(std::move(abs_values));
    summary.max_rel = quantiles_of(std::move(rel_values));
}

std::vector<OutputDatasetSummary> summarize_dataset(const AccuracyResult::PairResult& pair, SampleIndexing indexing) {
    OrderedMap<OutputDatasetSummary> outputs;
    for (std::size_t iteration = 0; iteration < pair.iterations.size(); ++iteration) {
        for (const auto& [name, result] : pair.iterations[iteration]) {
            if (!outputs.contains(name)) {
                OutputDatasetSummary fresh;
                fresh.output = name;
                outputs.set(name, fresh);
            }
            OutputDatasetSummary& summary = outputs.at(name);
            SampleOutcome outcome;
            outcome.sample = indexing.first + iteration * indexing.stride;
            outcome.passed = result.passed;
            outcome.compared = result.error.empty();
            outcome.max_abs = outcome.compared ? result.max_absdiff : std::nan("");
            outcome.max_rel = outcome.compared ? result.max_reldiff : std::nan("");
            outcome.mean_abs = outcome.compared ? result.mean_absdiff : std::nan("");
            outcome.mean_rel = outcome.compared ? result.mean_reldiff : std::nan("");
            summary.per_sample.push_back(outcome);
            if (result.error_histograms) {
                if (!summary.histograms) summary.histograms.emplace();
                add_histogram(summary.histograms->absolute, result.error_histograms->absolute);
                add_histogram(summary.histograms->relative, result.error_histograms->relative);
            }
        }
    }
    std::vector<OutputDatasetSummary> result;
    for (auto& [name, summary] : outputs) {
        complete_output_summary(summary);
        result.push_back(std::move(summary));
    }
    return result;
}

std::string format_dataset_summary(const AccuracyResult::PairResult& pair,
                                   const std::vector<OutputDatasetSummary>& outputs) {
    std::size_t width = 6;
    for (const auto& output : outputs) width = std::max(width, output.output.size());
    std::string text = fmt::format("Dataset Summary | {} vs. {} | {} samples", pair.first_runner, pair.second_runner,
                                   pair.iterations.size());
    text += fmt::format(
        "\n    {:<{}} | Passed | Failed | Max abs diff per sample: min / median / p90 / max | Max rel "
        "diff per sample: median / max | Worst sample",
        "Output", width);
    for (const auto& output : outputs)
        text += fmt::format("\n    {:<{}} | {:>6} | {:>6} | {} / {} / {} / {} | {} / {} | {}", output.output, width,
                            output.passed, output.failed, figure(output.max_abs.min), figure(output.max_abs.median),
                            figure(output.max_abs.p90), figure(output.max_abs.max), figure(output.max_rel.median),
                            figure(output.max_rel.max), output.worst_sample);
    return text;
}

namespace {

// `value` rounded up to two significant digits (never below it).
double round_up(double value) {
    if (!(value > 0) || std::isinf(value)) return value;
    const double scale = std::pow(10.0, std::floor(std::log10(value)) - 1);
    double rounded = std::ceil(value / scale) * scale;
    if (rounded < value) rounded = std::nextafter(rounded, std::numeric_limits<double>::infinity());
    return rounded;
}

}  // namespace

std::vector<SuggestedTolerance> suggest_tolerances(const AccuracyResult::PairResult& pair, double pass_rate) {
    const bool every_element = pass_rate >= 1.0;
    OrderedMap<SuggestedTolerance> outputs;
    for (const auto& iteration : pair.iterations)
        for (const auto& [name, result] : iteration) {
            if (!outputs.contains(name)) outputs.set(name, SuggestedTolerance{name});
            SuggestedTolerance& tolerance = outputs.at(name);
            if (!result.error.empty() || std::isnan(result.max_absdiff)) {
                tolerance.comparable = false;
                continue;
            }
            tolerance.atol = std::max(tolerance.atol, every_element ? result.max_absdiff : result.quantile_absdiff);
            tolerance.rtol = std::max(tolerance.rtol, every_element ? result.max_reldiff : result.quantile_reldiff);
        }
    std::vector<SuggestedTolerance> result;
    for (auto& [name, tolerance] : outputs) {
        tolerance.atol = round_up(tolerance.atol);
        tolerance.rtol = round_up(tolerance.rtol);
        result.push_back(tolerance);
    }
    return result;
}

std::string format_suggested_tolerances(const AccuracyResult::PairResult& pair,
                                        const std::vector<SuggestedTolerance>& tolerances, double pass_rate) {
    const bool every_element = pass_rate >= 1.0;
    std::string atols, rtols, unusable;
    for (const auto& tolerance : tolerances) {
        if (!tolerance.comparable) {
            unusable += (unusable.empty() ? "" : ", ") + tolerance.output;
            continue;
        }
        atols += fmt::format(" {}:{}", tolerance.output, figure(tolerance.atol));
        rtols += fmt::format(" {}:{}", tolerance.output, figure(tolerance.rtol));
    }
    std::string text =
        every_element
            ? fmt::format("Suggested Tolerances | {} vs. {} | every element of {} sample(s) passes with either",
                          pair.first_runner, pair.second_runner, pair.iterations.size())
            : fmt::format(
                  "Suggested Tolerances | {} vs. {} | at least {} of the elements of each of {} sample(s) "
                  "pass with either",
                  pair.first_runner, pair.second_runner, fmt::format("{:g}%", 100 * pass_rate), pair.iterations.size());
    const std::string check =
        every_element ? "" : fmt::format(" --check-error-stat quantile --error-quantile {:g}", pass_rate);
    if (!atols.empty()) {
        text += "\n    --atol" + atols + " --rtol 0" + check;
        text += "\n    --atol 0 --rtol" + rtols + check;
    }
    if (!unusable.empty()) text += "\n    No tolerance passes (a sample could not be compared): " + unusable;
    return text;
}

}  // namespace polygraphy
