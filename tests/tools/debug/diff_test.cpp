// `polygraphy debug diff` through the real CLI: the blame table, the report, and every bad input as
// one line with a non-zero exit and nothing written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "chromium.h"
#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy::tools {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

// The one error line of a failed command (no stack trace, no "Unexpected error").
void expect_one_line_error(const testing::CommandResult& result, const std::string& message) {
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr(message));
    EXPECT_THAT(result.output, Not(HasSubstr("Unexpected error")));
    EXPECT_THAT(result.output, Not(HasSubstr("terminate called")));
}

class DebugDiffCli : public ::testing::Test {
protected:
    void SetUp() override {
        a_ = dir_.file("a.onnx");
        save_onnx(testing::diff_cnn(), a_);
    }
    std::string save(const onnx::ModelProto& model, const std::string& name) {
        save_onnx(model, dir_.file(name));
        return dir_.file(name);
    }
    TempDir dir_;
    std::string a_;
};

TEST_F(DebugDiffCli, TheHtmlReportShowsBothNamesAndTheMatchKindOfEachRowInABrowser) {
    const std::optional<std::string> chromium = testing::find_chromium();
    if (!chromium) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
    const std::string b = save(testing::renamed_reordered_version(testing::diff_cnn()), "b.onnx");
    const std::string report = dir_.file("report.html");
    const auto result = run_polygraphy({"debug", "diff", a_, b, "--report", report});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const testing::BrowserPage page = testing::load_in_chromium(*chromium, report, dir_.path());
    ASSERT_EQ(page.exit_code, 0) << page.log;
    EXPECT_EQ(page.console_errors, std::vector<std::string>{}) << page.log;
    EXPECT_THAT(page.dom, HasSubstr("data-status=\"ready\""));
    EXPECT_THAT(page.dom, HasSubstr(">Compared with</th>"));
    EXPECT_THAT(page.dom, HasSubstr(">Match</th>"));
    // A renamed copy: its tensors are paired by structure, and each row names A's tensor beside B's.
    EXPECT_TRUE(std::regex_search(page.dom, std::regex("<td class=\"\">structure( \\([0-9.]+\\))?</td>")));
    EXPECT_THAT(page.dom, HasSubstr("<td class=\"\">branch_a_out</td>"));
}

