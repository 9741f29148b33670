// Internal to comparator/stats.cpp: exact values at given ranks of an array without sorting it.
//
// Values map to order-preserving unsigned keys (KeyTraits). Pass 1 of the statistics counts the top
// 16 bits of every key; RadixSelector then narrows the buckets holding the wanted ranks 16 bits per
// pass, gathering a bucket once it is small, so each pass reads the data once whatever the number of
// ranks. Small arrays are copied and selected with nth_element (select_small).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "comparator/stats_internal.h"

namespace polygraphy::stats::detail {

constexpr int64_t kRadixMin = int64_t{1} << 16;   // below this, copying and nth_element is cheaper
constexpr int64_t kGatherMax = int64_t{1} << 15;  // buckets this small are gathered and selected exactly
constexpr int kTopBits = 16;
constexpr std::size_t kTopBuckets = std::size_t{1} << kTopBits;

// ---- order-preserving keys: a < b  <=>  key(a) < key(b) (NaNs excluded by the caller) ----
template <typename S>
struct KeyTraits;
template <>
struct KeyTraits<float> {
    using Key = uint32_t;
    static Key key(float v) {
        const uint32_t bits = std::bit_cast<uint32_t>(v);
        return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    }
    static float value(Key k) { return std::bit_cast<float>((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }
};
template <>
struct KeyTraits<double> {
    using Key = uint64_t;
    static constexpr uint64_t kSign = uint64_t{1} << 63;
    static Key key(double v) {
        const uint64_t bits = std::bit_cast<uint64_t>(v);
        return (bits & kSign) ? ~bits : (bits | kSign);
    }
    static double value(Key k) { return std::bit_cast<double>((k & kSign) ? (k & ~kSign) : ~k); }
};
template <>
struct KeyTraits<int32_t> {
    using Key = uint32_t;
    static Key key(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
    static int32_t value(Key k) { return static_cast<int32_t>(k ^ 0x80000000u); }
};
template <>
struct KeyTraits<int64_t> {
    using Key = uint64_t;
    static Key key(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }
    static int64_t value(Key k) { return static_cast<int64_t>(k ^ (uint64_t{1} << 63)); }
};
template <>
struct KeyTraits<uint64_t> {
    using Key = uint64_t;
    static Key key(uint64_t v) { return v; }
    static uint64_t value(Key k) { return k; }
};

template <typename S>
constexpr bool kIsFloat = std::is_floating_point_v<S>;

template <typename S>
bool is_nan(S v) {
    if constexpr (kIsFloat<S>)
        return v != v;
    else
        return false;
}

template <typename S>
std::vector<S> select_small(const S* data, int64_t n, const std::vector<int64_t>& ranks) {
    std::vector<S> copy(data, data + n);
    std::vector<S> values;
    values.reserve(ranks.size());
    auto first = copy.begin();
    for (int64_t rank : ranks) {  // ranks ascend, so each search narrows the range
        auto nth = copy.begin() + rank;
        std::nth_element(first, nth, copy.end());
        values.push_back(*nth);
        first = nth;
    }
    return values;
}

// Exact values at given ranks by refining key prefixes 16 bits at a time (see stats_internal.h).
// A pass is prepare() + scan() on every element (any thread split, thread-local state) + complete().
template <typename S>
class RadixSelector {
public:
    using Traits = KeyTraits<S>;
    using Key = typename Traits::Key;
    static constexpr int kKeyBits = static_cast<int>(sizeof(Key) * 8);

    RadixSelector(const S* data, const std::vector<uint32_t>& top_hist, const std::vector<int64_t>& ranks)
        : data_(data), targets_(ranks.size()) {
        int64_t cumulative = 0;
        std::size_t bucket = 0;
        for (std::size_t t = 0; t < ranks.size(); ++t) {  // ranks ascend
            while (cumulative + top_hist[bucket] <= ranks[t]) cumulative += top_hist[bucket++];
            targets_[t].prefix = static_cast<Key>(bucket);
            targets_[t].bits = kTopBits;
            targets_[t].rank = ranks[t] - cumulative;
            targets_[t].count = top_hist[bucket];
        }
    }

    /// Plans the next pass; false when every value is known.
    bool prepare(int nthreads) {
        slots_.clear();
        slot_of_.assign(targets_.size(), -1);
        for (std::size_t t = 0; t < targets_.size(); ++t) {
            Target& target = targets_[t];
            if (target.done) continue;
            if (target.bits >= kKeyBits) {  // every key in the bucket is the same
                target.key = target.prefix;
                target.done = true;
                continue;
            }
            int found = -1;
            for (std::size_t s = 0; s < slots_.size(); ++s)
                if (slots_[s].prefix == target.prefix && slots_[s].bits == target.bits) found = static_cast<int>(s);
            if (found < 0) {
                slots_.push_back({target.prefix, target.bits, target.count, target.count <= kGatherMax});
                found = static_cast<int>(slots_.size() - 1);
            }
            slot_of_[t] = found;
        }
        if (slots_.empty()) return false;
        wanted_.assign(kTopBuckets / 64, 0);
        slot_mask_.assign(kTopBuckets, 0);
        for (std::size_t s = 0; s < slots_.size(); ++s) {
            const auto top = static_cast<std::size_t>(slots_[s].prefix >> (slots_[s].bits - kTopBits));
            slot_mask_[top] |= 1u << s;
            wanted_[top / 64] |= uint64_t{1} << (top % 64);
        }
        threads_.assign(static_cast<std::size_t>(nthreads), ThreadState{});
        for (ThreadState& state : threads_) {
            state.gathered.resize(slots_.size());
            state.hists.resize(slots_.size());
            for (std::size_t s = 0; s < slots_.size(); ++s)
                if (!slots_[s].gather) state.hists[s].assign(kTopBuckets, 0);
            state.buffer.resize(static_cast<std::size_t>(kChunk));
        }
        return true;
    }

    /// Elements [begin, end) by thread `tid`: a branch-free filter through an 8 KB bitmap of wanted top
    /// buckets, then the few survivors are gathered or counted.
    void scan(int tid, int64_t begin, int64_t end) {
        ThreadState& state = threads_[static_cast<std::size_t>(tid)];
        Key* buffer = state.buffer.data();
        const uint64_t* wanted = wanted_.data();
        for (int64_t block = begin; block < end; block += kChunk) {
            const int64_t stop = std::min(end, block + kChunk);
            int64_t kept = 0;
            for (int64_t i = block; i < stop; ++i) {
                const Key key = Traits::key(data_[i]);
                const auto top = static_cast<std::size_t>(key >> (kKeyBits - kTopBits));
                buffer[kept] = key;
                kept += static_cast<int64_t>((wanted[top / 64] >> (top % 64)) & 1u);
            }
            for (int64_t j = 0; j < kept; ++j) {
                const Key key = buffer[j];
                uint32_t mask = slot_mask_[static_cast<std::size_t>(key >> (kKeyBits - kTopBits))];
                while (mask) {
                    const int s = std::countr_zero(mask);
                    mask &= mask - 1;
                    const Slot& slot = slots_[static_cast<std::size_t>(s)];
                    if ((key >> (kKeyBits - slot.bits)) != slot.prefix) continue;
                    if (slot.gather)
                        state.gathered[static_cast<std::size_t>(s)].push_back(key);
                    else
                        ++state.hists[static_cast<std::size_t>(s)]
                                     [static_cast<std::size_t>((key >> (kKeyBits - slot.bits - kTopBits)) & 0xffffu)];
                    break;
                }
            }
        }
    }

    /// Merges the threads' findings: gathered buckets are resolved, counted ones narrowed by 16 bits.
    void complete() {
        for (std::size_t s = 0; s < slots_.size(); ++s) {
            if (slots_[s].gather) {
                std::vector<Key> keys;
                keys.reserve(static_cast<std::size_t>(slots_[s].count));
                for (const ThreadState& state : threads_)
                    keys.insert(keys.end(), state.gathered[s].begin(), state.gathered[s].end());
                for (std::size_t t = 0; t < targets_.size(); ++t) {
                    if (slot_of_[t] != static_cast<int>(s)) continue;
                    auto nth = keys.begin() + targets_[t].rank;
                    std::nth_element(keys.begin(), nth, keys.end());
                    targets_[t].key = *nth;
                    targets_[t].done = true;
                }
            } else {
                std::vector<uint32_t>& hist = threads_[0].hists[s];
                for (std::size_t t = 1; t < threads_.size(); ++t)
                    for (std::size_t b = 0; b < kTopBuckets; ++b) hist[b] += threads_[t].hists[s][b];
                for (std::size_t t = 0; t < targets_.size(); ++t) {
                    if (slot_of_[t] != static_cast<int>(s)) continue;
                    Target& target = targets_[t];
                    int64_t cumulative = 0;
                    std::size_t bucket = 0;
                    while (cumulative + hist[bucket] <= target.rank) cumulative += hist[bucket++];
                    target.prefix = static_cast<Key>((target.prefix << kTopBits) | bucket);
                    target.bits += kTopBits;
                    target.rank -= cumulative;
                    target.count = hist[bucket];
                }
            }
        }
        threads_.clear();
    }

    std::vector<S> values() const {
        std::vector<S> result;
        result.reserve(targets_.size());
        for (const Target& target : targets_) result.push_back(Traits::value(target.key));
        return result;
    }

private:
    struct Target {
        Key prefix = 0;  // the top `bits` bits of the key
        int bits = 0;
        int64_t rank = 0;   // rank within the bucket of that prefix
        int64_t count = 0;  // elements in that bucket
        bool done = false;
        Key key = 0;
    };
    struct Slot {
        Key prefix;
        int bits;
        int64_t count;
        bool gather;
    };
    struct ThreadState {
        std::vector<std::vector<Key>> gathered;
        std::vector<std::vector<uint32_t>> hists;
        std::vector<Key> buffer;
    };

    const S* data_;
    std::vector<Target> targets_;
    std::vector<Slot> slots_;
    std::vector<int> slot_of_;
    std::vector<uint64_t> wanted_;
    std::vector<uint32_t> slot_mask_;
    std::vector<ThreadState> threads_;
};

}  // namespace polygraphy::stats::detail
