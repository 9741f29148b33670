// Writes the regression inputs of fuzz/corpus/<target>/ that are built in code (RELIABILITY.md, F5):
// ONNX models whose nodes miss inputs, outputs or attributes, each beside a valid Identity path, at
// opset 17. The files are committed (findings from fuzzing are kept there as they were found); run
// this only to regenerate these:  build-fuzz/fuzz/make_regression_corpus fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "model_builder.h"

namespace {

using polygraphy::DataType;
using polygraphy::Shape;
using polygraphy::testing::ModelBuilder;

ModelBuilder with_valid_path() {
    ModelBuilder builder(17);
    builder.input("ok_in", DataType::kFloat32, Shape{2, 2});
    builder.node("Identity", {"ok_in"}, {"ok"}, "ok_node");
    builder.output("ok", DataType::kFloat32, Shape{2, 2});
    builder.input("x", DataType::kFloat32, Shape{1, 3, 4, 4});
    return builder;
}

// Well-formed nodes whose input types libonnx 1.12's inference functions assume without testing
// (F12, F15): each crashed libonnx's shape inference under infer_output_metadata.
void write_libonnx_typing_cases(const std::filesystem::path& folder) {
    {
        ModelBuilder builder = with_valid_path();
        builder.node("Gelu", {"x"}, {"g"}, "gelu");  // no libonnx schema at opset 17: g stays untyped
        builder.node("Shape", {"g"}, {"s"}, "shape");
        builder.output("s", DataType::kInt64, Shape{4});
        builder.save((folder / "shape_of_tensor_without_schema_type.onnx").string());
    }
    {
        ModelBuilder builder = with_valid_path();
        builder.node("ConstantOfShape", {"x"}, {"c"}, "constant");  // a float shape: inference fails
        builder.node("Shape", {"c"}, {"s"}, "shape");
        builder.output("s", DataType::kInt64, Shape{4});
        builder.save((folder / "shape_of_tensor_whose_inference_failed.onnx").string());
    }
    {
        ModelBuilder builder = with_valid_path();
        builder.input("flat", DataType::kFloat32, Shape{4, 4});
        builder.initializer("w", polygraphy::Tensor(DataType::kFloat32, Shape{2, 2, 3, 3}));
        builder.node("Conv", {"flat", "w"}, {"y"}, "conv");
        builder.output("y", DataType::kFloat32, Shape{4, 4}, false);
        builder.save((folder / "conv_data_rank_below_weight_rank.onnx").string());
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_regression_corpus CORPUS_DIR\n");
        return 2;
    }
    struct Case {
        std::string name, op_type;
        std::vector<std::string> inputs, outputs;
    };
    const std::vector<Case> cases = {
        {"global_average_pool_no_input", "GlobalAveragePool", {}, {"y"}},
        {"global_average_pool_no_output", "GlobalAveragePool", {"x"}, {}},
        {"scan_without_body", "Scan", {"x"}, {"y"}},
        {"shape_empty_input", "Shape", {""}, {"y"}},
        {"shape_second_output", "Shape", {"x"}, {"y", "z"}},
        {"split_no_outputs", "Split", {"x"}, {}},
    };
    for (const char* target : {"onnx_model", "onnx_structure"}) {
        const std::filesystem::path folder = std::filesystem::path(argv[1]) / target;
        std::filesystem::create_directories(folder);
        for (const Case& c : cases) {
            ModelBuilder builder = with_valid_path();
            onnx::NodeProto& node = builder.node(c.op_type, c.inputs, c.outputs, "bad");
            if (c.op_type == "Scan") polygraphy::testing::set_attr(node, "num_scan_inputs", int64_t{1});
            builder.save((folder / (c.name + ".onnx")).string());
        }
    }
    write_libonnx_typing_cases(std::filesystem::path(argv[1]) / "onnx_structure");
    return 0;
}
