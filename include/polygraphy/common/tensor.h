// Tensor: a shape, an element type and a reference-counted buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "polygraphy/common/datatype.h"
#include "polygraphy/common/ordered_map.h"

namespace polygraphy {

/// Concrete dimensions of a tensor. A scalar has an empty shape.
using Shape = std::vector<int64_t>;

/// Product of dims; throws PolygraphyException on a negative dim or int64 overflow.
int64_t shape_volume(const Shape& shape);

/// The largest buffer one tensor may allocate: the machine's physical memory (at most 1 TiB).
/// Bigger requests (a hostile or corrupt model's shapes) are refused before allocating.
uint64_t tensor_memory_limit();

/// "(1, 3, 224, 224)", "(4,)" or "()" the way Python prints a shape tuple.
std::string shape_to_string(const Shape& shape);

/// A dense, row-major tensor. Copies are shallow: they share the buffer, like numpy references;
/// use clone() for an independent copy. Numeric buffers are 64-byte aligned. String tensors hold
/// std::string elements (use strings()).
class Tensor {
public:
    /// An empty tensor with kUndefined dtype (defined() is false).
    Tensor() = default;

    /// Allocates a zero-filled tensor. Throws PolygraphyException when the size is absurd
    /// (negative dims, overflow, over tensor_memory_limit()) and UnsupportedError for kUndefined.
    Tensor(DataType dtype, Shape shape);

    /// Like Tensor(dtype, shape) but the numeric buffer is left uninitialized (string tensors still
    /// hold empty strings): for producers that overwrite every element, saving a pass over memory.
    static Tensor uninitialized(DataType dtype, Shape shape);

    /// Wraps memory owned by `owner` without copying. `data` must stay valid while `owner` lives.
    static Tensor wrap(DataType dtype, Shape shape, std::shared_ptr<void> owner, void* data);

    /// Copies `nbytes` bytes (must equal the tensor's byte size) into a new tensor.
    static Tensor from_bytes(DataType dtype, Shape shape, const void* bytes, std::size_t nbytes);

    /// Convenience for tests and examples: a tensor holding `values` converted to `dtype`.
    static Tensor from_doubles(DataType dtype, Shape shape, const std::vector<double>& values);

    /// False for a default-constructed tensor.
    bool defined() const { return dtype_ != DataType::kUndefined; }
    /// Element type, shape, rank and element count.
    /// @{
    DataType dtype() const { return dtype_; }
    const Shape& shape() const { return shape_; }
    int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
    int64_t numel() const { return numel_; }
    /// @}
    /// Byte size of the buffer; 0 for string tensors.
    std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }

    /// The buffer (nullptr for string tensors); data_as<T>() casts it to the element type.
    /// @{
    void* data() { return data_; }
    const void* data() const { return data_; }
    template <typename T>
    T* data_as() {
        return static_cast<T*>(data_);
    }
    template <typename T>
    const T* data_as() const {
        return static_cast<const T*>(data_);
    }
    /// @}

    /// Elements of a kString tensor; throws InternalError for other dtypes.
    std::vector<std::string>& strings();
    /// Elements of a kString tensor (read-only).
    const std::vector<std::string>& strings() const;

    /// Element `index` (flat) converted to double; bool -> 0/1, halves widened. Not for strings.
    double value_as_double(int64_t index) const;

    /// Whether no other tensor shares this one's buffer (false for string and empty tensors).
    bool buffer_unshared() const { return owner_ && owner_.use_count() == 1; }

    /// Deep copy.
    Tensor clone() const;

    /// Same buffer, new shape of the same volume (throws PolygraphyException otherwise).
    Tensor reshaped(Shape shape) const;

    /// A new tensor with every element converted to `dtype` (numpy astype semantics: floats to ints
    /// truncate toward zero, anything to bool is `!= 0`). Returns *this when dtype already matches.
    Tensor cast(DataType dtype) const;

    /// True when both have the same dtype, shape and identical bytes (NaNs compare by bit pattern).
    bool equals(const Tensor& other) const;

private:
    Tensor(DataType dtype, Shape shape, bool zero_fill);

    DataType dtype_ = DataType::kUndefined;
    Shape shape_;
    int64_t numel_ = 0;
    std::shared_ptr<void> owner_;
    void* data_ = nullptr;
    std::shared_ptr<std::vector<std::string>> strings_;
};

/// Inputs or outputs of one inference, in order (Polygraphy's feed_dict / OrderedDict of arrays).
using TensorMap = OrderedMap<Tensor>;

}  // namespace polygraphy
