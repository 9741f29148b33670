#include "polygraphy/common/npy.h"

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/float16.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

// Written by numpy 1.24 (np.save, or np.lib.format.write_array for versions 2.0 and 3.0).
constexpr const char* kLogitsF4 =  // np.arange(6, dtype=np.float32).reshape(2, 3)
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDMpLCB9ICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAACAPwAAAEAAAEBAAACAQAAA"
    "oEA=";
constexpr const char* kHalfF2 =  // [0.5, -1.25, 65504] float16
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGYyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAOAC9/3s=";
constexpr const char* kBool =  // [True, False, True]
    "k05VTVBZAQB2AHsnZGVzY3InOiAnfGIxJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoBAAE=";
constexpr const char* kScalarI8 =  // np.array(-5, dtype=np.int64)
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGk4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKCksIH0gICAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAr7/////////w==";
constexpr const char* kEmpty =  // np.zeros((2, 0, 3), np.float32)
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDAsIDMpLCB9ICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo=";
constexpr const char* kComplex64 =  // [1+2j, -3.5j] complex64
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGM4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAIA/AAAAQAAAAIAAAGDA";
constexpr const char* kUnicode =  // [['ab', 'xyz\u00e9'], ['\U0001F600', '']]
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPFU0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDIpLCB9ICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAphAAAAYgAAAAAAAAAAAAAAeAAAAHkA"
    "AAB6AAAA6QAAAAD2AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
constexpr const char* kBigEndianF4 =  // np.array([1.5, -2, 65536], dtype='>f4')
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPmY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo/wAAAwAAAAEeAAAA=";
constexpr const char* kBigEndianI8 =  // np.array([[1, -2], [3, 2**40]], dtype='>i8')
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPmk4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDIpLCB9ICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAAAAAf/////////+AAAAAAAA"
    "AAMAAAEAAAAAAA==";
constexpr const char* kBigEndianC16 =  // np.array([1+2j], dtype='>c16')
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPmMxNicsICdmb3J0cmFuX29yZGVyJzogRmFsc2UsICdzaGFwZSc6ICgxLCksIH0gICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo/8AAAAAAAAEAAAAAAAAAA";
constexpr const char* kBigEndianU2 =  // np.array(['hi', '\u00e9'], dtype='>U2')
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPlUyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAABoAAAAaQAAAOkAAAAA";
constexpr const char* kBytesS3 =  // np.array([b'ab', b'', b'xyz'])
    "k05VTVBZAQB2AHsnZGVzY3InOiAnfFMzJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAphYgAAAAB4eXo=";
constexpr const char* kFortranI4 =  // np.asfortranarray(np.arange(24, dtype='<i4').reshape(2, 3, 4))
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGk0JywgJ2ZvcnRyYW5fb3JkZXInOiBUcnVlLCAnc2hhcGUnOiAoMiwgMywgNCksIH0gICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAADAAAAAQAAAAQAAAACAAAABQA"
    "AAABAAAADQAAAAUAAAARAAAACQAAABUAAAACAAAADgAAAAYAAAASAAAACgAAABYAAAADAAAADwAAAAcAAAATAAAACwAAABcAAAA=";
constexpr const char* kVersion2U2 =  // write_array(np.array([7, 8, 9], np.uint16), version=(2, 0))
    "k05VTVBZAgB0AAAAeydkZXNjcic6ICc8dTInLCAnZm9ydHJhbl9vcmRlcic6IEZhbHNlLCAnc2hhcGUnOiAoMywpLCB9ICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoHAAgACQA=";
constexpr const char* kVersion3I2 =  // write_array(np.array([7, 8, 9], np.int16), version=(3, 0))
    "k05VTVBZAwB0AAAAeydkZXNjcic6ICc8aTInLCAnZm9ydHJhbl9vcmRlcic6IEZhbHNlLCAnc2hhcGUnOiAoMywpLCB9ICAgICAg"
    "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoHAAgACQA=";

