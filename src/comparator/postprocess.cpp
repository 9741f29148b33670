// Post-processing of run results before comparison (Polygraphy's PostprocessFunc and Comparator.postprocess).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "polygraphy/common/exception.h"
#include "polygraphy/comparator/comparator.h"

namespace polygraphy {
namespace {

// Indices of the k largest values along `axis`, largest first; ties keep index order and NaNs sort
// last, as numpy's stable argsort of -x does.
Tensor top_k_indices(const std::string& name, const Tensor& tensor, const TopK& setting) {
    if (tensor.dtype() == DataType::kString)
        throw PolygraphyException("Top-K cannot be applied to output '" + name + "': it holds strings");
    const int64_t rank = tensor.rank();
    const int64_t axis = setting.axis < 0 ? setting.axis + rank : setting.axis;
    if (axis < 0 || axis >= rank)
        throw PolygraphyException("Top-K axis " + std::to_string(setting.axis) + " is out of range for output '" +
                                  name + "' of shape " + shape_to_string(tensor.shape()));
    const Shape& shape = tensor.shape();
    const int64_t length = shape[static_cast<std::size_t>(axis)];
    const int64_t k = std::min(setting.k, length);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];

    Shape out_shape = shape;
    out_shape[static_cast<std::size_t>(axis)] = k;
    Tensor indices(DataType::kInt64, out_shape);
    auto* out = indices.data_as<int64_t>();
    std::vector<int64_t> order(static_cast<std::size_t>(length));
    std::vector<double> values(static_cast<std::size_t>(length));
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            for (int64_t j = 0; j < length; ++j)
                values[static_cast<std::size_t>(j)] = tensor.value_as_double((o * length + j) * inner + i);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                const double va = values[static_cast<std::size_t>(a)], vb = values[static_cast<std::size_t>(b)];
                if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
                return va > vb;
            });
            for (int64_t j = 0; j < k; ++j) out[(o * k + j) * inner + i] = order[static_cast<std::size_t>(j)];
        }
    }
    return indices;
}

}  // namespace

namespace postprocess_func {

PostprocessFunc top_k(PerOutput<TopK> k) {
    for (const auto& [name, setting] : k)
        if (setting.k < 0)
            throw UsageError("Top-K: k must not be negative.\nNote: given: " + std::to_string(setting.k) +
                             (name.empty() ? std::string() : " for output '" + name + "'"));
    return [k = std::move(k)](IterationResult& result) {
        for (auto& [name, tensor] : result.outputs) {
            const TopK* setting = k.find(name);
            if (!setting) setting = k.find("");
            if (!setting || setting->k == 0) continue;
            tensor = top_k_indices(name, tensor, *setting);
        }
    };
}

PostprocessFunc top_k(int64_t k, int64_t axis) {
    return top_k(PerOutput<TopK>{{"", TopK{k, axis}}});
}

}  // namespace postprocess_func

RunResults& Comparator::postprocess(RunResults& results, const PostprocessFunc& postprocess_func) {
    if (!postprocess_func)
        throw PolygraphyException("Comparator::postprocess needs a postprocess function; got an empty one");
    for (auto& [name, iterations] : results.lst)
        for (IterationResult& iteration : iterations) postprocess_func(iteration);
    return results;
}

}  // namespace polygraphy
