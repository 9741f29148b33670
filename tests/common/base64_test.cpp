#include "polygraphy/common/base64.h"

#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

// A deliberately naive reference decoder to check the table and SIMD paths against.
std::vector<uint8_t> reference_decode(const std::string& text) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uint8_t> out;
    uint32_t bits = 0;
    int nbits = 0;
    for (char c : text) {
        if (c == '=') break;
        bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out.push_back(static_cast<uint8_t>(bits >> nbits));
        }
    }
    return out;
}

std::vector<uint8_t> random_bytes(std::size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    return bytes;
}

std::string expect_format_error(const std::string& text) {
    try {
        base64::decode(text);
    } catch (const FormatError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no FormatError for '" << text.substr(0, 40) << "'";
    return "";
}

TEST(Base64, EncodesRfc4648Vectors) {
    EXPECT_EQ(base64::encode(""), "");
    EXPECT_EQ(base64::encode("f"), "Zg==");
    EXPECT_EQ(base64::encode("fo"), "Zm8=");
    EXPECT_EQ(base64::encode("foo"), "Zm9v");
    EXPECT_EQ(base64::encode("foob"), "Zm9vYg==");
    EXPECT_EQ(base64::encode("fooba"), "Zm9vYmE=");
    EXPECT_EQ(base64::encode("foobar"), "Zm9vYmFy");
    const uint8_t high[] = {0xfb, 0xff, 0xbf};
    EXPECT_EQ(base64::encode(high, sizeof(high)), "+/+/");
}

TEST(Base64, DecodesRfc4648Vectors) {
    auto text = [](const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); };
    EXPECT_EQ(text(base64::decode("")), "");
    EXPECT_EQ(text(base64::decode("Zg==")), "f");
    EXPECT_EQ(text(base64::decode("Zm8=")), "fo");
    EXPECT_EQ(text(base64::decode("Zm9v")), "foo");
    EXPECT_EQ(text(base64::decode("Zm9vYg==")), "foob");
    EXPECT_EQ(text(base64::decode("Zm9vYmE=")), "fooba");
    EXPECT_EQ(text(base64::decode("Zm9vYmFy")), "foobar");
    EXPECT_EQ(base64::decode("+/+/"), (std::vector<uint8_t>{0xfb, 0xff, 0xbf}));
}

TEST(Base64, RoundTripsEveryLengthAndMatchesReference) {
    for (std::size_t n = 0; n < 400; ++n) {
        const auto bytes = random_bytes(n, static_cast<uint32_t>(n));
        const std::string text = base64::encode(bytes.data(), bytes.size());
        ASSERT_EQ(text.size(), base64::encoded_size(n));
        ASSERT_EQ(base64::decoded_size(text), n);
        ASSERT_EQ(base64::decode(text), bytes) << "length " << n;
        ASSERT_EQ(reference_decode(text), bytes) << "length " << n;
    }
}

TEST(Base64, LargeBufferUsesEveryCharacterInEveryLanePosition) {
    // 1 MiB plus an odd tail: exercises the vector loop, the chunking and the scalar tail.
    const auto bytes = random_bytes((1 << 20) + 7, 42);
    const std::string text = base64::encode(bytes.data(), bytes.size());
    EXPECT_EQ(base64::decode(text), bytes);
    // Every character at every position modulo 32 (one vector step).
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string all;
    for (int shift = 0; shift < 33; ++shift)
        for (std::size_t i = 0; i < alphabet.size(); ++i) all += alphabet[(i + static_cast<std::size_t>(shift)) % 64];
    all.resize(all.size() / 4 * 4);
    EXPECT_EQ(base64::decode(all), reference_decode(all));
}

TEST(Base64, RejectsEveryInvalidCharacterWithItsOffset) {
    const auto bytes = random_bytes(300, 7);
    const std::string valid = base64::encode(bytes.data(), bytes.size());  // 400 characters, no padding
    ASSERT_EQ(valid.find('='), std::string::npos);
    const std::size_t positions[] = {0, 5, 31, 32, 63, 200, 331, 399};
    for (int c = 0; c < 256; ++c) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (ok) continue;
        for (std::size_t position : positions) {
            if (c == '=' && position == valid.size() - 1) continue;  // valid padding there
            std::string text = valid;
            text[position] = static_cast<char>(c);
            const std::string message = expect_format_error(text);
            ASSERT_THAT(message, HasSubstr("invalid base64 character")) << c;
            ASSERT_THAT(message, HasSubstr("at offset " + std::to_string(position))) << c << " at " << position;
        }
    }
}

