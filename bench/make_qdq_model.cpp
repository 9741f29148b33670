// Writes the QDQ version of a model as ONNX Runtime's quantizer lays it out (int8 weights through
// DequantizeLinear, activations through QuantizeLinear -> DequantizeLinear; testing::qdq_version),
// for the `debug diff` measurements:
//     make_qdq_model IN.onnx OUT.onnx
#include <cstdio>
#include <exception>

#include "diff_models.h"
#include "polygraphy/backend/onnx/loader.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_qdq_model IN.onnx OUT.onnx\n");
        return 2;
    }
    try {
        const polygraphy::OnnxModel model = polygraphy::onnx_from_path(argv[1]);
        polygraphy::save_onnx(polygraphy::testing::qdq_version(*model), argv[2]);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "make_qdq_model: %s\n", error.what());
        return 1;
    }
    return 0;
}
