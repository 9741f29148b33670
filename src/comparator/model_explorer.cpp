#include "polygraphy/comparator/model_explorer.h"

#include <cmath>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"

namespace polygraphy {

std::string error_colour(const OutputCompareResult& result) {
    const double error = result.max_absdiff;
    const double ratio = result.atol > 0 ? error / result.atol : (error > 0 ? INFINITY : 0.0);
    if (result.passed) return ratio <= 0.01 ? "#1a9850" : "#91cf60";
    if (!(ratio <= 1000)) return "#a50026";  // NaN too
    if (ratio <= 10) return "#fee08b";
    if (ratio <= 100) return "#fdae61";
    return "#f46d43";
}

void save_model_explorer_node_data(const AccuracyResult& accuracy, const std::string& path, std::size_t pair,
                                   std::size_t iteration) {
    const IterationCompareResult* compared = nullptr;
    std::string name = "polygraphy: no comparison";
    if (!accuracy.pairs.empty()) {
        if (pair >= accuracy.pairs.size() || iteration >= accuracy.pairs[pair].iterations.size())
            throw PolygraphyException("No comparison " + std::to_string(pair) + ", iteration " +
                                      std::to_string(iteration) + " to write as Model Explorer node data.\nNote: " +
                                      std::to_string(accuracy.pairs.size()) + " comparison(s)");
        const auto& compared_pair = accuracy.pairs[pair];
        compared = &compared_pair.iterations[iteration];
        name = "max abs diff: " + compared_pair.first_runner + " vs " + compared_pair.second_runner + " (iteration " +
               std::to_string(iteration) + ")";
    }
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out, 2);
        writer.begin_object();
        writer.key("name").value(name);
        writer.key("results").begin_object();
        if (compared) {
            for (const auto& [tensor, result] : *compared) {
                if (!result.error.empty()) continue;
                writer.key(tensor).begin_object();
                writer.key("value");
                if (std::isfinite(result.max_absdiff))
                    writer.value(result.max_absdiff);
                else
                    writer.value(std::isnan(result.max_absdiff) ? "NaN" : "Infinity");
                writer.key("bgColor").value(error_colour(result));
                writer.end_object();
            }
        }
        writer.end_object();
        writer.end_object();
        writer.finish();
    });
}

}  // namespace polygraphy
