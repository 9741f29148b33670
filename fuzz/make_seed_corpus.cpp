// Writes the seed corpora of the fuzzers with the project's own writers (no binary files are checked
// in): make_seed_corpus <folder> creates <folder>/<target>/ for every target in fuzz/.
//   base64        base64::encode of short strings, byte ramps and .npy files
//   npy           npy::save of every dtype numpy knows, plus big-endian, Fortran-order, byte-string
//                 and version 2.0 / 3.0 files (headers written here, as numpy writes them)
//   run_results   RunResults::save and save_inputs files of several dtypes, and a RunResults with
//                 plain ndarrays (not LazyArray), written with json::Writer
//   npz           npz::save_results and save_inputs archives, one with ZIP64 fields throughout, and a
//                 numpy.savez-style archive of top-level members (ArchiveWriter)
//   tensor_proto  tensor_to_proto of every dtype, typed-field encodings (float_data, int32_data...),
//                 external-data, segment and weightless tensors
//   onnx_model    models built with tests/support/model_builder.h: dynamic shapes, initializers
//                 that are also inputs, Constant and If nodes, value_info, several opset imports
//   onnx_structure the same, plus Scan and Loop bodies, ONNX Runtime's contrib and NCHWc operators,
//                  Split/Concat/Shape/GlobalAveragePool,
//                 Conv/Reshape/Gather/LayerNormalization, a local function, Slice with an omitted input
//   cli_value_spec argument values of --input-shapes, --atol/--rtol, --val-range, --pool-limit...
//   cli_args      command lines of every tool, one token per line, the tool's name first
//   dataset_summary  `run --save-summary` parts: a shard of three with histograms and a divergence,
//                 and a whole dataset without histograms
//   plugin_files  `polygraphy plugin` patterns (pattern.json) and configurations (config.yaml)
//   image_codecs  small PNG, TIFF, WebP, JPEG 2000 and JPEG images (tests/support/encoded_images.h)
// scripts/fuzz_smoke.sh adds the example models and, when ../shared is there, Polygraphy's files.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include "encoded_images.h"
#include "model_builder.h"
#include "nbits_weights.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/npz.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/dataset_summary.h"

using namespace polygraphy;
using polygraphy::testing::ModelBuilder;
using polygraphy::testing::NBitsWeights;
using polygraphy::testing::NBitsZeroPoints;
using polygraphy::testing::quantize_nbits;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;

namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) throw PolygraphyException("cannot write " + path.string());
}

