// Models with planted low-precision trouble, for the tests of `debug precision` (built in code).
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/run_results.h"

namespace polygraphy::testing {

/// A float32 model with two planted fp16 faults among nodes that fp16 computes well (opset 17):
///   x [4,16] -> /fc1/MatMul -> /relu/Relu -> /fc2/MatMul -> /act/Tanh -> /out/Add (+ bias) -> y [4,8]
///   x -> /scale/Mul (x 2e5) -> scaled [4,16]: the product overflows 65504 in fp16 (infinity);
///   u, v [4,16] -> /delta/Sub -> delta [4,16]: u and v lie near 1000, 0.5 apart at most, where fp16's
///     spacing is 0.5, so their difference cancels in fp16.
/// Every graph output passes atol = rtol = 1e-2 in fp16 except `scaled` and `delta`: keeping exactly
/// /scale/Mul and /delta/Sub in float32 makes the model pass (their inputs are float32 graph inputs).
onnx::ModelProto fp16_trouble_model();

/// `count` samples for fp16_trouble_model(): x in [0, 1), u in [1000, 1000.5), v = u - w with w in
/// [0, 0.5), from `seed`.
InputList fp16_trouble_samples(std::size_t count, uint32_t seed);

}  // namespace polygraphy::testing
