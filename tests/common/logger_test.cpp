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

}  // namespace
}  // namespace polygraphy
