#include "polygraphy/comparator/data_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using testing::captured_stdout;
using testing::elements_of;
using testing::error_message;
using ::testing::HasSubstr;
using ::testing::Not;

class DataLoaderTest : public ::testing::Test {
protected:
    void SetUp() override { logger().reset(); }
    void TearDown() override { logger().reset(); }

    static TensorMetadata meta(const std::string& name, DataType dtype, const Shape& shape) {
        TensorMetadata metadata;
        metadata.add(name, dtype, to_dyn_shape(shape));
        return metadata;
    }
    static DataLoader::Options with_range(const std::string& key, double min, double max) {
        DataLoader::Options options;
        options.val_range.set(key, ValRange{min, max});
        return options;
    }
};

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++count;
    return count;
}

// ---- numpy compatibility ------------------------------------------------------------------------

TEST_F(DataLoaderTest, MatchesPolygraphyForIdentityModel) {
    // polygraphy run identity.onnx --onnxrt --save-inputs: x float32 (1, 1, 2, 2), seed 1.
    const TensorMap feed = DataLoader().generate(0, meta("x", DataType::kFloat32, {1, 1, 2, 2}));
    ASSERT_EQ(feed.size(), 1u);
    const Tensor& x = feed.at("x");
    EXPECT_EQ(x.dtype(), DataType::kFloat32);
    EXPECT_EQ(x.shape(), (Shape{1, 1, 2, 2}));
    const auto values = elements_of<float>(x);
    EXPECT_FLOAT_EQ(values[0], 0.417021990f);
    EXPECT_FLOAT_EQ(values[1], 0.720324516f);
    EXPECT_FLOAT_EQ(values[2], 0.000114374816f);
    EXPECT_FLOAT_EQ(values[3], 0.302332580f);
    // Bit-exact: RandomState(1).random_sample(4).astype(np.float32)
    EXPECT_EQ(values, (std::vector<float>{0.4170219898223877f, 0.7203245162963867f, 0.00011437481589382514f,
                                          0.3023325800895691f}));
}

TEST_F(DataLoaderTest, Float64IsTheRawSample) {
    // RandomState(1).random_sample(3)
    const TensorMap feed = DataLoader().generate(0, meta("x", DataType::kFloat64, {3}));
    EXPECT_EQ(elements_of<double>(feed.at("x")),
              (std::vector<double>{0.417022004702574, 0.7203244934421581, 0.00011437481734488664}));
}

TEST_F(DataLoaderTest, Float32RangeScalesThenShifts) {
    // (RandomState(4).random_sample(4) * (10.0 - -3.5) + -3.5).astype(np.float32)
    DataLoader::Options options = with_range("", -3.5, 10.0);
    options.seed = 4;
    const TensorMap feed = DataLoader(options).generate(0, meta("x", DataType::kFloat32, {4}));
    EXPECT_EQ(elements_of<float>(feed.at("x")),
              (std::vector<float>{9.554903030395508f, 3.8876354694366455f, 9.63123893737793f, 6.150015830993652f}));
}

TEST_F(DataLoaderTest, Float16RoundsOnceFromDouble) {
    // (RandomState(1).random_sample(8) * (2.0 - -2.0) + -2.0).astype(np.float16).view(np.uint16)
    const TensorMap feed = DataLoader(with_range("", -2.0, 2.0)).generate(0, meta("h", DataType::kFloat16, {8}));
    EXPECT_EQ(elements_of<uint16_t>(feed.at("h")),
              (std::vector<uint16_t>{0xb550, 0x3b0d, 0xc000, 0xba53, 0xbda7, 0xbe86, 0xbd05, 0xb8f1}));
}

TEST_F(DataLoaderTest, Int8UsesBufferedDraws) {
    // RandomState(1).randint(-5, 6, size=10, dtype=np.int8)
    const TensorMap feed = DataLoader(with_range("", -5, 5)).generate(0, meta("i", DataType::kInt8, {10}));
    EXPECT_EQ(elements_of<int8_t>(feed.at("i")), (std::vector<int8_t>{0, -1, -4, 5, -5, 2, 2, 3, 3, -1}));
}

