// Internal: the one stable topological sort, shared by graph surgery and the built-in runtime.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace polygraphy {

/// Order of nodes 0..N-1 such that each comes after its `predecessors` (Kahn's algorithm, smallest
/// ready index first, so an already sorted graph keeps its order). On a cycle, throws ModelError
/// "Graph contains a cycle through nodes 'a' -> 'b' -> 'a'" (data-flow order, first listed first)
/// with names from `node_name`.
std::vector<std::size_t> stable_topological_order(const std::vector<std::vector<std::size_t>>& predecessors,
                                                  const std::function<std::string(std::size_t)>& node_name);

}  // namespace polygraphy
