#include "polygraphy/common/tensor.h"

#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <fmt/format.h>
#include <unistd.h>

#include "common/aligned_memory.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/run_arena.h"

namespace polygraphy {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;  // even where the machine has more memory

std::string gib(uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30)); }

}  // namespace

uint64_t tensor_memory_limit() {
    // Larger requests are hostile or corrupt, and with overcommit they would be granted and then
    // kill the process when touched, so they are refused up front.
    static const uint64_t limit = [] {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page_size = sysconf(_SC_PAGE_SIZE);
        const uint64_t physical = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * page_size : 0;
        return physical ? std::min(physical, kMaxTensorBytes) : kMaxTensorBytes;
    }();
    return limit;
}

namespace {

std::shared_ptr<void> allocate_buffer(std::size_t nbytes, bool zero_fill) {
    const std::size_t rounded = (std::max<std::size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    if (auto planned = detail::allocate_in_run_arena(rounded, zero_fill)) return planned;
    // Large results (a decoder's logits) on huge pages: a fresh buffer faults once per 2 MiB instead of
    // once per 4 KiB page, and page faults are most of what a run's large outputs cost.
    if (!zero_fill && rounded >= kHugePageBytes) {
        if (auto mapped = allocate_aligned(rounded)) return mapped;
    }
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (!memory) throw PolygraphyException("Could not allocate " + std::to_string(nbytes) + " bytes for a tensor");
    if (zero_fill) std::memset(memory, 0, rounded);
    return std::shared_ptr<void>(memory, [](void* p) { std::free(p); });
}

template <typename Fn>
decltype(auto) dispatch_numeric(DataType dtype, Fn&& fn) {
    switch (dtype) {
        case DataType::kFloat32: return fn(float{});
        case DataType::kFloat64: return fn(double{});
        case DataType::kInt8: return fn(int8_t{});
        case DataType::kInt16: return fn(int16_t{});
        case DataType::kInt32: return fn(int32_t{});
        case DataType::kInt64: return fn(int64_t{});
        case DataType::kUInt8: return fn(uint8_t{});
        case DataType::kUInt16: return fn(uint16_t{});
        case DataType::kUInt32: return fn(uint32_t{});
        case DataType::kUInt64: return fn(uint64_t{});
        default: break;
    }
    throw UnsupportedError("Data type " + std::string(dtype_name(dtype)) + " is not supported for this operation");
}

// Values of float8 formats, decoded by their definitions (used only for value_as_double/cast).
double float8_to_double(DataType dtype, uint8_t bits) {
    const bool negative = bits & 0x80u;
    int exponent_bits, mantissa_bits, bias;
    bool fnuz = false;
    switch (dtype) {
        case DataType::kFloat8E4M3FN: exponent_bits = 4, mantissa_bits = 3, bias = 7; break;
        case DataType::kFloat8E4M3FNUZ: exponent_bits = 4, mantissa_bits = 3, bias = 8, fnuz = true; break;
        case DataType::kFloat8E5M2: exponent_bits = 5, mantissa_bits = 2, bias = 15; break;
        default: exponent_bits = 5, mantissa_bits = 2, bias = 16, fnuz = true; break;
    }
    if (fnuz && bits == 0x80u) return std::numeric_limits<double>::quiet_NaN();
    const uint32_t exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1u);
    const uint32_t mantissa = bits & ((1u << mantissa_bits) - 1u);
    if (!fnuz) {
        if (dtype == DataType::kFloat8E4M3FN && exponent == 15 && mantissa == 7)
            return std::numeric_limits<double>::quiet_NaN();
        if (dtype == DataType::kFloat8E5M2 && exponent == 31)
            return mantissa ? std::numeric_limits<double>::quiet_NaN()
                            : (negative ? -HUGE_VAL : HUGE_VAL);
    }
    double magnitude = exponent == 0 ? std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits)
                                     : std::ldexp(static_cast<double>(mantissa | (1u << mantissa_bits)),
                                                  static_cast<int>(exponent) - bias - mantissa_bits);
    return negative ? -magnitude : magnitude;
}

// `value` as one of dispatch_numeric's types, numpy astype semantics.
template <typename T>
T from_double(double value) {
    if constexpr (std::is_integral_v<T>) {
        // Out-of-range and NaN conversions are undefined in C++; saturate instead.
        if (std::isnan(value)) return 0;
        if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
        if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    }
    return static_cast<T>(value);
}

// Whether dispatch_numeric takes `dtype`.
bool is_dispatch_numeric(DataType dtype) {
    switch (dtype) {
        case DataType::kFloat32:
        case DataType::kFloat64:
        case DataType::kInt8:
        case DataType::kInt16:
        case DataType::kInt32:
        case DataType::kInt64:
        case DataType::kUInt8:
        case DataType::kUInt16:
        case DataType::kUInt32:
        case DataType::kUInt64:
            return true;
        default:
            return false;
    }
}

