// TensorMetadata: names mapped to (possibly unknown) dtypes and (possibly dynamic) shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/common/datatype.h"
#include "polygraphy/common/ordered_map.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// One dimension of a declared shape: a fixed value, a named dynamic dim ('batch'), or unknown.
struct Dim {
    int64_t value = -1;   ///< >= 0 when fixed, -1 when dynamic
    std::string param;    ///< dim_param name when dynamic and named

    /// A fixed, a named dynamic, and an unknown dimension.
    /// @{
    static Dim fixed(int64_t v) { return Dim{v, {}}; }
    static Dim named(std::string name) { return Dim{-1, std::move(name)}; }
    static Dim unknown() { return Dim{}; }
    /// @}
    /// Whether the dimension is not fixed.
    bool is_dynamic() const { return value < 0; }
    /// Same value and name.
    bool operator==(const Dim& other) const { return value == other.value && param == other.param; }
};

using DynShape = std::vector<Dim>;

DynShape to_dyn_shape(const Shape& shape);
bool is_shape_dynamic(const DynShape& shape);
/// "(1, 'batch', -1)" as Polygraphy prints declared shapes.
std::string dyn_shape_to_string(const DynShape& shape);
/// True when `concrete` has the same rank and agrees with every fixed dim of `declared`.
bool shape_matches(const Shape& concrete, const DynShape& declared);

/// Dtype and shape of one tensor, either possibly unknown.
struct MetadataEntry {
    std::optional<DataType> dtype;  ///< nullopt when unknown
    std::optional<DynShape> shape;  ///< nullopt when the rank itself is unknown
};

/// Name -> (dtype, shape), in order. Prints like Polygraphy: `{x [dtype=float32, shape=(1, 1, 2, 2)]}`.
class TensorMetadata : public OrderedMap<MetadataEntry> {
public:
    /// Adds or replaces `name`; returns *this for chaining.
    TensorMetadata& add(const std::string& name, std::optional<DataType> dtype, std::optional<DynShape> shape) {
        set(name, MetadataEntry{dtype, std::move(shape)});
        return *this;
    }
    /// Dtypes and shapes of the tensors of `feed`.
    static TensorMetadata from_feed_dict(const TensorMap& feed);
    /// `{a [dtype=float32, shape=(1, 2)], b [dtype=int64, shape=('n',)]}`
    std::string to_string() const;
};

}  // namespace polygraphy
