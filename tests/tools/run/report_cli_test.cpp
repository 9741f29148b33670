// `polygraphy run --report x.html`, `--model-explorer-node-data`, the heatmap and error-plot flags, and
// `inspect data --report`, through the real CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "perturbed_run.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;

using RunReport = testing::PerturbedRun;

TEST_F(RunReport, HtmlReportHasEveryLayerAndTheFirstDivergence) {
    const std::string report = dir_.file("reports/report.html");  // the folder does not exist yet
    auto result = run_polygraphy(
        {"run", model_, "--ref", "--onnx-outputs", "mark", "all", "--load-outputs", perturbed_, "--report", report});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Saving accuracy report to " + report));
    const std::string page = read_file(report);
    EXPECT_THAT(page, HasSubstr("<title>Comparison: model.onnx</title>"));
    EXPECT_THAT(page, HasSubstr("\"divergence\":{\"node\":\"neg\""));
    for (const char* tensor : {"\"t\":\"a\"", "\"t\":\"\\u003cb>&amp;\\u003c/b>\"", "\"t\":\"c\"", "\"t\":\"y\""})
        EXPECT_THAT(page, HasSubstr(tensor));
    EXPECT_THAT(page, HasSubstr("\"name\":[\"relu\",\"\\u003cscript>\""));  // the node named <script>, escaped
    EXPECT_THAT(page, HasSubstr("\"va\":{"));                               // histograms were collected
    EXPECT_THAT(page, HasSubstr("\"command\":\"polygraphy run " + model_));
}

