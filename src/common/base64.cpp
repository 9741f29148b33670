#include "polygraphy/common/base64.h"

#include <array>
#include <cstring>

#include <fmt/format.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POLYGRAPHY_BASE64_X86 1
#endif

#include "polygraphy/common/exception.h"

namespace polygraphy::base64 {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr uint32_t kInvalid = 0x01ffffffu;  // any value >= 1 << 24 marks a bad character

constexpr int sextet(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Four tables giving each character's 6 bits already in place in the little-endian 3-byte output
// of its group, so that a group decodes with four loads and three ORs.
struct DecodeTables {
    uint32_t t[4][256];
};

constexpr DecodeTables make_decode_tables() {
    DecodeTables tables{};
    for (int c = 0; c < 256; ++c) {
        const int v = sextet(static_cast<unsigned char>(c));
        if (v < 0) {
            for (auto& table : tables.t) table[c] = kInvalid;
            continue;
        }
        const auto u = static_cast<uint32_t>(v);
        tables.t[0][c] = u << 2;
        tables.t[1][c] = (u >> 4) | ((u & 0xfu) << 12);
        tables.t[2][c] = ((u >> 2) << 8) | ((u & 0x3u) << 22);
        tables.t[3][c] = u << 16;
    }
    return tables;
}

constexpr DecodeTables kDecode = make_decode_tables();

// 12 bits -> two characters, so that 3 bytes encode with two lookups.
struct EncodeTable {
    char pairs[4096][2];
};

constexpr EncodeTable make_encode_table() {
    EncodeTable table{};
    for (int i = 0; i < 4096; ++i) {
        table.pairs[i][0] = kAlphabet[i >> 6];
        table.pairs[i][1] = kAlphabet[i & 63];
    }
    return table;
}

constexpr EncodeTable kEncode = make_encode_table();

inline uint32_t decode_group(const unsigned char* s) {
    return kDecode.t[0][s[0]] | kDecode.t[1][s[1]] | kDecode.t[2][s[2]] | kDecode.t[3][s[3]];
}

std::size_t decode_groups_scalar(const char* text, std::size_t ngroups, uint8_t* out) {
    const auto* s = reinterpret_cast<const unsigned char*>(text);
    std::size_t g = 0;
    // Two groups per step, 4-byte stores that overlap the next group's output.
    for (; g + 2 < ngroups; g += 2, s += 8, out += 6) {
        const uint32_t a = decode_group(s);
        const uint32_t b = decode_group(s + 4);
        if ((a | b) >= (1u << 24)) {
            if (a >= (1u << 24)) return g;
            // Groups before the bad one are decoded, as decode_groups promises.
            out[0] = static_cast<uint8_t>(a);
            out[1] = static_cast<uint8_t>(a >> 8);
            out[2] = static_cast<uint8_t>(a >> 16);
            return g + 1;
        }
        std::memcpy(out, &a, 4);
        std::memcpy(out + 3, &b, 4);
    }
    for (; g < ngroups; ++g, s += 4, out += 3) {
        const uint32_t a = decode_group(s);
        if (a >= (1u << 24)) return g;
        out[0] = static_cast<uint8_t>(a);
        out[1] = static_cast<uint8_t>(a >> 8);
        out[2] = static_cast<uint8_t>(a >> 16);
    }
    return ngroups;
}

#ifdef POLYGRAPHY_BASE64_X86
// 32 characters -> 24 bytes per step: classify characters by nibble lookups (valid iff the two
// lookups share no bit), map ASCII to 6-bit values with a per-range offset, then pack four
// sextets into three bytes with multiply-adds and shuffles.
__attribute__((target("avx2"))) std::size_t decode_groups_avx2(const char* text, std::size_t ngroups, uint8_t* out) {
    const __m256i lut_lo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a,
                                            0x1b, 0x1b, 0x1b, 0x1a, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                            0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b, 0x1a);
    const __m256i lut_hi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10,
                                            0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                            0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 19, 4,
                                              -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i mask_2f = _mm256_set1_epi8(0x2f);
    const __m256i merge_pairs = _mm256_set1_epi32(0x01400140);
    const __m256i merge_quads = _mm256_set1_epi32(0x00011000);
    const __m256i reorder = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5,
                                             4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i compact = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);

