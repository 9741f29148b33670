#include "common/aligned_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace polygraphy {

std::shared_ptr<void> allocate_aligned(std::size_t nbytes) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    constexpr std::size_t kAlignment = 64;
    if (nbytes >= 2 * kHuge) {
        const std::size_t size = (nbytes + kHuge - 1) / kHuge * kHuge;
        void* raw = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw != MAP_FAILED) {
            // Over-mapped by one huge page; the ends around the aligned range go back at once.
            const auto base = reinterpret_cast<std::uintptr_t>(raw);
            const std::uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
            if (aligned > base) munmap(raw, aligned - base);
            const std::uintptr_t tail = aligned + size;
            if (base + size + kHuge > tail) munmap(reinterpret_cast<void*>(tail), base + size + kHuge - tail);
            void* data = reinterpret_cast<void*>(aligned);
            madvise(data, size, MADV_HUGEPAGE);
            return std::shared_ptr<void>(data, [size](void* p) { munmap(p, size); });
        }
    }
    const std::size_t size = (std::max<std::size_t>(nbytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, size);
    if (!data) return nullptr;
    return std::shared_ptr<void>(data, std::free);
}

}  // namespace polygraphy