TEST_F(DataLoaderTest, UInt8FullAndPartialRanges) {
    // RandomState(1).randint(0, 256, size=10, dtype=np.uint8)
    const TensorMap full = DataLoader(with_range("", 0, 255)).generate(0, meta("u", DataType::kUInt8, {10}));
    EXPECT_EQ(elements_of<uint8_t>(full.at("u")),
              (std::vector<uint8_t>{37, 244, 193, 106, 235, 128, 71, 255, 140, 47}));
    // RandomState(3).randint(2, 9, size=12, dtype=np.uint8)
    DataLoader::Options options = with_range("", 2, 8);
    options.seed = 3;
    const TensorMap partial = DataLoader(options).generate(0, meta("u", DataType::kUInt8, {12}));
    EXPECT_EQ(elements_of<uint8_t>(partial.at("u")), (std::vector<uint8_t>{4, 3, 7, 2, 8, 5, 4, 3, 6, 3, 7, 5}));
}

TEST_F(DataLoaderTest, Int16AndUInt16UseBufferedDraws) {
    // RandomState(1).randint(-5, 6, size=10, dtype=np.int16)
    const TensorMap small = DataLoader(with_range("", -5, 5)).generate(0, meta("i", DataType::kInt16, {10}));
    EXPECT_EQ(elements_of<int16_t>(small.at("i")), (std::vector<int16_t>{0, -4, 2, 2, 3, 2, 4, 0, 0, -4}));
    // RandomState(7).randint(0, 65536, size=6, dtype=np.uint16)
    DataLoader::Options options = with_range("", 0, 65535);
    options.seed = 7;
    const TensorMap full = DataLoader(options).generate(0, meta("u", DataType::kUInt16, {6}));
    EXPECT_EQ(elements_of<uint16_t>(full.at("u")), (std::vector<uint16_t>{61615, 5000, 58564, 14898, 49689, 51112}));
}

TEST_F(DataLoaderTest, Int32AndUInt32UseMaskedDraws) {
    // RandomState(1).randint(-100, 101, size=8, dtype=np.int32)
    const TensorMap signed_feed = DataLoader(with_range("", -100, 100)).generate(0, meta("i", DataType::kInt32, {8}));
    EXPECT_EQ(elements_of<int32_t>(signed_feed.at("i")), (std::vector<int32_t>{-63, 40, -28, 37, 33, -21, 92, 44}));
    // RandomState(1).randint(0, 4000000001, size=5, dtype=np.uint32)
    const TensorMap unsigned_feed =
        DataLoader(with_range("", 0, 4000000000.0)).generate(0, meta("u", DataType::kUInt32, {5}));
    EXPECT_EQ(elements_of<uint32_t>(unsigned_feed.at("u")),
              (std::vector<uint32_t>{1791095845u, 3093770124u, 491263u, 550290313u, 1298508491u}));
}

TEST_F(DataLoaderTest, Int64SmallRangeUses32BitDraws) {
    // RandomState(1).randint(-5, 6, size=10, dtype=np.int64)
    const TensorMap feed = DataLoader(with_range("", -5, 5)).generate(0, meta("i", DataType::kInt64, {10}));
    EXPECT_EQ(elements_of<int64_t>(feed.at("i")), (std::vector<int64_t>{0, 3, 4, 0, -5, -5, -4, 2, 1, 4}));
}

TEST_F(DataLoaderTest, Int64AndUInt64LargeRangesUse64BitDraws) {
    // RandomState(1).randint(-2**40, 2**40 + 1, size=5, dtype=np.int64)
    const double bound = 1099511627776.0;  // 2**40
    const TensorMap feed = DataLoader(with_range("", -bound, bound)).generate(0, meta("i", DataType::kInt64, {5}));
    EXPECT_EQ(elements_of<int64_t>(feed.at("i")),
              (std::vector<int64_t>{-936314961685, -479333035903, 579543727385, -331372571372, -7244435099}));
    // RandomState(5).randint(0, 2**63 + 2049, size=4, dtype=np.uint64)
    DataLoader::Options options = with_range("", 0, 9223372036854777856.0);
    options.seed = 5;
    const TensorMap big = DataLoader(options).generate(0, meta("u", DataType::kUInt64, {4}));
    EXPECT_EQ(elements_of<uint64_t>(big.at("u")),
              (std::vector<uint64_t>{4095051218741643470ull, 3813295331020233846ull, 9009596224835060452ull,
                                     5475002791668117708ull}));
}

TEST_F(DataLoaderTest, BoolsUseOneBitPerDraw) {
    // RandomState(1).randint(0, 2, size=40, dtype=np.bool_): crosses a 32-bit buffer boundary.
    const TensorMap feed = DataLoader().generate(0, meta("b", DataType::kBool, {40}));
    std::string bits;
    for (uint8_t value : elements_of<uint8_t>(feed.at("b"))) bits += value ? '1' : '0';
    EXPECT_EQ(bits, "1010010000101111100000110101011011010111");
}