    std::size_t g = 0;
    // Each step stores 32 bytes (24 used), so stop while 8 bytes of slack remain in the output.
    for (; g + 11 <= ngroups; g += 8) {
        const __m256i in = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(text + 4 * g));
        const __m256i hi_nibbles = _mm256_and_si256(_mm256_srli_epi32(in, 4), mask_2f);
        const __m256i lo_nibbles = _mm256_and_si256(in, mask_2f);
        const __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nibbles);
        const __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nibbles);
        if (!_mm256_testz_si256(lo, hi)) {
            // Find the exact group with the scalar decoder.
            const std::size_t bad = decode_groups_scalar(text + 4 * g, 8, out + 3 * g);
            return g + bad;
        }
        const __m256i eq_2f = _mm256_cmpeq_epi8(in, mask_2f);
        const __m256i roll = _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(eq_2f, hi_nibbles));
        const __m256i values = _mm256_add_epi8(in, roll);
        const __m256i pairs = _mm256_maddubs_epi16(values, merge_pairs);
        const __m256i quads = _mm256_madd_epi16(pairs, merge_quads);
        const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(quads, reorder), compact);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 3 * g), bytes);
    }
    return g + decode_groups_scalar(text + 4 * g, ngroups - g, out + 3 * g);
}

bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif

std::string describe_char(unsigned char c) {
    if (c >= 0x20 && c < 0x7f && c != '\'') return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
}

// Offset of the first bad character within the 4-character group at `group`.
[[noreturn]] void throw_bad_group(std::string_view text, std::size_t group_offset) {
    for (std::size_t i = group_offset; i < group_offset + 4 && i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (sextet(c) < 0)
            throw FormatError(fmt::format("invalid base64 character {} at offset {}", describe_char(c), i));
    }
    throw FormatError(fmt::format("invalid base64 group at offset {}", group_offset));
}

}  // namespace

std::size_t decode_groups(const char* text, std::size_t ngroups, uint8_t* out) {
#ifdef POLYGRAPHY_BASE64_X86
    if (cpu_has_avx2()) return decode_groups_avx2(text, ngroups, out);
#endif
    return decode_groups_scalar(text, ngroups, out);
}

std::size_t encoded_size(std::size_t nbytes) {
    const std::size_t groups = nbytes / 3 + (nbytes % 3 != 0);
    if (groups > (static_cast<std::size_t>(-1) >> 2))
        throw PolygraphyException(fmt::format("cannot base64-encode {} bytes: too large", nbytes));
    return groups * 4;
}

void encode_to(const void* data, std::size_t nbytes, char* out) {
    const auto* in = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 3 <= nbytes; i += 3, out += 4) {
        const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
        std::memcpy(out, kEncode.pairs[v >> 12], 2);
        std::memcpy(out + 2, kEncode.pairs[v & 0xfff], 2);
    }
    const std::size_t rest = nbytes - i;
    if (rest == 1) {
        const uint32_t v = uint32_t{in[i]} << 16;
        out[0] = kAlphabet[v >> 18];
        out[1] = kAlphabet[(v >> 12) & 63];
        out[2] = '=';
        out[3] = '=';
    } else if (rest == 2) {
        const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
        out[0] = kAlphabet[v >> 18];
        out[1] = kAlphabet[(v >> 12) & 63];
        out[2] = kAlphabet[(v >> 6) & 63];
        out[3] = '=';
    }
}

std::string encode(const void* data, std::size_t nbytes) {
    std::string text(encoded_size(nbytes), '\0');
    encode_to(data, nbytes, text.data());
    return text;
}

StreamEncoder::StreamEncoder(Sink sink) : sink_(std::move(sink)), buffer_(kChunkChars) {}

void StreamEncoder::flush() {
    if (used_ > 0) sink_(buffer_.data(), used_);
    used_ = 0;
}

