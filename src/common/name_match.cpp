// Finding a name among candidates (see include/polygraphy/common/name_match.h).
#include "polygraphy/common/name_match.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace polygraphy {
namespace {

std::string to_lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
std::size_t edit_distance(const std::string& a, const std::string& b) {
    const std::size_t n = a.size();
    const std::size_t m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[n][m];
}

}  // namespace

std::optional<std::string> find_str_in_list(const std::string& name, const std::vector<std::string>& candidates,
                                            std::optional<std::size_t> index) {
    for (const auto& candidate : candidates) {
        if (candidate == name) return candidate;
    }
    const std::string lower_name = to_lower(name);
    for (const auto& candidate : candidates) {
        const std::string lower = to_lower(candidate);
        if (lower.find(lower_name) != std::string::npos || lower_name.find(lower) != std::string::npos)
            return candidate;
    }
    if (index && *index < candidates.size()) return candidates[*index];
    return std::nullopt;
}

std::optional<std::string> closest_match(const std::string& name, const std::vector<std::string>& candidates) {
    const std::string lower_name = to_lower(name);
    const std::string* best = nullptr;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const auto& candidate : candidates) {
        const std::string lower = to_lower(candidate);
        const std::size_t distance = edit_distance(lower_name, lower);
        // Allow about one edit per three characters; single-character names never match by edits.
        const std::size_t longest = std::max(lower_name.size(), lower.size());
        const std::size_t allowed = longest < 2 ? 0 : std::max<std::size_t>(1, (longest + 1) / 3);
        if (distance <= allowed && distance < best_distance) {
            best = &candidate;
            best_distance = distance;
        }
    }
    if (best) return *best;
    // Names that contain one another ("x" and "x:0") are close too, as in Polygraphy's find_str_in_iterable.
    if (!name.empty()) return find_str_in_list(name, candidates);
    return std::nullopt;
}

}  // namespace polygraphy