TEST_F(DataLoaderTest, InputsDrawFromOneStreamInModelOrder) {
    // r = RandomState(1); r.random_sample(2).astype(f32); r.randint(0, 11, size=3, dtype=np.int32);
    // r.randint(0, 2, size=5, dtype=np.bool_); r.random_sample(1).astype(f32)
    TensorMetadata metadata;
    metadata.add("x", DataType::kFloat32, to_dyn_shape({2}));
    metadata.add("ids", DataType::kInt32, to_dyn_shape({3}));
    metadata.add("mask", DataType::kBool, to_dyn_shape({5}));
    metadata.add("y", DataType::kFloat32, to_dyn_shape({1}));
    DataLoader::Options options;
    options.val_range.set("ids", ValRange{0, 10});
    const TensorMap feed = DataLoader(options).generate(0, metadata);
    EXPECT_EQ(feed.keys(), (std::vector<std::string>{"x", "ids", "mask", "y"}));
    EXPECT_EQ(elements_of<float>(feed.at("x")), (std::vector<float>{0.4170219898223877f, 0.7203245162963867f}));
    EXPECT_EQ(elements_of<int32_t>(feed.at("ids")), (std::vector<int32_t>{9, 5, 0}));
    EXPECT_EQ(elements_of<uint8_t>(feed.at("mask")), (std::vector<uint8_t>{0, 0, 0, 0, 1}));
    EXPECT_EQ(elements_of<float>(feed.at("y")), (std::vector<float>{0.3965807259082794f}));
}

TEST_F(DataLoaderTest, BoolBufferIsDiscardedBeforeTheNextInput) {
    // r = RandomState(1); r.randint(0, 2, size=3, dtype=np.bool_); r.random_sample(1)
    TensorMetadata metadata;
    metadata.add("b", DataType::kBool, to_dyn_shape({3}));
    metadata.add("f", DataType::kFloat64, to_dyn_shape({1}));
    const TensorMap feed = DataLoader().generate(0, metadata);
    EXPECT_EQ(elements_of<uint8_t>(feed.at("b")), (std::vector<uint8_t>{1, 0, 1}));
    EXPECT_EQ(elements_of<double>(feed.at("f")), (std::vector<double>{0.9971848109388686}));
}

TEST_F(DataLoaderTest, Int8BufferRestartsForEachInput) {
    // r = RandomState(1); r.randint(0, 5, size=3, dtype=np.int8); r.randint(0, 5, size=3, dtype=np.int8)
    TensorMetadata metadata;
    metadata.add("a", DataType::kInt8, to_dyn_shape({3}));
    metadata.add("b", DataType::kInt8, to_dyn_shape({3}));
    const TensorMap feed = DataLoader(with_range("", 0, 4)).generate(0, metadata);
    EXPECT_EQ(elements_of<int8_t>(feed.at("a")), (std::vector<int8_t>{4, 1, 2}));
    EXPECT_EQ(elements_of<int8_t>(feed.at("b")), (std::vector<int8_t>{3, 0, 4}));
}

TEST_F(DataLoaderTest, ConstantRangesConsumeNoDraws) {
    // r = RandomState(1); r.randint(3, 4, size=4, dtype=np.int32); r.random_sample(2).astype(f32)
    TensorMetadata metadata;
    metadata.add("c", DataType::kInt32, to_dyn_shape({4}));
    metadata.add("t", DataType::kBool, to_dyn_shape({4}));
    metadata.add("x", DataType::kFloat32, to_dyn_shape({2}));
    DataLoader::Options options;
    options.val_range.set("c", ValRange{3, 3});
    options.val_range.set("t", ValRange{1, 1});  // randint(True, True + 1, dtype=np.bool_)
    const TensorMap feed = DataLoader(options).generate(0, metadata);
    EXPECT_EQ(elements_of<int32_t>(feed.at("c")), (std::vector<int32_t>{3, 3, 3, 3}));
    EXPECT_EQ(elements_of<uint8_t>(feed.at("t")), (std::vector<uint8_t>{1, 1, 1, 1}));
    EXPECT_EQ(elements_of<float>(feed.at("x")), (std::vector<float>{0.4170219898223877f, 0.7203245162963867f}));
}

TEST_F(DataLoaderTest, IntegerRangesTruncateLikePythonInt) {
    // int(0.9) == 0 and int(2.7) == 2: RandomState(1).randint(0, 3, size=4, dtype=np.int64)
    const TensorMap feed = DataLoader(with_range("", 0.9, 2.7)).generate(0, meta("i", DataType::kInt64, {4}));
    for (int64_t value : elements_of<int64_t>(feed.at("i"))) {
        EXPECT_GE(value, 0);
        EXPECT_LE(value, 2);
    }
}

