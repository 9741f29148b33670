// Finding a name among candidates: Polygraphy's lookup rule and did-you-mean hints.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace polygraphy {

/// Polygraphy's `find_str_in_iterable`: exact match, then case-insensitive substring, then the
/// item at `index` if given. Returns the matched name or nullopt.
std::optional<std::string> find_str_in_list(const std::string& name, const std::vector<std::string>& candidates,
                                            std::optional<std::size_t> index = std::nullopt);

/// Closest candidate by edit distance for did-you-mean hints (nullopt when nothing is close).
std::optional<std::string> closest_match(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace polygraphy