Tensor ramp(DataType dtype, const Shape& shape) {
    Tensor tensor(dtype, shape);
    if (dtype == DataType::kComplex64 || dtype == DataType::kComplex128) {  // (re, im) pairs
        for (int64_t i = 0; i < 2 * tensor.numel(); ++i) {
            if (dtype == DataType::kComplex64) tensor.data_as<float>()[i] = static_cast<float>(i) - 1.5f;
            else tensor.data_as<double>()[i] = static_cast<double>(i) - 1.5;
        }
        return tensor;
    }
    std::vector<double> values(static_cast<std::size_t>(tensor.numel()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 7) - 2.5;
    return Tensor::from_doubles(dtype, shape, values);
}

Tensor strings(const Shape& shape, const std::vector<std::string>& values) {
    Tensor tensor(DataType::kString, shape);
    tensor.strings() = values;
    return tensor;
}

// One small tensor of every dtype, numeric ones with values.
std::vector<std::pair<std::string, Tensor>> sample_tensors() {
    std::vector<std::pair<std::string, Tensor>> tensors = {
        {"f32", ramp(DataType::kFloat32, {2, 3})},
        {"f64_scalar", ramp(DataType::kFloat64, {})},
        {"f16", ramp(DataType::kFloat16, {4})},
        {"bf16", ramp(DataType::kBFloat16, {2, 2})},
        {"i8", ramp(DataType::kInt8, {3})},
        {"i16", ramp(DataType::kInt16, {1, 2})},
        {"i32", ramp(DataType::kInt32, {1, 2, 3})},
        {"i64", ramp(DataType::kInt64, {2})},
        {"u8", ramp(DataType::kUInt8, {5})},
        {"u16", ramp(DataType::kUInt16, {2})},
        {"u32", ramp(DataType::kUInt32, {2})},
        {"u64", ramp(DataType::kUInt64, {2})},
        {"bool", ramp(DataType::kBool, {2, 2})},
        {"c64", ramp(DataType::kComplex64, {2})},
        {"c128", ramp(DataType::kComplex128, {1})},
        {"f32_empty", Tensor(DataType::kFloat32, {0, 3})},
        {"str", strings({3}, {"a", "", "h\xc3\xa9llo"})},
    };
    for (DataType dtype : {DataType::kInt4, DataType::kUInt4, DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ,
                           DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ}) {
        Tensor tensor(dtype, {3});
        for (int i = 0; i < 3; ++i) tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(0x31 * (i + 1));
        if (dtype == DataType::kInt4 || dtype == DataType::kUInt4)
            for (int i = 0; i < 3; ++i) tensor.data_as<uint8_t>()[i] &= 0x07;
        tensors.emplace_back(std::string(dtype_name(dtype)), tensor);
    }
    return tensors;
}

// A .npy file with the given header dict and payload, in format `major`.0.
std::string npy_file(const std::string& dict, const std::string& payload, int major = 1) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    std::string header = dict;
    while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += static_cast<char>(major);
    bytes += '\0';
    for (std::size_t i = 0; i < prefix - 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return bytes + header + payload;
}

void write_npy(const fs::path& dir) {
    for (const auto& [name, tensor] : sample_tensors()) write(dir / (name + ".npy"), npy::save(tensor));
    // Layouts np.save does not write but numpy reads.
    const std::string be_f32("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8);  // 1.0, -2.0 big-endian
    write(dir / "f32_big_endian.npy", npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be_f32));
    const std::string i32_6("\x01\0\0\0\x02\0\0\0\x03\0\0\0\x04\0\0\0\x05\0\0\0\x06\0\0\0", 24);
    write(dir / "i32_fortran.npy", npy_file("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", i32_6));
    write(dir / "bytes_S3.npy", npy_file("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }",
                                         std::string("ab\0xyz", 6)));
    write(dir / "unicode_big_endian.npy", npy_file("{'descr': '>U2', 'fortran_order': False, 'shape': (1,), }",
                                                   std::string("\0\0\0a\0\0\0\xe9", 8)));
    write(dir / "version2.npy", npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }", i32_6, 2));
    write(dir / "version3.npy", npy_file("{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", "\1\2\3", 3));
}

void write_base64(const fs::path& dir) {
    const std::vector<std::string> texts = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    for (std::size_t i = 0; i < texts.size(); ++i) write(dir / ("text" + std::to_string(i)), base64::encode(texts[i]));
    std::string all_bytes;
    for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
    write(dir / "all_bytes", base64::encode(all_bytes));
    write(dir / "ramp_100", base64::encode(all_bytes.substr(0, 100)));  // long enough for the AVX2 path
    write(dir / "npy_f32", base64::encode(npy::save(ramp(DataType::kFloat32, {2, 3}))));
    write(dir / "npy_str", base64::encode(npy::save(strings({2}, {"x", "yz"}))));
}

// Results of two runners (one with '/' and ':' in its name), several dtypes, a runtime left out.
RunResults sample_results() {
    RunResults results;
    IterationResult first;
    first.runner_name = "onnxrt-runner-N0-07/15/24-12:00:00";
    first.runtime = 0.00123;
    for (const auto& [name, tensor] : sample_tensors())
        if (name == "f32" || name == "f16" || name == "i64" || name == "bool" || name == "str" || name == "f64_scalar")
            first.outputs.set(name, tensor);
    IterationResult second;
    second.runner_name = first.runner_name;
    second.outputs.set("f32", ramp(DataType::kFloat32, {1}));
    results.add({first, second}, first.runner_name);
    IterationResult other;
    other.runner_name = "polygraphy-ref-runner";
    other.runtime = 1e-05;
    other.outputs.set("f32", ramp(DataType::kFloat32, {2, 3}));
    results.add({other}, other.runner_name);
    return results;
}

// Two iterations of inputs, the second with fewer tensors.
InputList sample_inputs() {
    InputList inputs(2);
    inputs[0].set("x", ramp(DataType::kFloat32, {1, 1, 2, 2}));
    inputs[0].set("ids", ramp(DataType::kInt32, {3}));
    inputs[1].set("x", ramp(DataType::kFloat32, {1, 1, 2, 2}));
    return inputs;
}

void write_run_results(const fs::path& dir) {
    sample_results().save((dir / "run_results.json").string());
    RunResults{}.save((dir / "empty_run_results.json").string());
    save_inputs(sample_inputs(), (dir / "inputs.json").string());

    // Outputs as plain ndarrays (older Polygraphy files), one string with an escape, compact layout.
    std::string text;
    json::Writer writer(&text, 0);
    writer.begin_object().key("lst").begin_array().begin_array().value("runner\u00e9").begin_array();
    writer.begin_object().key("outputs").begin_object().key("y").ndarray(ramp(DataType::kFloat64, {2})).end_object();
    writer.key("runtime").null().key("runner_name").value("runner\u00e9").key("polygraphy_class").value("IterationResult");
    writer.end_object().end_array().end_array().end_array().key("polygraphy_class").value("RunResults").end_object();
    writer.finish();
    write(dir / "ndarray_run_results.json", text);
}

void write_npz(const fs::path& dir) {
    RunResults results = sample_results();
    IterationResult dots;  // an output named only with dots (written %2E%2E) and an empty one
    dots.runner_name = "runner with %";
    dots.outputs.set("..", ramp(DataType::kFloat16, {2}));
    dots.outputs.set("f32_empty", Tensor(DataType::kFloat32, {0, 3}));
    results.add({dots}, dots.runner_name);
    npz::save_results(results, (dir / "results.npz").string());
    npz::save_inputs(sample_inputs(), (dir / "inputs.npz").string());

    // Every size and offset as a ZIP64 field.
    setenv("POLYGRAPHY_ZIP64_THRESHOLD", "1", 1);
    npz::save_inputs(sample_inputs(), (dir / "inputs_zip64.npz").string());
    unsetenv("POLYGRAPHY_ZIP64_THRESHOLD");

    // numpy.savez(f, x=..., y=...): top-level members, no polygraphy.json.
    npz::ArchiveWriter savez((dir / "savez.npz").string());
    savez.add_tensor("x.npy", ramp(DataType::kFloat64, {2, 2}));
    savez.add_tensor("y.npy", ramp(DataType::kUInt8, {3}));
    savez.finish();
}

void write_tensor_protos(const fs::path& dir) {
    for (const auto& [name, tensor] : sample_tensors())
        write(dir / (name + ".pb"), tensor_to_proto(tensor, name).SerializeAsString());

    // The typed fields that ONNX writers use besides raw_data.
    auto typed = [&](const std::string& name, int data_type, std::vector<int64_t> dims, auto fill) {
        onnx::TensorProto proto;
        proto.set_name(name);
        proto.set_data_type(data_type);
        for (int64_t dim : dims) proto.add_dims(dim);
        fill(proto);
        write(dir / (name + ".pb"), proto.SerializeAsString());
    };
    using P = onnx::TensorProto;
    typed("float_data", P::FLOAT, {2}, [](P& p) { p.add_float_data(1.5f), p.add_float_data(-2.0f); });
    typed("complex_float_data", P::COMPLEX64, {1}, [](P& p) { p.add_float_data(1.0f), p.add_float_data(2.0f); });
    typed("double_data", P::DOUBLE, {1}, [](P& p) { p.add_double_data(3.25); });
    typed("int64_data", P::INT64, {2}, [](P& p) { p.add_int64_data(-1), p.add_int64_data(1LL << 40); });
    typed("uint64_data_u32", P::UINT32, {2}, [](P& p) { p.add_uint64_data(7), p.add_uint64_data(0xffffffffu); });
    typed("int32_data_f16", P::FLOAT16, {2}, [](P& p) { p.add_int32_data(0x3c00), p.add_int32_data(0xc000); });
    typed("int32_data_bool", P::BOOL, {3}, [](P& p) { p.add_int32_data(0), p.add_int32_data(1), p.add_int32_data(5); });
    typed("int32_data_int4", dtype_to_onnx(DataType::kInt4), {3}, [](P& p) { p.add_int32_data(0x9f), p.add_int32_data(0x07); });
    typed("string_data", P::STRING, {2}, [](P& p) { p.add_string_data("ab"), p.add_string_data(""); });
    typed("external", P::FLOAT, {4}, [](P& p) {
        p.set_data_location(P::EXTERNAL);
        auto* entry = p.add_external_data();
        entry->set_key("location");
        entry->set_value("weights.bin");
    });
    typed("segment", P::FLOAT, {2}, [](P& p) {
        p.mutable_segment()->set_begin(0);
        p.mutable_segment()->set_end(2);
    });
    typed("weightless", P::FLOAT, {2}, [](P& p) { p.set_doc_string("TRT_WEIGHTLESS"); });
}

void write_models(const fs::path& dir) {
    {
        ModelBuilder builder(17, "dynamic_relu");
        builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3), Dim::unknown()});
        builder.node("Relu", {"x"}, {"y"}, "relu");
        builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3), Dim::unknown()});
        builder.save((dir / "dynamic_relu.onnx").string());
    }
    {
        ModelBuilder builder(13, "conv");
        builder.input("x", DataType::kFloat32, Shape{1, 2, 4, 4});
        builder.input("w", DataType::kFloat32, Shape{2, 2, 3, 3});  // also an initializer: not a real input
        builder.initializer("w", random_tensor({2, 2, 3, 3}, 1));
        builder.initializer("b", random_tensor({2}, 2));
        auto& conv = builder.node("Conv", {"x", "w", "b"}, {"conv"}, "conv");
        set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
        builder.node("Sigmoid", {"conv"}, {"y"}, "sigmoid");
        builder.output("y", DataType::kFloat32, Shape{1, 2, 4, 4});
        auto* info = builder.proto().mutable_graph()->add_value_info();
        info->set_name("conv");
        info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        builder.save((dir / "conv.onnx").string());
    }
    {
        ModelBuilder builder(17, "constant_add");
        builder.input("a", DataType::kInt64, Shape{2});
        auto& constant = builder.node("Constant", {}, {"c"}, "const");
        set_attr(constant, "value", Tensor::from_doubles(DataType::kInt64, {2}, {1, 2}));
        builder.node("Add", {"a", "c"}, {"sum"}, "add");
        auto& cast = builder.node("Cast", {"sum"}, {"out"}, "cast");
        set_attr(cast, "to", int64_t{onnx::TensorProto::FLOAT});
        builder.output("out", DataType::kFloat32, Shape{}, false);
        builder.opset_import("com.microsoft", 1);
        builder.save((dir / "constant_add.onnx").string());
    }
    {
        ModelBuilder builder(17, "if_model");
        builder.input("cond", DataType::kBool, Shape{});
        builder.input("x", DataType::kFloat32, Shape{2});
        auto& node = builder.node("If", {"cond"}, {"y"}, "if");
        for (const char* branch : {"then_branch", "else_branch"}) {
            auto* attribute = node.add_attribute();
            attribute->set_name(branch);
            attribute->set_type(onnx::AttributeProto::GRAPH);
            auto* graph = attribute->mutable_g();
            graph->set_name(branch);
            auto* inner = graph->add_node();
            inner->set_op_type(std::string(branch) == "then_branch" ? "Neg" : "Abs");
            inner->add_input("x");
            inner->add_output(std::string(branch) + "_out");
            graph->add_output()->set_name(std::string(branch) + "_out");
        }
        builder.output("y", DataType::kFloat32, Shape{2});
        builder.save((dir / "if_model.onnx").string());
    }
    {
        ModelBuilder builder(17, "external_and_strings");
        builder.input("s", DataType::kString, Shape{2});
        builder.initializer("labels", strings({2}, {"cat", "dog"}));
        auto& external = *builder.proto().mutable_graph()->add_initializer();
        external.set_name("ext");
        external.set_data_type(onnx::TensorProto::FLOAT);
        external.add_dims(4);
        external.set_data_location(onnx::TensorProto::EXTERNAL);
        auto* entry = external.add_external_data();
        entry->set_key("location");
        entry->set_value("weights.bin");
        builder.node("Identity", {"s"}, {"t"}, "id");
        builder.node("Identity", {"ext"}, {"u"}, "id2");
        builder.output("t", DataType::kString, Shape{2});
        builder.output("u", DataType::kFloat32, Shape{4});
        builder.save((dir / "external_and_strings.onnx").string());
    }
}

