#include "common/aligned_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace polygraphy {

std::shared_ptr<void> allocate_aligned(std::size_t nbytes) {
    constexpr std::size_t kHuge = kHugePageBytes;
    constexpr std::size_t kAlignment = 64;
    if (nbytes >= kHuge) {
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

namespace {

/// Whether the mapping that holds [begin, end) maps a file (an inode in /proc/self/maps).
bool maps_a_file(std::uintptr_t begin, std::uintptr_t end) {
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    if (maps == nullptr) return false;
    bool file = false;
    unsigned long low = 0, high = 0, inode = 0;
    char line[512];
    while (std::fgets(line, sizeof line, maps) != nullptr) {
        // start-end perms offset dev inode [path]
        if (std::sscanf(line, "%lx-%lx %*s %*s %*s %lu", &low, &high, &inode) != 3) continue;
        if (begin >= low && end <= high) {
            file = inode != 0;
            break;
        }
    }
    std::fclose(maps);
    return file;
}

}  // namespace

std::size_t release_file_pages(const void* data, std::size_t nbytes) {
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    if (data == nullptr) return 0;
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + nbytes) / page * page;
    if (end <= begin || !maps_a_file(begin, end)) return 0;
    return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT) == 0 ? end - begin : 0;
}

}  // namespace polygraphy