TEST_F(DebugDiffCli, AFusedModelWithAFaultGetsTheBlameTableTheReportAndTheMatches) {
    onnx::ModelProto fused = testing::fused_version(testing::diff_cnn());
    testing::scale_weight(fused, "w1", 1.02f);
    const std::string b = save(fused, "b.onnx");
    const auto result = run_polygraphy({"debug", "diff", a_, b, "--report", dir_.file("report.json"), "--save-matches",
                                        dir_.file("matches.json"), "--top", "3"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Paired 8 tensors of B with A: 8 by name"));
    EXPECT_THAT(result.output,
                MatchesRegex("(.|\n)*\n +1 \\| /conv1/Conv \\(FusedConv\\) +\\| /conv1/Conv, /relu1/Relu "
                             "+\\| name(.|\n)*"));
    EXPECT_THAT(result.output, HasSubstr("First divergence: B's '/conv1/Conv' (FusedConv)"));
    EXPECT_THAT(result.output, HasSubstr("FAILED | the graph outputs of B differ"));
    EXPECT_THAT(read_file(dir_.file("report.json")), HasSubstr("\"b_ops\": \"FusedConv\""));
    // The HTML report: B's graph, each pair's local and total error as two comparisons.
    const auto html = run_polygraphy({"debug", "diff", a_, b, "--report", dir_.file("report.html")});
    EXPECT_EQ(html.exit_code, 1) << html.output;
    const std::string page = read_file(dir_.file("report.html"));
    EXPECT_THAT(page, HasSubstr("<!DOCTYPE html>"));
    EXPECT_THAT(page, HasSubstr("alone on A's values (local error)"));
    EXPECT_THAT(page, HasSubstr("B (total error)"));
    EXPECT_THAT(page, HasSubstr("FusedConv"));
    EXPECT_THAT(page, HasSubstr("\"mk\":\"name\""));  // each row says how its tensors were paired
    // Model Explorer node data for each graph, keyed by each graph's own tensor names.
    const auto explorer = run_polygraphy(
        {"debug", "diff", a_, b, "--model-explorer-node-data", dir_.file("a_nodes.json"), dir_.file("b_nodes.json")});
    EXPECT_THAT(explorer.output, HasSubstr("Saved Model Explorer node data to: "));
    EXPECT_THAT(read_file(dir_.file("a_nodes.json")), HasSubstr("\"relu1_out\""));
    EXPECT_THAT(read_file(dir_.file("b_nodes.json")), HasSubstr("\"relu1_out\""));
    EXPECT_THAT(read_file(dir_.file("b_nodes.json")), HasSubstr("\"bgColor\""));
    // The saved pairs, given back, give the same table.
    const auto again =
        run_polygraphy({"debug", "diff", a_, b, "--match-file", dir_.file("matches.json"), "--top", "3"});
    EXPECT_THAT(again.output, HasSubstr("Paired 8 tensors of B with A: 0 by name, 0 by convention, 0 by provenance, 0 "
                                        "by structure, 8 by the match file"));
    EXPECT_THAT(again.output, HasSubstr("First divergence: B's '/conv1/Conv' (FusedConv)"));
}

TEST_F(DebugDiffCli, AnFp16VersionPassesWithTolerancesForFp16) {
    const std::string b = save(testing::fp16_version(testing::diff_cnn()), "b.onnx");
    const auto result = run_polygraphy({"debug", "diff", a_, b, "--atol", "1e-2", "--rtol", "1e-2"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("PASSED | the graph outputs of B agree"));
    EXPECT_THAT(result.output, HasSubstr("First divergence: none"));
}

TEST_F(DebugDiffCli, OnnxRuntimeRunsB) {
    const std::string b = save(testing::fused_version(testing::diff_cnn()), "b.onnx");
    const auto result =
        run_polygraphy({"debug", "diff", a_, b, "--backend-b", "onnxrt", "--atol", "1e-4", "--rtol", "1e-4"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("running A on ref-runner"));
    EXPECT_THAT(result.output, HasSubstr("B on onnxrt-runner"));
}

TEST_F(DebugDiffCli, BadInputsAreOneLineWithNothingWritten) {
    const std::string b = save(testing::renamed_reordered_version(testing::diff_cnn(), true), "renamed.onnx");
    const std::string report = dir_.file("report.json");
    expect_one_line_error(
        run_polygraphy({"debug", "diff", a_, b, "--report", report}),
        "Graph input 'in0' of B has no counterpart among the graph inputs of A: pair them with --input-map A_NAME:in0");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--input-map", "x"}),
                          "--input-map: expected A_NAME:B_NAME, got 'x'");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--input-map", "y:in0"}),
                          "--input-map: 'y' is not a graph input of A");

    write_file_atomically(dir_.file("matches.json"), "{\"pairs\": [{\"a\": \"conv1_ou\", \"b\": \"t8\"}]}");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--input-map", "x:in0", "--match-file",
                                          dir_.file("matches.json"), "--report", report}),
                          "--match-file: 'conv1_ou' is not a tensor a node of A computes (did you mean 'conv1_out'?)");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--match-file", dir_.file("missing.json")}),
                          "missing.json");
    write_file_atomically(dir_.file("broken.json"), "{\"pairs\": [");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--match-file", dir_.file("broken.json")}),
                          "broken.json");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--atol", "-1"}),
                          "--atol: expected a number of 0 or more, got '-1'");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b, "--top", "0"}),
                          "--top: expected a count of 1 or more");
    write_file_atomically(dir_.file("file"), "x");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, a_, "--report", dir_.file("file/report.json")}),
                          "--report: ");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, a_, "--report", dir_.path()}), "is a folder");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, a_, "--compare-memory-budget", "0"}),
                          "--compare-memory-budget must be more than 0 bytes");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, a_, "--compare-memory-budget", "lots"}),
                          "Could not convert 'lots' in --compare-memory-budget to a number of bytes");
    expect_one_line_error(
        run_polygraphy({"debug", "diff", a_, a_, "--model-explorer-node-data", dir_.file("one.json")}),
        "--model-explorer-node-data: expected two files, A's then B's, got 1");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_}), "the following arguments are required: model_b");
    EXPECT_FALSE(fs::exists(report));
}

TEST_F(DebugDiffCli, GraphsThatShareNothingButTheirOutputsAreOneLine) {
    testing::ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{1, 3, 8, 8});
    builder.node("Sigmoid", {"x"}, {"s"});
    builder.node("ReduceMax", {"s"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 1, 1, 1});
    const std::string b = save(builder.proto(), "b.onnx");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, b}),
                          "Nothing of B was paired with A beyond the graph outputs");
}

TEST_F(DebugDiffCli, AnOperatorNeitherBackendRunsIsOneLine) {
    onnx::ModelProto b = testing::diff_cnn();
    b.mutable_graph()->mutable_node(1)->set_op_type("MysteryRelu");
    b.mutable_graph()->mutable_node(1)->set_domain("example.custom");
    auto& import = *b.add_opset_import();
    import.set_domain("example.custom");
    import.set_version(1);
    const std::string path = save(b, "b.onnx");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, path}), "MysteryRelu");
    expect_one_line_error(run_polygraphy({"debug", "diff", a_, path, "--backend-b", "onnxrt"}), "MysteryRelu");
}

}  // namespace
}  // namespace polygraphy::tools