TEST_F(RunReport, JsonReportIsUnchanged) {
    auto result = run_polygraphy({"run", model_, "--ref", "--onnx-outputs", "mark", "all", "--load-outputs", perturbed_,
                                  "--report", dir_.file("r.json")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    const std::string report = read_file(dir_.file("r.json"));
    EXPECT_THAT(report, HasSubstr("\"node\": \"neg\""));
    EXPECT_THAT(report, Not(HasSubstr("<!DOCTYPE")));
}

TEST_F(RunReport, NoCommonOutputsStillWritesAReportThatSaysSo) {
    RunResults other;
    IterationResult iteration;
    iteration.outputs.set("unrelated", Tensor::from_doubles(DataType::kFloat32, {1}, {0}));
    iteration.runner_name = "other";
    other.add({iteration}, "other");
    other.save(dir_.file("other.json"));
    RunResults empty;  // a result without outputs: nothing to pair "unrelated" with
    empty.add({IterationResult{}}, "empty");
    empty.save(dir_.file("empty.json"));
    auto result = run_polygraphy(
        {"run", "--load-outputs", dir_.file("empty.json"), dir_.file("other.json"), "--report", dir_.file("r.html")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] All outputs were skipped, no common outputs found!"));
    const std::string page = read_file(dir_.file("r.html"));
    EXPECT_THAT(page, HasSubstr("\"error\":\"All outputs were skipped, no common outputs found!"));
}

TEST_F(RunReport, AnUnwritableReportFolderIsAnErrorLikeOtherOutputs) {
    // A folder that cannot be created (its parent is a file), for --save-outputs and --report alike.
    write_file_atomically(dir_.file("file"), "not a folder");
    const std::string saved = dir_.file("file/outputs.json"), report = dir_.file("file/r.html");
    auto save = run_polygraphy({"run", model_, "--ref", "--save-outputs", saved});
    auto result = run_polygraphy({"run", model_, "--ref", "--load-outputs", golden_, "--report", report});
    EXPECT_EQ(save.exit_code, 1) << save.output;
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(save.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr(report));
    EXPECT_THAT(result.output, Not(HasSubstr("Saving accuracy report")));
}

TEST_F(RunReport, AReportPathThatIsAFolderIsAOneLineError) {
    std::filesystem::create_directory(dir_.file("folder.html"));
    auto result =
        run_polygraphy({"run", model_, "--ref", "--load-outputs", golden_, "--report", dir_.file("folder.html")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr(dir_.file("folder.html")));
}

TEST_F(RunReport, ModelExplorerNodeDataHasEveryComparedTensor) {
    auto result = run_polygraphy({"run", model_, "--ref", "--onnx-outputs", "mark", "all", "--load-outputs", perturbed_,
                                  "--model-explorer-node-data", dir_.file("me/nodes.json")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Saving Model Explorer node data to " + dir_.file("me/nodes.json")));
    const std::string nodes = read_file(dir_.file("me/nodes.json"));
    EXPECT_THAT(nodes, HasSubstr("\"results\": {"));
    EXPECT_THAT(nodes, HasSubstr("\"a\": {\n      \"value\": 0.0,\n      \"bgColor\": \"#1a9850\""));
    EXPECT_THAT(nodes, HasSubstr("\"c\": {\n      \"value\": 1.0"));  // the first element changed by 1
    EXPECT_THAT(nodes, HasSubstr("\"bgColor\": \"#a50026\""));
}

TEST_F(RunReport, HeatmapsAndErrorPlotsAreWrittenWherePolygraphyWritesThem) {
    const std::string heatmaps = dir_.file("heatmaps"), plots = dir_.file("plots");
    auto result = run_polygraphy({"run", model_, "--ref", "--load-outputs", perturbed_, "--save-heatmaps", heatmaps,
                                  "--save-error-metrics-plot", plots});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_TRUE(std::filesystem::exists(heatmaps + "/Absolute Error | y: (0,0:4,0:8) to (0,0:4,0:8).svg"))
        << result.output;
    EXPECT_TRUE(std::filesystem::exists(heatmaps + "/Relative Error | y (Log Scale): (0,0:4,0:8) to (0,0:4,0:8).svg"));
    EXPECT_TRUE(std::filesystem::exists(plots + "/error_metrics_y.svg"));
    EXPECT_THAT(result.output, HasSubstr("Building heatmaps for Absolute Error | y. This may take a while..."));
    EXPECT_THAT(result.output, HasSubstr("Saving error metrics plot to: '" + plots + "/error_metrics_y.svg'"));
}

TEST_F(RunReport, ShowingFiguresWritesThemToATemporaryFolderAndSaysWhere) {
    auto result = run_polygraphy({"run", model_, "--ref", "--load-outputs", perturbed_, "--show-heatmaps"});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("This build cannot display figures: writing the heatmaps figures to "));
    const std::string saving = "Saving 'Absolute Error | y' heatmap to: '";
    const auto start = result.output.find(saving);
    ASSERT_NE(start, std::string::npos) << result.output;
    const auto path_start = start + saving.size();
    const std::string path = result.output.substr(path_start, result.output.find('\'', path_start) - path_start);
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_F(RunReport, GenScriptWritesTheReportsToo) {
    auto result = run_polygraphy({"run", model_, "--ref", "--load-outputs", golden_, "--report", dir_.file("r.html"),
                                  "--model-explorer-node-data", dir_.file("n.json"), "--save-heatmaps", dir_.file("h"),
                                  "--gen-script", dir_.file("prog.cpp")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const std::string program = read_file(dir_.file("prog.cpp"));
    EXPECT_THAT(program, HasSubstr("compare_options.collect_distributions = true;"));
    EXPECT_THAT(program, HasSubstr("compare_options.save_heatmaps = \"" + dir_.file("h") + "\";"));
    EXPECT_THAT(program, HasSubstr("report_context.graph = &model->graph();"));
    EXPECT_THAT(program,
                HasSubstr("save_comparison_report(accuracy, divergence, report_context, \"" + dir_.file("r.html")));
    EXPECT_THAT(program, HasSubstr("save_model_explorer_node_data(accuracy, \"" + dir_.file("n.json")));
}

TEST_F(RunReport, InspectDataWritesTheValueHistograms) {
    auto result = run_polygraphy({"inspect", "data", golden_, "--report", dir_.file("data.html")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Saving data report to " + dir_.file("data.html")));
    const std::string page = read_file(dir_.file("data.html"));
    EXPECT_THAT(page, HasSubstr("<title>Data: golden.json</title>"));
    EXPECT_THAT(page, HasSubstr("\"kind\":\"data\""));
    EXPECT_THAT(page, HasSubstr("\"t\":\"c\",\"dt\":\"float32\",\"sh\":\"(4, 8)\""));

    result = run_polygraphy({"inspect", "data", golden_, "--report", dir_.file("data.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --report writes an HTML page: give a path ending in .html"));
}

}  // namespace
}  // namespace polygraphy
