#include "polygraphy/backend/onnx/tensor_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using testing::elements_of;
using testing::error_message;
using ::testing::HasSubstr;
using testing::TempDir;

onnx::TensorProto make_proto(const std::string& name, int32_t onnx_type, const std::vector<int64_t>& dims) {
    onnx::TensorProto proto;
    proto.set_name(name);
    proto.set_data_type(onnx_type);
    for (int64_t dim : dims) proto.add_dims(dim);
    return proto;
}

TEST(TensorProto, RoundTripsEveryNumericDtypeThroughRawData) {
    for (DataType dtype :
         {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
          DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUInt8, DataType::kUInt16, DataType::kUInt32,
          DataType::kUInt64, DataType::kBool, DataType::kComplex64, DataType::kComplex128, DataType::kFloat8E4M3FN,
          DataType::kFloat8E5M2}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)));
        Tensor tensor(dtype, {2, 3});
        auto* bytes = static_cast<uint8_t*>(tensor.data());
        for (std::size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
        if (dtype == DataType::kBool) {
            for (std::size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = i % 2;
        }
        const onnx::TensorProto proto = tensor_to_proto(tensor, "t");
        EXPECT_EQ(proto.name(), "t");
        EXPECT_EQ(proto.data_type(), dtype_to_onnx(dtype));
        EXPECT_EQ(proto.raw_data().size(), tensor.nbytes());
        const Tensor back = tensor_from_proto(proto);
        EXPECT_TRUE(back.equals(tensor));
    }
}

TEST(TensorProto, RoundTripsStringsAndInt4) {
    Tensor strings(DataType::kString, {3});
    strings.strings() = {"a", "", "long string"};
    const onnx::TensorProto string_proto = tensor_to_proto(strings, "s");
    EXPECT_EQ(string_proto.string_data_size(), 3);
    EXPECT_EQ(tensor_from_proto(string_proto).strings(), strings.strings());

    Tensor int4(DataType::kInt4, {5});
    const std::vector<int8_t> values{-8, 7, -1, 0, 3};
    std::memcpy(int4.data(), values.data(), values.size());
    const onnx::TensorProto int4_proto = tensor_to_proto(int4, "q");
    // Two per byte, low nibble first: (-8, 7) -> 0x78, (-1, 0) -> 0x0F, (3) -> 0x03.
    EXPECT_EQ(int4_proto.raw_data(), std::string("\x78\x0F\x03", 3));
    EXPECT_EQ(elements_of<int8_t>(tensor_from_proto(int4_proto)), values);
}

TEST(TensorProto, DecodesTypedFloatAndDoubleFields) {
    onnx::TensorProto floats = make_proto("f", onnx::TensorProto::FLOAT, {2});
    floats.add_float_data(1.5f);
    floats.add_float_data(-2.0f);
    EXPECT_EQ(elements_of<float>(tensor_from_proto(floats)), (std::vector<float>{1.5f, -2.0f}));

    onnx::TensorProto doubles = make_proto("d", onnx::TensorProto::DOUBLE, {1});
    doubles.add_double_data(0.25);
    EXPECT_EQ(elements_of<double>(tensor_from_proto(doubles)), (std::vector<double>{0.25}));

    onnx::TensorProto complex = make_proto("c", onnx::TensorProto::COMPLEX64, {1});
    complex.add_float_data(1.0f);
    complex.add_float_data(2.0f);
    const Tensor complex_tensor = tensor_from_proto(complex);
    ASSERT_EQ(complex_tensor.nbytes(), 2 * sizeof(float));
    EXPECT_EQ(complex_tensor.data_as<float>()[0], 1.0f);
    EXPECT_EQ(complex_tensor.data_as<float>()[1], 2.0f);
}

