// A fast 64-bit hash of bytes, for fingerprints that tell runs and datasets apart (`run
// --save-summary`); not for security. Eight bytes per step, then Murmur3's final mix.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace polygraphy {

class Hasher {
public:
    /// Adds `count` bytes, and their count (so that "ab" + "c" and "a" + "bc" differ).
    void add(const void* data, std::size_t count) {
        const auto* bytes = static_cast<const unsigned char*>(data);
        std::size_t i = 0;
        for (; i + 8 <= count; i += 8) {
            uint64_t word;
            std::memcpy(&word, bytes + i, 8);
            mix(word);
        }
        uint64_t tail = 0;
        if (i < count) std::memcpy(&tail, bytes + i, count - i);
        mix(tail);
        mix(static_cast<uint64_t>(count));
    }
    void add(std::string_view text) { add(text.data(), text.size()); }
    void add_number(uint64_t number) { mix(number); }

    /// The hash of everything added.
    uint64_t value() const {
        uint64_t h = state_;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 33;
        return h;
    }
    /// value() as 16 hexadecimal digits.
    std::string hex() const { return fmt::format("{:016x}", value()); }

private:
    void mix(uint64_t word) {
        state_ = std::rotl(state_ ^ (word * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL + 0x52dce729;
    }
    uint64_t state_ = 0x9e3779b97f4a7c15ULL;
};

}  // namespace polygraphy