std::vector<double> values_of(const Tensor& tensor) {
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

// A .npy file from parts, for malformed-input tests.
std::string make_npy(const std::string& dict, const std::string& payload, int major = 1) {
    std::string bytes("\x93NUMPY", 6);
    bytes += static_cast<char>(major);
    bytes += '\0';
    const std::size_t length = dict.size();
    bytes += static_cast<char>(length & 0xff);
    bytes += static_cast<char>(length >> 8);
    if (major != 1) bytes += std::string(2, '\0');
    return bytes + dict + payload;
}

std::string load_error(const std::string& bytes) {
    try {
        npy::load(bytes.data(), bytes.size());
    } catch (const FormatError& error) {
        // The base64 route must fail the same way.
        try {
            npy::load_base64(base64::encode(bytes));
            ADD_FAILURE() << "load_base64 accepted what load rejected: " << error.what();
        } catch (const FormatError& again) {
            EXPECT_STREQ(again.what(), error.what());
        }
        return error.what();
    }
    ADD_FAILURE() << "no FormatError";
    return "";
}

Tensor round_trip(const Tensor& tensor) {
    const std::string bytes = npy::save(tensor);
    Tensor from_bytes = npy::load(bytes.data(), bytes.size());
    std::string text;
    npy::save_base64(tensor, [&](const char* chars, std::size_t n) { text.append(chars, n); });
    EXPECT_EQ(text, base64::encode(bytes));
    Tensor from_text = npy::load_base64(text);
    EXPECT_TRUE(from_text.equals(from_bytes));
    return from_bytes;
}

TEST(Npy, WritesExactlyWhatNumpyWrites) {
    auto saved = [](const Tensor& tensor) { return base64::encode(npy::save(tensor)); };
    EXPECT_EQ(saved(Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 1, 2, 3, 4, 5})), kLogitsF4);
    EXPECT_EQ(saved(Tensor::from_doubles(DataType::kFloat16, {3}, {0.5, -1.25, 65504})), kHalfF2);
    EXPECT_EQ(saved(Tensor::from_doubles(DataType::kBool, {3}, {1, 0, 1})), kBool);
    EXPECT_EQ(saved(Tensor::from_doubles(DataType::kInt64, {}, {-5})), kScalarI8);
    EXPECT_EQ(saved(Tensor(DataType::kFloat32, {2, 0, 3})), kEmpty);
    const float complex_parts[] = {1, 2, -0.0f, -3.5f};
    EXPECT_EQ(saved(Tensor::from_bytes(DataType::kComplex64, {2}, complex_parts, sizeof(complex_parts))), kComplex64);
    Tensor strings(DataType::kString, {2, 2});
    strings.strings() = {"ab", "xyz\xc3\xa9", "\xf0\x9f\x98\x80", ""};
    EXPECT_EQ(saved(strings), kUnicode);
}

TEST(Npy, HeaderPaddingMatchesNumpy) {
    // numpy: "{'descr': '<f4', 'fortran_order': False, 'shape': (1, ..., 1), }" + 20 spaces of
    // spare room for the first axis, padded to 192 bytes in all.
    const std::string header = npy::make_header(DataType::kFloat32, Shape(20, 1));
    ASSERT_EQ(header.size(), 192u);
    EXPECT_EQ(static_cast<unsigned char>(header[8]), 0xb6);
    EXPECT_EQ(header[9], '\0');
    const std::string dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
        "1), }";
    EXPECT_EQ(header.substr(10, dict.size()), dict);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(header.find_first_not_of(' ', 10 + dict.size()), header.size() - 1);
    for (int64_t first : {int64_t{0}, int64_t{7}, int64_t{123456789012}, int64_t{1} << 62}) {
        const std::string h = npy::make_header(DataType::kUInt8, {first, 3});
        EXPECT_EQ(h.size() % 64, 0u) << first;
    }
    // A header over 64 KiB switches to format 2.0, like numpy.
    const std::string big = npy::make_header(DataType::kFloat32, Shape(30000, 1));
    EXPECT_EQ(big[6], '\x02');
    EXPECT_EQ(big.size() % 64, 0u);
}

