#include "polygraphy/common/json.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

TEST(JsonFormat, FloatsLikePythonRepr) {
    const std::pair<double, const char*> cases[] = {
        {0.00125, "0.00125"},
        {1e-05, "1e-05"},
        {0.0001, "0.0001"},
        {0.00011, "0.00011"},
        {4.79e-05, "4.79e-05"},
        {2.0, "2.0"},
        {100.0, "100.0"},
        {0.1, "0.1"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {1.5e-7, "1.5e-07"},
        {-2.5e-10, "-2.5e-10"},
        {123.456, "123.456"},
        {1e15, "1000000000000000.0"},
        {9999999999999998.0, "9999999999999998.0"},
        {1234567890123456.0, "1234567890123456.0"},
        {1e16, "1e+16"},
        {1e22, "1e+22"},
        {1e100, "1e+100"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {std::numeric_limits<double>::quiet_NaN(), "NaN"},
        {std::numeric_limits<double>::infinity(), "Infinity"},
        {-std::numeric_limits<double>::infinity(), "-Infinity"},
    };
    for (const auto& [value, text] : cases) EXPECT_EQ(json::format_float(value), text) << text;
}

TEST(JsonFormat, QuotesLikePythonWithEnsureAscii) {
    EXPECT_EQ(json::quote("plain/path"), "\"plain/path\"");
    EXPECT_EQ(json::quote("a\"b\\c\n\r\t\b\f\x01\x7f"), "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u007f\"");
    EXPECT_EQ(json::quote("\xc3\xa9\xe2\x82\xac"), "\"\\u00e9\\u20ac\"");
    EXPECT_EQ(json::quote("\xf0\x9f\x98\x80"), "\"\\ud83d\\ude00\"");
    EXPECT_EQ(json::quote("a\xff" "b\xc3"), "\"a\\ufffdb\\ufffd\"");
    EXPECT_EQ(json::quote("\xe0\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // overlong encoding
}

TEST(JsonWriter, MatchesPythonJsonDumpIndent4) {
    // json.dumps({"a": [1, 2.5, "x", None, True, [], {}], "b": {"c": []}, "d": "\u00e9/\"\\\n\x7f\U0001F600"}, indent=4)
    const std::string expected =
        "{\n    \"a\": [\n        1,\n        2.5,\n        \"x\",\n        null,\n        true,\n        [],\n        {}\n"
        "    ],\n    \"b\": {\n        \"c\": []\n    },\n    \"d\": \"\\u00e9/\\\"\\\\\\n\\u007f\\ud83d\\ude00\"\n}";
    std::string text;
    json::Writer writer(&text);
    writer.begin_object();
    writer.key("a").begin_array().value(1).value(2.5).value("x").null().value(true);
    writer.begin_array().end_array().begin_object().end_object().end_array();
    writer.key("b").begin_object().key("c").begin_array().end_array().end_object();
    writer.key("d").value("\xc3\xa9/\"\\\n\x7f\xf0\x9f\x98\x80");
    writer.end_object();
    writer.finish();
    EXPECT_EQ(text, expected);
}

TEST(JsonWriter, CompactHasNoWhitespace) {
    std::string text;
    json::Writer writer(&text, json::Writer::kCompact);
    writer.begin_object().key("k").begin_array().value(1).value("a b").end_array().key("o").begin_object().end_object();
    writer.end_object().finish();
    EXPECT_EQ(text, "{\"k\":[1,\"a b\"],\"o\":{}}");
}

TEST(JsonWriter, OneLineModeAndRawStrings) {
    std::string text;
    json::Writer writer(&text, json::Writer::kOneLine);
    writer.begin_object().key("k").begin_array().value(int64_t{-3}).value(uint64_t{18446744073709551615u});
    writer.begin_raw_string().raw_string_chunk("abc", 3).raw_string_chunk("+/=", 3).end_raw_string();
    writer.end_array().key("f").value(false).end_object().finish();
    EXPECT_EQ(text, "{\"k\": [-3, 18446744073709551615, \"abc+/=\"], \"f\": false}");
}

TEST(JsonWriter, ToFileMatchesToString) {
    testing::TempDir dir;
    const std::string path = dir.file("out.json");
    std::string expected;
    auto build = [](json::Writer& writer) {
        writer.begin_array();
        for (int i = 0; i < 20000; ++i) writer.begin_object().key("i").value(i).key("s").value(std::string(i % 50, 'x')).end_object();
        writer.end_array();
        writer.finish();
    };
    {
        json::Writer writer(&expected);
        build(writer);
    }
    write_file_atomically(path, [&](std::FILE* out) {
        json::Writer writer(out);
        build(writer);
    });
    EXPECT_EQ(read_file(path), expected);
}

TEST(JsonWriter, MisuseIsAnInternalError) {
    std::string text;
    {
        json::Writer writer(&text);
        writer.begin_object();
        EXPECT_THROW(writer.value(1), InternalError);  // no key
        EXPECT_THROW(writer.end_array(), InternalError);
        EXPECT_THROW(writer.finish(), InternalError);  // still open
    }
    {
        json::Writer writer(&text);
        writer.begin_array();
        EXPECT_THROW(writer.key("k"), InternalError);
        writer.end_array();
        EXPECT_THROW(writer.value(2), InternalError);  // a second top-level value
    }
}

// ---- Cursor -------------------------------------------------------------------------------------

std::string parse_error(const std::string& text) {
    try {
        json::Cursor cursor(text, "doc.json");
        cursor.skip_value();
        cursor.expect_end();
    } catch (const FormatError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no FormatError for: " << text;
    return "";
}

TEST(JsonCursor, ReadsValuesInAnyLayout) {
    const std::string text =
        "\xef\xbb\xbf \t\r\n{ \"b\" :[1,-2.5e3 , 0, -0, 1E+2,NaN,Infinity,-Infinity,true,false,null] ,"
        "\"a\":{\"x\":\"esc \\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0041\"},\"c\":[[],{}]}\n";
    json::Cursor cursor(text, "doc.json");
    std::string scratch;
    cursor.begin_object();
    std::vector<std::string> keys;
    while (auto key = cursor.next_key(scratch)) {
        keys.emplace_back(*key);
        if (*key == "b") {
            cursor.begin_array();
            std::vector<double> numbers;
            std::vector<bool> flags;
            int nulls = 0;
            while (cursor.next_element()) {
                switch (cursor.peek()) {
                    case json::Cursor::Type::kNumber: numbers.push_back(cursor.read_number()); break;
                    case json::Cursor::Type::kBool: flags.push_back(cursor.read_bool()); break;
                    case json::Cursor::Type::kNull: nulls += cursor.read_null(); break;
                    default: FAIL();
                }
            }
            ASSERT_EQ(numbers.size(), 8u);
            EXPECT_EQ(numbers[0], 1);
            EXPECT_EQ(numbers[1], -2500);
            EXPECT_EQ(numbers[2], 0);
            EXPECT_TRUE(std::signbit(numbers[3]));
            EXPECT_EQ(numbers[4], 100);
            EXPECT_TRUE(std::isnan(numbers[5]));
            EXPECT_EQ(numbers[6], std::numeric_limits<double>::infinity());
            EXPECT_EQ(numbers[7], -std::numeric_limits<double>::infinity());
            EXPECT_EQ(flags, (std::vector<bool>{true, false}));
            EXPECT_EQ(nulls, 1);
        } else if (*key == "a") {
            cursor.begin_object();
            auto inner = cursor.next_key(scratch);
            ASSERT_TRUE(inner);
            EXPECT_EQ(*inner, "x");
            EXPECT_EQ(cursor.read_string(), "esc \"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80" "A");
            EXPECT_FALSE(cursor.next_key(scratch));
        } else {
            cursor.skip_value();
        }
    }
    cursor.expect_end();
    EXPECT_EQ(keys, (std::vector<std::string>{"b", "a", "c"}));
}

TEST(JsonCursor, StringsWithoutEscapesAreViewsIntoTheText) {
    const std::string text = "\"hello\"";
    json::Cursor cursor(text, "doc.json");
    std::string scratch;
    const std::string_view view = cursor.read_string(scratch);
    EXPECT_EQ(view, "hello");
    EXPECT_EQ(view.data(), text.data() + 1);
    EXPECT_TRUE(scratch.empty());
}

TEST(JsonCursor, RawStringAccess) {
    const std::string text = "[ \"abcd\" , 1]";
    json::Cursor cursor(text, "doc.json");
    cursor.begin_array();
    ASSERT_TRUE(cursor.next_element());
    const char* start = cursor.begin_raw_string();
    EXPECT_EQ(std::string_view(start, 4), "abcd");
    cursor.end_raw_string(start + 4);
    ASSERT_TRUE(cursor.next_element());
    EXPECT_EQ(cursor.read_number(), 1);
    EXPECT_FALSE(cursor.next_element());
    cursor.expect_end();
}

TEST(JsonCursor, ErrorsNameTheFileTheProblemAndTheOffset) {
    EXPECT_EQ(parse_error(""), "doc.json: invalid JSON: unexpected end of file, expected a value (truncated file?) at byte offset 0");
    EXPECT_EQ(parse_error("{\"a\": 1,}"), "doc.json: invalid JSON: expected a string key but found '}' at byte offset 8");
    EXPECT_EQ(parse_error("[1, 2,]"), "doc.json: invalid JSON: expected a value but found ']' at byte offset 6");
    EXPECT_EQ(parse_error("[1 2]"), "doc.json: invalid JSON: expected ',' or ']' but found '2' at byte offset 3");
    EXPECT_EQ(parse_error("{\"a\" 1}"), "doc.json: invalid JSON: expected ':' after a key but found '1' at byte offset 5");
    EXPECT_EQ(parse_error("{\"a\": [1, 2"), "doc.json: invalid JSON: unexpected end of file, expected ']' (truncated file?) at byte offset 11");
    EXPECT_EQ(parse_error("[\"abc"), "doc.json: invalid JSON: unterminated string (truncated file?) at byte offset 1");
    EXPECT_EQ(parse_error("[\"a\\"), "doc.json: invalid JSON: unterminated string (truncated file?) at byte offset 1");
    EXPECT_EQ(parse_error("\"a\nb\""), "doc.json: invalid JSON: control character byte 0x0a in a string at byte offset 2");
    EXPECT_EQ(parse_error("\"\\x\""), "doc.json: invalid JSON: invalid escape '\\x' at byte offset 2");
    EXPECT_EQ(parse_error("\"\\u12g4\""), "doc.json: invalid JSON: bad \\u escape at byte offset 5");
    EXPECT_EQ(parse_error("\"\\u12"), "doc.json: invalid JSON: truncated \\u escape at byte offset 3");
    EXPECT_EQ(parse_error("{} x"), "doc.json: invalid JSON: unexpected data after the end of the document ('x') at byte offset 3");
    EXPECT_EQ(parse_error("tru"), "doc.json: invalid JSON: invalid literal at byte offset 0");
    EXPECT_EQ(parse_error("nul"), "doc.json: invalid JSON: invalid literal at byte offset 0");
    EXPECT_EQ(parse_error("-"), "doc.json: invalid JSON: malformed number at byte offset 1");
    EXPECT_EQ(parse_error("1."), "doc.json: invalid JSON: malformed number (no digits after '.') at byte offset 2");
    EXPECT_EQ(parse_error("1e+"), "doc.json: invalid JSON: malformed number (no digits in the exponent) at byte offset 3");
    EXPECT_EQ(parse_error("01"), "doc.json: invalid JSON: unexpected data after the end of the document ('1') at byte offset 1");
    EXPECT_EQ(parse_error("@"), "doc.json: invalid JSON: expected a value but found '@' at byte offset 0");
    EXPECT_THAT(parse_error(std::string(1000, '[')), HasSubstr("invalid JSON: nesting deeper than 512 levels"));
}

TEST(JsonCursor, TypeMismatchesNameWhatWasFound) {
    json::Cursor cursor("[1]", "doc.json");
    try {
        cursor.begin_object();
        FAIL();
    } catch (const FormatError& error) {
        EXPECT_STREQ(error.what(), "doc.json: expected an object but found a list at byte offset 0");
    }
    json::Cursor other("{\"a\": \"s\"}", "doc.json");
    std::string scratch;
    other.begin_object();
    ASSERT_TRUE(other.next_key(scratch));
    EXPECT_THROW(other.read_number(), FormatError);
}

TEST(JsonCursor, HugeNumbersSaturateLikePython) {
    json::Cursor cursor("[1e400, -1e400, 1e-400]", "doc.json");
    cursor.begin_array();
    ASSERT_TRUE(cursor.next_element());
    EXPECT_EQ(cursor.read_number(), std::numeric_limits<double>::infinity());
    ASSERT_TRUE(cursor.next_element());
    EXPECT_EQ(cursor.read_number(), -std::numeric_limits<double>::infinity());
    ASSERT_TRUE(cursor.next_element());
    EXPECT_EQ(cursor.read_number(), 0.0);
}

}  // namespace
}  // namespace polygraphy
