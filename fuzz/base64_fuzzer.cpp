// Fuzzes base64 (include/polygraphy/common/base64.h): the strict decoder (scalar and AVX2 group
// decoders) against a plain reference decoder, and the encoders (one-shot and streaming) by round trip.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"

namespace {

using namespace polygraphy;

int reference_sextet(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Python's base64.b64decode(text, validate=True), written for clarity rather than speed.
std::optional<std::vector<uint8_t>> reference_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::size_t padding = 0;
    while (padding < text.size() && padding < 3 && text[text.size() - 1 - padding] == '=') ++padding;
    if (padding > 2) return std::nullopt;
    std::vector<uint8_t> out;
    uint32_t bits = 0;
    int nbits = 0;
    for (std::size_t i = 0; i < text.size() - padding; ++i) {
        const int v = reference_sextet(static_cast<unsigned char>(text[i]));
        if (v < 0) return std::nullopt;
        bits = (bits << 6) | static_cast<uint32_t>(v);
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out.push_back(static_cast<uint8_t>(bits >> nbits));
            bits &= (1u << nbits) - 1;
        }
    }
    return out;
}

// Index of the first 4-character group holding a non-alphabet character ('=' included), or ngroups.
std::size_t reference_first_bad_group(std::string_view text, std::size_t ngroups) {
    for (std::size_t g = 0; g < ngroups; ++g)
        for (std::size_t k = 0; k < 4; ++k)
            if (reference_sextet(static_cast<unsigned char>(text[4 * g + k])) < 0) return g;
    return ngroups;
}

void check_decoders(std::string_view text) {
    const auto expected = reference_decode(text);
    std::optional<std::vector<uint8_t>> decoded;
    try {
        decoded = base64::decode(text);
    } catch (const FormatError&) {
    }
    FUZZ_CHECK(decoded.has_value() == expected.has_value());
    if (decoded) FUZZ_CHECK(*decoded == *expected);

    // decoded_size agrees with decode.
    std::optional<std::size_t> size;
    try {
        size = base64::decoded_size(text);
    } catch (const FormatError&) {
    }
    if (decoded) FUZZ_CHECK(size && *size == decoded->size());

    // Raw groups (no padding rules): the first bad group and the bytes before it.
    const std::size_t ngroups = text.size() / 4;
    std::vector<uint8_t> raw(3 * ngroups);
    const std::size_t bad = base64::decode_groups(text.data(), ngroups, raw.data());
    const std::size_t expected_bad = reference_first_bad_group(text, ngroups);
    FUZZ_CHECK(bad == expected_bad);
    const auto good_prefix = reference_decode(text.substr(0, 4 * expected_bad));
    FUZZ_CHECK(good_prefix && std::equal(good_prefix->begin(), good_prefix->end(), raw.begin()));

    // decode_range over two pieces gives the same bytes as one decode, with monotonic progress.
    if (decoded && ngroups > 0) {
        const std::size_t split = static_cast<unsigned char>(text[0]) % (ngroups + 1);
        std::vector<uint8_t> pieces(decoded->size() + 3);
        std::size_t last_progress = 0;
        auto progress = [&](std::size_t consumed) {
            FUZZ_CHECK(consumed >= last_progress && consumed <= text.size());
            last_progress = consumed;
        };
        const std::size_t first = base64::decode_range(text, 0, split, pieces.data(), progress);
        const std::size_t second = base64::decode_range(text, split, ngroups - split, pieces.data() + first, progress);
        FUZZ_CHECK(first + second == decoded->size());
        FUZZ_CHECK(std::equal(decoded->begin(), decoded->end(), pieces.begin()));
    }
}

void check_encoders(const uint8_t* data, std::size_t size) {
    const std::string text = base64::encode(data, size);
    FUZZ_CHECK(text.size() == base64::encoded_size(size));
    const std::vector<uint8_t> back = base64::decode(text);
    FUZZ_CHECK(back.size() == size && std::equal(back.begin(), back.end(), data));

    // The stream encoder, fed in pieces whose sizes come from the data (empty feeds included),
    // writes the same text. (Crossing its 64 KiB chunk size needs inputs far larger than fuzzing
    // uses; StreamEncoderMatchesOneShotForAnySplit in tests/common/base64_test.cpp covers it.)
    std::string streamed;
    base64::StreamEncoder encoder([&](const char* chars, std::size_t count) {
        FUZZ_CHECK(count > 0 && count <= base64::StreamEncoder::kChunkChars);
        streamed.append(chars, count);
    });
    for (std::size_t offset = 0; offset < size;) {
        const std::size_t want = data[offset] % 8;
        if (want == 0) encoder.feed(data + offset, 0);
        const std::size_t piece = std::min(size - offset, std::max<std::size_t>(want, 1));
        encoder.feed(data + offset, piece);
        offset += piece;
    }
    encoder.finish();
    encoder.finish();  // a second finish is a no-op
    FUZZ_CHECK(streamed == text);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    polygraphy::fuzz::silence_logger();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    check_decoders(std::string_view(reinterpret_cast<const char*>(data), size));
    check_encoders(data, size);
    return 0;
}