TEST(Npy, ReadsNumpyFilesOfEveryKind) {
    auto load = [](const char* text) { return npy::load_base64(text); };
    Tensor f2 = load(kHalfF2);
    EXPECT_EQ(f2.dtype(), DataType::kFloat16);
    EXPECT_EQ(values_of(f2), (std::vector<double>{0.5, -1.25, 65504}));

    Tensor b1 = load(kBool);
    EXPECT_EQ(b1.dtype(), DataType::kBool);
    EXPECT_EQ(values_of(b1), (std::vector<double>{1, 0, 1}));

    Tensor scalar = load(kScalarI8);
    EXPECT_EQ(scalar.dtype(), DataType::kInt64);
    EXPECT_EQ(scalar.shape(), Shape{});
    EXPECT_EQ(scalar.data_as<int64_t>()[0], -5);

    Tensor empty = load(kEmpty);
    EXPECT_EQ(empty.shape(), (Shape{2, 0, 3}));
    EXPECT_EQ(empty.numel(), 0);

    Tensor c8 = load(kComplex64);
    ASSERT_EQ(c8.dtype(), DataType::kComplex64);
    const auto* c = c8.data_as<std::complex<float>>();
    EXPECT_EQ(c[0], std::complex<float>(1, 2));
    EXPECT_EQ(c[1].imag(), -3.5f);

    Tensor be_f4 = load(kBigEndianF4);
    EXPECT_EQ(be_f4.dtype(), DataType::kFloat32);
    EXPECT_EQ(values_of(be_f4), (std::vector<double>{1.5, -2, 65536}));

    Tensor be_i8 = load(kBigEndianI8);
    EXPECT_EQ(be_i8.shape(), (Shape{2, 2}));
    EXPECT_EQ((std::vector<int64_t>(be_i8.data_as<int64_t>(), be_i8.data_as<int64_t>() + 4)),
              (std::vector<int64_t>{1, -2, 3, int64_t{1} << 40}));

    Tensor be_c16 = load(kBigEndianC16);
    ASSERT_EQ(be_c16.dtype(), DataType::kComplex128);
    EXPECT_EQ(be_c16.data_as<std::complex<double>>()[0], std::complex<double>(1, 2));

    Tensor unicode = load(kUnicode);
    ASSERT_EQ(unicode.dtype(), DataType::kString);
    EXPECT_EQ(unicode.shape(), (Shape{2, 2}));
    EXPECT_EQ(unicode.strings(), (std::vector<std::string>{"ab", "xyz\xc3\xa9", "\xf0\x9f\x98\x80", ""}));

    EXPECT_EQ(load(kBigEndianU2).strings(), (std::vector<std::string>{"hi", "\xc3\xa9"}));
    EXPECT_EQ(load(kBytesS3).strings(), (std::vector<std::string>{"ab", "", "xyz"}));

    Tensor fortran = load(kFortranI4);
    ASSERT_EQ(fortran.shape(), (Shape{2, 3, 4}));
    for (int i = 0; i < 24; ++i) EXPECT_EQ(fortran.data_as<int32_t>()[i], i);

    Tensor v2 = load(kVersion2U2);
    EXPECT_EQ(v2.dtype(), DataType::kUInt16);
    EXPECT_EQ(values_of(v2), (std::vector<double>{7, 8, 9}));
    Tensor v3 = load(kVersion3I2);
    EXPECT_EQ(v3.dtype(), DataType::kInt16);
    EXPECT_EQ(values_of(v3), (std::vector<double>{7, 8, 9}));
}