// The structure-aware target's seeds: write_models' models plus one per kind of structure that
// its mutator changes (bodies of Scan, Loop and If; variadic Split and Concat; Shape; the pooling
// and normalization nodes of issue 33; a local function), all valid at opset 17.
void write_structure_models(const fs::path& dir) {
    write_models(dir);
    auto body_graph = [](onnx::NodeProto& node, const std::string& attribute_name) -> onnx::GraphProto& {
        auto* attribute = node.add_attribute();
        attribute->set_name(attribute_name);
        attribute->set_type(onnx::AttributeProto::GRAPH);
        return *attribute->mutable_g();
    };
    auto declare = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values, const std::string& name,
                      int elem_type) {
        auto* value = values->Add();
        value->set_name(name);
        value->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    };
    auto add_node = [](onnx::GraphProto& graph, const std::string& op, std::vector<std::string> inputs,
                       std::vector<std::string> outputs) {
        auto* node = graph.add_node();
        node->set_op_type(op);
        for (const auto& name : inputs) node->add_input(name);
        for (const auto& name : outputs) node->add_output(name);
    };
    {  // Scan: a running sum over the rows of x
        ModelBuilder builder(17, "scan_sum");
        builder.input("init", DataType::kFloat32, Shape{2});
        builder.input("x", DataType::kFloat32, Shape{3, 2});
        auto& scan = builder.node("Scan", {"init", "x"}, {"final", "rows"}, "scan");
        set_attr(scan, "num_scan_inputs", int64_t{1});
        auto& body = body_graph(scan, "body");
        body.set_name("scan_body");
        declare(body.mutable_input(), "state", onnx::TensorProto::FLOAT);
        declare(body.mutable_input(), "row", onnx::TensorProto::FLOAT);
        add_node(body, "Add", {"state", "row"}, {"next"});
        add_node(body, "Identity", {"next"}, {"row_out"});
        declare(body.mutable_output(), "next", onnx::TensorProto::FLOAT);
        declare(body.mutable_output(), "row_out", onnx::TensorProto::FLOAT);
        builder.output("final", DataType::kFloat32, Shape{2});
        builder.output("rows", DataType::kFloat32, Shape{3, 2});
        builder.save((dir / "scan_sum.onnx").string());
    }
    {  // Loop: three iterations of Relu(v + x), reading x from the outer scope, with a scan output
        ModelBuilder builder(17, "loop_relu");
        builder.input("v", DataType::kFloat32, Shape{2});
        builder.input("x", DataType::kFloat32, Shape{2});
        builder.initializer("trips", Tensor::from_doubles(DataType::kInt64, {}, {3}));
        builder.initializer("keep_going", Tensor::from_doubles(DataType::kBool, {}, {1}));
        auto& loop = builder.node("Loop", {"trips", "keep_going", "v"}, {"v_final", "v_each"}, "loop");
        auto& body = body_graph(loop, "body");
        body.set_name("loop_body");
        declare(body.mutable_input(), "i", onnx::TensorProto::INT64);
        declare(body.mutable_input(), "cond_in", onnx::TensorProto::BOOL);
        declare(body.mutable_input(), "v_in", onnx::TensorProto::FLOAT);
        add_node(body, "Identity", {"cond_in"}, {"cond_out"});
        add_node(body, "Add", {"v_in", "x"}, {"sum"});
        add_node(body, "Relu", {"sum"}, {"v_out"});
        add_node(body, "Identity", {"v_out"}, {"v_scan"});
        declare(body.mutable_output(), "cond_out", onnx::TensorProto::BOOL);
        declare(body.mutable_output(), "v_out", onnx::TensorProto::FLOAT);
        declare(body.mutable_output(), "v_scan", onnx::TensorProto::FLOAT);
        builder.output("v_final", DataType::kFloat32, Shape{2});
        builder.output("v_each", DataType::kFloat32, Shape{3, 2});
        builder.save((dir / "loop_relu.onnx").string());
    }
    {  // ONNX Runtime's quantized contrib operators: MatMulNBits, its own Q/DQ, QLinearAdd, DynamicQuantizeMatMul
        ModelBuilder builder(17, "contrib_quantized");
        builder.opset_import("com.microsoft", 1);
        builder.input("a", DataType::kFloat32, Shape{2, 32});
        const NBitsWeights nbits = quantize_nbits(random_tensor({32, 8}, 5), 4, 16, NBitsZeroPoints::kPacked);
        builder.initializer("b", nbits.b)
            .initializer("b_scales", nbits.scales)
            .initializer("b_zero", nbits.zero_points);
        auto& matmul = builder.node("MatMulNBits", {"a", "b", "b_scales", "b_zero"}, {"y"}, "nbits", "com.microsoft");
        set_attr(matmul, "K", int64_t{32});
        set_attr(matmul, "N", int64_t{8});
        set_attr(matmul, "block_size", int64_t{16});
        builder.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {}, {0.05}));
        builder.initializer("zero", Tensor::from_doubles(DataType::kUInt8, {}, {128}));
        builder.node("QuantizeLinear", {"y", "scale", "zero"}, {"q"}, "quantize", "com.microsoft");
        builder.node("QLinearAdd", {"q", "scale", "zero", "q", "scale", "zero", "scale", "zero"}, {"q2"}, "qadd",
                     "com.microsoft");
        builder.node("DequantizeLinear", {"q2", "scale", "zero"}, {"dq"}, "dequantize", "com.microsoft");
        builder.initializer("w8", Tensor::from_doubles(DataType::kUInt8, {8, 4}, std::vector<double>(32, 3)));
        builder.node("DynamicQuantizeMatMul", {"dq", "w8", "scale"}, {"out"}, "dynamic", "com.microsoft");
        builder.output("out", DataType::kFloat32, Shape{2, 4});
        builder.save((dir / "contrib_quantized.onnx").string());
    }
    {  // A fused transformer layer: Attention, SkipLayerNormalization, BiasGelu, RotaryEmbedding
        ModelBuilder builder(17, "contrib_transformer");
        builder.opset_import("com.microsoft", 1);
        builder.input("x", DataType::kFloat32, Shape{1, 4, 16});
        builder.initializer("qkv", random_tensor({16, 48}, 6)).initializer("qkv_bias", random_tensor({48}, 7));
        auto& attention =
            builder.node("Attention", {"x", "qkv", "qkv_bias"}, {"context"}, "attention", "com.microsoft");
        set_attr(attention, "num_heads", int64_t{2});
        builder.initializer("gamma", random_tensor({16}, 8)).initializer("beta", random_tensor({16}, 9));
        builder.node("SkipLayerNormalization", {"context", "x", "gamma", "beta"}, {"normed"}, "skip_norm",
                     "com.microsoft");
        builder.initializer("bias", random_tensor({16}, 10));
        builder.node("BiasGelu", {"normed", "bias"}, {"activated"}, "gelu", "com.microsoft");
        builder.initializer("positions", Tensor::from_doubles(DataType::kInt64, {1}, {0}));
        builder.initializer("cos", random_tensor({8, 4}, 11)).initializer("sin", random_tensor({8, 4}, 12));
        auto& rotary = builder.node("RotaryEmbedding", {"activated", "positions", "cos", "sin"}, {"rotated"}, "rotary",
                                    "com.microsoft");
        set_attr(rotary, "num_heads", int64_t{2});
        builder.output("rotated", DataType::kFloat32, Shape{1, 4, 16});
        builder.save((dir / "contrib_transformer.onnx").string());
    }
    {  // The blocked operators of ONNX Runtime's level all: ReorderInput, Conv, MaxPool, ReorderOutput
        ModelBuilder builder(17, "nchwc_blocked");
        builder.opset_import("com.microsoft.nchwc", 1);
        builder.input("x", DataType::kFloat32, Shape{1, 16, 4, 4});
        builder.node("ReorderInput", {"x"}, {"blocked"}, "reorder_in", "com.microsoft.nchwc");
        builder.initializer("w", random_tensor({16, 16, 1, 1}, 13));
        builder.node("Conv", {"blocked", "w"}, {"conv"}, "conv", "com.microsoft.nchwc");
        auto& pool = builder.node("MaxPool", {"conv"}, {"pooled"}, "pool", "com.microsoft.nchwc");
        set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
        auto& out = builder.node("ReorderOutput", {"pooled"}, {"y"}, "reorder_out", "com.microsoft.nchwc");
        set_attr(out, "channels", int64_t{16});
        builder.output("y", DataType::kFloat32, Shape{1, 16, 3, 3});
        builder.save((dir / "nchwc_blocked.onnx").string());
    }
    {  // Split into three, Concat back, Shape of the result, GlobalAveragePool of the input
        ModelBuilder builder(17, "split_shape_pool");
        builder.input("x", DataType::kFloat32, Shape{1, 6, 2, 2});
        builder.initializer("parts", Tensor::from_doubles(DataType::kInt64, {3}, {1, 2, 3}));
        auto& split = builder.node("Split", {"x", "parts"}, {"a", "b", "c"}, "split");
        set_attr(split, "axis", int64_t{1});
        auto& concat = builder.node("Concat", {"c", "a", "b"}, {"joined"}, "concat");
        set_attr(concat, "axis", int64_t{1});
        builder.node("Shape", {"joined"}, {"shape"}, "shape");
        builder.node("GlobalAveragePool", {"joined"}, {"pooled"}, "pool");
        builder.node("GlobalMaxPool", {"x"}, {"max_pooled"}, "max_pool");
        builder.output("shape", DataType::kInt64, Shape{4});
        builder.output("pooled", DataType::kFloat32, Shape{1, 6, 1, 1});
        builder.output("max_pooled", DataType::kFloat32, Shape{1, 6, 1, 1});
        builder.save((dir / "split_shape_pool.onnx").string());
    }
    {  // Conv -> Relu -> Reshape -> Gather -> LayerNormalization, with ReduceMean and Cast
        ModelBuilder builder(17, "conv_reshape_norm");
        builder.input("x", DataType::kFloat32, Shape{1, 2, 4, 4});
        builder.initializer("w", random_tensor({4, 2, 3, 3}, 3));
        builder.initializer("flat", Tensor::from_doubles(DataType::kInt64, {2}, {4, 16}));
        builder.initializer("rows", Tensor::from_doubles(DataType::kInt64, {2}, {0, 3}));
        builder.initializer("scale", random_tensor({16}, 4));
        auto& conv = builder.node("Conv", {"x", "w"}, {"conv"}, "conv");
        set_attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
        builder.node("Relu", {"conv"}, {"relu"}, "relu");
        builder.node("Reshape", {"relu", "flat"}, {"flat_out"}, "reshape");
        auto& gather = builder.node("Gather", {"flat_out", "rows"}, {"picked"}, "gather");
        set_attr(gather, "axis", int64_t{0});
        auto& norm = builder.node("LayerNormalization", {"picked", "scale"}, {"normed"}, "norm");
        set_attr(norm, "axis", int64_t{-1});
        auto& mean = builder.node("ReduceMean", {"normed"}, {"mean"}, "mean");
        set_attr(mean, "axes", std::vector<int64_t>{1});
        auto& cast = builder.node("Cast", {"mean"}, {"out"}, "cast");
        set_attr(cast, "to", int64_t{onnx::TensorProto::FLOAT16});
        builder.output("out", DataType::kFloat16, Shape{2, 1});
        builder.save((dir / "conv_reshape_norm.onnx").string());
    }
    {  // a local function (custom domain) called from the main graph, next to MatMul and Gemm
        ModelBuilder builder(17, "function_call");
        builder.opset_import("custom", 1);
        builder.input("a", DataType::kFloat32, Shape{2, 3});
        builder.input("b", DataType::kFloat32, Shape{3, 2});
        builder.node("MatMul", {"a", "b"}, {"ab"}, "matmul");
        builder.node("Gemm", {"a", "b"}, {"gemm"}, "gemm");
        builder.node("AddRelu", {"ab", "gemm"}, {"out"}, "call", "custom");
        auto* function = builder.proto().add_functions();
        function->set_name("AddRelu");
        function->set_domain("custom");
        function->add_input("p");
        function->add_input("q");
        function->add_output("r");
        auto* opset = function->add_opset_import();
        opset->set_domain("");
        opset->set_version(17);
        auto* add = function->add_node();
        add->set_op_type("Add");
        add->add_input("p");
        add->add_input("q");
        add->add_output("s");
        auto* relu = function->add_node();
        relu->set_op_type("Relu");
        relu->add_input("s");
        relu->add_output("r");
        builder.output("out", DataType::kFloat32, Shape{2, 2});
        builder.save((dir / "function_call.onnx").string());
    }
    {  // Slice with all its optional inputs, one of them omitted (an empty name), and Softmax
        ModelBuilder builder(17, "slice_optional");
        builder.input("x", DataType::kFloat32, Shape{4, 4});
        builder.initializer("starts", Tensor::from_doubles(DataType::kInt64, {1}, {1}));
        builder.initializer("ends", Tensor::from_doubles(DataType::kInt64, {1}, {3}));
        builder.initializer("steps", Tensor::from_doubles(DataType::kInt64, {1}, {1}));
        builder.node("Slice", {"x", "starts", "ends", "", "steps"}, {"sliced"}, "slice");
        builder.node("Softmax", {"sliced"}, {"out"}, "softmax");
        builder.output("out", DataType::kFloat32, Shape{2, 4});
        builder.save((dir / "slice_optional.onnx").string());
    }
}