// Stores `value` into element `index` of a buffer of `dtype`, numpy astype semantics.
void store_double(DataType dtype, void* data, int64_t index, double value) {
    switch (dtype) {
        case DataType::kFloat16:
            static_cast<uint16_t*>(data)[index] = double_to_half(value);
            return;
        case DataType::kBFloat16:
            static_cast<uint16_t*>(data)[index] = float_to_bfloat16(static_cast<float>(value));
            return;
        case DataType::kBool:
            static_cast<uint8_t*>(data)[index] = value != 0.0 ? 1 : 0;
            return;
        default:
            break;
    }
    dispatch_numeric(dtype,
                     [&](auto tag) { static_cast<decltype(tag)*>(data)[index] = from_double<decltype(tag)>(value); });
}

}  // namespace

int64_t shape_volume(const Shape& shape) {
    bool has_zero = false;
    for (int64_t dim : shape) {
        if (dim < 0) throw PolygraphyException("Invalid shape " + shape_to_string(shape) + ": negative dimension");
        has_zero = has_zero || dim == 0;
    }
    // A zero dimension makes the volume 0 whatever the others are, in any order.
    if (has_zero) return 0;
    int64_t volume = 1;
    for (int64_t dim : shape) {
        if (volume > std::numeric_limits<int64_t>::max() / dim)
            throw PolygraphyException("Invalid shape " + shape_to_string(shape) + ": element count overflows int64");
        volume *= dim;
    }
    return volume;
}

std::string shape_to_string(const Shape& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(shape[i]);
    }
    if (shape.size() == 1) text += ",";
    return text + ")";
}

Tensor::Tensor(DataType dtype, Shape shape) : Tensor(dtype, std::move(shape), /*zero_fill=*/true) {}

Tensor Tensor::uninitialized(DataType dtype, Shape shape) {
    return Tensor(dtype, std::move(shape), /*zero_fill=*/false);
}

Tensor::Tensor(DataType dtype, Shape shape, bool zero_fill) : dtype_(dtype), shape_(std::move(shape)) {
    if (dtype == DataType::kUndefined) throw UnsupportedError("Cannot create a tensor of undefined data type");
    numel_ = shape_volume(shape_);
    if (dtype == DataType::kString) {
        strings_ = std::make_shared<std::vector<std::string>>(static_cast<std::size_t>(numel_));
        return;
    }
    const uint64_t nbytes = static_cast<uint64_t>(numel_) * dtype_size(dtype);
    if (numel_ != 0 && (nbytes / static_cast<uint64_t>(numel_) != dtype_size(dtype) || nbytes > tensor_memory_limit()))
        throw PolygraphyException("Tensor of shape " + shape_to_string(shape_) + " and dtype " +
                                  std::string(dtype_name(dtype)) + " is too large to allocate: it needs " +
                                  gib(nbytes) + ", over the limit of " + gib(tensor_memory_limit()) +
                                  " (this machine's physical memory)");
    owner_ = allocate_buffer(static_cast<std::size_t>(nbytes), zero_fill);
    data_ = owner_.get();
}

Tensor Tensor::wrap(DataType dtype, Shape shape, std::shared_ptr<void> owner, void* data) {
    if (dtype == DataType::kString || dtype == DataType::kUndefined)
        throw InternalError("Tensor::wrap does not support string or undefined tensors");
    Tensor tensor;
    tensor.dtype_ = dtype;
    tensor.shape_ = std::move(shape);
    tensor.numel_ = shape_volume(tensor.shape_);
    tensor.owner_ = std::move(owner);
    tensor.data_ = data;
    return tensor;
}

Tensor Tensor::from_bytes(DataType dtype, Shape shape, const void* bytes, std::size_t nbytes) {
    Tensor tensor(dtype, std::move(shape));
    if (dtype == DataType::kString) throw InternalError("Tensor::from_bytes does not support string tensors");
    if (nbytes != tensor.nbytes())
        throw FormatError("Expected " + std::to_string(tensor.nbytes()) + " bytes for a tensor of shape " +
                          shape_to_string(tensor.shape()) + " and dtype " + std::string(dtype_name(dtype)) +
                          ", got " + std::to_string(nbytes));
    if (nbytes) std::memcpy(tensor.data_, bytes, nbytes);
    return tensor;
}

Tensor Tensor::from_doubles(DataType dtype, Shape shape, const std::vector<double>& values) {
    Tensor tensor(dtype, std::move(shape));
    if (static_cast<int64_t>(values.size()) != tensor.numel())
        throw InternalError("Tensor::from_doubles: " + std::to_string(values.size()) + " values for shape " +
                            shape_to_string(tensor.shape()));
    for (std::size_t i = 0; i < values.size(); ++i) store_double(dtype, tensor.data_, static_cast<int64_t>(i), values[i]);
    return tensor;
}

std::vector<std::string>& Tensor::strings() {
    if (!strings_) throw InternalError("strings() called on a tensor of dtype " + std::string(dtype_name(dtype_)));
    return *strings_;
}

const std::vector<std::string>& Tensor::strings() const {
    if (!strings_) throw InternalError("strings() called on a tensor of dtype " + std::string(dtype_name(dtype_)));
    return *strings_;
}