TEST(Npy, ToleratesHeaderVariations) {
    const std::string payload("\x01\x00\x02\x00", 4);
    for (const std::string& dict : {
             std::string("{'shape': (2,), 'fortran_order': False, 'descr': '<i2'}\n"),
             std::string("{\"descr\":\"<i2\",\"fortran_order\":False,\"shape\":(2L,)}"),
             std::string("  {'descr': '<i2',\n 'fortran_order': True, 'shape': ( 2 , ) , }   \n"),
         }) {
        const std::string bytes = make_npy(dict, payload);
        Tensor tensor = npy::load(bytes.data(), bytes.size());
        EXPECT_EQ(tensor.dtype(), DataType::kInt16) << dict;
        EXPECT_EQ(values_of(tensor), (std::vector<double>{1, 2})) << dict;
    }
    // Fortran order of a 2-D array is transposed into C order.
    const int32_t column_major[] = {0, 3, 1, 4, 2, 5};  // [[0, 1, 2], [3, 4, 5]]
    const std::string bytes = make_npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n",
                                       std::string(reinterpret_cast<const char*>(column_major), sizeof(column_major)));
    EXPECT_EQ(values_of(npy::load(bytes.data(), bytes.size())), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, RoundTripsEveryDtype) {
    const std::vector<double> values = {0, 1, -2, 3.5, 100, -128, 127, 42};
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt8,
                           DataType::kInt16, DataType::kInt32, DataType::kInt64}) {
        Tensor tensor = Tensor::from_doubles(dtype, {2, 4}, values);
        Tensor back = round_trip(tensor);
        EXPECT_TRUE(back.equals(tensor)) << dtype_name(dtype);
    }
    const std::vector<double> unsigned_values = {0, 1, 2, 3, 100, 128, 255, 42};
    for (DataType dtype : {DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64, DataType::kBool}) {
        std::vector<double> v = unsigned_values;
        if (dtype == DataType::kBool)
            for (auto& x : v) x = x != 0;
        Tensor tensor = Tensor::from_doubles(dtype, {8}, v);
        EXPECT_TRUE(round_trip(tensor).equals(tensor)) << dtype_name(dtype);
    }
    // Extremes.
    const int64_t extremes[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    Tensor i64 = Tensor::from_bytes(DataType::kInt64, {2}, extremes, sizeof(extremes));
    EXPECT_TRUE(round_trip(i64).equals(i64));
    const uint64_t umax[] = {std::numeric_limits<uint64_t>::max()};
    Tensor u64 = Tensor::from_bytes(DataType::kUInt64, {1}, umax, sizeof(umax));
    EXPECT_TRUE(round_trip(u64).equals(u64));
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                               -0.0, 5e-324};
    Tensor f64 = Tensor::from_bytes(DataType::kFloat64, {4}, specials, sizeof(specials));
    EXPECT_TRUE(round_trip(f64).equals(f64));
    const double complex_parts[] = {1.5, -2.5, 0, 7};
    Tensor c128 = Tensor::from_bytes(DataType::kComplex128, {2}, complex_parts, sizeof(complex_parts));
    EXPECT_TRUE(round_trip(c128).equals(c128));
    // Scalars and zero-size arrays.
    Tensor scalar = Tensor::from_doubles(DataType::kFloat32, {}, {2.5});
    EXPECT_TRUE(round_trip(scalar).equals(scalar));
    for (const Shape& shape : {Shape{0}, Shape{3, 0}, Shape{0, 5, 7}}) {
        Tensor empty(DataType::kInt32, shape);
        Tensor back = round_trip(empty);
        EXPECT_TRUE(back.equals(empty)) << shape_to_string(shape);
    }
    // Strings, with multi-byte UTF-8, empty strings and zero-size string arrays.
    Tensor strings(DataType::kString, {3});
    strings.strings() = {"plain", "", "\xe2\x82\xac \xf0\x9f\x98\x80"};
    Tensor back = round_trip(strings);
    ASSERT_EQ(back.dtype(), DataType::kString);
    EXPECT_EQ(back.strings(), strings.strings());
    Tensor no_strings(DataType::kString, {0});
    EXPECT_EQ(round_trip(no_strings).shape(), Shape{0});
    Tensor scalar_string(DataType::kString, {});
    scalar_string.strings()[0] = "x";
    EXPECT_EQ(round_trip(scalar_string).strings(), std::vector<std::string>{"x"});
}

