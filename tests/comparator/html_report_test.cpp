#include "polygraphy/comparator/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/comparator/comparator.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::TempDir;

// The page's data, as the script reads it (between the JSON script element's tags).
std::string embedded_data(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const auto begin = page.find(open);
    const auto end = page.find("</script>", begin);
    EXPECT_NE(begin, std::string::npos);
    return page.substr(begin + open.size(), end - begin - open.size());
}

IterationResult iteration_of(std::initializer_list<std::pair<const char*, Tensor>> outputs, const char* runner) {
    IterationResult iteration;
    for (const auto& [name, tensor] : outputs) iteration.outputs.set(name, tensor);
    iteration.runner_name = runner;
    return iteration;
}

AccuracyResult compare(const IterationResult& first, const IterationResult& second) {
    RunResults results;
    results.add({first}, first.runner_name);
    results.add({second}, second.runner_name);
    SimpleCompareOptions options;
    options.collect_distributions = true;
    return Comparator::compare_accuracy(results, compare_func::simple(options));
}

TEST(HtmlReport, IsOneSelfContainedPageWithNoNetworkAccess) {
    TempDir dir;
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3});
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {3}, {1, 2, 3.5});
    const AccuracyResult accuracy = compare(iteration_of({{"y", a}}, "ref"), iteration_of({{"y", b}}, "onnxrt"));
    ReportContext context;
    context.title = "model.onnx";
    context.command = "polygraphy run model.onnx --ref --onnxrt --report r.html";
    save_html_report(accuracy, std::nullopt, context, dir.file("r.html"));
    const std::string page = read_file(dir.file("r.html"));
    EXPECT_THAT(page, HasSubstr("<!DOCTYPE html>"));
    EXPECT_THAT(page, HasSubstr("default-src 'none'"));  // the browser refuses any request
    EXPECT_THAT(page, Not(HasSubstr("src=\"http")));
    EXPECT_THAT(page, Not(HasSubstr("<link")));
    EXPECT_THAT(page, Not(HasSubstr("@import")));
    EXPECT_THAT(page, Not(HasSubstr("url(")));
    EXPECT_EQ(testing::count_occurrences(page, "<script"), 2u);  // the data and the page's own script, both inline
    EXPECT_THAT(page, HasSubstr("<title>Comparison: model.onnx</title>"));
    const std::string data = embedded_data(page);
    EXPECT_THAT(data, HasSubstr("\"kind\":\"comparison\""));
    EXPECT_THAT(data, HasSubstr("\"passed\":false"));
    EXPECT_THAT(data, HasSubstr("\"runners\":[\"ref\",\"onnxrt\"]"));
    EXPECT_THAT(data, HasSubstr("\"t\":\"y\""));
    EXPECT_THAT(data, HasSubstr("\"ma\":0.5"));             // max |a-b|
    EXPECT_THAT(data, HasSubstr("\"va\":{\"log\":false"));  // histograms of both sides...
    EXPECT_THAT(data, HasSubstr("\"ha\":{\"log\":true"));   // ...and of the differences
}

TEST(HtmlReport, NamesCannotInjectMarkupOrScript) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"</script><script>alert(1)</script>"}, "<script>");
    builder.node("Neg", {"</script><script>alert(1)</script>"}, {"a&b\"c'd"}, "x\" onload=\"alert(2)");
    builder.output("a&b\"c'd", DataType::kFloat32, Shape{2});
    const auto model = builder.build();
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2});
    const AccuracyResult accuracy =
        compare(iteration_of({{"</script><script>alert(1)</script>", a}, {"a&b\"c'd", a}}, "<b>ref</b>"),
                iteration_of({{"</script><script>alert(1)</script>", a}, {"a&b\"c'd", a}}, "other"));
    ReportContext context;
    context.title = "<script>alert(3)</script>.onnx";
    context.command = "polygraphy run '<script>'";
    context.graph = &model->graph();
    save_html_report(accuracy, std::nullopt, context, dir.file("r.html"));
    const std::string page = read_file(dir.file("r.html"));
    EXPECT_EQ(testing::count_occurrences(page, "<script"), 2u);
    EXPECT_EQ(testing::count_occurrences(page, "</script>"), 2u);
    EXPECT_THAT(page, Not(HasSubstr("alert(1)</script>")));
    EXPECT_THAT(page, HasSubstr("<title>Comparison: &lt;script&gt;alert(3)&lt;/script&gt;.onnx</title>"));
    const std::string data = embedded_data(page);
    EXPECT_EQ(data.find('<'), std::string::npos);
    EXPECT_THAT(data, HasSubstr("\\u003cscript>"));  // JSON escape, decoded by JSON.parse
    EXPECT_THAT(data, HasSubstr("\"a&b\\\"c'd\""));
}