TEST(Base64, ErrorMessagesNameTheProblem) {
    EXPECT_EQ(expect_format_error("abc"), "invalid base64 length 3 (not a multiple of 4)");
    EXPECT_EQ(expect_format_error("Zm9v Zg=="), "invalid base64 length 9 (not a multiple of 4)");
    EXPECT_EQ(expect_format_error("Zm9!"), "invalid base64 character '!' at offset 3");
    EXPECT_EQ(expect_format_error("Zm\n9"), "invalid base64 character byte 0x0a at offset 2");
    EXPECT_EQ(expect_format_error("A==="), "invalid base64 padding at offset 1");
    EXPECT_EQ(expect_format_error("AB=C"), "invalid base64 padding at offset 2");
    EXPECT_EQ(expect_format_error("Zg==Zm9v"), "invalid base64 character '=' at offset 2");
    EXPECT_EQ(expect_format_error("A=B="), "invalid base64 character '=' at offset 1");
}

TEST(Base64, StreamEncoderMatchesOneShotForAnySplit) {
    const auto bytes = random_bytes(200000, 3);
    const std::string expected = base64::encode(bytes.data(), bytes.size());
    std::mt19937 rng(5);
    for (int trial = 0; trial < 5; ++trial) {
        std::string text;
        std::size_t max_chunk = 0;
        base64::StreamEncoder encoder([&](const char* chars, std::size_t n) {
            text.append(chars, n);
            max_chunk = std::max(max_chunk, n);
        });
        for (std::size_t at = 0; at < bytes.size();) {
            const std::size_t n = std::min<std::size_t>(rng() % (trial == 0 ? 3 : 70000), bytes.size() - at);
            encoder.feed(bytes.data() + at, n);
            at += n;
        }
        encoder.finish();
        EXPECT_EQ(text, expected);
        EXPECT_LE(max_chunk, base64::StreamEncoder::kChunkChars);
    }
}

TEST(Base64, DecodeRangeReportsProgressAndHandlesTheFinalGroup) {
    const auto bytes = random_bytes(3 * 400000 + 2, 11);
    const std::string text = base64::encode(bytes.data(), bytes.size());
    std::vector<uint8_t> out(bytes.size());
    std::vector<std::size_t> reports;
    const std::size_t groups = text.size() / 4;
    const std::size_t first = base64::decode_range(text, 0, 10, out.data());
    EXPECT_EQ(first, 30u);
    const std::size_t rest = base64::decode_range(text, 10, groups - 10, out.data() + 30,
                                                  [&](std::size_t consumed) { reports.push_back(consumed); });
    EXPECT_EQ(first + rest, bytes.size());
    EXPECT_EQ(out, bytes);
    ASSERT_GE(reports.size(), 2u);
    EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end()));
    EXPECT_EQ(reports.back(), text.size());
}

// Fuzzing finding (base64_fuzzer): when the second group of a pair was the bad one, the scalar
// decoder returned its index without writing the good group before it, although decode_groups
// promises every group before the first bad one.
TEST(Base64, DecodeGroupsWritesEveryGroupBeforeTheFirstBadOne) {
    std::vector<uint8_t> bytes(102);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
    const std::string clean = base64::encode(bytes.data(), bytes.size());  // 34 groups
    for (const std::size_t bad_group : {std::size_t{1}, std::size_t{27}, std::size_t{33}}) {
        for (const char bad : {'\xe7', '=', '!'}) {
            std::string text = clean;
            text[4 * bad_group + 1] = bad;
            std::vector<uint8_t> out(3 * 34);
            EXPECT_EQ(base64::decode_groups(text.data(), 34, out.data()), bad_group);
            EXPECT_TRUE(std::equal(bytes.begin(), bytes.begin() + 3 * bad_group, out.begin()))
                << "group " << bad_group << ", character " << bad;
        }
    }
}

}  // namespace
}  // namespace polygraphy