TEST_F(DataLoaderTest, IterationUsesSeedPlusIndex) {
    // RandomState(2).random_sample(4).astype(np.float32)
    const TensorMap feed = DataLoader().generate(1, meta("x", DataType::kFloat32, {4}));
    EXPECT_EQ(elements_of<float>(feed.at("x")), (std::vector<float>{0.4359948933124542f, 0.02592623233795166f,
                                                                    0.5496624708175659f, 0.4353224039077759f}));
    // Generation is repeatable.
    EXPECT_TRUE(DataLoader().generate(1, meta("x", DataType::kFloat32, {4})).at("x").equals(feed.at("x")));
}

TEST_F(DataLoaderTest, ScalarShapeDrawsOneValue) {
    // RandomState(1).random_sample(size=()).astype(np.float32)
    const TensorMap feed = DataLoader().generate(0, meta("s", DataType::kFloat32, {}));
    EXPECT_EQ(feed.at("s").shape(), Shape{});
    EXPECT_EQ(elements_of<float>(feed.at("s")), (std::vector<float>{0.4170219898223877f}));
}

TEST_F(DataLoaderTest, InfiniteBoundsProduceInfinities) {
    // Polygraphy scales by the infinite bound: random_sample(3) * inf + 0
    const TensorMap feed = DataLoader(with_range("", 0.0, INFINITY)).generate(0, meta("x", DataType::kFloat32, {3}));
    for (float value : elements_of<float>(feed.at("x"))) EXPECT_TRUE(std::isinf(value) && value > 0);
}

TEST_F(DataLoaderTest, PerInputRangesFallBackToDefaultKey) {
    TensorMetadata metadata;
    metadata.add("a", DataType::kInt32, to_dyn_shape({50}));
    metadata.add("b", DataType::kInt32, to_dyn_shape({50}));
    DataLoader::Options options;
    options.val_range.set("a", ValRange{100, 105});
    options.val_range.set("", ValRange{-3, -1});
    const TensorMap feed = DataLoader(options).generate(0, metadata);
    for (int32_t value : elements_of<int32_t>(feed.at("a"))) {
        EXPECT_GE(value, 100);
        EXPECT_LE(value, 105);
    }
    for (int32_t value : elements_of<int32_t>(feed.at("b"))) {
        EXPECT_GE(value, -3);
        EXPECT_LE(value, -1);
    }
}

TEST_F(DataLoaderTest, WildcardRangeKeysApplyToMatchingInputs) {
    TensorMetadata metadata;
    metadata.add("ids_a", DataType::kInt64, to_dyn_shape({20}));
    metadata.add("other", DataType::kInt64, to_dyn_shape({20}));
    DataLoader::Options options;
    options.val_range.set("ids_*", ValRange{7, 7});
    const TensorMap feed = DataLoader(options).generate(0, metadata);
    EXPECT_EQ(elements_of<int64_t>(feed.at("ids_a")), std::vector<int64_t>(20, 7));
    for (int64_t value : elements_of<int64_t>(feed.at("other"))) EXPECT_LE(value, 1);
}

TEST_F(DataLoaderTest, BadIntegerRangesAreUsageErrors) {
    EXPECT_THAT(error_message<UsageError>(
                    [] { DataLoader(with_range("", 5, 1)).generate(0, meta("i", DataType::kInt32, {2})); }),
                HasSubstr("Input tensor: i | Invalid value range [5, 1]"));
    EXPECT_THAT(error_message<UsageError>(
                    [] { DataLoader(with_range("", 0, 300)).generate(0, meta("u", DataType::kUInt8, {2})); }),
                HasSubstr("Input tensor: u | Value range [0, 300] is out of bounds for uint8"));
    EXPECT_THAT(error_message<UsageError>(
                    [] { DataLoader(with_range("", 0, NAN)).generate(0, meta("n", DataType::kInt64, {2})); }),
                HasSubstr("Input tensor: n | Value range bound nan cannot be converted to an integer"));
}

TEST_F(DataLoaderTest, SeedOutsideNumpyRangeIsUsageError) {
    DataLoader::Options options;
    options.seed = -1;
    EXPECT_THAT(error_message<UsageError>([&] { DataLoader(options).generate(0, meta("x", DataType::kFloat32, {1})); }),
                HasSubstr("Seed must be between 0 and 2**32 - 1"));
    options.seed = 4294967295;
    EXPECT_NO_THROW(DataLoader(options).generate(0, meta("x", DataType::kFloat32, {1})));
    EXPECT_THROW(DataLoader(options).generate(1, meta("x", DataType::kFloat32, {1})), UsageError);
}

