#include "tools/args/util.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "polygraphy/common/exception.h"

namespace polygraphy::tools::args_util {
namespace {

using ::testing::HasSubstr;

// The UsageError message of `fn`, or "<no error>".
template <typename Fn>
std::string error_of(Fn&& fn) {
    try {
        fn();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(PythonRepr, QuotesLikePython) {
    EXPECT_EQ(python_repr("abc"), "'abc'");
    EXPECT_EQ(python_repr("it's"), "\"it's\"");
    EXPECT_EQ(python_repr("a'b\"c"), "'a\\'b\"c'");
    EXPECT_EQ(python_repr("back\\slash\n"), "'back\\\\slash\\n'");
    EXPECT_EQ(python_list_repr({"--x", "y"}), "['--x', 'y']");
    EXPECT_EQ(python_list_repr({}), "[]");
}

TEST(ParseNumbers, IntLikePython) {
    EXPECT_EQ(parse_int("42"), 42);
    EXPECT_EQ(parse_int(" -7 "), -7);
    EXPECT_EQ(parse_int("+3"), 3);
    EXPECT_EQ(parse_int("1_000"), 1000);
    EXPECT_EQ(parse_int("1.0"), std::nullopt);
    EXPECT_EQ(parse_int("0x10"), std::nullopt);
    EXPECT_EQ(parse_int("1__0"), std::nullopt);
    EXPECT_EQ(parse_int(""), std::nullopt);
    EXPECT_EQ(parse_int("-"), std::nullopt);
    EXPECT_EQ(parse_int("99999999999999999999"), std::nullopt);
}

TEST(ParseNumbers, FloatLikePython) {
    EXPECT_DOUBLE_EQ(*parse_float("1e-3"), 1e-3);
    EXPECT_DOUBLE_EQ(*parse_float("-.5"), -0.5);
    EXPECT_DOUBLE_EQ(*parse_float("5."), 5.0);
    EXPECT_TRUE(std::isinf(*parse_float("-Infinity")));
    EXPECT_TRUE(std::isnan(*parse_float("nan")));
    EXPECT_EQ(parse_float("1e"), std::nullopt);
    EXPECT_EQ(parse_float("0x1p3"), std::nullopt);
    EXPECT_EQ(parse_float("abc"), std::nullopt);
    EXPECT_EQ(parse_float("."), std::nullopt);
    EXPECT_EQ(parse_float("1.2.3"), std::nullopt);
}

TEST(SplitKeyValue, SplitsOnTheLastColon) {
    auto kv = split_key_value("Input:0:1e-3");
    EXPECT_EQ(kv.key, "Input:0");
    EXPECT_EQ(kv.value, "1e-3");
    kv = split_key_value("1e-3");
    EXPECT_EQ(kv.key, "");
    EXPECT_EQ(kv.value, "1e-3");
    kv = split_key_value("out:");
    EXPECT_EQ(kv.key, "out");
    EXPECT_EQ(kv.value, "");
}

TEST(ParseLiteral, ScalarsAndLists) {
    EXPECT_EQ(parse_literal("--x", "3").kind, Literal::Kind::kInt);
    EXPECT_EQ(parse_literal("--x", "3.5").kind, Literal::Kind::kFloat);
    auto text = parse_literal("--x", "'batch'");
    EXPECT_EQ(text.kind, Literal::Kind::kString);
    EXPECT_EQ(text.text, "batch");
    auto list = parse_literal("--x", "[1, 'n', 2.5]");
    ASSERT_EQ(list.kind, Literal::Kind::kList);
    ASSERT_EQ(list.items.size(), 3u);
    EXPECT_EQ(list.items[1].text, "n");
    EXPECT_TRUE(parse_literal("--x", "[]").items.empty());
}

TEST(ParseLiteral, MalformedListsAreErrors) {
    EXPECT_EQ(error_of([] { parse_literal("--x", "[1,2"); }),
              "Invalid value in --x: '[1,2'. Lists must be written as [item,item,...]");
    EXPECT_EQ(error_of([] { parse_literal("--x", "1,2]"); }),
              "Invalid value in --x: '1,2]'. Lists must be written as [item,item,...]");
    EXPECT_EQ(error_of([] { parse_literal("--x", "[[1]]"); }),
              "Invalid value in --x: '[[1]]'. Nested lists are not allowed");
    EXPECT_EQ(error_of([] { parse_literal("--x", "[1,,2]"); }),
              "Invalid value in --x: '[1,,2]'. The list has an empty item");
    EXPECT_EQ(error_of([] { parse_literal("--x", "a[1]b"); }), "Invalid value in --x: 'a[1]b'. Unbalanced brackets");
}

TEST(PerKeyNumbers, DefaultAndPerOutput) {
    auto values = parse_per_key_numbers("--atol", {"1e-5", "out0:1e-3", "Input:0:2"}, 0.0);
    EXPECT_DOUBLE_EQ(values.at(""), 1e-5);
    EXPECT_DOUBLE_EQ(values.at("out0"), 1e-3);
    EXPECT_DOUBLE_EQ(values.at("Input:0"), 2.0);
    // A later value for the same key wins (dict semantics).
    EXPECT_DOUBLE_EQ(parse_per_key_numbers("--atol", {"1", "2"}).at(""), 2.0);
    EXPECT_TRUE(std::isinf(parse_per_key_numbers("--atol", {"inf"}).at("")));
}

TEST(PerKeyNumbers, MalformedValuesAreErrors) {
    EXPECT_EQ(error_of([] { parse_per_key_numbers("--atol", {"out0:abc"}, 0.0); }),
              "Invalid value in --atol: 'out0:abc'. Expected [<name>:]<number>, but 'abc' is not a number");
    EXPECT_EQ(error_of([] { parse_per_key_numbers("--atol", {"out0:"}, 0.0); }),
              "Invalid value in --atol: 'out0:'. Expected [<name>:]<number>, but '' is not a number");
    EXPECT_EQ(error_of([] { parse_per_key_numbers("--rtol", {"nan"}, 0.0); }),
              "Invalid value in --rtol: 'nan'. Expected [<name>:]<number>, but 'nan' is not a number");
    EXPECT_EQ(error_of([] { parse_per_key_numbers("--atol", {"-1"}, 0.0); }),
              "Invalid value in --atol: '-1'. The value must be at least 0");
    EXPECT_EQ(error_of([] { parse_per_key_numbers("--error-quantile", {"y:1.5"}, 0.0, 1.0); }),
              "Invalid value in --error-quantile: 'y:1.5'. The value must be between 0 and 1");
}

TEST(PerKeyInts, Values) {
    auto values = parse_per_key_ints("--index-tolerance", {"1", "out0:3"});
    EXPECT_EQ(values.at(""), 1);
    EXPECT_EQ(values.at("out0"), 3);
    EXPECT_EQ(error_of([] { parse_per_key_ints("--index-tolerance", {"x:1.5"}); }),
              "Invalid value in --index-tolerance: 'x:1.5'. Expected [<name>:]<integer>, but '1.5' is not an integer");
    EXPECT_EQ(error_of([] { parse_per_key_ints("--index-tolerance", {"-2"}); }),
              "Invalid value in --index-tolerance: '-2'. The value must be at least 0");
}

TEST(ParseShape, DimsOfEveryKind) {
    DynShape shape = parse_shape("--input-shapes", "[1,3,224,224]");
    ASSERT_EQ(shape.size(), 4u);
    EXPECT_EQ(shape[3], Dim::fixed(224));
    shape = parse_shape("--input-shapes", "['batch',3,-1]");
    ASSERT_EQ(shape.size(), 3u);
    EXPECT_EQ(shape[0], Dim::named("batch"));
    EXPECT_EQ(shape[1], Dim::fixed(3));
    EXPECT_TRUE(shape[2].is_dynamic());
    EXPECT_TRUE(shape[2].param.empty());
    EXPECT_EQ(parse_shape("--input-shapes", "[batch]")[0], Dim::named("batch"));
    EXPECT_TRUE(parse_shape("--input-shapes", "[]").empty());
}

TEST(ParseShape, MalformedShapesAreErrors) {
    EXPECT_EQ(error_of([] { parse_shape("--input-shapes", "5"); }),
              "Invalid shape in --input-shapes: '5'. Expected a list of dimensions such as [1,3,224,224]");
    EXPECT_EQ(error_of([] { parse_shape("--input-shapes", "[1,-2]"); }),
              "Invalid shape in --input-shapes: '[1,-2]'. Dimension -2 is negative (use -1 for a dynamic dimension)");
    EXPECT_EQ(error_of([] { parse_shape("--input-shapes", "[1,2.5]"); }),
              "Invalid shape in --input-shapes: '[1,2.5]'. Dimension 2.5 is not an integer");
    EXPECT_EQ(error_of([] { parse_shape("--input-shapes", "[1,'']"); }),
              "Invalid shape in --input-shapes: \"[1,'']\". A dimension is empty");
    EXPECT_THAT(error_of([] { parse_shape("--input-shapes", "[1,3"); }), HasSubstr("Lists must be written as"));
}

TEST(ParseInputShapes, NamesMayContainColons) {
    TensorMetadata meta = parse_input_shapes("--input-shapes", {"x:[1,2]", "Input:0:[3]", "y:auto"});
    ASSERT_EQ(meta.size(), 3u);
    EXPECT_EQ(meta.at("x").shape->size(), 2u);
    EXPECT_EQ(meta.at("Input:0").shape->size(), 1u);
    EXPECT_FALSE(meta.at("y").shape.has_value());
    EXPECT_FALSE(meta.at("x").dtype.has_value());
}

TEST(ParseInputShapes, MalformedEntriesAreErrors) {
    EXPECT_EQ(error_of([] { parse_input_shapes("--input-shapes", {"[1,2]"}); }),
              "Invalid value in --input-shapes: '[1,2]'. Expected <name>:<shape>, for example: --input-shapes "
              "input0:[1,3,224,224]");
    EXPECT_EQ(error_of([] {
                  parse_input_shapes("--input-shapes", {"x:[1]", "x:[2]"});
              }),
              "Invalid value in --input-shapes: input 'x' is given more than once");
    EXPECT_THAT(error_of([] { parse_input_shapes("--input-shapes", {"x:1,2"}); }),
                HasSubstr("Invalid shape in --input-shapes: '1,2'"));
}

TEST(ParseValRanges, DefaultAndPerInput) {
    auto ranges = parse_val_ranges("--val-range", {"[0,1]", "x:[-2,5.5]", "a:b:[3,3]"});
    EXPECT_DOUBLE_EQ(ranges.at("").min, 0.0);
    EXPECT_DOUBLE_EQ(ranges.at("").max, 1.0);
    EXPECT_DOUBLE_EQ(ranges.at("x").min, -2.0);
    EXPECT_DOUBLE_EQ(ranges.at("x").max, 5.5);
    EXPECT_DOUBLE_EQ(ranges.at("a:b").min, 3.0);
}

TEST(ParseValRanges, MalformedRangesAreErrors) {
    EXPECT_EQ(error_of([] { parse_val_ranges("--val-range", {"x:[1,2,3]"}); }),
              "In --val-range, for input: x, expected to receive exactly 2 values, but received 3.\n"
              "Note: Option was parsed as: input: x, range: [1, 2, 3]");
    EXPECT_EQ(error_of([] { parse_val_ranges("--val-range", {"x:[1,a]"}); }),
              "In --val-range, for input: x, one or more elements of the range could not be parsed as a number.\n"
              "Note: Option was parsed as: input: x, range: [1, 'a']");
    EXPECT_EQ(error_of([] { parse_val_ranges("--val-range", {"5"}); }),
              "In --val-range, for the default range, expected a range of the form [min,max], but received: '5'");
    EXPECT_EQ(error_of([] { parse_val_ranges("--val-range", {"x:[5,1]"}); }),
              "In --val-range, for input: x, the minimum (5) is greater than the maximum (1)");
    EXPECT_THAT(error_of([] { parse_val_ranges("--val-range", {"x:[0,1"}); }), HasSubstr("Lists must be written as"));
}

TEST(ParseNumBytes, SuffixesAndScientific) {
    EXPECT_EQ(parse_num_bytes("--x", "16"), 16);
    EXPECT_EQ(parse_num_bytes("--x", "2K"), 2048);
    EXPECT_EQ(parse_num_bytes("--x", "16m"), 16 << 20);
    EXPECT_EQ(parse_num_bytes("--x", "1G"), 1LL << 30);
    EXPECT_EQ(parse_num_bytes("--x", "16e6"), 16000000);
    EXPECT_THAT(error_of([] { parse_num_bytes("--x", "lots"); }), HasSubstr("Could not convert 'lots' in --x"));
    EXPECT_THAT(error_of([] { parse_num_bytes("--x", "-5"); }), HasSubstr("Could not convert '-5' in --x"));
}

}  // namespace
}  // namespace polygraphy::tools::args_util
