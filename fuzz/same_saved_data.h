// Equality of loaded RunResults / input lists for the fuzzers that save what they read and load it
// back (run_results, npz).
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <variant>

#include "polygraphy/common/json.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::fuzz {

/// What the saved-data readers return.
using Loaded = std::variant<RunResults, InputList>;

// Names and strings are compared as written: invalid UTF-8 is saved as U+FFFD, so compare the
// JSON quoting (and np.save bytes for string arrays) rather than the raw bytes.
inline bool same_text(const std::string& a, const std::string& b) {
    return json::quote(a) == json::quote(b);
}

inline bool same_tensor(const Tensor& a, const Tensor& b) {
    if (a.dtype() == DataType::kString && b.dtype() == DataType::kString) return npy::save(a) == npy::save(b);
    return a.equals(b);
}

inline bool same_map(const TensorMap& a, const TensorMap& b) {
    if (a.size() != b.size()) return false;
    auto it = b.begin();
    for (const auto& [name, tensor] : a) {
        if (!same_text(name, it->first) || !same_tensor(tensor, it->second)) return false;
        ++it;
    }
    return true;
}

inline bool same_runtime(const std::optional<double>& a, const std::optional<double>& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return true;
    return (std::isnan(*a) && std::isnan(*b)) || *a == *b;
}

inline bool same(const Loaded& a, const Loaded& b) {
    if (a.index() != b.index()) return false;
    if (const auto* inputs = std::get_if<InputList>(&a)) {
        const auto& other = std::get<InputList>(b);
        if (inputs->size() != other.size()) return false;
        for (std::size_t i = 0; i < inputs->size(); ++i)
            if (!same_map((*inputs)[i], other[i])) return false;
        return true;
    }
    const auto& x = std::get<RunResults>(a).lst;
    const auto& y = std::get<RunResults>(b).lst;
    if (x.size() != y.size()) return false;
    for (std::size_t r = 0; r < x.size(); ++r) {
        if (!same_text(x[r].first, y[r].first) || x[r].second.size() != y[r].second.size()) return false;
        for (std::size_t i = 0; i < x[r].second.size(); ++i) {
            const IterationResult& p = x[r].second[i];
            const IterationResult& q = y[r].second[i];
            if (!same_text(p.runner_name, q.runner_name) || !same_runtime(p.runtime, q.runtime) ||
                !same_map(p.outputs, q.outputs))
                return false;
        }
    }
    return true;
}

}  // namespace polygraphy::fuzz
