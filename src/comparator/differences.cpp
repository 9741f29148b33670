// The dtype rules and the bool sweep of comparator/differences.h.
#include "comparator/differences.h"

namespace polygraphy::comparison {

DataType cast_up(DataType dtype) {
    // Every float narrower than float64 (float16, bfloat16, the float8s) computes in float32.
    if (dtype_is_floating(dtype)) return dtype == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
    switch (dtype) {
        case DataType::kInt8:
        case DataType::kUInt8:
        case DataType::kInt16:
        case DataType::kUInt16:
        case DataType::kInt4:
        case DataType::kUInt4:
            return DataType::kInt32;
        case DataType::kUInt32:
            return DataType::kInt64;
        default:
            return dtype;
    }
}

DataType promote(DataType a, DataType b) {
    if (a == b) return a;
    if (a == DataType::kBool) return b;
    if (b == DataType::kBool) return a;
    // float32 + float64, and float32 + int32/int64/uint64, are float64 in numpy.
    if (dtype_is_floating(a) || dtype_is_floating(b)) return DataType::kFloat64;
    if (a == DataType::kUInt64 || b == DataType::kUInt64) return DataType::kFloat64;  // int64 + uint64
    return DataType::kInt64;                                                          // int32 + int64
}

Differences compute_bool_differences(const Tensor& a, const Tensor& b, bool elemwise, double atol, double rtol,
                                     ScratchPool& pool) {
    Differences result;
    const int64_t n = a.numel();
    result.absdiff = pool.uninitialized_tensor(DataType::kBool, a.shape());
    result.reldiff = pool.uninitialized_tensor(DataType::kFloat64, a.shape());
    const uint8_t* x = a.data_as<uint8_t>();
    const uint8_t* y = b.data_as<uint8_t>();
    uint8_t* absdiff = result.absdiff.data_as<uint8_t>();
    double* reldiff = result.reldiff.data_as<double>();
    for (int64_t i = 0; i < n; ++i) {
        const bool d = (x[i] != 0) != (y[i] != 0);
        absdiff[i] = d;
        reldiff[i] = (d ? 1.0 : 0.0) / (y[i] ? 1.0 : 0.0);
        if (elemwise) {
            const double dd = d ? 1.0 : 0.0;
            if (dd > atol && (reldiff[i] > rtol || std::isnan(reldiff[i]))) result.mismatched = true;
        }
    }
    return result;
}

}  // namespace polygraphy::comparison
