// allocate_aligned (src/common/aligned_memory.h): small buffers from the heap, 64-byte aligned;
// large ones mapped, 2 MiB-aligned, with transparent huge pages asked for.
#include "common/aligned_memory.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace polygraphy::testing {
namespace {

std::uintptr_t address(const std::shared_ptr<void>& buffer) {
    return reinterpret_cast<std::uintptr_t>(buffer.get());
}

// The kernel's flags for the mapping that holds `pointer`, from /proc/self/smaps ("hg": huge pages asked for).
std::string mapping_flags(const void* pointer) {
    std::ifstream smaps("/proc/self/smaps");
    const auto target = reinterpret_cast<std::uintptr_t>(pointer);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-') {
            inside = begin <= target && target < end;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line;
        }
    }
    return "";
}

TEST(AlignedMemory, SmallBuffersAre64ByteAligned) {
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{3} << 20}) {
        const auto buffer = allocate_aligned(bytes);
        ASSERT_NE(buffer, nullptr) << bytes;
        EXPECT_EQ(address(buffer) % 64, 0u) << bytes;
        if (bytes > 0) std::memset(buffer.get(), 0x5a, bytes);  // writable to the end (ASan checks it)
    }
}

TEST(AlignedMemory, LargeBuffersAreMappedOnHugePageBoundariesWithHugePagesAsked) {
    const std::size_t bytes = (std::size_t{5} << 20) + 123;  // not a whole number of huge pages
    const auto buffer = allocate_aligned(bytes);
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(address(buffer) % (std::size_t{2} << 20), 0u);
    std::memset(buffer.get(), 0x5a, bytes);
    EXPECT_NE(mapping_flags(buffer.get()).find(" hg"), std::string::npos) << mapping_flags(buffer.get());
}

}  // namespace
}  // namespace polygraphy::testing