TEST(Npy, WidensTypesNumpyLacks) {
    // bfloat16 -> float32, exactly.
    const uint16_t bf16[] = {float_to_bfloat16(1.5f), float_to_bfloat16(-3.0e38f), float_to_bfloat16(1e-20f)};
    Tensor bf = Tensor::from_bytes(DataType::kBFloat16, {3}, bf16, sizeof(bf16));
    Tensor widened = round_trip(bf);
    ASSERT_EQ(widened.dtype(), DataType::kFloat32);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(widened.data_as<float>()[i], bfloat16_to_float(bf16[i]));
    EXPECT_EQ(npy::npy_write_dtype(DataType::kBFloat16), DataType::kFloat32);

    // float8 variants -> float32 (a few well-known encodings).
    struct Case {
        DataType dtype;
        uint8_t bits;
        float value;
    };
    const Case cases[] = {
        {DataType::kFloat8E4M3FN, 0x38, 1.0f},     {DataType::kFloat8E4M3FN, 0x7e, 448.0f},
        {DataType::kFloat8E4M3FN, 0x01, 0.001953125f}, {DataType::kFloat8E4M3FN, 0xc0, -2.0f},
        {DataType::kFloat8E4M3FNUZ, 0x40, 1.0f},   {DataType::kFloat8E5M2, 0x3c, 1.0f},
        {DataType::kFloat8E5M2, 0x7b, 57344.0f},   {DataType::kFloat8E5M2FNUZ, 0x40, 1.0f},
        {DataType::kFloat8E5M2, 0x7c, std::numeric_limits<float>::infinity()},
    };
    for (const Case& c : cases) {
        Tensor f8 = Tensor::from_bytes(c.dtype, {1}, &c.bits, 1);
        Tensor back = round_trip(f8);
        ASSERT_EQ(back.dtype(), DataType::kFloat32);
        EXPECT_EQ(back.data_as<float>()[0], c.value) << dtype_name(c.dtype) << " bits " << int(c.bits);
    }
    const uint8_t nan_bits[] = {0x7f, 0x80, 0x7d, 0x80};
    const DataType nan_types[] = {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                                  DataType::kFloat8E5M2FNUZ};
    for (int i = 0; i < 4; ++i) {
        Tensor f8 = Tensor::from_bytes(nan_types[i], {1}, &nan_bits[i], 1);
        EXPECT_TRUE(std::isnan(round_trip(f8).data_as<float>()[0])) << dtype_name(nan_types[i]);
    }

    // int4 / uint4 -> int8 / uint8.
    const int8_t i4[] = {-8, 7, 0};
    Tensor int4 = Tensor::from_bytes(DataType::kInt4, {3}, i4, sizeof(i4));
    Tensor as_i8 = round_trip(int4);
    EXPECT_EQ(as_i8.dtype(), DataType::kInt8);
    EXPECT_EQ(values_of(as_i8), (std::vector<double>{-8, 7, 0}));
    const uint8_t u4[] = {15, 0};
    EXPECT_EQ(round_trip(Tensor::from_bytes(DataType::kUInt4, {2}, u4, sizeof(u4))).dtype(), DataType::kUInt8);
}

TEST(Npy, FilesRoundTrip) {
    testing::TempDir dir;
    Tensor tensor = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 1, 2, 3, 4, 5});
    npy::save_file(tensor, dir.file("sub/x.npy"));
    EXPECT_TRUE(npy::load_file(dir.file("sub/x.npy")).equals(tensor));
    EXPECT_THROW(npy::load_file(dir.file("missing.npy")), PolygraphyException);
    write_file_atomically(dir.file("bad.npy"), std::string_view("NUMPY"));
    try {
        npy::load_file(dir.file("bad.npy"));
        FAIL() << "no FormatError";
    } catch (const FormatError& error) {
        EXPECT_EQ(std::string(error.what()), dir.file("bad.npy") + ": invalid .npy data: bad magic string (not a .npy file)");
    }
}