TEST(TensorProto, DecodesNarrowTypesFromInt32Data) {
    onnx::TensorProto int8 = make_proto("i8", onnx::TensorProto::INT8, {3});
    for (int value : {-128, 127, -1}) int8.add_int32_data(value);
    EXPECT_EQ(elements_of<int8_t>(tensor_from_proto(int8)), (std::vector<int8_t>{-128, 127, -1}));

    onnx::TensorProto uint8 = make_proto("u8", onnx::TensorProto::UINT8, {2});
    for (int value : {0, 255}) uint8.add_int32_data(value);
    EXPECT_EQ(elements_of<uint8_t>(tensor_from_proto(uint8)), (std::vector<uint8_t>{0, 255}));

    onnx::TensorProto int16 = make_proto("i16", onnx::TensorProto::INT16, {2});
    for (int value : {-32768, 1234}) int16.add_int32_data(value);
    EXPECT_EQ(elements_of<int16_t>(tensor_from_proto(int16)), (std::vector<int16_t>{-32768, 1234}));

    onnx::TensorProto uint16 = make_proto("u16", onnx::TensorProto::UINT16, {1});
    uint16.add_int32_data(65535);
    EXPECT_EQ(elements_of<uint16_t>(tensor_from_proto(uint16)), (std::vector<uint16_t>{65535}));

    onnx::TensorProto boolean = make_proto("b", onnx::TensorProto::BOOL, {3});
    for (int value : {0, 1, 5}) boolean.add_int32_data(value);
    EXPECT_EQ(elements_of<uint8_t>(tensor_from_proto(boolean)), (std::vector<uint8_t>{0, 1, 1}));

    onnx::TensorProto half = make_proto("h", onnx::TensorProto::FLOAT16, {2});
    half.add_int32_data(float_to_half(1.5f));
    half.add_int32_data(float_to_half(-65504.0f));
    EXPECT_EQ(elements_of<uint16_t>(tensor_from_proto(half)),
              (std::vector<uint16_t>{float_to_half(1.5f), float_to_half(-65504.0f)}));

    onnx::TensorProto bf16 = make_proto("bf", onnx::TensorProto::BFLOAT16, {1});
    bf16.add_int32_data(float_to_bfloat16(3.0f));
    EXPECT_EQ(bfloat16_to_float(elements_of<uint16_t>(tensor_from_proto(bf16))[0]), 3.0f);

    onnx::TensorProto fp8 = make_proto("f8", dtype_to_onnx(DataType::kFloat8E4M3FN), {2});
    fp8.add_int32_data(0x38);  // 1.0 in e4m3fn
    fp8.add_int32_data(0xFF);
    const Tensor fp8_tensor = tensor_from_proto(fp8);
    EXPECT_EQ(fp8_tensor.dtype(), DataType::kFloat8E4M3FN);
    EXPECT_EQ(elements_of<uint8_t>(fp8_tensor), (std::vector<uint8_t>{0x38, 0xFF}));

    onnx::TensorProto int32 = make_proto("i32", onnx::TensorProto::INT32, {2});
    int32.add_int32_data(-7);
    int32.add_int32_data(2147483647);
    EXPECT_EQ(elements_of<int32_t>(tensor_from_proto(int32)), (std::vector<int32_t>{-7, 2147483647}));
}

TEST(TensorProto, DecodesPackedInt4FromInt32Data) {
    onnx::TensorProto uint4 = make_proto("u4", dtype_to_onnx(DataType::kUInt4), {3});
    uint4.add_int32_data(0xA5);  // 5, 10
    uint4.add_int32_data(0x0F);  // 15
    EXPECT_EQ(elements_of<uint8_t>(tensor_from_proto(uint4)), (std::vector<uint8_t>{5, 10, 15}));

    onnx::TensorProto int4 = make_proto("i4", dtype_to_onnx(DataType::kInt4), {2});
    int4.add_int32_data(0x8F);  // -1, -8
    EXPECT_EQ(elements_of<int8_t>(tensor_from_proto(int4)), (std::vector<int8_t>{-1, -8}));

    onnx::TensorProto wrong = make_proto("i4", dtype_to_onnx(DataType::kInt4), {3});
    wrong.add_int32_data(0);
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(wrong); }),
                HasSubstr("Tensor 'i4' has 1 values in int32_data, but its shape (3,) and dtype int4 need 2"));
}