TEST(HtmlReport, OnlyStatisticsAndHistogramsNotTensors) {
    TempDir dir;
    std::vector<double> values(1 << 20);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<double>(i));
    const Tensor a = Tensor::from_doubles(DataType::kFloat32, {1 << 20}, values);
    for (double& v : values) v *= 1.001;
    const Tensor b = Tensor::from_doubles(DataType::kFloat32, {1 << 20}, values);
    const AccuracyResult accuracy = compare(iteration_of({{"y", a}}, "r0"), iteration_of({{"y", b}}, "r1"));
    save_html_report(accuracy, std::nullopt, ReportContext{}, dir.file("r.html"));
    const auto size = std::filesystem::file_size(dir.file("r.html"));
    const auto page_without_data =
        read_file(dir.file("r.html")).size() - embedded_data(read_file(dir.file("r.html"))).size();
    EXPECT_LT(size - page_without_data, 4000u);  // 4 MB of float32 values became a few hundred bytes
}

TEST(HtmlReport, AComparisonThatCouldNotRunSaysWhy) {
    TempDir dir;
    ReportContext context;
    context.error = "All outputs were skipped, no common outputs found!";
    save_comparison_report(AccuracyResult{}, std::nullopt, context, dir.file("r.html"));
    const std::string data = embedded_data(read_file(dir.file("r.html")));
    EXPECT_THAT(data, HasSubstr("\"error\":\"All outputs were skipped, no common outputs found!\""));
    EXPECT_THAT(data, HasSubstr("\"passed\":false"));
    save_comparison_report(AccuracyResult{}, std::nullopt, context, dir.file("r.json"));
    const std::string json = read_file(dir.file("r.json"));
    EXPECT_THAT(json, HasSubstr("\"passed\": false"));
    EXPECT_THAT(json, HasSubstr("\"error\": \"All outputs were skipped, no common outputs found!\""));
}

TEST(HtmlReport, TheExtensionPicksTheFormat) {
    EXPECT_TRUE(is_html_report_path("a/report.html"));
    EXPECT_TRUE(is_html_report_path("REPORT.HTM"));
    EXPECT_FALSE(is_html_report_path("report.json"));
    EXPECT_FALSE(is_html_report_path("html"));
    TempDir dir;
    save_comparison_report(AccuracyResult{}, std::nullopt, ReportContext{}, dir.file("r.json"));
    EXPECT_THAT(read_file(dir.file("r.json")), HasSubstr("\"comparisons\": []"));
}

TEST(HtmlReport, MissingFoldersAreCreatedAndUnwritableOnesAreAnError) {
    TempDir dir;
    save_html_report(AccuracyResult{}, std::nullopt, ReportContext{}, dir.file("a/b/r.html"));
    EXPECT_TRUE(std::filesystem::exists(dir.file("a/b/r.html")));
    write_file_atomically(dir.file("file"), "not a folder");
    EXPECT_THROW(save_html_report(AccuracyResult{}, std::nullopt, ReportContext{}, dir.file("file/r.html")),
                 PolygraphyException);
}

TEST(HtmlReport, TheGraphIsLaidOutWithEveryNodeAndEdge) {
    TempDir dir;
    ModelBuilder builder;
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Neg", {"a"}, {"b"}, "neg");
    auto& node = builder.node("Add", {"a", "b"}, {"y"}, "add");
    testing::set_attr(node, "note", std::string(200, 'z'));
    builder.output("y", DataType::kFloat32, Shape{2});
    const auto model = builder.build();
    ReportContext context;
    context.graph = &model->graph();
    save_html_report(AccuracyResult{}, std::nullopt, context, dir.file("r.html"));
    const std::string data = embedded_data(read_file(dir.file("r.html")));
    EXPECT_THAT(data, HasSubstr("\"name\":[\"relu\",\"neg\",\"add\"]"));
    EXPECT_THAT(data, HasSubstr("\"op\":[\"Relu\",\"Neg\",\"Add\"]"));
    EXPECT_THAT(data, HasSubstr("\"e\":[0,1,0,2,1,2]"));
    EXPECT_THAT(data, HasSubstr("\"y\":[33,99,165]"));  // one row per layer
    EXPECT_THAT(data, HasSubstr("zzz...\""));           // long attributes are cut
    EXPECT_THAT(data, HasSubstr("\"x\":\"float32 (2,)\""));
}

TEST(DataReport, HasEachTensorsStatisticsAndHistogram) {
    TempDir dir;
    RunResults results;
    results.add({iteration_of({{"logits", Tensor::from_doubles(DataType::kFloat32, {4}, {0, 1, 2, 3})},
                               {"ids", Tensor::from_doubles(DataType::kInt64, {2}, {7, 7})}},
                              "ref")},
                "ref");
    ReportContext context;
    context.title = "out.json";
    save_data_report(results, context, dir.file("d.html"));
    const std::string data = embedded_data(read_file(dir.file("d.html")));
    EXPECT_THAT(data, HasSubstr("\"kind\":\"data\""));
    EXPECT_THAT(data, HasSubstr("\"runner\":\"ref\""));
    EXPECT_THAT(data, HasSubstr("\"t\":\"logits\",\"dt\":\"float32\",\"sh\":\"(4,)\",\"mean\":1.5"));
    EXPECT_THAT(data, HasSubstr("\"t\":\"ids\",\"dt\":\"int64\""));
    EXPECT_THAT(data, HasSubstr("\"c\":["));

    save_data_report(InputList{{}}, context, dir.file("inputs.html"));
    EXPECT_THAT(embedded_data(read_file(dir.file("inputs.html"))), HasSubstr("\"runner\":\"inputs\""));
}

}  // namespace
}  // namespace polygraphy
