#include <regex>

#include <gtest/gtest.h>

#include "common/log_format.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

std::string capture(const std::function<void()>& body) {
    testing::internal::CaptureStdout();
    body();
    return testing::internal::GetCapturedStdout();
}

class LoggerTest : public ::testing::Test {
protected:
    void SetUp() override {
        logger().reset();
        logger().set_colors(false);
    }
    void TearDown() override { logger().reset(); }
};

TEST_F(LoggerTest, PrefixesAndIndentsContinuationLines) {
    const std::string out = capture([] {
        logger().info("first\nsecond");
        auto guard = logger().indent();
        logger().warning("nested\nmore");
    });
    EXPECT_EQ(out, "[I] first\n    second\n[W]     nested\n        more\n");
}

TEST_F(LoggerTest, TimestampsFollowTheLetterAndWidenTheIndent) {
    set_log_timestamps(true);
    const std::string out = capture([] {
        logger().info("first\nsecond");
        auto guard = logger().indent();
        logger().warning("nested");
    });
    EXPECT_TRUE(std::regex_match(out, std::regex(R"(\[I\] \(\d\d:\d\d:\d\d\) first\n {15}second\n)"
                                                 R"(\[W\] \(\d\d:\d\d:\d\d\)     nested\n)")))
        << out;
    logger().reset();  // turns them off again
    EXPECT_EQ(capture([] { logger().info("plain"); }), "[I] plain\n");
}

TEST_F(LoggerTest, SeverityFilters) {
    const std::string out = capture([] {
        logger().verbose("hidden");
        logger().set_severity(Severity::kVerbose);
        logger().verbose("shown");
        logger().set_severity(Severity::kSilent);
        logger().critical("gone");
    });
    EXPECT_EQ(out, "[V] shown\n");
}

TEST_F(LoggerTest, LogOncePrintsOnce) {
    const std::string out = capture([] {
        logger().log_once(Severity::kWarning, "dup");
        logger().log_once(Severity::kWarning, "dup");
    });
    EXPECT_EQ(out, "[W] dup\n");
}

TEST_F(LoggerTest, ParsesSeverityNames) {
    Severity severity{};
    EXPECT_TRUE(severity_from_name("extra_verbose", severity));
    EXPECT_EQ(severity, Severity::kExtraVerbose);
    EXPECT_FALSE(severity_from_name("loud", severity));
}

TEST(LoggingSourcePath, IsRelativeToTheLibraryFolders) {
    EXPECT_EQ(logging_source_path("/work/polygraphy/src/backend/onnx/loader.cpp"), "backend/onnx/loader.cpp");
    EXPECT_EQ(logging_source_path("../src/comparator/comparator.cpp"), "comparator/comparator.cpp");
    EXPECT_EQ(logging_source_path("src/tools/run/run.cpp"), "tools/run/run.cpp");
    EXPECT_EQ(logging_source_path("/x/include/polygraphy/common/logger.h"), "common/logger.h");
    EXPECT_EQ(logging_source_path("/x/mysrc/a.cpp"), "/x/mysrc/a.cpp");  // only a whole `src` folder
    EXPECT_EQ(logging_source_path("tests/common/logger_test.cpp"), "tests/common/logger_test.cpp");
}

TEST_F(LoggerTest, LineInfoNamesTheCallersFileAndLine) {
    set_log_line_info(true);
    const std::string file = logging_source_path(Logger::Where::current().file_name());
    int line = 0;
    const std::string out = capture([&] {
        line = __LINE__ + 1;
        logger().info("first\nsecond");
    });
    const std::string prefix = "[I] [" + file + ":" + std::to_string(line) + "] ";
    EXPECT_EQ(out, prefix + "first\n" + std::string(prefix.size(), ' ') + "second\n");
    logger().reset();  // turns it off again
    EXPECT_EQ(capture([] { logger().info("plain"); }), "[I] plain\n");
}

// This file is not under src/, so the paths below are this file's own path and its folders.
TEST_F(LoggerTest, PathSeveritiesApplyToTheFilesTheyName) {
    const std::string file = logging_source_path(Logger::Where::current().file_name());
    const std::string folder = file.substr(0, file.rfind('/'));
    auto verbose_line_shows = [] { return !capture([] { logger().verbose("detail"); }).empty(); };

    logger().set_severity(Severity::kWarning);
    logger().set_path_severities({{"backend/onnx", Severity::kVerbose}});  // another folder
    EXPECT_TRUE(logger().enabled(Severity::kVerbose));                     // some file may log it...
    EXPECT_FALSE(verbose_line_shows());                                    // ...but not this one
    EXPECT_EQ(logger().severity(), Severity::kWarning);

    logger().set_path_severities({{folder, Severity::kVerbose}});
    EXPECT_TRUE(verbose_line_shows());
    // The longest matching path wins, whatever the order.
    logger().set_path_severities({{file, Severity::kError}, {folder, Severity::kVerbose}});
    EXPECT_FALSE(verbose_line_shows());
    EXPECT_TRUE(capture([] { logger().warning("w"); }).empty());
    EXPECT_EQ(capture([] { logger().error("e"); }), "[E] e\n");
    // A file name matches whatever its extension (Polygraphy's names end in .py), and only whole names.
    const std::string stem = file.substr(0, file.rfind('.'));
    logger().set_path_severities({{stem + ".py", Severity::kVerbose}});
    EXPECT_TRUE(verbose_line_shows());
    logger().set_path_severities({{stem.substr(0, stem.size() - 1), Severity::kVerbose}});
    EXPECT_FALSE(verbose_line_shows());
    // log_once follows the same thresholds.
    EXPECT_TRUE(capture([] { logger().log_once(Severity::kVerbose, "once"); }).empty());
    logger().set_path_severities({});
    EXPECT_FALSE(verbose_line_shows());
    EXPECT_FALSE(logger().enabled(Severity::kVerbose));
}

}  // namespace
}  // namespace polygraphy