TEST_F(DataLoaderTest, UngeneratableDtypesAreRefused) {
    EXPECT_THAT(
        error_message<UnsupportedError>([] { DataLoader().generate(0, meta("q", DataType::kFloat8E4M3FN, {2})); }),
        HasSubstr("cannot generate a numpy array for input: q"));
    EXPECT_THROW(DataLoader().generate(0, meta("s", DataType::kString, {2})), UnsupportedError);
    EXPECT_THROW(DataLoader().generate(0, meta("n", DataType::kInt4, {2})), UnsupportedError);
}

TEST_F(DataLoaderTest, UnknownDtypeBecomesFloat64AndUnknownShapeAScalar) {
    TensorMetadata metadata;
    metadata.add("x", std::nullopt, std::nullopt);
    const TensorMap feed = DataLoader().generate(0, metadata);
    EXPECT_EQ(feed.at("x").dtype(), DataType::kFloat64);
    EXPECT_EQ(feed.at("x").shape(), Shape{});
}

// ---- shapes -------------------------------------------------------------------------------------

TEST_F(DataLoaderTest, DynamicDimsBecomeOneWithOneWarning) {
    TensorMetadata metadata;
    metadata.add("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3), Dim::unknown()});
    const DataLoader loader;
    TensorMap feed;
    const std::string output = captured_stdout([&] {
        feed = loader.generate(0, metadata);
        loader.generate(1, metadata);
    });
    EXPECT_EQ(feed.at("x").shape(), (Shape{1, 3, 1}));
    const std::string warning =
        "[W] Input tensor: x [shape=['batch', 3, None]] | Will generate data of shape: [1, 3, 1].";
    EXPECT_EQ(count_of(output, warning), 1u) << output;
}

TEST_F(DataLoaderTest, UserShapesFillDynamicDims) {
    TensorMetadata model;
    model.add("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    DataLoader::Options options;
    options.input_metadata.add("x", std::nullopt, to_dyn_shape({4, 3}));
    TensorMap feed;
    const std::string output = captured_stdout([&] { feed = DataLoader(options).generate(0, model); });
    EXPECT_EQ(feed.at("x").shape(), (Shape{4, 3}));
    EXPECT_THAT(output, HasSubstr("Will generate inference input data according to provided TensorMetadata"));
    EXPECT_THAT(output, Not(HasSubstr("Will generate data of shape")));
}

TEST_F(DataLoaderTest, UserDtypeOverridesModelDtype) {
    DataLoader::Options options = with_range("", -5, 5);
    options.input_metadata.add("i", DataType::kInt8, std::nullopt);
    // RandomState(1).randint(-5, 6, size=10, dtype=np.int8)
    const TensorMap feed = DataLoader(options).generate(0, meta("i", DataType::kFloat32, {10}));
    ASSERT_EQ(feed.at("i").dtype(), DataType::kInt8);
    EXPECT_EQ(elements_of<int8_t>(feed.at("i")), (std::vector<int8_t>{0, -1, -4, 5, -5, 2, 2, 3, 3, -1}));
}

TEST_F(DataLoaderTest, UserShapeContradictingFixedDimsIsAnError) {
    DataLoader::Options options;
    options.input_metadata.add("x", std::nullopt, to_dyn_shape({2, 5}));
    EXPECT_THAT(error_message<PolygraphyException>([&] {
                    DataLoader(options).generate(0, meta("x", DataType::kFloat32, {2, 3}));
                }),
                HasSubstr("Input tensor: x [shape=[2, 3]] | Cannot use provided custom shape: [2, 5]"));
    options.input_metadata.add("x", std::nullopt, to_dyn_shape({2, 3, 1}));
    EXPECT_THROW(DataLoader(options).generate(0, meta("x", DataType::kFloat32, {2, 3})), PolygraphyException);
}

TEST_F(DataLoaderTest, DynamicUserShapeWarnsAndUsesDefault) {
    DataLoader::Options options;
    options.input_metadata.add("x", std::nullopt, DynShape{Dim::named("n"), Dim::fixed(3)});
    TensorMetadata model;
    model.add("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    TensorMap feed;
    const std::string output = captured_stdout([&] { feed = DataLoader(options).generate(0, model); });
    EXPECT_THAT(output, HasSubstr("Provided input shape: ['n', 3] is dynamic."));
    EXPECT_EQ(feed.at("x").shape(), (Shape{1, 3}));
}

TEST_F(DataLoaderTest, ShapeTensorsGetTheUserShapeAsValues) {
    DataLoader::Options options;
    options.input_metadata.add("shape", std::nullopt, to_dyn_shape({1, 3, 224, 224}));
    TensorMetadata model;
    model.add("shape", DataType::kInt64, to_dyn_shape({4}));
    model.add("x", DataType::kFloat32, to_dyn_shape({1}));
    TensorMap feed;
    const std::string output = captured_stdout([&] { feed = DataLoader(options).generate(0, model); });
    const Tensor& shape = feed.at("shape");
    EXPECT_EQ(shape.dtype(), DataType::kInt64);
    EXPECT_EQ(shape.shape(), Shape{4});
    EXPECT_EQ(elements_of<int64_t>(shape), (std::vector<int64_t>{1, 3, 224, 224}));
    EXPECT_THAT(output, HasSubstr("Assuming shape is a shape tensor. Setting input values to: [  1   3 224 224]."));
    // The shape tensor consumes no random draws.
    EXPECT_EQ(elements_of<float>(feed.at("x")), (std::vector<float>{0.4170219898223877f}));
}

// ---- names --------------------------------------------------------------------------------------

TEST_F(DataLoaderTest, UnknownMetadataNamesAreUsageErrorsWithHint) {
    DataLoader::Options options;
    options.input_metadata.add("inptu", std::nullopt, to_dyn_shape({1}));
    const std::string message =
        error_message<UsageError>([&] { DataLoader(options).generate(0, meta("input", DataType::kFloat32, {1})); });
    EXPECT_THAT(message, HasSubstr("Input tensor: inptu | Metadata was provided, but the model has no such input. "
                                   "Did you mean: input?"));
    EXPECT_THAT(message, HasSubstr("\nNote: Model inputs are: ['input']"));
}

TEST_F(DataLoaderTest, UnknownRangeNamesAreUsageErrorsWithHint) {
    DataLoader::Options options = with_range("maks", 0, 1);
    EXPECT_THAT(error_message<UsageError>([&] { DataLoader(options).generate(0, meta("mask", DataType::kBool, {1})); }),
                HasSubstr("Input tensor: maks | A value range was provided, but the model has no such input. "
                          "Did you mean: mask?"));
}

TEST_F(DataLoaderTest, WildcardsMatchingNothingOnlyWarn) {
    DataLoader::Options options;
    options.input_metadata.add("tokens_*", std::nullopt, to_dyn_shape({2}));
    options.val_range.set("mask?", ValRange{0, 1});
    TensorMetadata model;
    model.add("x", DataType::kFloat32, DynShape{Dim::named("n")});
    const std::string output = captured_stdout([&] { DataLoader(options).generate(0, model); });
    EXPECT_THAT(output, HasSubstr("[W] Input tensor wildcard: tokens_* | Metadata was provided, but none of the "
                                  "matched inputs exist in the model."));
    EXPECT_THAT(output, HasSubstr("Input tensor wildcard: mask? | A value range was provided"));
}

TEST_F(DataLoaderTest, WildcardMetadataAppliesToMatchingInputs) {
    DataLoader::Options options;
    options.input_metadata.add("in_*", std::nullopt, to_dyn_shape({2, 5}));
    TensorMetadata model;
    model.add("in_a", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(5)});
    model.add("in_b", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(5)});
    const TensorMap feed = DataLoader(options).generate(0, model);
    EXPECT_EQ(feed.at("in_a").shape(), (Shape{2, 5}));
    EXPECT_EQ(feed.at("in_b").shape(), (Shape{2, 5}));
}

// ---- adapters -----------------------------------------------------------------------------------

TEST_F(DataLoaderTest, AsFunctionStopsAfterIterations) {
    DataLoader::Options options;
    options.iterations = 2;
    const DataLoaderFn load = DataLoader(options).as_function();
    const TensorMetadata metadata = meta("x", DataType::kFloat32, {4});
    const auto first = load(0, metadata);
    const auto second = load(1, metadata);
    ASSERT_TRUE(first && second);
    EXPECT_FALSE(load(2, metadata).has_value());
    EXPECT_TRUE(first->at("x").equals(DataLoader().generate(0, metadata).at("x")));
    EXPECT_TRUE(second->at("x").equals(DataLoader().generate(1, metadata).at("x")));
}

TEST_F(DataLoaderTest, DataLoaderFromListYieldsEachFeed) {
    TensorMap a;
    a.set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {1.0}));
    TensorMap b;
    b.set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {2.0}));
    const DataLoaderFn load = data_loader_from_list({a, b});
    EXPECT_EQ(load(0, {})->at("x").value_as_double(0), 1.0);
    EXPECT_EQ(load(1, {})->at("x").value_as_double(0), 2.0);
    EXPECT_FALSE(load(2, {}).has_value());
}