// Argument values as users type them (one per line), for the CLI value spec parsers.
void write_cli_value_specs(const fs::path& dir) {
    const std::vector<std::string> specs = {
        "[1,3,224,224]",
        "input0:[1,3,224,224]\nmask:['batch',3,-1]\nids:[batch, 128]\nscalar:[]",
        "Input:0:[1,2]\nother:auto",
        "1e-5\nout0:1e-3\nout1:inf\nlogits:0.5",
        "1\nout0:0\n+2\n1_000",
        "max\nout0:mean\nout1:median",
        "[0,1]\nx:[-1,1]\ny:[0.5, 2e3]\nz:[-inf,inf]",
        "16M",
        "2K",
        "1G",
        "16e6",
        "  -0.0  ",
        "'quoted'",
        "[\"a\", 'b', 3]",
    };
    for (std::size_t i = 0; i < specs.size(); ++i) write(dir / ("spec" + std::to_string(i)), specs[i]);
}

// Command lines as users type them: the tool path, then one argv token per line.
void write_cli_args(const fs::path& dir) {
    const std::vector<std::string> commands = {
        "run\nmodel.onnx\n--ref\n--onnxrt\n--atol\n1e-3\nout:1e-2\n--rtol=1e-4\n--check-error-stat\nmedian\n"
        "--val-range\nx:[0,1]\n--input-shapes\nx:[1,3,224,224]\n--seed=1\n--iterations\n2",
        "run\nmodel.onnx\n--onnxrt\n--onnx-outputs\nmark\nall\n--onnx-exclude-outputs\ny\n--save-outputs\nout.json\n"
        "--fail-fast\n--validate\n--ref-threads\n2",
        "run\nmodel.onnx\n--trt\n--fp16\n--int8",
        "run\nmodel.onnx\n--ref\n--load-inputs\ninputs.json\n--data-loader-backend-module\nnumpy\n--compare-func\n"
        "indices\n--top-k\n5",
        "inspect model\nmodel.onnx\n--show\nlayers\nattrs\nweights\n--list-unbounded-dds",
        "inspect data\nout.json\n--all\n--show-values\n--histogram",
        "check lint\nmodel.onnx\n-o\nreport.json",
        "surgeon extract\nmodel.onnx\n--inputs\nx:[1,3,224,224]:float32\ny:auto:auto\n--outputs\nz:float16\n-o\nsub.onnx",
        "surgeon sanitize\nmodel.onnx\n--fold-constants\n--cleanup\n--toposort\n--override-input-shapes\nx:[1,2]\n-o\n"
        "s.onnx",
        "surgeon insert\nmodel.onnx\n--inputs\na\nb\n--outputs\nc\n--op\nAdd\n--name\nadd\n--attrs\naxis=1\n"
        "axes=[0,1]\nname='s'\nalpha=0.5\n-o\ni.onnx",
        "convert\nmodel.onnx\n--fp-to-fp16\n-o\nh.onnx",
        "debug reduce\nmodel.onnx\n-o\nreduced.onnx\n--mode\nbisect\n--min-good\ngood.onnx\n--check\npolygraphy\nrun\n"
        "polygraphy_debug.onnx\n--onnxrt",
        "debug repeat\n--until\nfail\n--check\nfalse",
        "data to-input\na.json\nb.json\n-o\nmerged.json",
    };
    for (std::size_t i = 0; i < commands.size(); ++i) write(dir / ("command" + std::to_string(i)), commands[i]);
}

