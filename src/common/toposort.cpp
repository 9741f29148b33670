#include "common/toposort.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "polygraphy/common/exception.h"

namespace polygraphy {

std::vector<std::size_t> stable_topological_order(const std::vector<std::vector<std::size_t>>& predecessors,
                                                  const std::function<std::string(std::size_t)>& node_name) {
    const std::size_t count = predecessors.size();
    std::vector<std::vector<std::size_t>> successors(count);
    std::vector<std::size_t> in_degree(count, 0);
    for (std::size_t i = 0; i < count; ++i) {
        for (std::size_t predecessor : predecessors[i]) successors[predecessor].push_back(i);
        in_degree[i] = predecessors[i].size();
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < count; ++i)
        if (in_degree[i] == 0) ready.push(i);
    std::vector<std::size_t> sorted;
    sorted.reserve(count);
    while (!ready.empty()) {
        const std::size_t current = ready.top();
        ready.pop();
        sorted.push_back(current);
        for (std::size_t next : successors[current])
            if (--in_degree[next] == 0) ready.push(next);
    }
    if (sorted.size() == count) return sorted;

    // Every node left has a predecessor that is also left: walking predecessors must revisit a node.
    std::vector<int> position(count, -1);
    std::vector<std::size_t> walk;
    std::size_t current = 0;
    while (in_degree[current] == 0) ++current;
    while (position[current] < 0) {
        position[current] = static_cast<int>(walk.size());
        walk.push_back(current);
        for (std::size_t predecessor : predecessors[current]) {
            if (in_degree[predecessor] > 0) {
                current = predecessor;
                break;
            }
        }
    }
    std::vector<std::size_t> cycle(walk.begin() + position[current], walk.end());
    std::reverse(cycle.begin(), cycle.end());                                               // data-flow order
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // first listed first
    std::string names;
    for (std::size_t index : cycle) names += fmt::format("'{}' -> ", node_name(index));
    names += fmt::format("'{}'", node_name(cycle.front()));
    throw ModelError(fmt::format("Graph contains a cycle through nodes {}", names));
}

}  // namespace polygraphy