TEST(TensorProto, DecodesWideIntegerFields) {
    onnx::TensorProto int64 = make_proto("i64", onnx::TensorProto::INT64, {2});
    int64.add_int64_data(INT64_MIN);
    int64.add_int64_data(42);
    EXPECT_EQ(elements_of<int64_t>(tensor_from_proto(int64)), (std::vector<int64_t>{INT64_MIN, 42}));

    onnx::TensorProto uint32 = make_proto("u32", onnx::TensorProto::UINT32, {1});
    uint32.add_uint64_data(4000000000u);
    EXPECT_EQ(elements_of<uint32_t>(tensor_from_proto(uint32)), (std::vector<uint32_t>{4000000000u}));

    onnx::TensorProto uint64 = make_proto("u64", onnx::TensorProto::UINT64, {1});
    uint64.add_uint64_data(UINT64_MAX);
    EXPECT_EQ(elements_of<uint64_t>(tensor_from_proto(uint64)), (std::vector<uint64_t>{UINT64_MAX}));

    onnx::TensorProto strings = make_proto("s", onnx::TensorProto::STRING, {2});
    strings.add_string_data("x");
    strings.add_string_data("yz");
    EXPECT_EQ(tensor_from_proto(strings).strings(), (std::vector<std::string>{"x", "yz"}));
}

TEST(TensorProto, EmptyTensorsNeedNoData) {
    const Tensor empty = tensor_from_proto(make_proto("e", onnx::TensorProto::FLOAT, {0, 3}));
    EXPECT_EQ(empty.shape(), (Shape{0, 3}));
    EXPECT_EQ(empty.numel(), 0);
}

TEST(TensorProto, SizeMismatchesAreFormatErrorsNamingTheTensor) {
    onnx::TensorProto raw = make_proto("weights", onnx::TensorProto::FLOAT, {2, 3});
    raw.set_raw_data(std::string(20, '\0'));
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(raw); }),
                HasSubstr("Tensor 'weights' has 20 bytes of raw_data, but its shape (2, 3) and dtype float32 need 24"));

    onnx::TensorProto typed = make_proto("bias", onnx::TensorProto::FLOAT, {3});
    typed.add_float_data(1.0f);
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(typed); }),
                HasSubstr("Tensor 'bias' has 1 values in float_data, but its shape (3,) and dtype float32 need 3"));

    onnx::TensorProto missing = make_proto("ids", onnx::TensorProto::INT64, {2});
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(missing); }),
                HasSubstr("Tensor 'ids' has 0 values in int64_data"));

    onnx::TensorProto strings = make_proto("s", onnx::TensorProto::STRING, {2});
    strings.set_raw_data("ab");
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(strings); }),
                HasSubstr("Tensor 's' is a string tensor"));
}

TEST(TensorProto, RejectsBadDtypesDimsAndExternalData) {
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(make_proto("u", 0, {1})); }),
                HasSubstr("Tensor 'u' has an undefined or unknown data type (0)"));
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(make_proto("u", 99, {1})); }),
                HasSubstr("unknown data type (99)"));
    EXPECT_THAT(error_message<FormatError>([&] {
                    tensor_from_proto(make_proto("n", onnx::TensorProto::FLOAT, {2, -1}));
                }),
                HasSubstr("Tensor 'n' has a negative dimension (-1)"));
    EXPECT_THAT(error_message<FormatError>([&] {
                    tensor_from_proto(make_proto("big", onnx::TensorProto::FLOAT, {1LL << 40, 1LL << 40}));
                }),
                HasSubstr("Tensor 'big' has dimensions whose product is too large"));

    onnx::TensorProto weightless = make_proto("b", onnx::TensorProto::FLOAT, {2});
    weightless.set_raw_data("");
    weightless.set_doc_string("TRT_WEIGHTLESS/");
    EXPECT_THAT(error_message<UnsupportedError>([&] { tensor_from_proto(weightless); }),
                HasSubstr("Tensor 'b' has no values: the model was saved without weights (TRT_WEIGHTLESS)"));

    onnx::TensorProto external = make_proto("w", onnx::TensorProto::FLOAT, {1});
    external.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = external.add_external_data();
    entry->set_key("location");
    entry->set_value("weights.bin");
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_proto(external); }),
                HasSubstr("Tensor 'w' stores its data in an external file ('weights.bin') that was not loaded"));
}

