// numpy-compatible printing used by the comparison report: arrays, histograms, Python number formats.
// Expected texts were printed by numpy 1.24 (the expression is next to each one).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/common/numpy_print.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats {
namespace {

constexpr double NAN_ = std::numeric_limits<double>::quiet_NaN();
constexpr double INF = std::numeric_limits<double>::infinity();

DataType dtype_of(const std::string& code) {
    if (code == "F32") return DataType::kFloat32;
    if (code == "F64") return DataType::kFloat64;
    if (code == "F16") return DataType::kFloat16;
    if (code == "BOOL") return DataType::kBool;
    if (code == "I8") return DataType::kInt8;
    return DataType::kInt64;
}

struct PrintCase {
    std::string dtype;
    Shape shape;
    std::vector<double> values;
    std::string expected;
};

TEST(ArrayToString, MatchesNumpyStr) {
    const std::vector<PrintCase> cases = {
        // np.array([[0,1,2],[3,4,5]],dtype=np.float32)
        {"F32", {2, 3}, {0, 1, 2, 3, 4, 5}, "[[0. 1. 2.]\n [3. 4. 5.]]"},
        // np.array([0.001953125, 1.0])  (a tie at the 8th digit rounds to even)
        {"F64", {2}, {0.001953125, 1.0}, "[0.00195312 1.        ]"},
        // np.array([1e-100, 1.5])
        {"F64", {2}, {1e-100, 1.5}, "[1.0e-100 1.5e+000]"},
        // np.array([np.nan, -np.inf])
        {"F64", {2}, {NAN_, -INF}, "[ nan -inf]"},
        // np.array([np.nan, np.inf])
        {"F64", {2}, {NAN_, INF}, "[nan inf]"},
        // np.array([1e-5, 3.0, -2.5],dtype=np.float32)
        {"F32", {3}, {1e-05, 3.0, -2.5}, "[ 1.0e-05  3.0e+00 -2.5e+00]"},
        // np.array([0.1, 0.25, 100.0])
        {"F64", {3}, {0.1, 0.25, 100.0}, "[  0.1    0.25 100.  ]"},
        // np.array([123456.7, 0.5],dtype=np.float32)
        {"F32", {2}, {123456.7, 0.5}, "[1.234567e+05 5.000000e-01]"},
        // np.array([1e8, 1.0])
        {"F64", {2}, {100000000.0, 1.0}, "[1.e+08 1.e+00]"},
        // np.array([0.0, -0.0])
        {"F64", {2}, {0.0, -0.0}, "[ 0. -0.]"},
        // np.array([0.1, 0.2],dtype=np.float16)
        {"F16", {2}, {0.1, 0.2}, "[0.1 0.2]"},
        // np.array([65504, 0.5, -1.25],dtype=np.float16)
        {"F16", {3}, {65504, 0.5, -1.25}, "[ 6.55e+04  5.00e-01 -1.25e+00]"},
        // np.array([1.5, np.nan, -2.0],dtype=np.float32)
        {"F32", {3}, {1.5, NAN_, -2.0}, "[ 1.5  nan -2. ]"},
        // np.array([[True,False],[False,True]])
        {"BOOL", {2, 2}, {1, 0, 0, 1}, "[[ True False]\n [False  True]]"},
        // np.array([3,1,4,1])
        {"I64", {4}, {3, 1, 4, 1}, "[3 1 4 1]"},
        // np.array([-7,120,5],dtype=np.int8)
        {"I8", {3}, {-7, 120, 5}, "[ -7 120   5]"},
        // np.array(2.5)
        {"F64", {}, {2.5}, "2.5"},
        // np.array(2.0,dtype=np.float32)
        {"F32", {}, {2.0}, "2.0"},
        // np.array(1e-5,dtype=np.float32)
        {"F32", {}, {1e-05}, "1e-05"},
        // np.array(True)
        {"BOOL", {}, {1}, "True"},
        // np.array(-3)
        {"I64", {}, {-3}, "-3"},
        // np.zeros((3,0),dtype=np.float32)
        {"F32", {3, 0}, {}, "[]"},
        // np.array([1.0000001, 2.0],dtype=np.float32)
        {"F32", {2}, {1.0000001, 2.0}, "[1.0000001 2.       ]"},
        // np.array([0.123456789, 2.0])
        {"F64", {2}, {0.123456789, 2.0}, "[0.12345679 2.        ]"},
        // np.array([[1e-3, 5e-5],[2.5e3, 7.0]])
        {"F64", {2, 2}, {0.001, 5e-05, 2500.0, 7.0}, "[[1.0e-03 5.0e-05]\n [2.5e+03 7.0e+00]]"},
    };
    for (const PrintCase& c : cases) {
        const Tensor tensor = Tensor::from_doubles(dtype_of(c.dtype), c.shape, c.values);
        EXPECT_EQ(numpy::array_str(tensor), c.expected) << c.dtype << " " << shape_to_string(c.shape);
    }
}

TEST(ArrayToString, WrapsAtSeventyFiveColumns) {
    std::vector<float> values;
    for (int i = 0; i < 30; ++i) values.push_back(static_cast<float>(i) * 1.37f);
    const Tensor tensor = Tensor::from_bytes(DataType::kFloat32, {30}, values.data(), values.size() * sizeof(float));
    // np.arange(30, dtype=np.float32) * np.float32(1.37)
    EXPECT_EQ(numpy::array_str(tensor),
              "[ 0.    1.37  2.74  4.11  5.48  6.85  8.22  9.59 10.96 12.33 13.7  15.07\n"
              " 16.44 17.81 19.18 20.55 21.92 23.29 24.66 26.03 27.4  28.77 30.14 31.51\n"
              " 32.88 34.25 35.62 36.99 38.36 39.73]");
}

TEST(ArrayToString, SummarizesAboveAThousandElements) {
    std::vector<double> values;
    for (int i = 0; i < 2000; ++i) values.push_back(i);
    // np.arange(2000)
    EXPECT_EQ(numpy::array_str(Tensor::from_doubles(DataType::kInt64, {2000}, values)),
              "[   0    1    2 ... 1997 1998 1999]");

    std::vector<float> sevenths;
    for (int i = 0; i < 2000; ++i) sevenths.push_back(static_cast<float>(i) / 7.0f);
    const Tensor matrix = Tensor::from_bytes(DataType::kFloat32, {40, 50}, sevenths.data(), sevenths.size() * 4);
    // (np.arange(2000, dtype=np.float32) / np.float32(7)).reshape(40, 50): the format comes from the shown elements.
    EXPECT_EQ(numpy::array_str(matrix),
              "[[0.0000000e+00 1.4285715e-01 2.8571430e-01 ... 6.7142859e+00\n"
              "  6.8571429e+00 7.0000000e+00]\n"
              " [7.1428571e+00 7.2857141e+00 7.4285712e+00 ... 1.3857142e+01\n"
              "  1.4000000e+01 1.4142858e+01]\n"
              " [1.4285714e+01 1.4428572e+01 1.4571428e+01 ... 2.1000000e+01\n"
              "  2.1142857e+01 2.1285715e+01]\n"
              " ...\n"
              " [2.6428571e+02 2.6442856e+02 2.6457144e+02 ... 2.7100000e+02\n"
              "  2.7114285e+02 2.7128571e+02]\n"
              " [2.7142856e+02 2.7157144e+02 2.7171429e+02 ... 2.7814285e+02\n"
              "  2.7828571e+02 2.7842856e+02]\n"
              " [2.7857144e+02 2.7871429e+02 2.7885715e+02 ... 2.8528571e+02\n"
              "  2.8542856e+02 2.8557144e+02]]");

    std::vector<double> flags;
    for (int i = 0; i < 1001; ++i) flags.push_back(i % 2 == 0);
    // np.arange(1001) % 2 == 0
    EXPECT_EQ(numpy::array_str(Tensor::from_doubles(DataType::kBool, {1001}, flags)),
              "[ True False  True ...  True False  True]");
}

TEST(ArrayToString, NestsHigherRanks) {
    std::vector<double> values;
    for (int i = 0; i < 24; ++i) values.push_back(i);
    // np.arange(24).reshape(2, 3, 4)
    EXPECT_EQ(
        numpy::array_str(Tensor::from_doubles(DataType::kInt64, {2, 3, 4}, values)),
        "[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]");

    std::vector<double> big;
    for (int i = 0; i < 3000; ++i) big.push_back(i);
    const std::string text = numpy::array_str(Tensor::from_doubles(DataType::kInt64, {10, 15, 20}, big));
    // np.arange(3000).reshape(10, 15, 20): summarized along every axis.
    EXPECT_EQ(text.rfind("[[[   0    1    2 ...   17   18   19]\n  [  20   21   22 ...   37   38   39]\n"
                         "  [  40   41   42 ...   57   58   59]\n  ...\n",
                         0),
              0u);
    EXPECT_NE(text.find("  [ 280  281  282 ...  297  298  299]]\n\n [[ 300"), std::string::npos);
    EXPECT_NE(text.find(" [ 880  881  882 ...  897  898  899]]\n\n ...\n\n [[2100 2101"), std::string::npos);
    EXPECT_EQ(text.substr(text.size() - 40), "\n  [2980 2981 2982 ... 2997 2998 2999]]]");
}

TEST(ArrayToString, RefusesComplexWithAClearError) {
    const Tensor tensor(DataType::kComplex64, {2});
    try {
        (void)numpy::array_str(tensor);
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& error) {
        EXPECT_STREQ(error.what(), "Cannot print a tensor of type complex64");
    }
}

TEST(PythonFormats, FormatGMatchesPython) {
    // format(v, '.5g') in Python
    EXPECT_EQ(format_g(2.5, 5), "2.5");
    EXPECT_EQ(format_g(1.70782512765993, 5), "1.7078");
    EXPECT_EQ(format_g(2.9184e-08, 5), "2.9184e-08");
    EXPECT_EQ(format_g(953520000.0, 5), "9.5352e+08");
    EXPECT_EQ(format_g(0.0001, 5), "0.0001");
    EXPECT_EQ(format_g(-0.0, 5), "-0");
    EXPECT_EQ(format_g(-NAN_, 5), "nan");  // C prints "-nan"; Python never does
    EXPECT_EQ(format_g(-INF, 5), "-inf");
    EXPECT_EQ(format_g(0.000500202178955078, 3), "0.0005");
}

TEST(PythonFormats, ReprMatchesPython) {
    // repr(float) in Python
    EXPECT_EQ(python_float_repr(1e-5), "1e-05");
    EXPECT_EQ(python_float_repr(0.001), "0.001");
    EXPECT_EQ(python_float_repr(0.0001), "0.0001");
    EXPECT_EQ(python_float_repr(50.0), "50.0");
    EXPECT_EQ(python_float_repr(100.0 / 3.0), "33.333333333333336");
    EXPECT_EQ(python_float_repr(1e16), "1e+16");
    EXPECT_EQ(python_float_repr(123456789.0), "123456789.0");
    EXPECT_EQ(python_float_repr(1.5e-7), "1.5e-07");
    EXPECT_EQ(python_float_repr(1e100), "1e+100");
    EXPECT_EQ(python_float_repr(-0.0), "-0.0");
    EXPECT_EQ(python_float_repr(NAN_), "nan");
    EXPECT_EQ(python_float_repr(-INF), "-inf");
    EXPECT_EQ(python_list_repr({"a", "it's", "q\"s"}), "['a', \"it's\", 'q\"s']");
    EXPECT_EQ(python_list_repr({}), "[]");
    EXPECT_EQ(index_tuple_string(5, {2, 3}), "(1, 2)");
    EXPECT_EQ(index_tuple_string(2, {4}), "(2,)");
    EXPECT_EQ(index_tuple_string(0, {}), "()");
}

TEST(Histogram, MatchesPolygraphyStrHistogram) {
    std::vector<float> sevenths;
    for (int i = 0; i < 100; ++i) sevenths.push_back(static_cast<float>(i) / 7.0f);
    // str_histogram(np.arange(100, dtype=np.float32) / np.float32(7), None)
    EXPECT_EQ(histogram_string(Tensor::from_bytes(DataType::kFloat32, {100}, sevenths.data(), 400)),
              "---- Histogram ----\n"
              "Bin Range    |  Num Elems | Visualization\n"
              "(0   , 1.41) |         10 | ########################################\n"
              "(1.41, 2.83) |         10 | ########################################\n"
              "(2.83, 4.24) |         10 | ########################################\n"
              "(4.24, 5.66) |         10 | ########################################\n"
              "(5.66, 7.07) |         10 | ########################################\n"
              "(7.07, 8.49) |         10 | ########################################\n"
              "(8.49, 9.9 ) |         10 | ########################################\n"
              "(9.9 , 11.3) |         10 | ########################################\n"
              "(11.3, 12.7) |         10 | ########################################\n"
              "(12.7, 14.1) |         10 | ########################################");

    // str_histogram(np.array([3, 1, 4, 1]), (1, 4))
    EXPECT_EQ(histogram_string(Tensor::from_doubles(DataType::kInt64, {4}, {3, 1, 4, 1}), std::make_pair(1.0, 4.0)),
              "---- Histogram ----\n"
              "Bin Range  |  Num Elems | Visualization\n"
              "(1  , 1.3) |          2 | ########################################\n"
              "(1.3, 1.6) |          0 | \n"
              "(1.6, 1.9) |          0 | \n"
              "(1.9, 2.2) |          0 | \n"
              "(2.2, 2.5) |          0 | \n"
              "(2.5, 2.8) |          0 | \n"
              "(2.8, 3.1) |          1 | ####################\n"
              "(3.1, 3.4) |          0 | \n"
              "(3.4, 3.7) |          0 | \n"
              "(3.7, 4  ) |          1 | ####################");

    // str_histogram(np.array([2, 2, 2], dtype=np.float32), None): a zero-width range widens by 0.5 each side.
    EXPECT_EQ(histogram_string(Tensor::from_doubles(DataType::kFloat32, {3}, {2, 2, 2})),
              "---- Histogram ----\n"
              "Bin Range  |  Num Elems | Visualization\n"
              "(1.5, 1.6) |          0 | \n"
              "(1.6, 1.7) |          0 | \n"
              "(1.7, 1.8) |          0 | \n"
              "(1.8, 1.9) |          0 | \n"
              "(1.9, 2  ) |          0 | \n"
              "(2  , 2.1) |          3 | ########################################\n"
              "(2.1, 2.2) |          0 | \n"
              "(2.2, 2.3) |          0 | \n"
              "(2.3, 2.4) |          0 | \n"
              "(2.4, 2.5) |          0 | ");

    // str_histogram(np.array([0.5, -1.25, 65504], dtype=np.float16), (-1.25, 65504.0))
    EXPECT_EQ(histogram_string(Tensor::from_doubles(DataType::kFloat16, {3}, {0.5, -1.25, 65504}),
                               std::make_pair(-1.25, 65504.0)),
              "---- Histogram ----\n"
              "Bin Range            |  Num Elems | Visualization\n"
              "(-1.25   , 6.55e+03) |          2 | ########################################\n"
              "(6.55e+03, 1.31e+04) |          0 | \n"
              "(1.31e+04, 1.97e+04) |          0 | \n"
              "(1.97e+04, 2.62e+04) |          0 | \n"
              "(2.62e+04, 3.28e+04) |          0 | \n"
              "(3.28e+04, 3.93e+04) |          0 | \n"
              "(3.93e+04, 4.59e+04) |          0 | \n"
              "(4.59e+04, 5.24e+04) |          0 | \n"
              "(5.24e+04, 5.9e+04 ) |          0 | \n"
              "(5.9e+04 , 6.55e+04) |          1 | ####################");

    std::vector<float> saw;
    for (int i = 0; i < 1000; ++i) saw.push_back(std::fmod(static_cast<float>(i) * 0.37f, 3.1f));
    // str_histogram((np.arange(1000, dtype=np.float32) * np.float32(0.37)) % np.float32(3.1), None)
    EXPECT_EQ(histogram_string(Tensor::from_bytes(DataType::kFloat32, {1000}, saw.data(), 4000)),
              "---- Histogram ----\n"
              "Bin Range      |  Num Elems | Visualization\n"
              "(0    , 0.309) |        100 | #######################################\n"
              "(0.309, 0.618) |        101 | ########################################\n"
              "(0.618, 0.927) |        101 | ########################################\n"
              "(0.927, 1.24 ) |         99 | #######################################\n"
              "(1.24 , 1.55 ) |        100 | #######################################\n"
              "(1.55 , 1.85 ) |        100 | #######################################\n"
              "(1.85 , 2.16 ) |         99 | #######################################\n"
              "(2.16 , 2.47 ) |        100 | #######################################\n"
              "(2.47 , 2.78 ) |        100 | #######################################\n"
              "(2.78 , 3.09 ) |        100 | #######################################");
}

TEST(Histogram, RefusesWhatNumpyRefuses) {
    const Tensor with_nan = Tensor::from_doubles(DataType::kFloat32, {2}, {1.0, NAN_});
    EXPECT_EQ(histogram_string(with_nan), "");                             // autodetected range is not finite
    EXPECT_EQ(histogram_string(with_nan, std::make_pair(NAN_, 1.0)), "");  // supplied range is not finite
    EXPECT_EQ(histogram_string(with_nan, std::make_pair(2.0, 1.0)), "");   // max must be larger than min
    EXPECT_EQ(histogram_string(Tensor::from_doubles(DataType::kBool, {2}, {1, 0})), "");  // Polygraphy skips bools
    EXPECT_EQ(histogram_string(Tensor(DataType::kFloat32, {0})), "None");                 // Polygraphy logs None
    // np.histogram(np.array([-0.0, 1.0, np.nan, 2.0], dtype=np.float32), range=(0.0, 1.0))[0]
    // == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]: -0.0 is inside [0, 1]; NaN and 2.0 are out.
    const std::string signed_zero = histogram_string(
        Tensor::from_doubles(DataType::kFloat32, {4}, {-0.0, 1.0, NAN_, 2.0}), std::make_pair(0.0, 1.0));
    EXPECT_NE(signed_zero.find("(0  , 0.1) |          1 | #"), std::string::npos) << signed_zero;
    EXPECT_NE(signed_zero.find("(0.9, 1  ) |          1 | #"), std::string::npos) << signed_zero;
    // NaNs are left out of the counts when the range is given.
    const std::string counted = histogram_string(with_nan, std::make_pair(0.0, 2.0));
    EXPECT_NE(counted.find("(0.8, 1  ) |          0 | \n(1  , 1.2) |          1 | #"), std::string::npos) << counted;
}

}  // namespace
}  // namespace polygraphy::stats
