// Base64 (RFC 4648 standard alphabet, '=' padding), as Python's base64.b64encode / b64decode(validate=True).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace polygraphy::base64 {

/// Characters needed to encode `nbytes` bytes (with padding). Throws PolygraphyException on overflow.
std::size_t encoded_size(std::size_t nbytes);

/// Writes encoded_size(nbytes) characters to `out` (no terminator).
void encode_to(const void* data, std::size_t nbytes, char* out);
std::string encode(const void* data, std::size_t nbytes);
inline std::string encode(std::string_view bytes) { return encode(bytes.data(), bytes.size()); }

/// Streams base64 text in chunks: feed() bytes in any split, finish() once; `sink` receives the
/// characters (never more than kChunkChars at a time, padding only at the very end).
class StreamEncoder {
public:
    /// Most characters handed to the sink at once.
    static constexpr std::size_t kChunkChars = 1 << 16;
    /// Receives encoded characters.
    using Sink = std::function<void(const char* chars, std::size_t count)>;

    /// Encoder writing to `sink`.
    explicit StreamEncoder(Sink sink);
    /// Encodes `nbytes` more bytes (any split works).
    void feed(const void* data, std::size_t nbytes);
    /// Writes the remaining characters and the padding; call once.
    void finish();

private:
    void flush();

    Sink sink_;
    unsigned char carry_[3] = {};
    std::size_t carry_size_ = 0;
    std::vector<char> buffer_;
    std::size_t used_ = 0;
    bool finished_ = false;
};

/// Bytes that the base64 text `text` decodes to. Throws FormatError when the length is not a
/// multiple of 4 or the padding is malformed (the characters themselves are checked by decode).
std::size_t decoded_size(std::string_view text);

/// Decodes `text` into `out` (decoded_size(text) bytes). Throws FormatError naming the first bad
/// character and its offset in `text` ("invalid base64 character '!' at offset 12"). Strict like
/// b64decode(validate=True): no whitespace, padding only at the end.
/// `progress`, when given, is called now and then with the number of characters consumed so far
/// (callers use it to release memory-mapped input they no longer need).
void decode_to(std::string_view text, void* out, const std::function<void(std::size_t consumed)>& progress = {});
std::vector<uint8_t> decode(std::string_view text);

/// Decodes the 4-character groups [first_group, first_group + ngroups) of `text` (whose length must be
/// a multiple of 4; padding is only valid in its final group) to `out`: 3 bytes a group, 1 or 2 for a
/// padded final group. Returns the number of bytes written. Throws FormatError with offsets in `text`.
/// `progress` receives the absolute number of characters of `text` consumed so far.
std::size_t decode_range(std::string_view text, std::size_t first_group, std::size_t ngroups, void* out,
                         const std::function<void(std::size_t consumed)>& progress = {});

/// Decodes `ngroups` complete, unpadded 4-character groups at `text` into 3 * ngroups bytes at `out`.
/// Returns the index of the first group holding an invalid character, or ngroups when all are valid
/// (the output of that group and later ones is unspecified). Uses AVX2 when the CPU has it.
std::size_t decode_groups(const char* text, std::size_t ngroups, uint8_t* out);

}  // namespace polygraphy::base64