void StreamEncoder::feed(const void* data, std::size_t nbytes) {
    if (finished_) throw InternalError("base64::StreamEncoder::feed after finish");
    const auto* in = static_cast<const unsigned char*>(data);
    // Complete a pending partial group first.
    while (carry_size_ > 0 && carry_size_ < 3 && nbytes > 0) {
        carry_[carry_size_++] = *in++;
        --nbytes;
    }
    if (carry_size_ == 3) {
        if (used_ + 4 > buffer_.size()) flush();
        encode_to(carry_, 3, buffer_.data() + used_);
        used_ += 4;
        carry_size_ = 0;
    }
    const std::size_t whole = nbytes / 3 * 3;
    std::size_t done = 0;
    while (done < whole) {
        std::size_t room = (buffer_.size() - used_) / 4 * 3;
        if (room == 0) {
            flush();
            room = buffer_.size() / 4 * 3;
        }
        const std::size_t take = std::min(room, whole - done);
        encode_to(in + done, take, buffer_.data() + used_);
        used_ += take / 3 * 4;
        done += take;
    }
    for (std::size_t i = whole; i < nbytes; ++i) carry_[carry_size_++] = in[i];
}

void StreamEncoder::finish() {
    if (finished_) return;
    finished_ = true;
    if (carry_size_ > 0) {
        if (used_ + 4 > buffer_.size()) flush();
        encode_to(carry_, carry_size_, buffer_.data() + used_);
        used_ += 4;
        carry_size_ = 0;
    }
    flush();
}

std::size_t decoded_size(std::string_view text) {
    if (text.size() % 4 != 0)
        throw FormatError(fmt::format("invalid base64 length {} (not a multiple of 4)", text.size()));
    if (text.empty()) return 0;
    std::size_t padding = 0;
    if (text.back() == '=') ++padding;
    if (text.size() >= 2 && text[text.size() - 2] == '=') {
        if (padding == 0)
            throw FormatError(fmt::format("invalid base64 padding at offset {}", text.size() - 2));
        ++padding;
    }
    if (padding == 2 && text.size() >= 3 && text[text.size() - 3] == '=')
        throw FormatError(fmt::format("invalid base64 padding at offset {}", text.size() - 3));
    return text.size() / 4 * 3 - padding;
}

std::size_t decode_range(std::string_view text, std::size_t first_group, std::size_t ngroups, void* out,
                         const std::function<void(std::size_t)>& progress) {
    if (text.size() % 4 != 0)
        throw FormatError(fmt::format("invalid base64 length {} (not a multiple of 4)", text.size()));
    const std::size_t groups = text.size() / 4;
    if (first_group > groups || ngroups > groups - first_group)
        throw InternalError("base64::decode_range: group range out of bounds");
    auto* dst = static_cast<uint8_t*>(out);
    const std::size_t end_group = first_group + ngroups;
    const bool has_final = ngroups > 0 && end_group == groups;
    const std::size_t full_end = has_final ? end_group - 1 : end_group;
    // Chunks keep the progress callback frequent.
    constexpr std::size_t kChunkGroups = 1 << 18;  // 1 MiB of text
    for (std::size_t g = first_group; g < full_end;) {
        const std::size_t n = std::min(kChunkGroups, full_end - g);
        const std::size_t ok = decode_groups(text.data() + 4 * g, n, dst + 3 * (g - first_group));
        if (ok != n) throw_bad_group(text, 4 * (g + ok));
        g += n;
        if (progress) progress(4 * g);
    }
    std::size_t written = 3 * (full_end - first_group);
    if (has_final) {
        const std::size_t at = 4 * (groups - 1);
        char last[4] = {text[at], text[at + 1], text[at + 2], text[at + 3]};
        std::size_t keep = 3;
        if (last[3] == '=') {
            keep = last[2] == '=' ? 1 : 2;
            for (std::size_t i = keep + 1; i < 4; ++i) last[i] = 'A';
        }
        uint8_t bytes[3];
        if (decode_groups_scalar(last, 1, bytes) != 1) throw_bad_group(text, at);
        std::memcpy(dst + written, bytes, keep);
        written += keep;
        if (progress) progress(text.size());
    }
    return written;
}

void decode_to(std::string_view text, void* out, const std::function<void(std::size_t)>& progress) {
    decoded_size(text);  // validates length and padding
    decode_range(text, 0, text.size() / 4, out, progress);
}

std::vector<uint8_t> decode(std::string_view text) {
    std::vector<uint8_t> bytes(decoded_size(text));
    decode_to(text, bytes.data());
    return bytes;
}

}  // namespace polygraphy::base64
