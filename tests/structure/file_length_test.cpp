// Every C++ and Python source of the project stays under 900 lines, or says in one line near its top
// why it cannot (a comment starting "Over 900 lines:"), as DEVELOPERS.md asks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "build_paths.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;

constexpr int kLineLimit = 900;
constexpr int kReasonWithinLines = 10;  // where the reason must appear

struct LongFile {
    std::string path;
    int lines;
};

// Sources under `root` longer than the limit without a reason line near their top.
std::vector<LongFile> long_files_without_reason(const fs::path& root, const std::vector<std::string>& folders) {
    std::vector<LongFile> found;
    for (const std::string& folder : folders) {
        if (!fs::is_directory(root / folder)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
            const std::string extension = entry.path().extension().string();
            if (!entry.is_regular_file() || (extension != ".h" && extension != ".cpp" && extension != ".py")) continue;
            std::ifstream file(entry.path());
            std::string text;
            int lines = 0;
            bool reason = false;
            while (std::getline(file, text)) {
                ++lines;
                if (lines <= kReasonWithinLines && text.find("Over 900 lines:") != std::string::npos) reason = true;
            }
            if (lines > kLineLimit && !reason)
                found.push_back({fs::relative(entry.path(), root).generic_string(), lines});
        }
    }
    return found;
}

const std::vector<std::string> kSourceFolders = {"src",  "include", "tools",    "python", "tests",
                                                 "fuzz", "bench",   "examples", "scripts"};

TEST(FileLength, EverySourceStaysUnder900LinesOrSaysWhy) {
    std::string listing;
    for (const LongFile& file : long_files_without_reason(POLYGRAPHY_SOURCE_DIR, kSourceFolders))
        listing += file.path + ": " + std::to_string(file.lines) + " lines\n";
    EXPECT_TRUE(listing.empty()) << "split these, or give each a line \"Over 900 lines: <why>\" near its top:\n"
                                 << listing;
}

TEST(FileLength, TheCheckSeesALongFileAndItsReason) {
    const fs::path root = fs::temp_directory_path() / ("polygraphy-length-" + std::to_string(::getpid()));
    fs::create_directories(root / "src");
    {
        std::ofstream plain(root / "src" / "long.cpp");
        std::ofstream explained(root / "src" / "explained.cpp");
        std::ofstream short_file(root / "src" / "short.py");
        explained << "// A file.\n// Over 900 lines: one table.\n";
        for (int i = 0; i < kLineLimit + 1; ++i) {
            plain << "int x" << i << ";\n";
            explained << "int x" << i << ";\n";
        }
        for (int i = 0; i < kLineLimit; ++i) short_file << "x = 1\n";
    }
    const std::vector<LongFile> found = long_files_without_reason(root, {"src"});
    fs::remove_all(root);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].path, "src/long.cpp");
    EXPECT_EQ(found[0].lines, kLineLimit + 1);
}

}  // namespace
}  // namespace polygraphy
