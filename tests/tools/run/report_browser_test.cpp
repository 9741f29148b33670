// The HTML report in a real browser: headless Chromium opens a report written by `polygraphy run`,
// the page must run without console errors, its DOM must show the first divergence and every
// compared output, and a screenshot is taken. Skipped only when Chromium is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "chromium.h"
#include "diff_models.h"
#include "model_builder.h"
#include "perturbed_run.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;

class ReportInBrowser : public testing::PerturbedRun {
protected:
    void SetUp() override {
        chromium_ = testing::find_chromium();
        if (!chromium_) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
        PerturbedRun::SetUp();
        if (HasFatalFailure()) return;
        const auto compared = run_polygraphy({"run", model_, "--ref", "--onnx-outputs", "mark", "all", "--load-outputs",
                                              perturbed_, "--report", report_});
        ASSERT_EQ(compared.exit_code, 1) << compared.output;
    }

    std::string report_ = dir_.file("report.html");
    std::optional<std::string> chromium_;
};

TEST_F(ReportInBrowser, RunsWithoutErrorsAndShowsTheDivergenceAndEveryOutput) {
    const testing::BrowserPage page = testing::load_in_chromium(*chromium_, report_, dir_.path());
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.console_errors, std::vector<std::string>{}) << page.log;
    const std::string& dom = page.dom;
    EXPECT_THAT(dom, HasSubstr("data-status=\"ready\""));
    EXPECT_THAT(dom, Not(HasSubstr("data-errors=")));

    // The first divergence is named in the header, marked in the table and drawn marked in the graph.
    EXPECT_THAT(dom, HasSubstr("id=\"summary-divergence\" data-node=\"neg\" data-tensor=\"c\""));
    EXPECT_TRUE(std::regex_search(dom, std::regex("<tr data-tensor=\"c\" class=\"failed first-divergence")));
    EXPECT_TRUE(std::regex_search(dom, std::regex("<canvas id=\"graph-canvas\"[^>]* data-marked=\"neg\"")));
    EXPECT_THAT(dom, HasSubstr(">FAILED</span>"));

    // The table holds every compared output, names shown as text.
    EXPECT_THAT(dom, HasSubstr("data-output-count=\"4\""));
    EXPECT_EQ(testing::count_occurrences(dom, "<tr data-tensor="), 4u);
    for (const char* tensor : {"a", "c", "y"})
        EXPECT_THAT(dom, HasSubstr(std::string("<tr data-tensor=\"") + tensor + "\""));
    EXPECT_THAT(dom, HasSubstr(">&lt;b&gt;&amp;amp;&lt;/b&gt;<"));
    EXPECT_EQ(testing::count_occurrences(dom, "<script"), 2u);  // no name became an element
    EXPECT_THAT(dom, Not(HasSubstr("<b>&amp;amp;</b>")));       // the name did not become a <b> element

    // The details panel shows the divergent node with its histograms.
    EXPECT_THAT(dom, HasSubstr("<h3>neg</h3>"));
    EXPECT_THAT(dom, HasSubstr("class=\"hist\""));
}

TEST_F(ReportInBrowser, TakesAScreenshot) {
    const std::string screenshot = dir_.file("report.png");
    const auto result = testing::screenshot_in_chromium(*chromium_, report_, screenshot, dir_.path());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const std::string png = read_file(screenshot);
    ASSERT_GT(png.size(), 10000u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

// Several samples: the page shows each pair's dataset summary with a pass-rate curve per output.
TEST(ReportInBrowserDataset, SeveralSamplesShowTheDatasetSummaryWithAPassRateCurve) {
    const auto chromium = testing::find_chromium();
    if (!chromium) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
    testing::TempDir dir;
    testing::save_identity_model(dir.file("identity.onnx"), {2, 3});
    const auto result = run_polygraphy({"run", dir.file("identity.onnx"), "--ref", "--onnxrt", "--iterations", "3",
                                        "--report", dir.file("report.html")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const testing::BrowserPage page = testing::load_in_chromium(*chromium, dir.file("report.html"), dir.path());
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.console_errors, std::vector<std::string>{}) << page.log;
    EXPECT_THAT(page.dom, HasSubstr("<section id=\"dataset\" class=\"dataset\"><h2>Dataset summary</h2>"));
    EXPECT_THAT(page.dom, HasSubstr("<tr data-dataset-output=\"y\" class=\"passed\"><td>y</td><td>3</td><td>0</td>"));
    EXPECT_THAT(page.dom, HasSubstr("every sample exact"));  // the two runtimes agree exactly on an Identity

    // fp16 against float32: differences in every sample, drawn as a step curve.
    const onnx::ModelProto model = testing::diff_cnn();
    save_onnx(model, dir.file("model.onnx"));
    save_onnx(testing::fp16_version(model), dir.file("fp16.onnx"));
    ASSERT_EQ(run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--iterations", "4", "--save-outputs",
                              dir.file("reference.json")})
                  .exit_code,
              0);
    run_polygraphy({"run", dir.file("fp16.onnx"), "--ref", "--iterations", "4", "--load-outputs",
                    dir.file("reference.json"), "--report", dir.file("fp16.html")});
    const testing::BrowserPage fp16 = testing::load_in_chromium(*chromium, dir.file("fp16.html"), dir.path());
    ASSERT_EQ(fp16.exit_code, 0) << fp16.log;
    EXPECT_EQ(fp16.console_errors, std::vector<std::string>{}) << fp16.log;
    EXPECT_TRUE(
        std::regex_search(fp16.dom, std::regex("<tr data-dataset-output=\"y\" class=\"failed\"><td>y</td><td>0</td>"
                                               "<td>4</td>")));
    EXPECT_TRUE(std::regex_search(fp16.dom, std::regex("class=\"pass-rate\"[^>]*><path d=\"M4 [0-9.]+ H[0-9.]+ V")));
}

TEST_F(ReportInBrowser, DataReportRunsWithoutErrors) {
    auto result = run_polygraphy({"inspect", "data", golden_, "--report", dir_.file("data.html")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const testing::BrowserPage page = testing::load_in_chromium(*chromium_, dir_.file("data.html"), dir_.path());
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.console_errors, std::vector<std::string>{}) << page.log;
    EXPECT_THAT(page.dom, HasSubstr("data-status=\"ready\""));
    EXPECT_THAT(page.dom, HasSubstr("data-output-count=\"4\""));
    EXPECT_THAT(page.dom, HasSubstr("class=\"hist\""));
}

}  // namespace
}  // namespace polygraphy