double Tensor::value_as_double(int64_t index) const {
    switch (dtype_) {
        case DataType::kFloat16: return half_to_float(static_cast<const uint16_t*>(data_)[index]);
        case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(data_)[index]);
        case DataType::kBool: return static_cast<const uint8_t*>(data_)[index] ? 1.0 : 0.0;
        case DataType::kFloat8E4M3FN:
        case DataType::kFloat8E4M3FNUZ:
        case DataType::kFloat8E5M2:
        case DataType::kFloat8E5M2FNUZ: return float8_to_double(dtype_, static_cast<const uint8_t*>(data_)[index]);
        case DataType::kInt4: return static_cast<const int8_t*>(data_)[index];
        case DataType::kUInt4: return static_cast<const uint8_t*>(data_)[index];
        case DataType::kComplex64: return static_cast<const std::complex<float>*>(data_)[index].real();
        case DataType::kComplex128: return static_cast<const std::complex<double>*>(data_)[index].real();
        default: break;
    }
    return dispatch_numeric(dtype_, [&](auto tag) {
        using T = decltype(tag);
        return static_cast<double>(static_cast<const T*>(data_)[index]);
    });
}

Tensor Tensor::clone() const {
    if (!defined()) return Tensor();
    Tensor copy = Tensor::uninitialized(dtype_, shape_);  // every byte is copied below
    if (dtype_ == DataType::kString)
        *copy.strings_ = *strings_;
    else if (nbytes())
        std::memcpy(copy.data_, data_, nbytes());
    return copy;
}

Tensor Tensor::reshaped(Shape shape) const {
    if (shape_volume(shape) != numel_)
        throw PolygraphyException("Cannot reshape a tensor of shape " + shape_to_string(shape_) + " to " +
                                  shape_to_string(shape));
    Tensor view = *this;
    view.shape_ = std::move(shape);
    return view;
}

Tensor Tensor::cast(DataType dtype) const {
    if (dtype == dtype_) return *this;
    if (dtype == DataType::kString || dtype_ == DataType::kString)
        throw UnsupportedError("Cannot cast between " + std::string(dtype_name(dtype_)) + " and " +
                               std::string(dtype_name(dtype)));
    Tensor result(dtype, shape_);
    // Integer-to-integer casts of 64-bit values must not go through double (precision loss).
    if (dtype_is_integer(dtype_) && dtype_is_integer(dtype) && dtype_ != DataType::kInt4 &&
        dtype_ != DataType::kUInt4 && dtype != DataType::kInt4 && dtype != DataType::kUInt4) {
        dispatch_numeric(dtype_, [&](auto source_tag) {
            using S = decltype(source_tag);
            dispatch_numeric(dtype, [&](auto target_tag) {
                using T = decltype(target_tag);
                const S* source = static_cast<const S*>(data_);
                T* target = static_cast<T*>(result.data_);
                for (int64_t i = 0; i < numel_; ++i) target[i] = static_cast<T>(source[i]);  // wraps like numpy
            });
        });
        return result;
    }
    // The float casts of fp16 conversions and comparisons, without the per-element dispatch below.
    if (dtype_ == DataType::kFloat32 && dtype == DataType::kFloat16) {
        const float* source = static_cast<const float*>(data_);
        uint16_t* target = static_cast<uint16_t*>(result.data_);
        for (int64_t i = 0; i < numel_; ++i) target[i] = float_to_half(source[i]);
        return result;
    }
    if (dtype_ == DataType::kFloat16 && (dtype == DataType::kFloat32 || dtype == DataType::kFloat64)) {
        const uint16_t* source = static_cast<const uint16_t*>(data_);
        for (int64_t i = 0; i < numel_; ++i) {
            const float value = half_to_float(source[i]);
            if (dtype == DataType::kFloat32)
                static_cast<float*>(result.data_)[i] = value;
            else
                static_cast<double*>(result.data_)[i] = value;
        }
        return result;
    }
    // Between the plain numeric types (the quantizers' int8 <-> float casts): the per-element
    // conversion below, with the dispatch hoisted out of the loop.
    if (is_dispatch_numeric(dtype_) && is_dispatch_numeric(dtype)) {
        dispatch_numeric(dtype_, [&](auto source_tag) {
            using S = decltype(source_tag);
            dispatch_numeric(dtype, [&](auto target_tag) {
                using T = decltype(target_tag);
                const S* source = static_cast<const S*>(data_);
                T* target = static_cast<T*>(result.data_);
                for (int64_t i = 0; i < numel_; ++i) target[i] = from_double<T>(static_cast<double>(source[i]));
            });
        });
        return result;
    }
    for (int64_t i = 0; i < numel_; ++i) store_double(dtype, result.data_, i, value_as_double(i));
    return result;
}

bool Tensor::equals(const Tensor& other) const {
    if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
    if (dtype_ == DataType::kString) return strings() == other.strings();
    return nbytes() == 0 || std::memcmp(data_, other.data_, nbytes()) == 0;
}

}  // namespace polygraphy