TEST(TensorProto, ReadsPbFiles) {
    TempDir dir;
    Tensor tensor = Tensor::from_doubles(DataType::kInt32, {2, 2}, {1, 2, 3, 4});
    const std::string path = dir.file("input_0.pb");
    {
        std::ofstream file(path, std::ios::binary);
        tensor_to_proto(tensor, "data_0").SerializeToOstream(&file);
    }
    std::string name;
    EXPECT_TRUE(tensor_from_pb_file(path, &name).equals(tensor));
    EXPECT_EQ(name, "data_0");
}

TEST(TensorProto, BadPbFilesAreFormatErrors) {
    TempDir dir;
    EXPECT_THROW(tensor_from_pb_file(dir.file("missing.pb")), PolygraphyException);

    const std::string empty = dir.file("empty.pb");
    std::ofstream(empty).close();
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_pb_file(empty); }),
                HasSubstr("is not a valid TensorProto file: it is empty"));

    const std::string garbage = dir.file("garbage.pb");
    std::ofstream(garbage) << "{\"this is\": \"json\"}";
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_pb_file(garbage); }),
                HasSubstr("is not a valid TensorProto file"));

    // A message that parses but holds a broken tensor is reported with the file name.
    const std::string broken = dir.file("broken.pb");
    {
        onnx::TensorProto proto = make_proto("t", onnx::TensorProto::FLOAT, {4});
        proto.set_raw_data("abc");
        std::ofstream file(broken, std::ios::binary);
        proto.SerializeToOstream(&file);
    }
    EXPECT_THAT(error_message<FormatError>([&] { tensor_from_pb_file(broken); }),
                HasSubstr("broken.pb' is not a valid TensorProto file: Tensor 't' has 3 bytes of raw_data"));
}

TEST(TensorProto, MetadataFromValueInfo) {
    onnx::ValueInfoProto info;
    info.set_name("x");
    auto* tensor_type = info.mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(onnx::TensorProto::FLOAT16);
    auto* shape = tensor_type->mutable_shape();
    shape->add_dim()->set_dim_value(3);
    shape->add_dim()->set_dim_param("batch");
    shape->add_dim();
    MetadataEntry entry = metadata_from_value_info(info);
    EXPECT_EQ(entry.dtype, DataType::kFloat16);
    ASSERT_TRUE(entry.shape.has_value());
    EXPECT_EQ(*entry.shape, (DynShape{Dim::fixed(3), Dim::named("batch"), Dim::unknown()}));

    tensor_type->clear_shape();
    entry = metadata_from_value_info(info);
    EXPECT_FALSE(entry.shape.has_value());

    tensor_type->mutable_shape();  // present but rank 0: a scalar
    entry = metadata_from_value_info(info);
    ASSERT_TRUE(entry.shape.has_value());
    EXPECT_TRUE(entry.shape->empty());

    onnx::ValueInfoProto untyped;
    untyped.set_name("y");
    entry = metadata_from_value_info(untyped);
    EXPECT_FALSE(entry.dtype.has_value());
    EXPECT_FALSE(entry.shape.has_value());

    onnx::ValueInfoProto sequence;
    sequence.mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
    entry = metadata_from_value_info(sequence);
    EXPECT_FALSE(entry.dtype.has_value());
}

}  // namespace
}  // namespace polygraphy