// Dataset summaries as `run --shard I/N --save-summary` writes them: a shard with two outputs, one
// failing sample, histograms and a divergence, and the whole dataset without histograms.
void write_dataset_summaries(const fs::path& dir) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{3}}) {
        AccuracyResult::PairResult pair;
        pair.first_runner = "ref-runner-N0";
        pair.second_runner = "onnxrt-runner-N0";
        DatasetSummary summary;
        summary.model_fingerprint = "0123456789abcdef";
        summary.dataset_fingerprint = "fedcba9876543210";
        summary.options_fingerprint = "00ff00ff00ff00ff";
        summary.dataset_samples = 7;
        summary.shard_count = count;
        summary.shards = {count - 1};
        summary.samples = shard_samples(count - 1, count, 7);
        for (std::size_t i = 0; i < summary.samples.size(); ++i) {
            IterationCompareResult iteration;
            for (const char* name : {"logits", "hidden"}) {
                OutputCompareResult result;
                result.passed = i != 1;
                result.max_absdiff = 1e-6 * static_cast<double>(i + 1);
                result.max_reldiff = 1e-4;
                result.mean_absdiff = result.max_absdiff / 2;
                if (count == 3) {
                    const Tensor errors = Tensor::from_doubles(DataType::kFloat32, {3}, {0, 1e-7, 2e-3});
                    result.error_histograms = ErrorHistograms{decade_histogram(errors), decade_histogram(errors)};
                }
                iteration.set(name, result);
            }
            pair.iterations.push_back(iteration);
        }
        summary.pairs.push_back(PairDatasetSummary{
            pair.first_runner, pair.second_runner, summarize_dataset(pair, SampleIndexing{count - 1, count}), {}});
        if (summary.samples.size() > 1)
            summary.pairs[0].first_divergences.push_back(
                SampleDivergence{summary.samples[1], "conv2", "Conv", "conv2_out", 2e-6});
        save_dataset_summary(summary, (dir / ("summary_" + std::to_string(count) + ".json")).string());
    }
}