TEST(Npy, RejectsMalformedFilesWithOneClearLine) {
    const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
    const std::string payload(8, '\0');
    EXPECT_EQ(load_error("PK\x03\x04 not numpy"), "invalid .npy data: bad magic string (not a .npy file)");
    EXPECT_EQ(load_error(""), "invalid .npy data: truncated: 0 bytes is too short for a .npy header");
    EXPECT_EQ(load_error(std::string("\x93NUMPY\x01", 7)), "invalid .npy data: truncated: 7 bytes is too short for a .npy header");
    std::string v4 = make_npy(ok_dict, payload);
    v4[6] = 4;
    EXPECT_EQ(load_error(v4), "invalid .npy data: unsupported format version 4.0 (1.0, 2.0 and 3.0 are supported)");
    std::string long_header = make_npy(ok_dict, payload);
    long_header[9] = '\x7f';
    EXPECT_THAT(load_error(long_header), HasSubstr("truncated: the header needs 32580 bytes but there are only 76"));
    EXPECT_EQ(load_error(make_npy(ok_dict, std::string(4, '\0'))),
              "invalid .npy data: array data is shorter than its shape needs: 8 bytes for shape (2,) of 4-byte elements "
              "'f', but 4 bytes follow the header");
    EXPECT_THAT(load_error(make_npy(ok_dict, std::string(9, '\0'))), HasSubstr("array data is longer than its shape needs"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'shape': (2,), }", payload)),
                HasSubstr("header lacks one of the keys 'descr', 'fortran_order', 'shape'"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", payload)),
                HasSubstr("header has an unexpected key 'x'"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", payload)),
                HasSubstr("bad shape: expected a non-negative integer"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", payload)),
                HasSubstr("malformed header: expected '('"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", payload)),
                HasSubstr("fortran_order must be True or False"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", payload)),
                HasSubstr("unexpected text after '}'"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", payload)),
                HasSubstr("malformed header"));
    EXPECT_THAT(load_error(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", payload)),
                HasSubstr("structured dtypes are not supported"));
    EXPECT_THAT(load_error(make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", payload)),
                HasSubstr("unsupported dtype descr '|O' (object arrays need pickle, which is not allowed)"));
    for (const char* descr : {"<f16", "<m8", "<U0", "f4", "<i3", "<b2", "<V8", "<f4x"}) {
        EXPECT_THAT(load_error(make_npy(std::string("{'descr': '") + descr +
                                            "', 'fortran_order': False, 'shape': (1,), }",
                                        payload)),
                    HasSubstr(std::string("unsupported dtype descr '") + descr + "'"));
    }
    // Shapes whose byte size overflows are refused before anything is allocated.
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", payload)),
                HasSubstr("shape (4294967296, 4294967296) is too large"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }", payload)),
                HasSubstr("dimension too large"));
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(200, '1') + "), }", payload)),
                HasSubstr("dimension too large"));
    std::string many_dims = "(";
    for (int i = 0; i < 65; ++i) many_dims += "1, ";
    EXPECT_THAT(load_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + many_dims + "), }", payload)),
                HasSubstr("more than 64 dimensions"));
    // A zero dimension makes any other dimension harmless.
    const std::string zero = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807), }", "");
    EXPECT_EQ(npy::load(zero.data(), zero.size()).numel(), 0);
    // Fuzzing finding (npy_fuzzer): with the zero last, Tensor refused the shape with a
    // PolygraphyException ("element count overflows int64") instead of loading an empty array.
    for (const std::string dict : {"{'descr': '<f8', 'fortran_order': False, 'shape': (5, 3999999994,19396,999991999996,0000), }",
                                   "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904, 0), }",
                                   "{'descr': '>U3', 'fortran_order': True, 'shape': (4611686018427387904, 4611686018427387904, 0), }"}) {
        const std::string zero_last = make_npy(dict, "");
        const Tensor loaded = npy::load(zero_last.data(), zero_last.size());
        EXPECT_EQ(loaded.numel(), 0) << dict;
        EXPECT_EQ(loaded.shape().back(), 0) << dict;
        EXPECT_EQ(npy::load_base64(base64::encode(zero_last)).numel(), 0) << dict;
    }
    // Invalid UTF-32 in a string array.
    const uint32_t bad_code_point[] = {0x110000};
    EXPECT_THAT(load_error(make_npy("{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }",
                                    std::string(reinterpret_cast<const char*>(bad_code_point), 4))),
                HasSubstr("invalid UTF-32 code point 0x110000"));
}

TEST(Npy, Base64PayloadErrorsNameTheOffset) {
    std::string text = kLogitsF4;
    text[text.size() - 6] = '*';
    try {
        npy::load_base64(text);
        FAIL() << "no FormatError";
    } catch (const FormatError& error) {
        EXPECT_EQ(std::string(error.what()), "invalid base64 character '*' at offset " + std::to_string(text.size() - 6));
    }
    EXPECT_THROW(npy::load_base64(std::string(kLogitsF4).substr(0, 40)), FormatError);
}

TEST(Npy, Base64LengthHint) {
    const std::string text = kLogitsF4;
    const std::string with_tail = text + "\", \"polygraphy_class\"";
    EXPECT_EQ(npy::base64_length_hint(with_tail.data(), with_tail.size()), text.size());
    EXPECT_EQ(npy::base64_length_hint("not base64 at all!!", 19), std::nullopt);
    EXPECT_EQ(npy::base64_length_hint(text.data(), 12), std::nullopt);
    // A header claiming an absurd shape gives no hint rather than an overflowed one.
    const std::string huge = base64::encode(
        make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (9223372036854775807, 9), }", "      "));
    EXPECT_EQ(npy::base64_length_hint(huge.data(), huge.size()), std::nullopt);
}

}  // namespace
}  // namespace polygraphy
