// numpy's str(array): how Polygraphy prints tensor values (comparison reports, `inspect data`,
// `inspect model --show weights`).
#pragma once

#include <cstdint>
#include <string>

#include "polygraphy/common/tensor.h"

namespace polygraphy::numpy {

/// The numpy print options `inspect data` sets (np.set_printoptions(edgeitems=, linewidth=)).
/// Values of 2^29 or more mean "no limit" (numpy's sys.maxsize); negative ones count as 0 (edge_items) or 1.
struct PrintOptions {
    int64_t edge_items = 3;   ///< items shown at each end of a dimension when summarizing (> 1000 elements)
    int64_t line_width = 75;  ///< characters per line
};

/// numpy `str(array)`: precision 8, `maxprec` float mode, 1000-element summarization threshold with
/// `options.edge_items` edge items, `options.line_width` characters a line. 0-d arrays print like numpy
/// scalars (`2.5`, `True`); an undefined tensor prints `None`. UnsupportedError for complex tensors.
std::string array_str(const Tensor& tensor, const PrintOptions& options = {});

/// `value` as numpy holds it in a float `dtype` (float32, float16, bfloat16 round; others unchanged).
double round_to_dtype(double value, DataType dtype);

}  // namespace polygraphy::numpy