// ---- coerce_feed --------------------------------------------------------------------------------

TEST_F(DataLoaderTest, CoerceFeedKeepsExactMatches) {
    TensorMap feed;
    feed.set("extra", Tensor::from_doubles(DataType::kFloat32, {1}, {9}));
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    TensorMap result;
    const std::string output = captured_stdout([&] { result = coerce_feed(feed, meta("x", DataType::kFloat32, {2})); });
    EXPECT_EQ(result.keys(), std::vector<std::string>{"x"});
    EXPECT_TRUE(result.at("x").equals(feed.at("x")));
    EXPECT_EQ(output, "");
}

TEST_F(DataLoaderTest, CoerceFeedMatchesBySubstringThenPosition) {
    TensorMap feed;
    feed.set("input:0", Tensor::from_doubles(DataType::kFloat32, {1}, {1}));
    feed.set("zzz", Tensor::from_doubles(DataType::kFloat32, {1}, {2}));
    TensorMetadata metadata;
    metadata.add("Input", DataType::kFloat32, to_dyn_shape({1}));
    metadata.add("other", DataType::kFloat32, to_dyn_shape({1}));
    TensorMap result;
    const std::string output = captured_stdout([&] { result = coerce_feed(feed, metadata); });
    EXPECT_EQ(result.at("Input").value_as_double(0), 1.0);
    EXPECT_EQ(result.at("other").value_as_double(0), 2.0);
    EXPECT_THAT(output,
                HasSubstr("Input tensor: Input | Buffer name (input:0) does not match expected input name (Input)."));
    EXPECT_THAT(output,
                HasSubstr("Input tensor: other | Buffer name (zzz) does not match expected input name (other)."));
}

