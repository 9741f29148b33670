#include "comparator/graph_layout.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include "common/toposort.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::layout {
namespace {

constexpr int kSweeps = 4;  // down-up pairs of barycentre ordering

// Reorders each row by the mean centred position of its neighbours in `neighbours` (rows visited in
// `rows_order`); nodes without such neighbours keep their position.
void sweep(std::vector<std::vector<int32_t>>& rows, const std::vector<int32_t>& rows_order,
           const std::vector<std::vector<int32_t>>& neighbours, std::vector<double>& position) {
    for (const int32_t r : rows_order) {
        auto& row = rows[static_cast<std::size_t>(r)];
        std::vector<std::pair<double, int32_t>> keyed;
        keyed.reserve(row.size());
        for (const int32_t node : row) {
            const auto& around = neighbours[static_cast<std::size_t>(node)];
            double key = position[static_cast<std::size_t>(node)];
            if (!around.empty()) {
                key = 0;
                for (const int32_t other : around) key += position[static_cast<std::size_t>(other)];
                key /= static_cast<double>(around.size());
            }
            keyed.push_back({key, node});
        }
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        const double centre = (static_cast<double>(row.size()) - 1) / 2;
        for (std::size_t i = 0; i < keyed.size(); ++i) {
            row[i] = keyed[i].second;
            position[static_cast<std::size_t>(row[i])] = static_cast<double>(i) - centre;
        }
    }
}

}  // namespace

GraphLayout layout_graph(const onnx::GraphProto& graph) {
    const int32_t count = graph.node_size();
    GraphLayout result;
    if (count == 0) return result;

    std::unordered_map<std::string, int32_t> producer;
    for (int32_t index = 0; index < count; ++index)
        for (const std::string& output : graph.node(index).output())
            if (!output.empty()) producer.emplace(output, index);
    std::vector<std::vector<int32_t>> predecessors(static_cast<std::size_t>(count)),
        successors(static_cast<std::size_t>(count));
    std::set<std::pair<int32_t, int32_t>> seen;
    for (int32_t index = 0; index < count; ++index)
        for (const std::string& input : graph.node(index).input()) {
            const auto found = producer.find(input);
            if (found == producer.end() || found->second == index) continue;
            if (!seen.insert({found->second, index}).second) continue;
            result.edges.push_back({found->second, index});
            predecessors[static_cast<std::size_t>(index)].push_back(found->second);
            successors[static_cast<std::size_t>(found->second)].push_back(index);
        }

    std::vector<std::size_t> order(static_cast<std::size_t>(count));
    std::iota(order.begin(), order.end(), 0);
    try {
        std::vector<std::vector<std::size_t>> sorted_predecessors(predecessors.size());
        for (std::size_t i = 0; i < predecessors.size(); ++i)
            sorted_predecessors[i].assign(predecessors[i].begin(), predecessors[i].end());
        order = stable_topological_order(sorted_predecessors,
                                         [&](std::size_t i) { return graph.node(static_cast<int>(i)).name(); });
    } catch (const PolygraphyException&) {
        // A cycle: rows follow the file's order (edges against it are drawn upwards).
    }

    result.layer.assign(static_cast<std::size_t>(count), 0);
    for (const std::size_t node : order)
        for (const int32_t before : predecessors[node])
            result.layer[node] = std::max(result.layer[node], result.layer[static_cast<std::size_t>(before)] + 1);
    // Constants and other nodes without inputs sit just above their first consumer, not all in row 0.
    for (int32_t node = 0; node < count; ++node) {
        const auto& after = successors[static_cast<std::size_t>(node)];
        if (!predecessors[static_cast<std::size_t>(node)].empty() || after.empty()) continue;
        int32_t first = result.layer[static_cast<std::size_t>(after.front())];
        for (const int32_t consumer : after) first = std::min(first, result.layer[static_cast<std::size_t>(consumer)]);
        result.layer[static_cast<std::size_t>(node)] = std::max(0, first - 1);
    }

    const int32_t rows_count = *std::max_element(result.layer.begin(), result.layer.end()) + 1;
    std::vector<std::vector<int32_t>> rows(static_cast<std::size_t>(rows_count));
    for (const std::size_t node : order)
        rows[static_cast<std::size_t>(result.layer[node])].push_back(static_cast<int32_t>(node));
    std::vector<double> position(static_cast<std::size_t>(count));
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i)
            position[static_cast<std::size_t>(row[i])] =
                static_cast<double>(i) - (static_cast<double>(row.size()) - 1) / 2;

    std::vector<int32_t> down(static_cast<std::size_t>(rows_count));
    std::iota(down.begin(), down.end(), 0);
    const std::vector<int32_t> up(down.rbegin(), down.rend());
    for (int pass = 0; pass < kSweeps; ++pass) {
        sweep(rows, down, predecessors, position);
        sweep(rows, up, successors, position);
    }

    std::size_t widest = 1;
    for (const auto& row : rows) widest = std::max(widest, row.size());
    const double column = kNodeWidth + kColumnGap, row_height = kNodeHeight + kLayerGap;
    result.width = static_cast<double>(widest) * column;
    result.height = rows_count * row_height;
    result.x.resize(static_cast<std::size_t>(count));
    result.y.resize(static_cast<std::size_t>(count));
    for (int32_t node = 0; node < count; ++node) {
        result.x[static_cast<std::size_t>(node)] = result.width / 2 + position[static_cast<std::size_t>(node)] * column;
        result.y[static_cast<std::size_t>(node)] = (result.layer[static_cast<std::size_t>(node)] + 0.5) * row_height;
    }
    return result;
}

}  // namespace polygraphy::layout
