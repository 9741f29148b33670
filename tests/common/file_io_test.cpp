#include "polygraphy/common/file_io.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <stdlib.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::size_t entries_in(const std::string& folder) {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++count;
    return count;
}

TEST(FileIo, WritesAndReadsBackBinaryContents) {
    testing::TempDir dir;
    const std::string contents("a\0b\xff\n", 5);
    write_file_atomically(dir.file("x.bin"), contents);
    EXPECT_EQ(read_file(dir.file("x.bin")), contents);
    EXPECT_EQ(entries_in(dir.path()), 1u);  // no temporary left behind
}

TEST(FileIo, CreatesParentFolders) {
    testing::TempDir dir;
    const std::string path = dir.file("a/b/c/out.json");
    write_file_atomically(path, std::string_view("{}"));
    EXPECT_EQ(read_file(path), "{}");
}

TEST(FileIo, OverwritesAndKeepsTheOldFileMode) {
    testing::TempDir dir;
    const std::string path = dir.file("x.txt");
    write_file_atomically(path, std::string_view("old"));
    ASSERT_EQ(chmod(path.c_str(), 0640), 0);
    write_file_atomically(path, std::string_view("new"));
    EXPECT_EQ(read_file(path), "new");
    struct stat info {};
    ASSERT_EQ(stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u);
}

TEST(FileIo, NewFilesGetTheUsualModeNotTheTemporaryOne) {
    testing::TempDir dir;
    const mode_t old_mask = umask(022);
    write_file_atomically(dir.file("x.txt"), std::string_view("x"));
    umask(old_mask);
    struct stat info {};
    ASSERT_EQ(stat(dir.file("x.txt").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST(FileIo, WriterThrowingMidwayLeavesThePreviousFileIntact) {
    testing::TempDir dir;
    const std::string path = dir.file("results.json");
    write_file_atomically(path, std::string_view("previous contents"));
    try {
        write_file_atomically(path, [](std::FILE* out) {
            std::fputs("partial data that must never be seen", out);
            std::fflush(out);
            throw std::runtime_error("disk on fire");
        });
        FAIL() << "no exception";
    } catch (const PolygraphyException& error) {
        EXPECT_EQ(std::string(error.what()), "Could not write " + path + ": disk on fire");
    }
    EXPECT_EQ(read_file(path), "previous contents");
    EXPECT_EQ(entries_in(dir.path()), 1u);
}

TEST(FileIo, WriterErrorsKeepTheirType) {
    testing::TempDir dir;
    const std::string path = dir.file("x.json");
    EXPECT_THROW(write_file_atomically(path, [](std::FILE*) { throw UnsupportedError("no bfloat99"); }), UnsupportedError);
    EXPECT_THROW(write_file_atomically(path, [](std::FILE*) { throw InternalError("bug"); }), InternalError);
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(entries_in(dir.path()), 0u);
}

TEST(FileIo, UnwritablePathsThrowNamingThePath) {
    testing::TempDir dir;
    write_file_atomically(dir.file("file"), std::string_view("x"));
    try {
        write_file_atomically(dir.file("file/child.json"), std::string_view("x"));
        FAIL() << "no exception";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("Could not write " + dir.file("file/child.json")));
    }
    fs::create_directory(dir.file("folder"));
    try {
        write_file_atomically(dir.file("folder"), std::string_view("x"));
        FAIL() << "no exception";
    } catch (const PolygraphyException& error) {
        EXPECT_THAT(error.what(), HasSubstr("Could not write " + dir.file("folder") + ": Is a directory"));
    }
    EXPECT_EQ(entries_in(dir.file("folder")), 0u);
    EXPECT_THROW(write_file_atomically("", std::string_view("x")), PolygraphyException);
}

TEST(FileIo, ReadErrorsNameThePath) {
    testing::TempDir dir;
    try {
        read_file(dir.file("missing.json"));
        FAIL() << "no exception";
    } catch (const PolygraphyException& error) {
        EXPECT_EQ(std::string(error.what()), "Could not read " + dir.file("missing.json") + ": No such file or directory");
    }
    try {
        MappedFile file(dir.path());
        FAIL() << "no exception";
    } catch (const PolygraphyException& error) {
        EXPECT_EQ(std::string(error.what()), "Could not read " + dir.path() + ": it is a folder");
    }
    EXPECT_THROW(MappedFile(dir.file("missing.json")), PolygraphyException);
}

TEST(FileIo, MappedFileViewsTheContentsAndSurvivesRelease) {
    testing::TempDir dir;
    std::string contents;
    for (int i = 0; i < 300000; ++i) contents += static_cast<char>('a' + i % 26);
    write_file_atomically(dir.file("big.txt"), contents);
    MappedFile file(dir.file("big.txt"));
    ASSERT_EQ(file.size(), contents.size());
    EXPECT_EQ(file.view(), contents);
    file.release_before(file.data() + 200000);
    file.release_before(file.data() + 100000);  // going back is harmless
    file.release_before(file.data() + file.size() + 10);
    EXPECT_EQ(file.view(), contents);  // released pages come back from the page cache

    write_file_atomically(dir.file("empty.txt"), std::string_view());
    MappedFile empty(dir.file("empty.txt"));
    EXPECT_EQ(empty.size(), 0u);
    EXPECT_EQ(empty.view(), "");
}

// The parser behind POLYGRAPHY_ZIP64_THRESHOLD and POLYGRAPHY_ONNX_SIZE_LIMIT: unset or empty means
// the default; anything but digits from 1 to the maximum is one clear line naming the variable.
TEST(FileIo, ByteCountFromEnvironmentAcceptsOnlyDigitsInRange) {
    constexpr const char* kVariable = "POLYGRAPHY_TEST_BYTE_COUNT";
    unsetenv(kVariable);
    EXPECT_EQ(byte_count_from_environment(kVariable, 100), std::nullopt);
    setenv(kVariable, "", 1);
    EXPECT_EQ(byte_count_from_environment(kVariable, 100), std::nullopt);
    setenv(kVariable, "1", 1);
    EXPECT_EQ(byte_count_from_environment(kVariable, 100), 1u);
    setenv(kVariable, "100", 1);
    EXPECT_EQ(byte_count_from_environment(kVariable, 100), 100u);
    setenv(kVariable, "18446744073709551615", 1);
    EXPECT_EQ(byte_count_from_environment(kVariable, UINT64_MAX), UINT64_MAX);

    for (const char* bad : {"12abc", "abc", "-5", "+5", " 5", "5 ", "0", "101", "1e3", "0x10", "18446744073709551616",
                            "99999999999999999999999999"}) {
        setenv(kVariable, bad, 1);
        try {
            byte_count_from_environment(kVariable, 100);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const PolygraphyException& error) {
            EXPECT_EQ(std::string(error.what()),
                      std::string(kVariable) + " must be a number of bytes from 1 to 100, not '" + bad + "'");
        }
    }
    unsetenv(kVariable);
}

}  // namespace
}  // namespace polygraphy