TEST_F(DataLoaderTest, CoerceFeedCastsWithWarnings) {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat64, {2}, {1.5, 300.0}));
    TensorMap result;
    const std::string output = captured_stdout([&] { result = coerce_feed(feed, meta("x", DataType::kUInt8, {2})); });
    EXPECT_EQ(result.at("x").dtype(), DataType::kUInt8);
    EXPECT_EQ(result.at("x").value_as_double(0), 1.0);
    EXPECT_THAT(output,
                HasSubstr("Input tensor: x | Buffer dtype (float64) does not match expected input dtype (uint8), "
                          "attempting to cast."));
    EXPECT_THAT(output, HasSubstr("Some values in this input are out of range of uint8."));
}

TEST_F(DataLoaderTest, CoerceFeedReshapesAndTransposes) {
    TensorMap feed;
    feed.set("r", Tensor::from_doubles(DataType::kFloat32, {1, 4}, {1, 2, 3, 4}));
    feed.set("t", Tensor::from_doubles(DataType::kInt32, {3, 2}, {1, 2, 3, 4, 5, 6}));
    TensorMetadata metadata;
    metadata.add("r", DataType::kFloat32, to_dyn_shape({2, 2}));
    metadata.add("t", DataType::kInt32, to_dyn_shape({2, 3}));
    TensorMap result;
    const std::string output = captured_stdout([&] { result = coerce_feed(feed, metadata); });
    EXPECT_EQ(result.at("r").shape(), (Shape{2, 2}));
    EXPECT_EQ(elements_of<float>(result.at("r")), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(result.at("t").shape(), (Shape{2, 3}));
    // np.transpose([[1, 2], [3, 4], [5, 6]], [1, 0])
    EXPECT_EQ(elements_of<int32_t>(result.at("t")), (std::vector<int32_t>{1, 3, 5, 2, 4, 6}));
    EXPECT_THAT(output, HasSubstr("Permuted array of shape: (3, 2) to: (2, 3) using permutation [1, 0]"));
}

TEST_F(DataLoaderTest, CoerceFeedFreezesDynamicDims) {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {6}, {1, 2, 3, 4, 5, 6}));
    TensorMetadata metadata;
    metadata.add("x", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(3)});
    const TensorMap result = coerce_feed(feed, metadata);
    EXPECT_EQ(result.at("x").shape(), (Shape{2, 3}));
}

