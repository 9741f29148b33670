// The weight writer of the model generators (tests/support/external_weights.h): streamed external data
// that the loader reads back, aligned offsets, inline small tensors, and nothing half-written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "external_weights.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<float> fill_values(const ElementFill& fill, int64_t count) {
    std::vector<float> values(static_cast<std::size_t>(count));
    fill(values.data(), 0, count);
    return values;
}

std::string external_entry(const onnx::TensorProto& proto, const std::string& key) {
    for (const auto& entry : proto.external_data())
        if (entry.key() == key) return entry.value();
    return "";
}

// y = a + b + c with three initializers: a (small, stays inline), b and c (external).
onnx::ModelProto three_weight_model(WeightWriter& weights, uint64_t seed) {
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{300});
    auto& graph = *builder.proto().mutable_graph();
    *graph.add_initializer() = weights.write("a", DataType::kFloat32, {3}, uniform_fill(seed, -1.0f, 1.0f));
    *graph.add_initializer() = weights.write("b", DataType::kFloat32, {300}, uniform_fill(seed + 1, -1.0f, 1.0f));
    *graph.add_initializer() = weights.write("c", DataType::kFloat32, {300}, uniform_fill(seed + 2, 0.0f, 2.0f));
    builder.node("Add", {"x", "a"}, {"xa"});
    builder.node("Add", {"xa", "b"}, {"xab"});
    builder.node("Add", {"xab", "c"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{300});
    return builder.proto();
}

TEST(UniformFill, GivesTheSameValuesWhateverTheChunksAndStaysInRange) {
    const ElementFill fill = uniform_fill(42, -0.5f, 0.25f);
    const std::vector<float> whole = fill_values(fill, 1000);
    std::vector<float> chunked(1000);
    for (int64_t first = 0; first < 1000; first += 7)
        fill(chunked.data() + first, first, std::min<int64_t>(7, 1000 - first));
    EXPECT_EQ(whole, chunked);
    for (float value : whole) {
        EXPECT_GE(value, -0.5f);
        EXPECT_LT(value, 0.25f);
    }
    EXPECT_NE(whole, fill_values(uniform_fill(43, -0.5f, 0.25f), 1000));
}

TEST(TensorSeed, DependsOnTheModelSeedAndTheName) {
    EXPECT_EQ(tensor_seed(1, "w"), tensor_seed(1, "w"));
    EXPECT_NE(tensor_seed(1, "w"), tensor_seed(2, "w"));
    EXPECT_NE(tensor_seed(1, "w"), tensor_seed(1, "v"));
}

TEST(WeightWriter, StreamsLargeTensorsAlignedAndKeepsSmallOnesInline) {
    TempDir dir;
    const std::string model_path = dir.file("m.onnx");
    WeightWriter::Layout layout;
    layout.alignment = 512;
    layout.size_threshold = 100;
    layout.chunk_bytes = 90;  // not a multiple of the element size: chunks of 22 floats
    const GeneratedModelInfo info = write_generated_model(
        model_path, true, [](WeightWriter& weights) { return three_weight_model(weights, 7); }, 0, layout);

    EXPECT_EQ(info.tensor_bytes, (3 + 300 + 300) * 4u);
    EXPECT_EQ(info.file_bytes, 1536u + 1200u);  // b at 0 (1200 bytes), padding to 1536, c at 1536
    EXPECT_EQ(fs::file_size(dir.file("m.onnx.data")), info.file_bytes);
    EXPECT_EQ(info.node_count, 3);

    OnnxModel unloaded = onnx_from_path(model_path, std::nullopt, /*ignore_external_data=*/true);
    const auto& initializers = unloaded->graph().initializer();
    EXPECT_NE(initializers[0].data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_EQ(initializers[0].raw_data().size(), 12u);
    for (int i : {1, 2}) {
        EXPECT_EQ(initializers[i].data_location(), onnx::TensorProto::EXTERNAL);
        EXPECT_EQ(external_entry(initializers[i], "location"), "m.onnx.data");
        EXPECT_EQ(external_entry(initializers[i], "length"), "1200");
        EXPECT_EQ(std::stoull(external_entry(initializers[i], "offset")) % 512, 0u);
    }

    OnnxModel loaded = onnx_from_path(model_path);
    const uint64_t seeds[] = {7, 8, 9};
    const float lows[] = {-1.0f, -1.0f, 0.0f}, highs[] = {1.0f, 1.0f, 2.0f};
    for (int i = 0; i < 3; ++i) {
        const Tensor value = tensor_from_proto(loaded->graph().initializer(i));
        EXPECT_EQ(elements_of<float>(value), fill_values(uniform_fill(seeds[i], lows[i], highs[i]), value.numel()))
            << "initializer " << i;
    }
}

TEST(WeightWriter, WritesTensorsFromMemoryOfAnyFixedSizeType) {
    TempDir dir;
    const Tensor ids = Tensor::from_doubles(DataType::kInt64, {2, 100}, std::vector<double>(200, 3.0));
    write_generated_model(dir.file("ids.onnx"), true, [&](WeightWriter& weights) {
        ModelBuilder builder;
        builder.input("x", DataType::kInt64, Shape{2, 100});
        *builder.proto().mutable_graph()->add_initializer() = weights.write("ids", ids);
        builder.node("Add", {"x", "ids"}, {"y"});
        builder.output("y", DataType::kInt64, Shape{2, 100});
        return builder.proto();
    });
    OnnxModel loaded = onnx_from_path(dir.file("ids.onnx"));
    EXPECT_EQ(elements_of<int64_t>(tensor_from_proto(loaded->graph().initializer(0))), std::vector<int64_t>(200, 3));

    WeightWriter inline_writer;
    EXPECT_THROW(inline_writer.write("s", DataType::kString, {1}, [](void*, int64_t, int64_t) {}), InternalError);
}

TEST(WeightWriter, InlineWritersKeepEverythingInTheModel) {
    TempDir dir;
    const GeneratedModelInfo info = write_generated_model(
        dir.file("m.onnx"), false, [](WeightWriter& weights) { return three_weight_model(weights, 1); });
    EXPECT_EQ(info.file_bytes, 0u);
    EXPECT_FALSE(fs::exists(dir.file("m.onnx.data")));
    OnnxModel loaded = onnx_from_path(dir.file("m.onnx"), std::nullopt, true);
    for (const auto& initializer : loaded->graph().initializer()) {
        EXPECT_NE(initializer.data_location(), onnx::TensorProto::EXTERNAL);
        EXPECT_EQ(initializer.raw_data().size(), initializer.dims(0) * 4);
    }
}

TEST(WriteGeneratedModel, RefusesInlineWeightsOver2GiBBeforeGeneratingThem) {
    TempDir dir;
    bool built = false;
    const std::string message = error_message<PolygraphyException>([&] {
        write_generated_model(
            dir.file("big.onnx"), false,
            [&](WeightWriter&) {
                built = true;
                return onnx::ModelProto();
            },
            uint64_t{3} << 30);
    });
    EXPECT_THAT(message, HasSubstr("its weights alone are 3221225472 bytes, over protobuf's 2 GiB limit"));
    EXPECT_FALSE(built);
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(WriteGeneratedModel, AFailedGenerationLeavesNoFiles) {
    TempDir dir;
    EXPECT_THROW(write_generated_model(dir.file("m.onnx"), true,
                                       [](WeightWriter& weights) -> onnx::ModelProto {
                                           three_weight_model(weights, 1);
                                           throw std::runtime_error("generator failed half-way");
                                       }),
                 PolygraphyException);
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace polygraphy::testing
