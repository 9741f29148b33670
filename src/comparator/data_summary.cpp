// Polygraphy's `inspect data` text (tools/inspect/subtool/data.py).
#include "polygraphy/comparator/data_summary.h"

#include "common/text_util.h"

#include <algorithm>

#include "polygraphy/common/logger.h"
#include "polygraphy/common/numpy_print.h"

namespace polygraphy {
namespace {

using text::indent_block;
using text::strip;

// comparator/util.py's str_output_stats: the figures, or a placeholder when they cannot be computed.
std::string stats_str(const Tensor& tensor) {
    try {
        return stats::format_stats(stats::compute_stats(tensor), tensor.shape());
    } catch (const std::exception& error) {
        logger().verbose(std::string("Could not generate statistics.\nNote: Error was: ") + error.what());
    }
    return "<Error while computing statistics>";
}

std::string values_str(const Tensor& tensor, const numpy::PrintOptions& print) {
    try {
        return numpy::array_str(tensor, print);
    } catch (const std::exception& error) {
        return std::string("<error: ") + error.what() + ">";
    }
}

std::string str_from_iters(const std::vector<const TensorMap*>& iterations, const DataSummaryOptions& options) {
    std::string out;
    for (std::size_t index = 0; index < iterations.size(); ++index) {
        int indent = 1;
        if (iterations.size() > 1 && options.all_iterations) {
            out += indent_block("\n-- Iteration: " + std::to_string(index) + "\n", 0);
            indent = 2;
        }
        for (const auto& [name, tensor] : *iterations[index]) {
            const std::string meta = "[dtype=" + std::string(dtype_name(tensor.dtype())) +
                                     ", shape=" + shape_to_string(tensor.shape()) + "]";
            out += indent_block("\n" + name + " " + meta + " | Stats: " + stats_str(tensor), indent - 1);
            if (options.histogram) {
                std::string histogram;
                try {
                    histogram = stats::histogram_string(tensor);
                } catch (const std::exception& error) {
                    logger().verbose(std::string("Could not generate histogram.\nNote: Error was: ") + error.what());
                }
                out += '\n';
                out += indent_block(histogram, indent);
            }
            if (options.show_values) {
                out += '\n';
                out += indent_block(values_str(tensor, options.print), indent);
            }
        }
        if (indent == 2) out += "\n";
        if (!options.all_iterations) break;
    }
    return out;
}

}  // namespace

std::string str_from_run_results(const RunResults& results, const DataSummaryOptions& options) {
    std::string out = "==== Run Results (" + std::to_string(results.size()) + " runners) ====\n\n";
    std::size_t width = 0;
    for (const auto& [name, iterations] : results.lst) width = std::max(width, name.size());
    for (const auto& [name, iterations] : results.lst) {
        std::string padded = name;
        padded.append(width - name.size(), ' ');
        out += "---- " + padded + " (" + std::to_string(iterations.size()) + " iterations) ----\n";
        std::vector<const TensorMap*> maps;
        for (const auto& iteration : iterations) maps.push_back(&iteration.outputs);
        out += str_from_iters(maps, options) + "\n";
    }
    return strip(indent_block(out, 0));
}

std::string str_from_inputs(const InputList& inputs, const DataSummaryOptions& options) {
    std::string out = "==== Data (" + std::to_string(inputs.size()) + " iterations) ====\n";
    std::vector<const TensorMap*> maps;
    for (const auto& feed : inputs) maps.push_back(&feed);
    out += str_from_iters(maps, options) + "\n";
    return strip(indent_block(out, 0));
}

}  // namespace polygraphy
