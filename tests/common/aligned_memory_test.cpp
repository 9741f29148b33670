// allocate_aligned (src/common/aligned_memory.h): small buffers from the heap, 64-byte aligned;
// large ones mapped, 2 MiB-aligned, with transparent huge pages asked for. release_file_pages: the
// pages of a file mapping go, memory of no file stays.
#include "common/aligned_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "model_builder.h"

namespace polygraphy::testing {
namespace {

std::uintptr_t address(const std::shared_ptr<void>& buffer) {
    return reinterpret_cast<std::uintptr_t>(buffer.get());
}

// The line `field` ("VmFlags:", "Rss:") of the mapping that holds `pointer`, from /proc/self/smaps.
std::string mapping_field(const void* pointer, const std::string& field) {
    std::ifstream smaps("/proc/self/smaps");
    const auto target = reinterpret_cast<std::uintptr_t>(pointer);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-') {
            inside = begin <= target && target < end;
        } else if (inside && line.rfind(field, 0) == 0) {
            return line;
        }
    }
    return "";
}

// The kernel's flags for the mapping that holds `pointer` ("hg": huge pages asked for).
std::string mapping_flags(const void* pointer) {
    return mapping_field(pointer, "VmFlags:");
}

// Resident kB of the mapping that holds `pointer`.
long resident_kb(const void* pointer) {
    const std::string line = mapping_field(pointer, "Rss:");
    return line.empty() ? -1 : std::stol(line.substr(4));
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

TEST(AlignedMemory, ReleasingFilePagesDropsAMappedFilesPagesAndKeepsItsContents) {
    constexpr std::size_t kBytes = std::size_t{8} << 20;
    TempDir dir;
    const std::string path = dir.file("weights.bin");
    {
        std::FILE* out = std::fopen(path.c_str(), "wb");
        ASSERT_NE(out, nullptr);
        for (std::size_t i = 0; i < kBytes; ++i) std::fputc(static_cast<int>(i * 7 % 251), out);
        std::fclose(out);
    }
    const int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    void* mapped = mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    ASSERT_NE(mapped, MAP_FAILED);
    const auto* bytes = static_cast<const unsigned char*>(mapped);
    unsigned sum = 0;
    for (std::size_t i = 0; i < kBytes; i += 4096) sum += bytes[i];  // every page resident
    EXPECT_GE(resident_kb(mapped), static_cast<long>(kBytes / 1024) - 4);
    // All but the partial pages at the ends (none here: the mapping is page-aligned).
    EXPECT_EQ(release_file_pages(bytes + 1, kBytes - 1), kBytes - 4096);
    EXPECT_LT(resident_kb(mapped), 64);
    unsigned again = 0;
    for (std::size_t i = 0; i < kBytes; i += 4096) again += bytes[i];
    EXPECT_EQ(again, sum);
    EXPECT_EQ(bytes[kBytes - 1], static_cast<unsigned char>((kBytes - 1) * 7 % 251));
    munmap(mapped, kBytes);

    // Memory of no file is left alone (it could only go to swap).
    const auto buffer = allocate_aligned(kBytes);
    ASSERT_NE(buffer, nullptr);
    std::memset(buffer.get(), 1, kBytes);
    EXPECT_EQ(release_file_pages(buffer.get(), kBytes), 0u);
    EXPECT_GE(resident_kb(buffer.get()), static_cast<long>(kBytes / 1024) - 4);
    EXPECT_EQ(release_file_pages(nullptr, kBytes), 0u);
}

}  // namespace
}  // namespace polygraphy::testing