// Plugin patterns and configurations (`polygraphy plugin`), as the README and Polygraphy write them.
void write_plugin_files(const fs::path& dir) {
    const std::vector<std::string> files = {
        R"({"name": "SiLUPlugin", "op": "SiLU", "inputs": ["x"], "outputs": ["y"],
 "nodes": [{"name": "sig", "op": "Sigmoid", "inputs": ["x"], "outputs": ["s"]},
           {"name": "mul", "op": "Mul", "inputs": ["x", "s"], "outputs": ["y"], "attributes": {"alpha": {"less": 2.0}}}],
 "attributes": {"alpha": 1.0, "copied": {"from": "mul.alpha"}, "names": ["a", "b"], "axes": [0, 1]}})",
        R"({"name": "p", "inputs": ["x0", "x1"], "outputs": ["d", "e"],
 "nodes": [{"op": "Sigmoid", "inputs": ["x0"], "outputs": ["a"]}, {"op": "Relu", "inputs": ["x1"], "outputs": ["b"]},
           {"op": "Mul", "domain": "ai.onnx", "inputs": ["a", "b"], "outputs": ["c"], "attributes": {"k": 3}},
           {"op": "Relu", "inputs": ["c"], "outputs": ["d"]}, {"op": "Sigmoid", "inputs": ["c"], "outputs": ["e"]}]})",
        "name: toyPlugin\nop: CustomToyPlugin\ninstances:\n- inputs:\n  - i1\n  outputs:\n  - o1\n  - o2\n"
        "  attributes:\n    ToyX: 2\n---\nname: other\nop: OtherOp\ninstances:\n- inputs: [p, 'q: r']  # c\n"
        "  outputs: [\"y\\x01\"]\n  attributes:\n    scales:\n    - 0.5\n    - 1.0e-05\n    names: ['on', x]\n"
        "    mode: fast\n    big: .inf\n",
    };
    for (std::size_t i = 0; i < files.size(); ++i)
        write_file_atomically((dir / ("plugin_file_" + std::to_string(i))).string(), files[i]);
}

// ImageDecoder's encoded streams, one per format.
void write_encoded_images(const fs::path& dir) {
    int count = 0;
    for (const auto& [name, stream] : testing::encoded_images())
        write_file_atomically((dir / ("image_" + std::to_string(count++))).string(), stream);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <output folder>\n", argv[0]);
        return 2;
    }
    logger().set_severity(Severity::kWarning);
    try {
        const fs::path root(argv[1]);
        const std::vector<std::pair<std::string, void (*)(const fs::path&)>> targets = {
            {"base64", write_base64},
            {"npy", write_npy},
            {"run_results", write_run_results},
            {"npz", write_npz},
            {"tensor_proto", write_tensor_protos},
            {"onnx_model", write_models},
            {"onnx_structure", write_structure_models},
            {"cli_value_spec", write_cli_value_specs},
            {"cli_args", write_cli_args},
            {"dataset_summary", write_dataset_summaries},
            {"plugin_files", write_plugin_files},
            {"image_codecs", write_encoded_images}};
        for (const auto& [name, writer] : targets) {
            fs::create_directories(root / name);
            writer(root / name);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "make_seed_corpus: %s\n", error.what());
        return 1;
    }
    return 0;
}