TEST_F(DataLoaderTest, CoerceFeedRejectsIncompatibleShapes) {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {5}, {1, 2, 3, 4, 5}));
    const std::string message = error_message<InputError>([&] {
        coerce_feed(feed, meta("x", DataType::kFloat32, {2, 3}));
    });
    EXPECT_THAT(message, HasSubstr("Input tensor: x | Cannot reuse input data due to mismatch in shape or data type."));
    EXPECT_THAT(message, HasSubstr("Provided input: [dtype=float32, shape=(5,)], Requested input: [dtype=float32, "
                                   "shape=(2, 3)]"));
}

TEST_F(DataLoaderTest, CoerceFeedRejectsMissingInputs) {
    TensorMap feed;
    TensorMetadata metadata = meta("x", DataType::kFloat32, {1});
    EXPECT_THAT(error_message<InputError>([&] { coerce_feed(feed, metadata); }),
                HasSubstr("Input tensor: x | Does not exist in the provided data."));
}

TEST(FindStrInList, ExactThenSubstringThenIndex) {
    const std::vector<std::string> names{"Input_0", "input", "mask"};
    EXPECT_EQ(find_str_in_list("input", names), "input");
    EXPECT_EQ(find_str_in_list("INPUT", names), "Input_0");
    EXPECT_EQ(find_str_in_list("mask:0", names), "mask");
    EXPECT_EQ(find_str_in_list("zzz", names, 2), "mask");
    EXPECT_EQ(find_str_in_list("zzz", names, 3), std::nullopt);
    EXPECT_EQ(find_str_in_list("zzz", names), std::nullopt);
}

TEST(ClosestMatch, PrefersSmallEditDistances) {
    const std::vector<std::string> names{"input_ids", "attention_mask", "logits"};
    EXPECT_EQ(closest_match("input_idz", names), "input_ids");
    EXPECT_EQ(closest_match("atention_mask", names), "attention_mask");
    EXPECT_EQ(closest_match("LOGITS", names), "logits");
    EXPECT_EQ(closest_match("lgoits", names), "logits");        // transposition
    EXPECT_EQ(closest_match("mask", names), "attention_mask");  // substring
    EXPECT_EQ(closest_match("completely_different", names), std::nullopt);
    EXPECT_EQ(closest_match("x", {"y"}), std::nullopt);
    EXPECT_EQ(closest_match("x", {}), std::nullopt);
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

TEST(ShardDataLoader, EveryCountthSampleAndTheSameFingerprintInEveryShard) {
    InputList feeds;
    for (int sample = 0; sample < 7; ++sample) {
        TensorMap feed;
        feed.set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {static_cast<double>(sample)}));
        feeds.push_back(feed);
    }
    std::vector<std::string> fingerprints;
    for (std::size_t shard = 0; shard < 3; ++shard) {
        auto tally = std::make_shared<DatasetTally>();
        const DataLoaderFn loader = shard_data_loader(data_loader_from_list(feeds), shard, 3, tally);
        std::vector<double> seen;
        for (std::size_t i = 0; auto feed = loader(i, TensorMetadata{}); ++i)
            seen.push_back(feed->at("x").value_as_double(0));
        std::vector<double> expected;
        for (std::size_t sample = shard; sample < 7; sample += 3) expected.push_back(static_cast<double>(sample));
        EXPECT_EQ(seen, expected);
        ASSERT_TRUE(tally->complete);
        EXPECT_EQ(tally->samples, 7u);
        fingerprints.push_back(tally->fingerprint);
        // A revisit asks the list again.
        EXPECT_EQ(loader(0, TensorMetadata{})->at("x").value_as_double(0), static_cast<double>(shard));
    }
    EXPECT_EQ(fingerprints[0], fingerprints[1]);
    EXPECT_EQ(fingerprints[1], fingerprints[2]);
    // Another value anywhere in the dataset changes it.
    feeds[5].set("x", Tensor::from_doubles(DataType::kFloat32, {1}, {5.5}));
    auto tally = std::make_shared<DatasetTally>();
    const DataLoaderFn loader = shard_data_loader(data_loader_from_list(feeds), 0, 3, tally);
    for (std::size_t i = 0; loader(i, TensorMetadata{}); ++i) {
    }
    EXPECT_NE(tally->fingerprint, fingerprints[0]);
    EXPECT_THROW(shard_data_loader(data_loader_from_list(feeds), 3, 3), UsageError);
    EXPECT_THROW(shard_data_loader(data_loader_from_list(feeds), 0, 0), UsageError);
}

}  // namespace
}  // namespace polygraphy
