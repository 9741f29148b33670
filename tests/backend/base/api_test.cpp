// API conveniences of the seeds' Python API: extend, clone(outputs), RunResults iteration, generator
// data loaders, int/float ranges of the default data loader, immediately evaluated ref sessions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/base/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/comparator.h"

namespace polygraphy {
namespace {

struct CountingLoader {
    int* calls;
    int operator()() const { return ++*calls; }
};

TEST(Extend, RunsLazilyOnAnyLoaderAndMayModifyOrReplace) {
    int calls = 0;
    int seen = 0;
    Loader<int> modified = extend(CountingLoader{&calls}, [&](int& value) {
        seen = value;
        value *= 10;
    });
    EXPECT_EQ(calls, 0);  // nothing runs until the loader is called
    EXPECT_EQ(modified(), 10);
    EXPECT_EQ(seen, 1);
    Loader<int> replaced = extend(modified, [](int& value) { return value + 1; });
    EXPECT_EQ(replaced(), 21);
    EXPECT_EQ(calls, 2);
}

TEST(CloneOutputs, CopiesAreIndependentOfTheRunnersBuffers) {
    TensorMap outputs{{"y", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2})}};
    TensorMap shallow = outputs;
    TensorMap deep = clone(outputs);
    outputs.at("y").data_as<float>()[0] = 5;
    EXPECT_EQ(shallow.at("y").data_as<float>()[0], 5);
    EXPECT_EQ(deep.at("y").data_as<float>()[0], 1);
    EXPECT_EQ(deep.keys(), outputs.keys());
}

TEST(RunResultsApi, IteratesAndFindsByRunnerName) {
    RunResults results;
    results.add({IterationResult{}}, "a");
    results.add({IterationResult{}, IterationResult{}}, "b");
    std::vector<std::string> names;
    for (const auto& [name, iterations] : results) names.push_back(name + std::to_string(iterations.size()));
    EXPECT_EQ(names, (std::vector<std::string>{"a1", "b2"}));
    ASSERT_NE(results.find("b"), nullptr);
    EXPECT_EQ(results.find("b")->size(), 2u);
    EXPECT_EQ(results.find("c"), nullptr);
}

TEST(GeneratorDataLoader, YieldsInOrderUntilExhaustedAndSeesInputMetadata) {
    const TensorMetadata metadata = TensorMetadata().add("x", DataType::kFloat32, to_dyn_shape({2}));
    int produced = 0;
    DataLoaderFn loader =
        data_loader_from_generator([&](const TensorMetadata& input_metadata) -> std::optional<TensorMap> {
            if (produced == 2) return std::nullopt;
            ++produced;
            return TensorMap{{input_metadata.keys().at(0), Tensor(DataType::kFloat32, {2})}};
        });
    ASSERT_TRUE(loader(0, metadata).has_value());
    EXPECT_TRUE(loader(1, metadata)->contains("x"));
    EXPECT_FALSE(loader(2, metadata).has_value());
    EXPECT_FALSE(loader(3, metadata).has_value());  // stays exhausted, the generator is not called again
    EXPECT_EQ(produced, 2);

    DataLoaderFn fresh =
        data_loader_from_generator([](const TensorMetadata&) { return std::optional<TensorMap>(TensorMap{}); });
    try {
        fresh(1, metadata);
        ADD_FAILURE();
    } catch (const UsageError& error) {
        EXPECT_STREQ(error.what(),
                     "A generator data loader yields its feeds in order once; iteration 1 was requested after 0 feeds");
    }
    EXPECT_THROW(data_loader_from_generator(nullptr), PolygraphyException);
}

TEST(DataLoaderRanges, IntAndFloatRangesOverrideValRangeByDtype) {
    DataLoader::Options options;
    options.val_range.set("", ValRange{100, 200});
    options.int_range = ValRange{0, 2};
    options.float_range = ValRange{-3.0, -2.0};
    const TensorMetadata metadata = TensorMetadata()
                                        .add("i", DataType::kInt32, to_dyn_shape({64}))
                                        .add("f", DataType::kFloat32, to_dyn_shape({64}))
                                        .add("b", DataType::kBool, to_dyn_shape({4}));
    const TensorMap feed = DataLoader(options).generate(0, metadata);
    for (int64_t k = 0; k < 64; ++k) {
        const double i = feed.at("i").value_as_double(k), f = feed.at("f").value_as_double(k);
        EXPECT_TRUE(i >= 0 && i <= 2) << i;
        EXPECT_TRUE(f >= -3.0 && f <= -2.0) << f;
    }
    // Bool inputs keep val_range (Polygraphy applies int_range to integer dtypes only).
    DataLoader::Options no_type_ranges = options;
    no_type_ranges.int_range.reset();
    no_type_ranges.float_range.reset();
    EXPECT_TRUE(feed.at("b").equals(DataLoader(no_type_ranges).generate(0, metadata).at("b")));
}

TEST(RefSessionFromOnnx, ImmediateTwinOfTheLoader) {
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{2});
    const OnnxModel model = builder.build();
    std::shared_ptr<ref::Session> session = ref::session_from_onnx(*model);
    const TensorMap outputs = session->run({{"x", Tensor::from_doubles(DataType::kFloat32, {2}, {-1, 2})}});
    EXPECT_TRUE(outputs.at("y").equals(Tensor::from_doubles(DataType::kFloat32, {2}, {0, 2})));

    // BytesFromOnnx serializes lazily; the bytes parse back to the same model.
    BytesFromOnnx bytes{loader_from_value(model)};
    EXPECT_EQ(onnx_from_bytes(bytes())->graph().node(0).op_type(), "Relu");
    EXPECT_THROW(BytesFromOnnx{loader_from_value(OnnxModel())}(), PolygraphyException);

    ref::RefRunner runner(loader_from_value(session));
    RunnerActivation active(runner);
    EXPECT_EQ(runner.get_input_metadata().keys(), std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace polygraphy
